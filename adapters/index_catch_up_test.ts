/**
 * Issue 45 item 6: a new deployment on PostgreSQL caught up ten times slower than on SQLite (150 attestations a second
 * against 2,800): its append sent one `UPDATE` per attestation for the records. And on both engines each append's
 * "tail rows now confirmed" update walked every row up to the confirmed block, so a catch-up slowed as the history
 * grew. On the real stores: an append's statements do not grow with its attestations (PostgreSQL, counted), what it
 * stores is what it was given (records, subjects, revocations, tail), the tail update seeks the partial tail index, and
 * a fresh index's catch-up, now in many small steps, tells webhooks none of its history.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { createSqliteIndexStore, openSqlite } from "./sqlite/mod.ts";
import { CONFIRM_TAIL } from "./sql/index_store.ts";
import { createPostgresIndexStore } from "./postgres/mod.ts";
import type { EasEvent, IndexedAttestation, IndexStore } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "../e2e/support/postgres.ts";

const EAS = `0x${"e".repeat(40)}` as HexString;
const SCHEMA = `0x${"5".repeat(64)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;
const address = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as HexString;

/** Attestation n (n ≥ 1): in block n / 100 + 1, its record, subject `did:web:s<n % 7>.example`. */
function record(n: number, revocationTime = 0n): IndexedAttestation {
  return {
    uid: uid(n), schema: SCHEMA, time: 1_000n + BigInt(n), expirationTime: BigInt(n % 3), revocationTime, refUID: uid(0),
    recipient: address(n % 50), attester: address(0xa0 + (n % 3)), revocable: n % 2 === 0, data: `0x${n.toString(16).padStart(8, "0")}` as HexString,
  };
}
const blockOf = (n: number) => BigInt(Math.floor(n / 100) + 1);
const attested = (n: number): EasEvent => ({
  kind: "attested", uid: uid(n), recipient: address(n % 50), attester: address(0xa0 + (n % 3)), schemaUid: SCHEMA, blockNumber: blockOf(n),
  logIndex: n % 100, txHash: uid(0x7000 + n),
});
const checkpoint = (block: bigint) => ({ blockNumber: block, blockHash: uid(0xb000 + Number(block)), timestamp: 1_000n + block });
const subjects = (from: number, to: number) => new Map(Array.from({ length: to - from + 1 }, (_, i) => [uid(from + i), `did:web:s${(from + i) % 7}.example`]));

/**
 * Appends attestations 1–`count` in one step (blocks 1 to the last one's, the last `tail` blocks unconfirmed), then a
 * second step revoking every 10th of them (its record read again, with its revocation time) and confirming the tail.
 */
async function ingest(store: IndexStore, count: number, onStep?: (step: 1 | 2) => void) {
  const last = blockOf(count);
  const events = Array.from({ length: count }, (_, i) => attested(i + 1));
  onStep?.(1);
  expect(await store.append(undefined, events, checkpoint(last), {
    attestations: events.map((e) => record(Number(BigInt(e.uid)))), subjects: subjects(1, count), confirmedTo: last - 2n,
  })).toBe(true);
  const revokedBlock = last + 1n;
  const revoked = events.filter((_, i) => (i + 1) % 10 === 0).map((e): EasEvent => ({ ...e, kind: "revoked", blockNumber: revokedBlock, txHash: uid(0x9000) }));
  onStep?.(2);
  expect(await store.append(last, revoked, checkpoint(revokedBlock), {
    attestations: revoked.map((e) => record(Number(BigInt(e.uid)), 2_000n)), subjects: new Map(), confirmedTo: revokedBlock,
  })).toBe(true);
}

/** What the store holds of attestations 1–`count`: every record as given, revocations, subjects, no tail left. */
async function expectStored(store: IndexStore, count: number) {
  expect(await store.counts()).toEqual({ attestations: count, tail: 0 });
  const stored = new Map((await store.records(Array.from({ length: count }, (_, i) => uid(i + 1)))).map((r) => [r.uid, r]));
  expect(stored.size).toBe(count);
  for (let n = 1; n <= count; n++) {
    const revoked = n % 10 === 0;
    expect(stored.get(uid(n))).toEqual({ ...record(n, revoked ? 2_000n : 0n), blockNumber: blockOf(n), revokedBlock: revoked ? blockOf(count) + 1n : null });
  }
  // The subjects as given (the second step's empty map names none for the revoked records it re-read).
  expect(await store.count({ subject: "did:web:s3.example", toBlock: blockOf(count) + 1n })).toBe(
    Array.from({ length: count }, (_, i) => i + 1).filter((n) => n % 7 === 3 && n % 10 !== 0).length,
  );
}

/**
 * A fresh index catching up in three steps while the chain's deep-enough head (WEBHOOK_CONFIRMATIONS) is block 100: the
 * history up to block 100 is not told, whichever step stored it; what the index stores past it is. Before, the first
 * step set the boundary at its own last block, so every later step of a catch-up queued its history (and steps are now
 * about 2,000 events). `outbox` lists the queued rows' uids.
 */
async function expectHistoryUntold(store: IndexStore, outbox: () => Promise<string[]>) {
  const details = (uids: number[], deep: bigint) => ({ attestations: uids.map((n) => record(n)), webhookConfirmedTo: deep });
  const at = (n: number, block: bigint): EasEvent => ({ ...attested(n), blockNumber: block });
  expect(await store.append(undefined, [at(1, 1n)], checkpoint(1n), details([1], 100n))).toBe(true);
  expect(await store.append(1n, [at(2, 50n)], checkpoint(50n), details([2], 100n))).toBe(true);
  expect(await outbox()).toEqual([]);
  expect(await store.append(50n, [at(3, 100n), at(4, 120n)], checkpoint(120n), details([3, 4], 120n))).toBe(true);
  expect(await outbox()).toEqual([uid(4)]);
}

/**
 * `sql` with every statement counted: each tagged-template query and `unsafe` call, of the pool and of the
 * transactions and savepoints it opens. The store's `ANALYZE` after a large append (eighteenth look) is counted apart.
 */
function countingSql(sql: SQL): { sql: SQL; statements: () => number; analyzes: () => number } {
  let statements = 0;
  let analyzes = 0;
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      apply(fn, self, args: unknown[]) {
        const first = args[0];
        if (Array.isArray(first) && "raw" in first) statements++;
        return Reflect.apply(fn as (...a: unknown[]) => unknown, self, args);
      },
      get(t, key) {
        const value = Reflect.get(t, key) as unknown;
        if (typeof value !== "function") return value;
        if (key === "unsafe") {
          return (...args: unknown[]) => {
            if (String(args[0]).startsWith("ANALYZE ")) analyzes++;
            else statements++;
            return (value as (...a: unknown[]) => unknown).apply(t, args);
          };
        }
        if (key === "begin" || key === "savepoint") {
          return (callback: (inner: object) => unknown) => (value as (cb: (inner: object) => unknown) => unknown).call(t, (inner: object) => callback(wrap(inner)));
        }
        return (value as (...a: unknown[]) => unknown).bind(t);
      },
    });
  return { sql: wrap(sql), statements: () => statements, analyzes: () => analyzes };
}

describe("a catch-up's appends (issue 45): sqlite", () => {
  test("an append stores what it is given: records, subjects, revocations, the tail confirmed", async () => {
    const store = createSqliteIndexStore(openSqlite(":memory:"), { chainId: 1, easAddress: EAS });
    await ingest(store, 2_500);
    await expectStored(store, 2_500);
  });

  test("an attestation and its record are one statement (an insert, then an update of the same row before)", async () => {
    const perStep: Record<number, number[]> = {};
    for (const count of [500, 2_500]) {
      const db = openSqlite(":memory:");
      const store = createSqliteIndexStore(db, { chainId: 1, easAddress: EAS });
      const at: number[] = [];
      await ingest(store, count, () => at.push(db.statements));
      at.push(db.statements);
      perStep[count] = [at[1]! - at[0]!, at[2]! - at[1]!];
      await expectStored(store, count);
    }
    // 2,000 more attestations with their records: 2,000 more statements (4,000 before); the revocations' step re-reads
    // records of rows already there, one revocation and one record each.
    expect(perStep[2_500]![0]! - perStep[500]![0]!).toBe(2_000);
    expect(perStep[2_500]![1]! - perStep[500]![1]!).toBe(2 * 200);
  });

  test("a fresh index's catch-up tells no history to webhooks, in however many steps", async () => {
    const db = openSqlite(":memory:");
    const store = createSqliteIndexStore(db, { chainId: 1, easAddress: EAS });
    await expectHistoryUntold(store, () => Promise.resolve(db.query<{ uid: string }, []>("SELECT uid FROM webhook_outbox ORDER BY block_number").all().map((r) => r.uid)));
  });

  test("the tail's confirmation seeks the partial tail index, not every confirmed row", () => {
    const db = openSqlite(":memory:");
    createSqliteIndexStore(db, { chainId: 1, easAddress: EAS });
    const plan = db.query<{ detail: string }, []>(`EXPLAIN QUERY PLAN ${CONFIRM_TAIL.replace(/\$(\d)/g, "?$1")}`).all().map((r) => r.detail).join("\n");
    expect(plan).toContain("USING INDEX index_attestations_tail");
  });
});

const unavailable = postgresUnavailableReason();
describe.skipIf(unavailable !== undefined)("a catch-up's appends (issue 45): postgres", () => {
  let pg: TestPostgres;
  let sql: SQL;
  beforeAll(async () => {
    pg = await startPostgres();
    sql = new SQL(pg.url, { max: 4 });
  }, 60_000);
  afterAll(async () => {
    await sql?.close();
    await pg?.stop();
  });

  test("an append's statements do not grow with its attestations (one UPDATE each before: 2,500 and more a step)", async () => {
    const perStep: Record<number, number[]> = {};
    const analyzed: Record<number, number> = {};
    for (const [chainId, count] of [[11, 500], [12, 2_500]] as const) {
      const counting = countingSql(sql);
      const store = await createPostgresIndexStore(counting.sql, { chainId, easAddress: EAS });
      const at: number[] = [];
      await ingest(store, count, () => at.push(counting.statements()));
      at.push(counting.statements());
      perStep[count] = [at[1]! - at[0]!, at[2]! - at[1]!];
      analyzed[count] = counting.analyzes();
      await expectStored(store, count);
    }
    // Five times the attestations: one more statement per 2,000 rows written, nothing per attestation.
    expect(perStep[500]![0]!).toBeLessThanOrEqual(12);
    expect(perStep[2_500]![0]! - perStep[500]![0]!).toBeLessThanOrEqual(1);
    expect(perStep[2_500]![1]!).toBe(perStep[500]![1]!);
    // The table's statistics: once after the step of 2,500 (1,000 events or more), never for 500.
    expect(analyzed).toEqual({ 500: 0, 2_500: 1 });
  }, 60_000);

  test("a fresh index's catch-up tells no history to webhooks, in however many steps", async () => {
    const store = await createPostgresIndexStore(sql, { chainId: 14, easAddress: EAS });
    await expectHistoryUntold(store, async () =>
      ((await sql`SELECT uid FROM webhook_outbox WHERE chain_id = 14 ORDER BY block_number`) as { uid: string }[]).map((r) => r.uid));
  }, 60_000);

  test("the tail's confirmation seeks the partial tail index, not every confirmed row", async () => {
    const store = await createPostgresIndexStore(sql, { chainId: 13, easAddress: EAS });
    await ingest(store, 6_000);
    await sql`ANALYZE index_attestations`;
    const rows: { "QUERY PLAN": string }[] = await sql.unsafe(`EXPLAIN ${CONFIRM_TAIL}`, [13, EAS, "100"]);
    const plan = rows.map((r) => r["QUERY PLAN"]).join("\n");
    expect(plan).toContain("index_attestations_tail");
    expect(plan).not.toContain("Seq Scan");
  }, 60_000);
});
