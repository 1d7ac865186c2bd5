// One chain's provider down at start (decisions §30: one provider down fails closed on its chain only). `bun main.ts`
// on three chains (attestation chains A, the default, and B; proof chain P), each behind a proxy. Before, a provider of
// B or P that did not answer eth_chainId at start (a 503) stopped the whole deployment, A included. Now the service
// starts, A serves, B and P answer the contract's 5xx for a failing chain with nothing of the provider's text, and
// nothing but their chain-id check reaches their node until it answers its own chain id; then they serve. A node that
// answers another chain's id still stops the start; found after the start, it keeps that chain closed, logged.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import type { RpcProxy } from "./support/rpc_proxy.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { startThreeChains, threeChainsServiceEnv, type TestChain, type ThreeChains } from "./support/three_chains.ts";
import { waitFor } from "./support/wait_for.ts";

const APP = "0x1111111111111111111111111111111111111111";
/** What the providers answer while down: none of it may reach a client. */
const OUTAGE = "upstream unavailable: provider-secret-text";
const dir = mkdtempSync(join(tmpdir(), "ats-chain-down-"));
let three: ThreeChains;
/** A transaction mined on the proof chain, for /v1/tx-proofs. */
let proofTx: Hex;

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  const proof = three.chains[2];
  const chain = defineChain({ id: proof.chainId, name: "proofs", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [proof.nodeUrl] } } });
  proofTx = await createWalletClient({ chain, account: privateKeyToAccount(three.keys.users[0]!), transport: http(proof.nodeUrl) }).sendTransaction({ to: APP, value: 1n });
  await createPublicClient({ chain, transport: http(proof.nodeUrl) }).waitForTransactionReceipt({ hash: proofTx, pollingInterval: 50 });
}, 180_000);

afterAll(async () => {
  for (const chain of three?.chains ?? []) restore(chain.proxy);
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function down(proxy: RpcProxy): void {
  proxy.onHttp = () => new Response(OUTAGE, { status: 503 });
}

function restore(proxy: RpcProxy): void {
  proxy.onHttp = undefined;
  proxy.onAnswer = undefined;
}

/** The proxy answers `chainId` to eth_chainId (its node is fine otherwise): the URL reaches another chain's node. */
function answersChain(proxy: RpcProxy, chainId: number): void {
  proxy.onAnswer = (call, answer) => (call.method === "eth_chainId" ? { ...answer, result: `0x${chainId.toString(16)}` } : answer);
}

/** The methods a proxy saw since `from` (its call count then). */
const methodsSince = (proxy: RpcProxy, from: number) => new Set(proxy.calls.slice(from).map((call) => call.method));

async function get(service: ServiceProcess, path: string): Promise<{ status: number; text: string; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`);
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, any> };
}

async function post(service: ServiceProcess, path: string, body: unknown): Promise<{ status: number; text: string; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Record<string, any> };
}

/** A user-review signed by `key` for `chain` (its id and EAS), with the attester's nonce read on the node itself. */
async function signed(key: Hex, chain: TestChain, item: string) {
  const account = privateKeyToAccount(key);
  const def = findSchemaByName("user-review")!;
  const reader = createPublicClient({ cacheTime: 0, transport: http(chain.nodeUrl) });
  const prepared = prepareDelegatedAttestation({
    schema: { uid: chain.schemaUids!["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:chain-down.example", version: "1.0.0", ratingValue: 4, reviewBody: item, screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: await reader.readContract({ address: chain.easAddress!, abi: EAS_ABI, functionName: "getNonce", args: [account.address] }),
    chainId: chain.chainId,
    easAddress: chain.easAddress!,
  });
  return { prepared, signature: await account.signTypedData(signableTypedData(prepared)), attester: account.address };
}

/** The 5xx of a chain that cannot be read, with none of the provider's words. */
function expectFailedClosed(answer: { status: number; text: string; body: Record<string, any> }, codes: string[]): void {
  expect(answer.status).toBeGreaterThanOrEqual(500);
  expect(codes).toContain(answer.body.code);
  expect(answer.text).not.toContain("provider-secret-text");
  expect(answer.text).not.toContain("127.0.0.1");
  // Nor the gate's own words (ChainNotCheckedError: "The node of … serves another chain", "… has not answered …").
  expect(answer.text).not.toContain("The node of");
}

/** The service's environment on the three chains; `chainsFile` replaces theirs. */
function env(name: string, chainsFile = three.chainsFilePath): Record<string, string> {
  return { ...threeChainsServiceEnv(three, join(dir, name)), CHAINS_FILE: chainsFile, LOG_LEVEL: "info", ...TEST_RELAY_LIMITS };
}

test("providers of an attestation chain and the proof chain down at start: the service starts, the default chain writes and reads, the two fail closed (5xx, no provider text, nothing but the chain-id check sent), and serve once their nodes answer their chain's id", async () => {
  const [a, b, proof] = three.chains;
  // B also names a WebSocket endpoint where nothing listens: another chain's heads are a hint, no reason to stop.
  const chainsFile = join(dir, "chains-ws.json");
  writeFileSync(chainsFile, JSON.stringify([
    { caip2: a.caip2, rpcUrl: a.rpcUrl, role: "attestations" },
    { caip2: b.caip2, rpcUrl: b.rpcUrl, wsUrl: "ws://127.0.0.1:9/", role: "attestations" },
    { caip2: proof.caip2, rpcUrl: proof.rpcUrl, role: "proofs" },
  ]));
  down(b.proxy);
  down(proof.proxy);
  const from = { b: b.proxy.calls.length, proof: proof.proxy.calls.length };
  // A start that fails leaves the providers up for the next test.
  const service = await startServiceProcess(env("down-then-up", chainsFile), 60_000).catch((error: unknown) => {
    restore(b.proxy);
    restore(proof.proxy);
    throw error;
  });
  try {
    // The instance is ready (the default chain serves; B's index is not fresh), the default chain writes, and its
    // index lists the write.
    const ready = await waitFor("the instance ready on the default chain", async () => {
      const answer = await get(service, "/readyz");
      return answer.status === 200 ? answer.body : undefined;
    });
    // /readyz names each chain's node: B and P held (unchecked), A checked; B's index is not fresh while held, and
    // nothing of the providers' text or address is in the body.
    expect(ready.nodes).toEqual({ [a.caip2]: "checked", [b.caip2]: "unchecked", [proof.caip2]: "unchecked" });
    expect([ready.chains[b.caip2].index, ready.chains[b.caip2].node]).toEqual([false, "unchecked"]);
    const readyText = JSON.stringify(ready);
    for (const word of ["provider-secret-text", "127.0.0.1", "The node of"]) expect(readyText).not.toContain(word);
    const onA = await signed(three.keys.users[1]!, a, "written on A while B is down");
    const writtenOnA = await post(service, "/v1/delegated-attest", onA);
    expect([writtenOnA.status, writtenOnA.body.chain]).toEqual([200, "ATS Devnet"]);
    const listedOnA = await get(service, `/v1/attestations?attester=${onA.attester}&chain=${a.caip2}`);
    expect(listedOnA.status).toBe(200);
    expect(listedOnA.body.items.map((item: { attestation: { uid: string } }) => item.attestation.uid)).toContain(writtenOnA.body.uid);

    // B: its nonce, a write signed for it and its reads answer the failing chain's 5xx.
    const attester = privateKeyToAccount(three.keys.users[2]!).address;
    expectFailedClosed(await get(service, `/v1/nonce?attester=${attester}&chainId=${b.chainId}`), ["RPC_ERROR"]);
    const onB = await signed(three.keys.users[2]!, b, "written on B once it answers");
    expectFailedClosed(await post(service, "/v1/delegated-attest", onB), ["RPC_ERROR", "SUBMISSION_FAILED"]);
    expectFailedClosed(await get(service, `/v1/attestations?attester=${attester}&chain=${b.caip2}`), ["INDEX_STALE", "RPC_ERROR"]);
    // P: a transaction proof answers 500 RPC_ERROR.
    expectFailedClosed(await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${proofTx}`), ["RPC_ERROR"]);
    // Nothing but the chain-id check reached either node (no read, no send, no follower poll).
    expect(methodsSince(b.proxy, from.b)).toEqual(new Set(["eth_chainId"]));
    expect(methodsSince(proof.proxy, from.proof)).toEqual(new Set(["eth_chainId"]));

    // The providers are back: each chain's id is checked on its next exchange, then the chain serves.
    restore(b.proxy);
    restore(proof.proxy);
    const nonce = await waitFor("chain B's nonce read", async () => {
      const answer = await get(service, `/v1/nonce?attester=${attester}&chainId=${b.chainId}`);
      return answer.status === 200 ? answer.body : undefined;
    });
    expect(nonce.chainId).toBe(b.chainId);
    const writtenOnB = await post(service, "/v1/delegated-attest", await signed(three.keys.users[2]!, b, "written on B once it answers"));
    expect([writtenOnB.status, writtenOnB.body.chain]).toEqual([200, "ATS Devnet 2"]);
    const onChainB = await createPublicClient({ cacheTime: 0, transport: http(b.nodeUrl) })
      .readContract({ address: b.easAddress!, abi: EAS_ABI, functionName: "getAttestation", args: [writtenOnB.body.uid as Hex] });
    expect(onChainB.attester).toBe(attester);
    const listedOnB = await waitFor("chain B's index listing the write", async () => {
      const answer = await get(service, `/v1/attestations?attester=${attester}&chain=${b.caip2}`);
      return answer.status === 200 ? answer.body : undefined;
    });
    expect(listedOnB.items.map((item: { attestation: { uid: string } }) => item.attestation.uid)).toContain(writtenOnB.body.uid);
    const txProof = await waitFor("the proof chain's transaction proof", async () => {
      const answer = await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${proofTx}`);
      return answer.status === 200 ? answer.body : undefined;
    });
    expect([txProof.chain, txProof.status, txProof.to]).toEqual([proof.caip2, "success", APP]);
    // /readyz: every node checked, B's index fresh again.
    const readyAgain = await waitFor("/readyz naming every node checked and B's index fresh", async () => {
      const answer = await get(service, "/readyz");
      return answer.status === 200 && answer.body.chains[b.caip2].index === true ? answer.body : undefined;
    });
    expect(readyAgain.nodes).toEqual({ [a.caip2]: "checked", [b.caip2]: "checked", [proof.caip2]: "checked" });
    expect(readyAgain.chains[b.caip2].node).toBe("checked");
    // The service logs before it answers, but its stderr reaches this process on its own pipe: read until it came.
    const checkedLine = (chain: TestChain) => new RegExp(`"event":"chain_checked"[^\n]*"chain":"${chain.caip2}"`);
    const log = await waitFor("both checks logged", () => {
      const tail = service.stderrTail();
      return [b, proof].every((chain) => checkedLine(chain).test(tail)) ? tail : undefined;
    });
    for (const chain of [b, proof]) {
      expect(log).toMatch(new RegExp(`"event":"chain_unchecked"[^\n]*"chain":"${chain.caip2}"`));
      expect(log).toMatch(new RegExp(`"event":"chain_checked"[^\n]*"chain":"${chain.caip2}"`));
    }
    expect(log).toMatch(/"event":"chain_ws_unchecked"[^\n]*"chain":"eip155:31338"/);
    expect(log).not.toContain("chain_wrong_node");
  } finally {
    restore(b.proxy);
    restore(proof.proxy);
    expect(await service.stop()).toBe(0);
  }
}, 180_000);

test("a node found answering another chain's id after the start: its chain stays closed (never served, even once the node answers right again), logged at error level", async () => {
  const [, , proof] = three.chains;
  down(proof.proxy);
  const from = proof.proxy.calls.length;
  const service = await startServiceProcess(env("wrong-later"), 60_000).catch((error: unknown) => {
    restore(proof.proxy);
    throw error;
  });
  try {
    restore(proof.proxy);
    answersChain(proof.proxy, 31337);
    const logged = await waitFor("the wrong node logged", async () => {
      expectFailedClosed(await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${proofTx}`), ["RPC_ERROR"]);
      return service.stderrTail().split("\n").find((line) => line.includes("chain_wrong_node"));
    });
    expect(JSON.parse(logged)).toMatchObject({ level: "error", event: "chain_wrong_node", chain: proof.caip2, problem: "CHAINS_FILE: the rpcUrl of eip155:31339 answers chain 31337" });
    // /readyz names the proof chain's node wrong, and stays ready (the default chain serves), with no provider text.
    const ready = await waitFor("the instance ready on the default chain", async () => {
      const answer = await get(service, "/readyz");
      return answer.status === 200 ? answer : undefined;
    });
    expect(ready.body.nodes[proof.caip2]).toBe("wrong");
    expect(ready.text).not.toContain("answers chain");
    // The node answers its own chain again: the chain stays closed until a restart, and is not asked again.
    restore(proof.proxy);
    const checks = proof.proxy.calls.length;
    for (let i = 0; i < 3; i++) expectFailedClosed(await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${proofTx}`), ["RPC_ERROR"]);
    expect(proof.proxy.calls.length).toBe(checks);
    expect(methodsSince(proof.proxy, from)).toEqual(new Set(["eth_chainId"]));
  } finally {
    restore(proof.proxy);
    expect(await service.stop()).toBe(0);
  }
}, 120_000);

test("a node that answers another chain's id (or has no EAS) at start still stops the start, naming the chain", async () => {
  const [, b, proof] = three.chains;
  const cases: [TestChain, () => void, string][] = [
    [b, () => answersChain(b.proxy, 31337), `CHAINS_FILE: the rpcUrl of ${b.caip2} answers chain 31337`],
    [proof, () => answersChain(proof.proxy, 31337), `CHAINS_FILE: the rpcUrl of ${proof.caip2} answers chain 31337`],
    // The node answers, with no code at the anchored EAS address: a misconfiguration, not an outage.
    [b, () => void (b.proxy.onAnswer = (call, answer) => (call.method === "eth_call" ? { ...answer, result: "0x" } : answer)), `No EAS contract answers at ${b.easAddress} on ${b.caip2}`],
  ];
  for (const [chain, breakIt, line] of cases) {
    breakIt();
    try {
      const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "main.ts")], {
        env: { PATH: process.env.PATH ?? "", HOME: dir, ...env(`refused-${chain.chainId}`), LOG_LEVEL: "error" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
      expect([code, stderr.trim()]).toEqual([1, `ats: ${line}`]);
    } finally {
      restore(chain.proxy);
    }
  }
}, 60_000);

test("served chains whose providers flap (503) and then reach another chain's node: each is checked again on its next exchange and closed for good (5xx), never serving the other chain's nonces, index or proofs under its name", async () => {
  const [a, b, proof] = three.chains;
  const upstreams = { b: b.proxy.upstream, proof: proof.proxy.upstream };
  const service = await startServiceProcess({ ...env("flap-other-chain"), INDEX_POLL_MS: "200" }, 60_000);
  try {
    // Every chain served from the start; B's index fresh.
    const key = three.keys.users[3]!;
    const attester = privateKeyToAccount(key).address;
    await waitFor("chain B's index fresh", async () => (await get(service, `/v1/attestations?attester=${attester}&chain=${b.caip2}`)).status === 200 || undefined);
    expect(String((await get(service, `/v1/nonce?attester=${attester}&chainId=${b.chainId}`)).body.nonce)).toBe("0");
    // An attestation written on A (the default chain): A's nonce of the attester is 1, B's is 0.
    const writtenOnA = await post(service, "/v1/delegated-attest", await signed(key, a, "written on A only"));
    expect(writtenOnA.status).toBe(200);
    // The providers of B and P answer 503 for a while (B's follower polls, a proof is asked on P)...
    down(b.proxy);
    down(proof.proxy);
    const failedFrom = b.proxy.calls.length;
    expectFailedClosed(await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${proofTx}`), ["RPC_ERROR"]);
    await waitFor("B's follower answered 503", () => b.proxy.calls.length > failedFrom || undefined);
    // ...then their URLs reach A's node.
    b.proxy.upstream = a.nodeUrl;
    proof.proxy.upstream = a.nodeUrl;
    restore(b.proxy);
    restore(proof.proxy);
    // Each chain's next exchange checks its node's chain id first: 5xx, not A's nonce (1) or A's transaction as P's.
    expectFailedClosed(await get(service, `/v1/nonce?attester=${attester}&chainId=${b.chainId}`), ["RPC_ERROR"]);
    expectFailedClosed(await get(service, `/v1/tx-proofs?chain=${proof.chainId}&txHash=${writtenOnA.body.txHash}`), ["RPC_ERROR"]);
    const wrongLine = (chain: TestChain) => new RegExp(`"event":"chain_wrong_node"[^\n]*"chain":"${chain.caip2}"`);
    const log = await waitFor("both wrong nodes logged", () => {
      const tail = service.stderrTail();
      return [b, proof].every((chain) => wrongLine(chain).test(tail)) ? tail : undefined;
    });
    for (const chain of [b, proof]) expect(log).toMatch(new RegExp(`"event":"chain_recheck"[^\n]*"chain":"${chain.caip2}"`));
    // Past a few of B's polls, B's index lists nothing of A's, and /readyz names both nodes wrong, A serving.
    const ready = await waitFor("the instance ready on the default chain, B's index not fresh", async () => {
      const answer = await get(service, "/readyz");
      return answer.status === 200 && answer.body.chains[b.caip2].index === false ? answer.body : undefined;
    });
    expect(ready.nodes).toEqual({ [a.caip2]: "checked", [b.caip2]: "wrong", [proof.caip2]: "wrong" });
    for (let i = 0; i < 5; i++) {
      const listedOnB = await get(service, `/v1/attestations?attester=${attester}&chain=${b.caip2}`);
      if (listedOnB.status === 200) expect(listedOnB.body.items).toEqual([]);
      else expectFailedClosed(listedOnB, ["INDEX_STALE", "RPC_ERROR"]);
      expectFailedClosed(await get(service, `/v1/nonce?attester=${attester}&chainId=${b.chainId}`), ["RPC_ERROR"]);
      await Bun.sleep(200);
    }
    expect(service.stderrTail()).not.toContain("index_deep_reorg");
    // A serves on: its nonce of the attester is 1.
    expect(String((await get(service, `/v1/nonce?attester=${attester}&chainId=${a.chainId}`)).body.nonce)).toBe("1");
  } finally {
    b.proxy.upstream = upstreams.b;
    proof.proxy.upstream = upstreams.proof;
    restore(b.proxy);
    restore(proof.proxy);
    expect(await service.stop()).toBe(0);
  }
}, 120_000);
