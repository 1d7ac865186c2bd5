import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteAccountStore, createSqliteWriteLedger } from "./sqlite_accounts.ts";
import { openSqlite } from "./sqlite_database.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-accounts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const challenge = (id: string, expiresAtMs = 2_000) => ({
  id,
  address: "0xAbC0000000000000000000000000000000000001",
  chainId: 31337,
  nonce: "abcdef123456",
  message: "msg",
  createdAtMs: 1_000,
  expiresAtMs,
  usedAtMs: null,
});

describe("createSqliteAccountStore()", () => {
  test("a challenge is consumed once", async () => {
    const store = createSqliteAccountStore(openSqlite(":memory:"));
    await store.saveChallenge(challenge("c1"));
    expect(await store.findChallenge("c1")).toMatchObject({ address: "0xabc0000000000000000000000000000000000001", usedAtMs: null });
    expect(await store.consumeChallenge("c1", 1_500)).toBe(true);
    expect(await store.consumeChallenge("c1", 1_600)).toBe(false);
    expect(await store.consumeChallenge("nope", 1_600)).toBe(false);
    expect((await store.findChallenge("c1"))?.usedAtMs).toBe(1_500);
  });

  test("an account is created once per wallet on the free plan; its plan can be set by id or address", async () => {
    const store = createSqliteAccountStore(openSqlite(":memory:"));
    const first = await store.findOrCreateAccount("0xAAA", "id-1", 10);
    const second = await store.findOrCreateAccount("0xaaa", "id-2", 20);
    expect(first).toEqual({ id: "id-1", address: "0xaaa", plan: "free", createdAtMs: 10 });
    expect(second).toEqual(first);
    expect(await store.setPlan("0xAAA", "paid", 30)).toMatchObject({ id: "id-1", plan: "paid" });
    expect((await store.findAccount("id-1"))?.plan).toBe("paid");
    expect(await store.setPlan("id-9", "paid", 30)).toBeUndefined();
    expect((await store.listAccounts()).map((a) => a.id)).toEqual(["id-1"]);
  });

  test("sessions are found by hash, revoked, and pruned with expired challenges", async () => {
    const store = createSqliteAccountStore(openSqlite(":memory:"));
    const account = await store.findOrCreateAccount("0xaaa", "id-1", 10);
    await store.saveSession({ tokenHash: "h1", accountId: account.id, createdAtMs: 10, expiresAtMs: 100, revokedAtMs: null });
    await store.saveSession({ tokenHash: "h2", accountId: account.id, createdAtMs: 10, expiresAtMs: 5_000, revokedAtMs: null });
    await store.saveChallenge(challenge("old", 50));
    expect(await store.findSession("h1")).toMatchObject({ session: { accountId: "id-1", revokedAtMs: null }, account });
    await store.revokeSession("h1", 60);
    expect((await store.findSession("h1"))?.session.revokedAtMs).toBe(60);
    expect(await store.prune(200)).toBe(2);
    expect(await store.findSession("h1")).toBeUndefined();
    expect(await store.findSession("h2")).toBeDefined();
  });
});

describe("createSqliteWriteLedger()", () => {
  const setup = async () => {
    const db = openSqlite(":memory:");
    await createSqliteAccountStore(db).findOrCreateAccount("0xaaa", "a", 0);
    return createSqliteWriteLedger(db);
  };
  const reservation = (id: string, year = 2026) => ({ id, accountId: "a", year, fingerprint: id, createdAtMs: 1 });

  test("reserves up to the limit; reserved and broadcast writes count; released ones do not; committed ones are final", async () => {
    const ledger = await setup();
    expect(await ledger.reserve(reservation("w1"), 2)).toBe(true);
    expect(await ledger.reserve(reservation("w2"), 2)).toBe(true);
    expect(await ledger.reserve(reservation("w3"), 2)).toBe(false);
    expect(await ledger.reserve(reservation("y1", 2027), 2)).toBe(true);
    await ledger.markBroadcast("w1", "0xt1", 2);
    expect(await ledger.usage("a", 2026)).toEqual({ used: 0, reserved: 2 });
    await ledger.commit("w1", { txHash: "0xt1", uid: "0xu1", blockNumber: 7n }, 3);
    await ledger.release("w1", 4);
    await ledger.release("w2", 4);
    expect(await ledger.usage("a", 2026)).toEqual({ used: 1, reserved: 0 });
    expect(await ledger.find("w1")).toMatchObject({ state: "committed", txHash: "0xt1", uid: "0xu1", blockNumber: 7n });
    expect(await ledger.reserve(reservation("w3"), 2)).toBe(true);
    expect((await ledger.unsettled(10)).map((w) => w.id)).toEqual(["y1", "w3"]);
  });

  test("four processes racing for a hundred writes on one file get exactly a hundred", async () => {
    const path = join(dir, "race.sqlite");
    const db = openSqlite(path);
    await createSqliteAccountStore(db).findOrCreateAccount("0xaaa", "a", 0);
    db.close();
    const script = `
      import { openSqlite } from ${JSON.stringify(join(import.meta.dir, "sqlite_database.ts"))};
      import { createSqliteWriteLedger } from ${JSON.stringify(join(import.meta.dir, "sqlite_accounts.ts"))};
      const ledger = createSqliteWriteLedger(openSqlite(process.argv[2]));
      let won = 0;
      for (let i = 0; i < 40; i++) {
        if (await ledger.reserve({ id: process.argv[3] + i, accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 1 }, 100)) won++;
      }
      console.log(won);
    `;
    const file = join(dir, "race.ts");
    await Bun.write(file, script);
    const runs = await Promise.all(
      ["p", "q", "r", "s"].map(async (tag) => {
        const proc = Bun.spawn([process.execPath, file, path, tag], { stdout: "pipe", stderr: "pipe" });
        const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
        expect(code).toBe(0);
        return Number(out.trim());
      }),
    );
    expect(runs.reduce((a, b) => a + b, 0)).toBe(100);
    const check = createSqliteWriteLedger(openSqlite(path));
    expect(await check.usage("a", 2026)).toEqual({ used: 0, reserved: 100 });
  });
});
