/**
 * Eighteenth look at issue 43 (docs/performance.md): before `index_attestations` had statistics, PostgreSQL's generic
 * plan for the records of a page (`uid = ANY($3)`, a prepared statement after its fifth run) read every row of the
 * chain and filtered them by uid: 46–52 ms a page among 90,000 attestations, until autovacuum's first ANALYZE. The store
 * now analyzes the table after a backfill's large append. On a PostgreSQL of its own (a table no one analyzed yet).
 */
import { describe, expect, test } from "bun:test";
import type { EasEvent, IndexedAttestation } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { postgresForTests } from "../e2e/support/postgres_storage.ts";

const EAS = `0x${"e".repeat(40)}` as HexString;
const SCHEMA = `0x${"5".repeat(64)}` as HexString;
const hex = (n: number, width: number) => `0x${n.toString(16).padStart(width, "0")}` as HexString;
const CHAIN_ID = 31337;

const pg = postgresForTests();

/** The generic plan (the one a prepared statement keeps) of the records' lookup by uid. */
async function genericRecordsPlan(uid: HexString): Promise<string> {
  return await pg.raw().begin(async (tx) => {
    await tx`SET LOCAL plan_cache_mode = force_generic_plan`;
    await tx.unsafe("PREPARE records_by_uid (BIGINT, TEXT, TEXT[]) AS SELECT * FROM index_attestations WHERE chain_id = $1 AND eas = $2 AND uid = ANY($3)");
    const rows = (await tx.unsafe(`EXPLAIN EXECUTE records_by_uid (${CHAIN_ID}, '${EAS.toLowerCase()}', ARRAY['${uid}'])`)) as { "QUERY PLAN": string }[];
    await tx.unsafe("DEALLOCATE records_by_uid");
    return rows.map((r) => r["QUERY PLAN"]).join("\n");
  });
}

/**
 * `index_attestations`'s row count in its statistics, once it has been analyzed (at most 30 s). The row count alone is
 * not the sign: autovacuum's VACUUM after 1,000 inserts sets it too, without the columns' statistics, and the plan
 * made then filtered the chain's rows (red in CI once). An ANALYZE writes both in one transaction.
 */
async function analyzedRows(): Promise<number> {
  for (let tries = 0; ; tries++) {
    const [stats] = (await pg.raw()`SELECT c.reltuples,
        EXISTS (SELECT 1 FROM pg_stats s WHERE s.tablename = 'index_attestations' AND s.attname = 'uid') AS analyzed
      FROM pg_class c WHERE c.relname = 'index_attestations'`) as { reltuples: number; analyzed: boolean }[];
    const rows = Number(stats!.reltuples);
    if ((rows > 0 && stats!.analyzed) || tries >= 300) return rows;
    await Bun.sleep(100);
  }
}

describe.skipIf(pg.skip !== undefined)("the index's statistics after a backfill (PostgreSQL)", () => {
  test("a step of 1,500 attestations leaves the table analyzed: the records are read through the primary key", async () => {
    const store = await pg.storage().indexStore({ chainId: CHAIN_ID, easAddress: EAS });
    const events: EasEvent[] = [];
    const attestations: IndexedAttestation[] = [];
    for (let n = 0; n < 1_500; n++) {
      const block = BigInt(1 + Math.floor(n / 3));
      const a: IndexedAttestation = {
        uid: hex(1_000_000 + n, 64), schema: SCHEMA, time: 1_700_000_000n + block, expirationTime: 0n, revocationTime: 0n,
        refUID: hex(0, 64), recipient: hex(n % 50, 40), attester: hex(0xa77e, 40), revocable: true, data: "0x",
      };
      events.push({ kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: block, logIndex: n % 3 });
      attestations.push(a);
    }
    const last = events.at(-1)!.blockNumber;
    expect(await store.append(undefined, events, { blockNumber: last, blockHash: hex(Number(last), 64), timestamp: 1_700_000_000n + last }, { attestations })).toBe(true);

    // The append does not wait for its ANALYZE: wait for the statistics (none until the table's first).
    expect(await analyzedRows()).toBe(1_500);
    const plan = await genericRecordsPlan(hex(1_000_007, 64));
    expect(plan).toContain("index_attestations_pkey");
    expect(plan).not.toContain("Filter");
    const records = await store.records([hex(1_000_007, 64)]);
    expect(records.map((r) => r.uid)).toEqual([hex(1_000_007, 64)]);
  });
});
