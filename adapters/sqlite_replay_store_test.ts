import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlite } from "./sqlite_database.ts";
import { createSqliteReplayStore } from "./sqlite_replay_store.ts";

// The behaviour shared with PostgreSQL is in storage_contract.ts; this file covers what is SQLite's own.
const dir = mkdtempSync(join(tmpdir(), "ats-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("createSqliteReplayStore()", () => {
  test("records survive reopening the file, and prune drops expired ones", async () => {
    const path = join(dir, "replay.sqlite");
    const first = openSqlite(path);
    await createSqliteReplayStore(first).claim({ key: "0x01", chainId: 1, attester: "0xabc", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 });
    first.close();
    const store = createSqliteReplayStore(openSqlite(path));
    expect(await store.has("0x01")).toBe(true);
    expect(await store.prune(2_000_000_001n)).toBe(1);
    expect(await store.has("0x01")).toBe(false);
  });
});
