import { describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { tempDirs } from "../../e2e/support/temp_dirs.ts";
import { dumpAnvilState } from "./_state.ts";

const tempDir = tempDirs("ats-state-");

/** A fetch that answers `anvil_dumpState` with a dump ending at `best`. */
const anvilAt = (best: number) =>
  (async () => {
    const json = JSON.stringify({ block: {}, accounts: {}, best_block_number: best, blocks: [] });
    return Response.json({ jsonrpc: "2.0", id: 1, result: `0x${gzipSync(json).toString("hex")}` });
  }) as unknown as typeof fetch;

describe("dumpAnvilState()", () => {
  test("neverOlder: a dump that ends before the saved state's best block is refused and the file kept; a newer one replaces it", async () => {
    const file = join(tempDir(), "anvil-state.json");
    writeFileSync(file, JSON.stringify({ best_block_number: 14 }));
    await expect(dumpAnvilState("http://anvil", file, { fetchFn: anvilAt(9), neverOlder: true })).rejects.toThrow("before the saved state's 14");
    expect(JSON.parse(readFileSync(file, "utf8")).best_block_number).toBe(14);
    await dumpAnvilState("http://anvil", file, { fetchFn: anvilAt(15), neverOlder: true });
    expect(JSON.parse(readFileSync(file, "utf8")).best_block_number).toBe(15);
    // Without the option (the service's own checkpoints) the dump is written as it is.
    await dumpAnvilState("http://anvil", file, { fetchFn: anvilAt(3) });
    expect(JSON.parse(readFileSync(file, "utf8")).best_block_number).toBe(3);
  });
});
