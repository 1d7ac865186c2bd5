/** The public relay's gas budget and the premium-read ledger on SQLite and PostgreSQL: the same rules, exact under concurrency. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { GasBudget } from "../../ports/gas_budget.ts";
import type { PremiumReadLedger } from "../../ports/premium_reads.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "../../e2e/support/postgres.ts";
import { openPostgresStorage } from "../postgres/mod.ts";
import { openSqliteStorage } from "../sqlite/mod.ts";
import type { Storage } from "../../ports/storage.ts";

const skip = postgresUnavailableReason();
let pg: TestPostgres | undefined;
const opened: Storage[] = [];
beforeAll(async () => {
  if (skip === undefined) pg = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const storage of opened) await storage.close();
  await pg?.stop();
});

let window = 1_000;
function contract(name: string, open: () => Promise<GasBudget>) {
  test(`${name}: charges add up within the limit; one that would pass it adds nothing; windows are apart`, async () => {
    const budget = await open();
    const start = ++window * 3_600_000;
    expect(await budget.used(start)).toBe(0n);
    expect(await budget.charge(start, 600_000n, 1_000_000n)).toBe(true);
    expect(await budget.charge(start, 500_000n, 1_000_000n)).toBe(false);
    expect(await budget.charge(start, 400_000n, 1_000_000n)).toBe(true);
    expect(await budget.used(start)).toBe(1_000_000n);
    expect(await budget.used(start + 3_600_000)).toBe(0n);
  });

  test(`${name}: forty parallel charges of 100,000 gas into a budget of 1,000,000: exactly ten succeed`, async () => {
    const budget = await open();
    const start = ++window * 3_600_000;
    const results = await Promise.all(Array.from({ length: 40 }, () => budget.charge(start, 100_000n, 1_000_000n)));
    expect(results.filter(Boolean)).toHaveLength(10);
    expect(await budget.used(start)).toBe(1_000_000n);
  });

  test(`${name}: issue 43: a charge with shares adds to the window and each share, or to none of them`, async () => {
    const budget = await open();
    const start = ++window * 3_600_000;
    const shares = (client: string) => [{ key: `client:${client}`, limit: 500_000n }, { key: "attester:0xa", limit: 800_000n }];
    expect(await budget.charge(start, 300_000n, 10_000_000n, shares("1"))).toBe(true);
    // The client's share would pass: nothing added anywhere.
    expect(await budget.charge(start, 300_000n, 10_000_000n, shares("1"))).toBe(false);
    expect(await budget.usage(start, ["client:1", "attester:0xa"])).toEqual({ total: 300_000n, byKey: [300_000n, 300_000n] });
    // Another client, the same attester: the attester's share would pass at the third.
    expect(await budget.charge(start, 300_000n, 10_000_000n, shares("2"))).toBe(true);
    expect(await budget.charge(start, 300_000n, 10_000_000n, shares("3"))).toBe(false);
    expect(await budget.usage(start, ["client:3", "attester:0xa"])).toEqual({ total: 600_000n, byKey: [0n, 600_000n] });
    expect(await budget.usage(start + 3_600_000, ["client:1"])).toEqual({ total: 0n, byKey: [0n] });
    expect(await budget.usage(start, [])).toEqual({ total: 600_000n, byKey: [] });
    // A negative charge (a refund) gives back to the window and the shares alike.
    expect(await budget.charge(start, -300_000n, 10_000_000n, shares("2"))).toBe(true);
    expect(await budget.usage(start, ["client:2", "attester:0xa"])).toEqual({ total: 300_000n, byKey: [0n, 300_000n] });
  });

  test(`${name}: a limit past the database's integers bounds nothing; a charge past a limit is refused on a fresh window`, async () => {
    const budget = await open();
    const start = ++window * 3_600_000;
    const huge = 10n ** 30n;
    expect(await budget.charge(start, 600_000n, huge, [{ key: "client:big", limit: huge }])).toBe(true);
    expect(await budget.charge(start, 600_000n, huge, [{ key: "client:big", limit: huge }])).toBe(true);
    expect(await budget.usage(start, ["client:big"])).toEqual({ total: 1_200_000n, byKey: [1_200_000n] });
    const fresh = ++window * 3_600_000;
    expect(await budget.charge(fresh, 600_000n, 500_000n)).toBe(false);
    expect(await budget.charge(fresh, 600_000n, huge, [{ key: "client:small", limit: 500_000n }])).toBe(false);
    expect(await budget.usage(fresh, ["client:small"])).toEqual({ total: 0n, byKey: [0n] });
  });

  test(`${name}: a window's first charge drops the shares of earlier windows`, async () => {
    const budget = await open();
    window += 10;
    const start = window * 3_600_000;
    expect(await budget.charge(start, 100_000n, 1_000_000n, [{ key: "client:old", limit: 500_000n }])).toBe(true);
    expect(await budget.charge(start, 100_000n, 1_000_000n, [{ key: "client:old", limit: 500_000n }])).toBe(true);
    expect(await budget.usage(start, ["client:old"])).toEqual({ total: 200_000n, byKey: [200_000n] });
    window += 1;
    expect(await budget.charge(window * 3_600_000, 100_000n, 1_000_000n, [{ key: "client:new", limit: 500_000n }])).toBe(true);
    // The earlier window's total stays (a day of totals is kept); its shares went.
    expect(await budget.usage(start, ["client:old"])).toEqual({ total: 200_000n, byKey: [0n] });
  });

  test(`${name}: issue 43: forty parallel charges of 100,000 gas from one client with a share of 1,000,000: exactly ten succeed`, async () => {
    const budget = await open();
    const start = ++window * 3_600_000;
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => budget.charge(start, 100_000n, 100_000_000n, [{ key: "client:x", limit: 1_000_000n }, { key: `attester:${i}`, limit: 1_000_000n }])));
    expect(results.filter(Boolean)).toHaveLength(10);
    expect(await budget.usage(start, ["client:x"])).toEqual({ total: 1_000_000n, byKey: [1_000_000n] });
  });
}

describe("gas budget", () => {
  contract("sqlite", () => {
    const storage = openSqliteStorage(":memory:");
    opened.push(storage);
    return Promise.resolve(storage.gasBudget);
  });
  describe.skipIf(skip !== undefined)("postgres", () => {
    contract("postgres", async () => {
      const storage = await openPostgresStorage(pg!.url);
      opened.push(storage);
      return storage.gasBudget;
    });
  });
});

describe("the private relay's gas budget (issue 23)", () => {
  contract("sqlite", () => {
    const storage = openSqliteStorage(":memory:");
    opened.push(storage);
    return Promise.resolve(storage.privateGasBudget);
  });
  test("sqlite: the private budget and the public one are apart", async () => {
    const storage = openSqliteStorage(":memory:");
    opened.push(storage);
    expect(await storage.privateGasBudget.charge(0, 700_000n, 1_000_000n)).toBe(true);
    expect(await storage.gasBudget.used(0)).toBe(0n);
    expect(await storage.gasBudget.charge(0, 700_000n, 1_000_000n)).toBe(true);
  });
  describe.skipIf(skip !== undefined)("postgres", () => {
    contract("postgres", async () => {
      const storage = await openPostgresStorage(pg!.url);
      opened.push(storage);
      return storage.privateGasBudget;
    });
  });
});

let accountCounter = 0;
function premiumContract(name: string, open: () => Promise<PremiumReadLedger>) {
  test(`${name}: premium reads reserve up to the limit, per account and year; released reads come back`, async () => {
    const reads = await open();
    const account = `premium-${Date.now()}-${++accountCounter}`;
    expect(await reads.reserve(account, 2026, 3, 5)).toBe(true);
    expect(await reads.reserve(account, 2026, 3, 5)).toBe(false);
    expect(await reads.reserve(account, 2026, 2, 5)).toBe(true);
    expect(await reads.used(account, 2026)).toBe(5);
    expect(await reads.used(account, 2027)).toBe(0);
    await reads.release(account, 2026, 2);
    expect(await reads.used(account, 2026)).toBe(3);
    expect(await reads.reserve(account, 2026, 6, 5)).toBe(false);
    // A read that fits exactly is taken; a reservation larger than the whole limit never is.
    expect(await reads.reserve(account, 2026, 2, 5)).toBe(true);
    expect(await reads.reserve(`${account}-fresh`, 2026, 6, 5)).toBe(false);
    expect(await reads.used(`${account}-fresh`, 2026)).toBe(0);
  });

  test(`${name}: a release never goes below zero and never creates a row`, async () => {
    const reads = await open();
    const account = `premium-release-${Date.now()}-${++accountCounter}`;
    await reads.release(account, 2026, 4);
    expect(await reads.used(account, 2026)).toBe(0);
    // Had the release left -4 behind, nine reads would now fit under a limit of five.
    expect(await reads.reserve(account, 2026, 9, 5)).toBe(false);
    expect(await reads.reserve(account, 2026, 2, 5)).toBe(true);
    await reads.release(account, 2026, 7);
    expect(await reads.used(account, 2026)).toBe(0);
    expect(await reads.reserve(account, 2026, 5, 5)).toBe(true);
  });

  test(`${name}: thirty parallel reservations of one read with ten left: exactly ten succeed`, async () => {
    const reads = await open();
    const account = `premium-race-${Date.now()}-${++accountCounter}`;
    const results = await Promise.all(Array.from({ length: 30 }, () => reads.reserve(account, 2026, 1, 10)));
    expect(results.filter(Boolean)).toHaveLength(10);
    expect(await reads.used(account, 2026)).toBe(10);
  });

  test(`${name}: parallel batches of three with ten left: exactly three succeed, none half-taken`, async () => {
    const reads = await open();
    const account = `premium-batch-${Date.now()}-${++accountCounter}`;
    const results = await Promise.all(Array.from({ length: 12 }, () => reads.reserve(account, 2026, 3, 10)));
    expect(results.filter(Boolean)).toHaveLength(3);
    expect(await reads.used(account, 2026)).toBe(9);
  });
}

describe("premium reads", () => {
  premiumContract("sqlite", () => {
    const storage = openSqliteStorage(":memory:");
    opened.push(storage);
    return Promise.resolve(storage.premiumReads);
  });
  describe.skipIf(skip !== undefined)("postgres", () => {
    premiumContract("postgres", async () => {
      const storage = await openPostgresStorage(pg!.url);
      opened.push(storage);
      return storage.premiumReads;
    });
  });
});
