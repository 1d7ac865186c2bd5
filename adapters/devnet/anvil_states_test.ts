/**
 * Anvil's states on disk: kept in a directory of the run's, gone once the run stopped. Anvil's default place,
 * `~/.foundry/anvil/tmp`, is emptied only when Anvil ends by itself, and a devnet that is not kept ends with SIGKILL,
 * so every long chain left its states there for good (76 GB on one machine).
 */
import { expect, test } from "bun:test";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tempDirs } from "../../e2e/support/temp_dirs.ts";
import { startAnvil } from "./_anvil.ts";

const tempDir = tempDirs("ats-anvil-states-test-");

/** Mines `blocks` empty blocks, past what Anvil keeps in memory, so it writes states to disk. */
async function mine(rpcUrl: string, blocks: number): Promise<void> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [`0x${blocks.toString(16)}`] }),
  });
  expect(((await response.json()) as { error?: unknown }).error).toBeUndefined();
}

/** Every file under `root`. */
function filesUnder(root: string): string[] {
  if (!existsSync(root)) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

/** Waits (on the condition, not a time) until Anvil wrote a state into `root`; Anvil writes them as it mines. */
async function untilStatesIn(root: string): Promise<string[]> {
  for (let tries = 0; tries < 500; tries++) {
    const files = filesUnder(root);
    if (files.length > 0) return files;
    await Bun.sleep(20);
  }
  throw new Error(`Anvil wrote no state into ${root}`);
}

test("a chain not kept writes its states into a directory of its own, which is gone once it stopped (SIGKILL)", async () => {
  const anvil = await startAnvil({ chainId: 31337, log: () => {} });
  try {
    expect(anvil.cacheDir).toBeDefined();
    expect(anvil.cacheDir!.startsWith(tmpdir())).toBe(true);
    await mine(anvil.rpcUrl, 700);
    const states = await untilStatesIn(anvil.cacheDir!);
    expect(states.every((f) => f.endsWith(".json"))).toBe(true);
  } finally {
    await anvil.stop();
  }
  expect(existsSync(anvil.cacheDir!)).toBe(false);
});

test("a given directory is emptied before Anvil starts (what a killed run left) and removed once it stopped", async () => {
  const cacheDir = join(tempDir(), "kept-chain", "anvil-states");
  mkdirSync(join(cacheDir, "anvil-state-left-by-a-killed-run"), { recursive: true });
  const leftover = join(cacheDir, "anvil-state-left-by-a-killed-run", "0xabc.json");
  writeFileSync(leftover, "{}");
  const anvil = await startAnvil({ chainId: 31337, log: () => {}, cacheDir });
  try {
    expect(anvil.cacheDir).toBe(cacheDir);
    expect(existsSync(leftover)).toBe(false);
    await mine(anvil.rpcUrl, 700);
    expect((await untilStatesIn(cacheDir)).length).toBeGreaterThan(0);
  } finally {
    await anvil.stop();
  }
  expect(existsSync(cacheDir)).toBe(false);
});
