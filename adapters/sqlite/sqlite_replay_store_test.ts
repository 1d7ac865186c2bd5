import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlite } from "./sqlite_database.ts";
import { createSqliteReplayStore } from "./sqlite_replay_store.ts";

// The behaviour shared with PostgreSQL is in ../test_support/ (the storage contract); this file covers what is SQLite's own.
const dir = mkdtempSync(join(tmpdir(), "ats-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("createSqliteReplayStore()", () => {
  test("records survive reopening the file, and prune drops expired ones", async () => {
    const path = join(dir, "replay.sqlite");
    const first = openSqlite(path);
    await createSqliteReplayStore(first).claim({ key: "0x01", chainId: 1, attester: "0xabc", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 });
    first.close();
    const store = createSqliteReplayStore(openSqlite(path));
    expect((await store.find(1, "0x01"))?.state).toBe("checked");
    await store.finish(1, "0x01", { state: "mined", txHash: "0x02", uid: null, blockNumber: 1n });
    expect(await store.prune(2_000_000_001n)).toBe(1);
    expect(await store.find(1, "0x01")).toBeUndefined();
  });

  test("a file written before submission states existed is migrated: old states renamed, new columns added", async () => {
    const { Database } = await import("bun:sqlite");
    const path = join(dir, "old.sqlite");
    const old = new Database(path, { create: true });
    old.exec(`CREATE TABLE replay (key TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, attester TEXT NOT NULL, nonce TEXT NOT NULL,
      deadline INTEGER NOT NULL, state TEXT NOT NULL, tx_hash TEXT, uid TEXT, block_number TEXT, created_at_ms INTEGER NOT NULL)`);
    old.exec(`CREATE UNIQUE INDEX replay_live_nonce ON replay (chain_id, attester, nonce) WHERE state IN ('claimed', 'broadcast', 'done')`);
    old.exec(`INSERT INTO replay VALUES ('0xa', 1, '0xabc', '0', 2000000000, 'done', '0xt', '0xu', '5', 1),
                                       ('0xb', 1, '0xabc', '1', 2000000000, 'broadcast', '0xt2', NULL, NULL, 2)`);
    old.close();
    const store = createSqliteReplayStore(openSqlite(path));
    expect(await store.find(1, "0xa")).toMatchObject({ state: "mined", uid: "0xu", tx: null });
    expect((await store.open(10)).map((r) => [r.key, r.state, r.txHash])).toEqual([["0xb", "sent", "0xt2"]]);
    expect(await store.claim({ key: "0xc", chainId: 1, attester: "0xabc", nonce: 1n, deadline: 2_000_000_000n, createdAtMs: 3 }))
      .toBe("nonce-in-flight");
  });

  test("a file whose replay records were keyed by the signature alone is re-keyed by (chain, signature), rows kept (decisions §30)", async () => {
    const { Database } = await import("bun:sqlite");
    const path = join(dir, "keyed-by-signature.sqlite");
    const old = new Database(path, { create: true });
    // The table as it was before a record's identity was (chain, signature): `key` its primary key.
    old.exec(`CREATE TABLE replay (key TEXT PRIMARY KEY, chain_id INTEGER NOT NULL, attester TEXT NOT NULL, nonce TEXT NOT NULL,
      deadline INTEGER NOT NULL, state TEXT NOT NULL, tx_hash TEXT, uid TEXT, block_number TEXT, created_at_ms INTEGER NOT NULL,
      raw_tx TEXT, wallet TEXT, tx_nonce INTEGER)`);
    old.exec(`CREATE UNIQUE INDEX replay_live_nonce_v2 ON replay (chain_id, attester, nonce) WHERE state IN ('checked', 'signed', 'sent', 'mined')`);
    old.exec(`INSERT INTO replay VALUES ('0xsig', 31337, '0xabc', '0', 2000000000, 'mined', '0xt', '0xuida', '5', 1, '0xraw', '0xw', 7),
                                       ('0xopen', 31337, '0xabc', '1', 2000000000, 'sent', '0xt2', NULL, NULL, 2, '0xraw2', '0xw', 8)`);
    old.exec(`CREATE TABLE submission_records (id TEXT PRIMARY KEY, scope TEXT NOT NULL, ref TEXT NOT NULL, state TEXT NOT NULL,
      tx_hash TEXT, uid TEXT, block_number TEXT, error TEXT, fee_bumps INTEGER NOT NULL DEFAULT 0,
      created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL, items TEXT, item_uids TEXT, untold INTEGER)`);
    old.exec(`INSERT INTO submission_records (id, scope, ref, state, created_at_ms, updated_at_ms)
      VALUES ('sub-open', 'account:a', '0xopen', 'open', 2, 2), ('sub-gone', 'account:a', '0xgone', 'open', 3, 3)`);
    old.close();
    const db = openSqlite(path);
    const store = createSqliteReplayStore(db);
    // Rows kept, on the chain each named.
    expect(await store.find(31337, "0xsig")).toMatchObject({ state: "mined", uid: "0xuida", tx: { raw: "0xraw", nonce: 7 } });
    expect((await store.open(10)).map((r) => [r.chainId, r.key, r.state])).toEqual([[31337, "0xopen", "sent"]]);
    // The same signature on another chain is that chain's own record, not a duplicate of chain 31337's.
    expect(await store.claim({ key: "0xsig", chainId: 8453, attester: "0xabc", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("claimed");
    expect(await store.claim({ key: "0xsig", chainId: 31337, attester: "0xdef", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("duplicate-signature");
    // The live-nonce rule still holds on the rebuilt table.
    expect(await store.claim({ key: "0xother", chainId: 31337, attester: "0xabc", nonce: 1n, deadline: 2_000_000_000n, createdAtMs: 3 })).toBe("nonce-in-flight");
    // Submissions kept before they named their chain take their replay record's; one whose record is gone names none.
    const submissions = (await import("./sqlite_submission_records.ts")).createSqliteSubmissionRecords(db);
    expect((await submissions.find("sub-open"))?.chainId).toBe(31337);
    expect((await submissions.find("sub-gone"))?.chainId).toBeNull();
    db.close();
    // Opened again: nothing to re-key, the rows stay.
    const again = createSqliteReplayStore(openSqlite(path));
    expect((await again.find(8453, "0xsig"))?.state).toBe("checked");
    expect((await again.find(31337, "0xsig"))?.state).toBe("mined");
  });
});
