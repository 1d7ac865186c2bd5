/**
 * Idempotency leases at a SQLite start (decisions §23): a start that holds the file's instance lock (main.ts) ends the
 * leases of running keys, each a request that died with the last process (e2e/relay_batch_crash_test shows the retry
 * taking its key over at once); a start without the lock (an in-process service beside another on the same file, as
 * the harness's restartService makes) leaves them: the request may still be running there.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { startStack, type Stack } from "./harness.ts";

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => await stack?.stop());

test("a start without the instance lock leaves the running keys of a service still using the file alone", async () => {
  // Found in review: the leases were ended at every SQLite start, so a request still running in the first service lost
  // its key, and its retry ran the write a second time.
  const storage = openSqliteStorage(join(stack.dir, "ats.sqlite"));
  const now = Date.now();
  const record = (at: number) => ({ scope: "account:x", key: "live", fingerprint: "f", createdAtMs: at, expiresAtMs: at + 86_400_000, leaseUntilMs: at + 300_000 });
  try {
    expect(await storage.idempotency.begin(record(now))).toMatchObject({ kind: "started" });
    await stack.restartService();
    expect(await storage.idempotency.begin(record(Date.now()))).toMatchObject({ kind: "exists", record: { state: "running" } });
  } finally {
    await storage.close();
  }
});
