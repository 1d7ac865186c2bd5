// Several chains (decisions §30, issue 48): two attestation chains with EAS and one proof chain, three Anvils with
// different chain ids. The served set comes from the anchors and the chains file; proofs read each chain through its
// own client, a receipt once; a chain not read is not checked; a second chain adds no call to the first.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, defineChain, http, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createViemProofChains } from "../adapters/chain/mod.ts";
import { buildServedChains, type ChainEntry } from "../domain/chains/mod.ts";
import { createChainProofs } from "../domain/interactions/mod.ts";
import type { ExplorerTxList } from "../ports/interactions.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { startThreeChains, type ThreeChains } from "./support/three_chains.ts";

const EAS_ABI = parseAbi(["function version() view returns (string)"]);
const APP = "0x1111111111111111111111111111111111111111";
const dir = mkdtempSync(join(tmpdir(), "ats-three-chains-"));
let three: ThreeChains;
beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
}, 120_000);
afterAll(async () => {
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("three Anvils with their own chain ids: EAS on the two attestation chains, none on the proof chain; the anchors describe the attestation chains", async () => {
  const [a, b, proof] = three.chains;
  expect(three.chains.map((c) => [c.chainId, c.role])).toEqual([[31337, "attestations"], [31338, "attestations"], [31339, "proofs"]]);
  for (const chain of three.chains) {
    const client = createPublicClient({ cacheTime: 0, transport: http(chain.nodeUrl) });
    expect(await client.getChainId()).toBe(chain.chainId);
  }
  for (const chain of [a, b]) {
    const client = createPublicClient({ cacheTime: 0, transport: http(chain.nodeUrl) });
    expect(await client.readContract({ address: chain.easAddress!, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
  }
  expect(await createPublicClient({ transport: http(proof.nodeUrl) }).getCode({ address: a.easAddress! })).toBeUndefined();
  const anchors = JSON.parse(readFileSync(three.trustAnchorsPath, "utf8")) as TrustAnchors;
  expect(Object.keys(anchors.chains)).toEqual(["eip155:31337", "eip155:31338"]);

  // The chains file and the anchors make the served set: the first attestation chain the default.
  const entries = JSON.parse(readFileSync(three.chainsFilePath, "utf8")) as ChainEntry[];
  const served = buildServedChains(entries, anchors);
  expect(served.ok && served.value.default.chainId).toBe(31337);
  expect(served.ok && served.value.list.map((c) => [c.caip2, c.role, c.easContract])).toEqual([
    ["eip155:31337", "attestations", a.easAddress!.toLowerCase()],
    ["eip155:31338", "attestations", b.easAddress!.toLowerCase()],
    ["eip155:31339", "proofs", undefined],
  ]);
});

test("a transaction on the proof chain: confirmed through that chain's own RPC, its receipt read once; the attestation chains get no call; a chain not read is not checked", async () => {
  const proof = three.chains[2];
  const user = privateKeyToAccount(three.keys.users[0]!);
  const chain = defineChain({ id: proof.chainId, name: "proofs", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [proof.nodeUrl] } } });
  const wallet = createWalletClient({ chain, account: user, transport: http(proof.nodeUrl) });
  const hash = await wallet.sendTransaction({ to: APP, value: 1n });
  await createPublicClient({ chain, transport: http(proof.nodeUrl) }).waitForTransactionReceipt({ hash, pollingInterval: 50 });

  const before = three.chains.map((c) => three.calls(c.chainId));
  const chains = createViemProofChains({ chains: three.chains.map((c) => ({ chainId: c.chainId, rpcUrl: c.rpcUrl })) });
  const explorers: ExplorerTxList = { txlist: () => Promise.resolve({ ok: true, value: [{ hash, from: user.address, to: APP, failed: false, blockNumber: 1 }] }) };
  const proofs = createChainProofs(chains, { operatorExplorer: () => "https://explorer.example/api", explorers });
  for (let i = 0; i < 3; i++) {
    expect(await proofs.txProof(31339, hash)).toMatchObject({ ok: true, value: { chain: "eip155:31339", from: user.address.toLowerCase(), to: APP, status: "success" } });
    expect(await proofs.findInteraction({ chainId: 31339, wallet: user.address.toLowerCase(), contract: APP })).toMatchObject({ status: "verified", txHash: hash });
  }
  expect(three.calls(31339, "eth_getTransactionReceipt")).toBe(1);
  expect(three.calls(31339, "eth_getBlockByNumber")).toBe(1);
  // The same hash on an attestation chain: not mined there (read, not kept), and nothing of it reached the proof chain.
  expect(await proofs.txProof(31338, hash)).toMatchObject({ ok: false, code: "NOT_FOUND" });
  expect(three.calls(31337) - before[0]!).toBe(0);
  expect(three.calls(31338, "eth_getTransactionReceipt")).toBe(1);
  // A chain the deployment does not read: not checked / UNSUPPORTED_CHAIN, no call anywhere.
  const calls = three.chains.map((c) => three.calls(c.chainId));
  expect(await proofs.findInteraction({ chainId: 8453, wallet: user.address.toLowerCase(), contract: APP })).toEqual({ status: "not-checked", reason: "chain-not-read" });
  expect(await proofs.txProof(8453, hash)).toMatchObject({ ok: false, code: "UNSUPPORTED_CHAIN" });
  expect(three.chains.map((c) => three.calls(c.chainId))).toEqual(calls);
}, 60_000);

test("a chains file whose rpcUrl or wsUrl reaches another chain's node stops the start with one line naming the chain", async () => {
  const [a, b, proof] = three.chains;
  const ws = (chain: { nodeUrl: string }) => chain.nodeUrl.replace(/^http/, "ws");
  // Before, the service started and /readyz said ready: chain A's attestations and transactions were served as
  // eip155:31338's and eip155:31339's (the devnets share one EAS address, so nothing downstream noticed).
  const cases: [object[], string][] = [
    [[{ caip2: "eip155:31337", rpcUrl: a.rpcUrl, role: "attestations" }, { caip2: "eip155:31338", rpcUrl: a.rpcUrl, role: "attestations" }], "CHAINS_FILE: the rpcUrl of eip155:31338 answers chain 31337"],
    [[{ caip2: "eip155:31337", rpcUrl: a.rpcUrl, role: "attestations" }, { caip2: "eip155:31339", rpcUrl: a.rpcUrl, role: "proofs" }], "CHAINS_FILE: the rpcUrl of eip155:31339 answers chain 31337"],
    [[{ caip2: "eip155:31337", rpcUrl: a.rpcUrl, role: "attestations" }, { caip2: "eip155:31338", rpcUrl: proof.rpcUrl, role: "attestations" }], "CHAINS_FILE: the rpcUrl of eip155:31338 answers chain 31339"],
    // A wsUrl on another chain's node (found by attack): its heads were taken as this chain's and froze its index.
    [[{ caip2: "eip155:31337", rpcUrl: a.rpcUrl, role: "attestations" }, { caip2: "eip155:31338", rpcUrl: b.rpcUrl, wsUrl: ws(a), role: "attestations" }], "CHAINS_FILE: the wsUrl of eip155:31338 answers chain 31337, not eip155:31338"],
    [[{ caip2: "eip155:31337", rpcUrl: a.rpcUrl, wsUrl: ws(proof), role: "attestations" }, { caip2: "eip155:31338", rpcUrl: b.rpcUrl, role: "attestations" }], "CHAINS_FILE: the wsUrl of eip155:31337 answers chain 31339, not eip155:31337"],
  ];
  for (const [chains, line] of cases) {
    const file = join(dir, `chains-${crypto.randomUUID()}.json`);
    writeFileSync(file, JSON.stringify(chains));
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "main.ts")], {
      env: { PATH: process.env.PATH ?? "", HOME: dir, DATA_DIR: join(dir, "refused"), PORT: "0", LOG_LEVEL: "error", CHAINS_FILE: file, TRUST_ANCHORS_PATH: three.trustAnchorsPath, DELEGATE_PRIVATE_KEY: three.keys.delegate, ALLOW_RAW_KEYS: "true" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
    expect([code, stderr.trim()]).toEqual([1, `ats: ${line}`]);
  }
}, 60_000);
