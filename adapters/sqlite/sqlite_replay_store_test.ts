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
    expect((await store.find("0x01"))?.state).toBe("checked");
    await store.finish("0x01", { state: "mined", txHash: "0x02", uid: null, blockNumber: 1n });
    expect(await store.prune(2_000_000_001n)).toBe(1);
    expect(await store.find("0x01")).toBeUndefined();
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
    expect(await store.find("0xa")).toMatchObject({ state: "mined", uid: "0xu", tx: null });
    expect((await store.open(10)).map((r) => [r.key, r.state, r.txHash])).toEqual([["0xb", "sent", "0xt2"]]);
    expect(await store.claim({ key: "0xc", chainId: 1, attester: "0xabc", nonce: 1n, deadline: 2_000_000_000n, createdAtMs: 3 }))
      .toBe("nonce-in-flight");
  });
});
