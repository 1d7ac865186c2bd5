import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqlite } from "./sqlite_database.ts";
import { createSqliteReplayStore } from "./sqlite_replay_store.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-replay-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const claim = (key: string, nonce = 0n, attester = "0xabc") => ({
  key,
  chainId: 1,
  attester,
  nonce,
  deadline: 2_000_000_000n,
  createdAtMs: 1,
});

describe("createSqliteReplayStore()", () => {
  test("claims a key once and refuses a second live claim on the same attester nonce", async () => {
    const store = createSqliteReplayStore(openSqlite(":memory:"));
    expect(await store.claim(claim("0x01"))).toBe("claimed");
    expect(await store.claim(claim("0x01"))).toBe("duplicate-signature");
    expect(await store.claim(claim("0x02"))).toBe("nonce-in-flight");
    expect(await store.claim(claim("0x03", 1n))).toBe("claimed");
  });

  test("a released claim can be made again; a broadcast one cannot be released", async () => {
    const store = createSqliteReplayStore(openSqlite(":memory:"));
    await store.claim(claim("0x01"));
    await store.release("0x01");
    expect(await store.has("0x01")).toBe(false);
    expect(await store.claim(claim("0x01"))).toBe("claimed");
    await store.markBroadcast("0x01", "0xhash");
    await store.release("0x01");
    expect(await store.has("0x01")).toBe(true);
  });

  test("a reverted submission frees the nonce but keeps the signature", async () => {
    const store = createSqliteReplayStore(openSqlite(":memory:"));
    await store.claim(claim("0x01"));
    await store.finish("0x01", { state: "failed", txHash: "0xhash" });
    expect(await store.claim(claim("0x01"))).toBe("duplicate-signature");
    expect(await store.claim(claim("0x02"))).toBe("claimed");
  });

  test("records survive reopening the file, and prune drops expired ones", async () => {
    const path = join(dir, "replay.sqlite");
    const first = openSqlite(path);
    await createSqliteReplayStore(first).claim(claim("0x01"));
    first.close();
    const store = createSqliteReplayStore(openSqlite(path));
    expect(await store.has("0x01")).toBe(true);
    expect(await store.prune(2_000_000_001n)).toBe(1);
    expect(await store.has("0x01")).toBe(false);
  });
});
