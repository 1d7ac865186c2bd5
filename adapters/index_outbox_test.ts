/**
 * Issue 43 item 11: the webhook outbox the index's append writes (decisions §22) never stops the index, on SQLite and
 * PostgreSQL. A chain younger than WEBHOOK_CONFIRMATIONS gave a boundary below -1, from which every unrevoked row
 * was queued as a revocation without a block (`null value in column "block_number" of relation "webhook_outbox"`),
 * the append failed, and the index stayed where it was for good; and any row the outbox refuses must be skipped and
 * told, the rest of the range queued, and the index go on.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createSqliteIndexStore, openSqlite } from "./sqlite/mod.ts";
import type { EasEvent, IndexCheckpoint, IndexStore, OutboxSkip } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { postgresForTests } from "../e2e/support/postgres_storage.ts";

const hex = (n: number, width = 64) => `0x${n.toString(16).padStart(width, "0")}` as HexString;
const event = (kind: "attested" | "revoked", uid: number, block: bigint): EasEvent => ({
  kind,
  uid: hex(uid),
  recipient: hex(1, 40),
  attester: hex(2, 40),
  schemaUid: hex(3),
  blockNumber: block,
  logIndex: uid,
  txHash: hex(1000 + uid),
});
const cp = (n: bigint): IndexCheckpoint => ({ blockNumber: n, blockHash: hex(Number(n) + 5000) });
/** The uid the test's trigger refuses in the outbox. */
const REFUSED = hex(0xbad);

/** A database to run the cases on: an index store of a fresh scope, its outbox rows, and a way to refuse a row. */
type Backend = {
  readonly store: (chainId: number) => Promise<IndexStore>;
  readonly outbox: (chainId: number) => Promise<[string, string, number][]>;
  readonly refuse: () => Promise<void>;
};

let nextChain = 43_000;

function outboxCases(name: string, backend: () => Backend, skip?: string) {
  describe.skipIf(skip !== undefined)(`the index's webhook outbox never stops the index: ${name}`, () => {
    test("a chain younger than WEBHOOK_CONFIRMATIONS: the boundary starts at -1, and unrevoked rows are never revocations", async () => {
      const chainId = ++nextChain;
      const index = await backend().store(chainId);
      // Head 10, confirmations 12: nothing is deep enough, the first append sets the boundary.
      expect(await index.append(undefined, [event("attested", 1, 1n), event("attested", 2, 3n)], cp(10n), { webhookConfirmedTo: -2n })).toBe(true);
      expect(await index.append(10n, [event("attested", 3, 11n)], cp(11n), { webhookConfirmedTo: -1n })).toBe(true);
      expect(await backend().outbox(chainId)).toEqual([]);
      // Head 12: block 0 deep enough; 13: 1 (attestation 1), ...
      expect(await index.append(11n, [], cp(12n), { webhookConfirmedTo: 0n })).toBe(true);
      expect(await index.append(12n, [event("revoked", 2, 13n)], cp(13n), { webhookConfirmedTo: 1n })).toBe(true);
      expect(await backend().outbox(chainId)).toEqual([["attested", hex(1), 1]]);
      expect(await index.append(13n, [], cp(25n), { webhookConfirmedTo: 13n })).toBe(true);
      expect(await backend().outbox(chainId)).toEqual([
        ["attested", hex(1), 1],
        ["attested", hex(2), 3],
        ["attested", hex(3), 11],
        ["revoked", hex(2), 13],
      ]);
      expect((await index.checkpoint())?.blockNumber).toBe(25n);
    });

    test("a boundary already stored below -1 (a database the defect wrote) queues no row without a block", async () => {
      const chainId = ++nextChain;
      const index = await backend().store(chainId);
      // A store opened before the fix kept -5; the stores now clamp what they are given, so the first append is -1.
      expect(await index.append(undefined, [event("attested", 1, 1n)], cp(2n), { webhookConfirmedTo: -5n })).toBe(true);
      expect(await index.append(2n, [event("attested", 2, 3n)], cp(3n), { webhookConfirmedTo: 3n })).toBe(true);
      expect(await backend().outbox(chainId)).toEqual([["attested", hex(1), 1], ["attested", hex(2), 3]]);
    });

    test("a row the outbox refuses is skipped and told; the rest of the range is queued and the index moves on", async () => {
      const chainId = ++nextChain;
      const index = await backend().store(chainId);
      await backend().refuse();
      expect(await index.append(undefined, [], cp(0n), { webhookConfirmedTo: 0n })).toBe(true);
      const told: OutboxSkip[] = [];
      const events = [event("attested", 1, 1n), event("attested", 0xbad, 2n), event("attested", 3, 2n)];
      expect(await index.append(0n, events, cp(4n), { webhookConfirmedTo: 4n, onOutboxSkipped: (rows) => void told.push(...rows) })).toBe(true);
      expect((await index.checkpoint())?.blockNumber).toBe(4n);
      expect(told.map((r) => [r.kind, r.uid, r.blockNumber])).toEqual([["attested", REFUSED, 2n]]);
      expect(told[0]!.error).toContain("refused by test");
      expect(await backend().outbox(chainId)).toEqual([["attested", hex(1), 1], ["attested", hex(3), 2]]);
      // The attestation itself is indexed like any other.
      expect((await index.query({ toBlock: 4n, order: "oldest", limit: 10 })).map((l) => l.uid)).toEqual([hex(1), hex(3), REFUSED]);
      // The next append goes on as usual.
      expect(await index.append(4n, [event("revoked", 0xbad, 5n), event("attested", 6, 5n)], cp(5n), { webhookConfirmedTo: 5n, onOutboxSkipped: (rows) => void told.push(...rows) })).toBe(true);
      expect(told.map((r) => [r.kind, r.uid, r.blockNumber])).toEqual([["attested", REFUSED, 2n], ["revoked", REFUSED, 5n]]);
      expect(await backend().outbox(chainId)).toEqual([["attested", hex(1), 1], ["attested", hex(3), 2], ["attested", hex(6), 5]]);
    });
  });
}

const db = openSqlite(":memory:");
outboxCases("sqlite", () => ({
  store: (chainId) => Promise.resolve(createSqliteIndexStore(db, { chainId, easAddress: hex(7, 40) })),
  outbox: (chainId) =>
    Promise.resolve(
      db.query<{ kind: string; uid: string; block_number: number }, [number]>("SELECT kind, uid, block_number FROM webhook_outbox WHERE chain_id = ? ORDER BY seq")
        .all(chainId).map((r) => [r.kind, r.uid, r.block_number] as [string, string, number]),
    ),
  refuse() {
    db.exec(`CREATE TRIGGER IF NOT EXISTS refuse_outbox_test BEFORE INSERT ON webhook_outbox WHEN NEW.uid = '${REFUSED}'
             BEGIN SELECT RAISE(ABORT, 'refused by test'); END`);
    return Promise.resolve();
  },
}));

const pg = postgresForTests();
const pgSkip = pg.skip;
afterAll(() => db.close());
outboxCases("postgres", () => ({
  store: (chainId) => pg.storage().indexStore({ chainId, easAddress: hex(7, 40) }),
  async outbox(chainId) {
    const rows: { kind: string; uid: string; block_number: string }[] = await pg.raw()`SELECT kind, uid, block_number FROM webhook_outbox WHERE chain_id = ${chainId} ORDER BY seq`;
    return rows.map((r) => [r.kind, r.uid, Number(r.block_number)]);
  },
  async refuse() {
    await pg.raw().unsafe(`CREATE OR REPLACE FUNCTION refuse_outbox_test() RETURNS trigger AS $$
                       BEGIN IF NEW.uid = '${REFUSED}' THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`);
    await pg.raw().unsafe("DROP TRIGGER IF EXISTS refuse_outbox_test ON webhook_outbox");
    await pg.raw().unsafe("CREATE TRIGGER refuse_outbox_test BEFORE INSERT ON webhook_outbox FOR EACH ROW EXECUTE FUNCTION refuse_outbox_test()");
  },
}), pgSkip);
