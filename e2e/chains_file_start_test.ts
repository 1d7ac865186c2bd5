/**
 * A bad `CHAINS_FILE` stops the process at start (decisions §30, issue 48): `bun main.ts` exits 1 with one line naming
 * the file (or `DEFAULT_CHAIN`) and the chain, before any chain is contacted. The anchors are the devnet's (chain 31337).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServiceProcess } from "./support/service_process.ts";
import { fakeJsonRpcNode } from "./support/fake_node.ts";

const ROOT = join(import.meta.dir, "..");
const ANCHORS = join(ROOT, "deploy", "devnet", "trust-anchors.json");
// Nothing listens here: every refusal below comes before any JSON-RPC call.
const RPC = "http://127.0.0.1:9/rpc";
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ats-chains-file-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the service with `text` as its chains file and returns its exit code and what it printed on stderr. */
async function start(text: string, env: Record<string, string> = {}): Promise<{ code: number; stderr: string }> {
  const file = join(dir, `chains-${crypto.randomUUID()}.json`);
  writeFileSync(file, text);
  const proc = Bun.spawn([process.execPath, "main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: dir, DATA_DIR: join(dir, "data"), PORT: "0", LOG_LEVEL: "error", CHAINS_FILE: file, TRUST_ANCHORS_PATH: ANCHORS, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  return { code, stderr: stderr.trim() };
}

const devnet = { caip2: "eip155:31337", rpcUrl: RPC, role: "attestations" };
const base = { caip2: "eip155:8453", rpcUrl: RPC, role: "proofs" };

test("each bad chains file stops the start with one line naming it", async () => {
  const cases: [string, Record<string, string>, string][] = [
    ["[{\"caip2\": ", {}, "CHAINS_FILE: cannot read JSON from"],
    [JSON.stringify([devnet, base, devnet]), {}, "CHAINS_FILE: eip155:31337 is named twice"],
    [JSON.stringify([base]), {}, `CHAINS_FILE: no chain has role "attestations"`],
    [JSON.stringify([devnet, base]), { DEFAULT_CHAIN: "eip155:1" }, "DEFAULT_CHAIN: eip155:1 is not an attestation chain the deployment serves"],
    [JSON.stringify([devnet, { ...base, role: "attestations" }]), {}, "CHAINS_FILE: eip155:8453 is an attestation chain the trust anchors do not describe (TRUST_ANCHORS_PATH)"],
  ];
  for (const [text, env, line] of cases) {
    const { code, stderr } = await start(text, env);
    expect(code).toBe(1);
    expect(stderr.split("\n")).toHaveLength(1);
    expect(stderr).toContain(line);
  }
}, 60_000);

test("DEFAULT_CHAIN beside RPC_URL names the chain meant: a node answering for another stops the start naming both (it was ignored)", async () => {
  // A node that answers eth_chainId for 31337: the refusal comes before anything else is asked of it.
  const node = fakeJsonRpcNode((method) => (method === "eth_chainId" ? "0x7a69" : undefined));
  try {
    const { code, stderr } = await start("", { CHAINS_FILE: "", RPC_URL: node.url, DEFAULT_CHAIN: "eip155:8453" });
    expect([code, stderr.split("\n").length]).toEqual([1, 1]);
    expect(stderr).toContain("DEFAULT_CHAIN: eip155:8453 is not the chain RPC_URL serves (eip155:31337)");
    expect(new Set(node.asked)).toEqual(new Set(["eth_chainId"]));
  } finally {
    await node.stop();
  }
}, 60_000);

test("DEVNET_CHAINS=2 with DEFAULT_CHAIN=31338 starts on the devnet's second chain (it stopped, blaming a CHAINS_FILE never set)", async () => {
  const service = await startServiceProcess({ HOME: dir, DATA_DIR: join(dir, "second"), PORT: "0", LOG_LEVEL: "error", DEVNET_CHAINS: "2", DEFAULT_CHAIN: "31338" }, 60_000);
  try {
    const nonce = await (await fetch(`${service.url}/v1/nonce?attester=0x0000000000000000000000000000000000000001`)).json() as { chainId: number };
    expect(nonce.chainId).toBe(31338);
    // Ready once both chains' followers have polled (right after the start one of them may still be on its first).
    let ready = await fetch(`${service.url}/readyz`);
    for (let i = 0; i < 300 && ready.status !== 200; i++) {
      await Bun.sleep(100);
      ready = await fetch(`${service.url}/readyz`);
    }
    expect([ready.status, ready.status === 200 ? "" : await ready.text()]).toEqual([200, ""]);
    // The banner names the served chain's node.
    const rpc = /devnet RPC (\S+)/.exec(service.banner)![1]!;
    const chainId = await (await fetch(rpc, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }) })).json() as { result: string };
    expect(Number(chainId.result)).toBe(31338);
    // The devnet's test token is on its first chain: payments are asked for there.
    expect(service.banner).toContain("x402 token");
    expect(service.banner).toMatch(/x402 token 0x[0-9a-fA-F]{40} on eip155:31337/);
  } finally {
    await service.stop();
  }
}, 90_000);
