import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dataDir = mkdtempSync(join(tmpdir(), "ats-devnet-cli-"));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  return text.split("\n")[0]!;
}

test("`bun run devnet` prints one JSON line another program can use, and stops cleanly on SIGTERM", async () => {
  const proc = Bun.spawn([process.execPath, "run", join(import.meta.dir, "cli.ts")], {
    env: { ...process.env, DATA_DIR: dataDir },
    stdout: "pipe",
    stderr: "ignore",
  });
  try {
    const line = await firstLine(proc.stdout);
    const described = JSON.parse(line);
    expect(Object.keys(described).sort()).toEqual(
      ["chainId", "deployBlock", "easAddress", "keys", "rpcUrl", "schemaRegistryAddress", "schemaUids", "trustAnchorsPath"].sort(),
    );
    expect(described.chainId).toBe(31337);
    expect(Object.keys(described.schemaUids)).toHaveLength(9);
    expect(described.trustAnchorsPath).toBe(join(dataDir, "devnet", "trust-anchors.json"));
    const anchors = JSON.parse(readFileSync(described.trustAnchorsPath, "utf8"));
    expect(anchors.chains["eip155:31337"].easContract).toBe(described.easAddress);
    const answer = await fetch(described.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getCode", params: [described.easAddress, "latest"] }),
    }).then((r) => r.json() as Promise<{ result: string }>);
    expect(answer.result.length).toBeGreaterThan(2);
  } finally {
    proc.kill("SIGTERM");
  }
  expect(await proc.exited).toBe(0);
  // The state was dumped on the way out, so the next start reuses the chain.
  expect(existsSync(join(dataDir, "devnet", "anvil-state.json"))).toBe(true);
}, 60_000);
