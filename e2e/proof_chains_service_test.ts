// Proof chains in the running service (decisions §30, issue 48 item 5): `bun main.ts` with a CHAINS_FILE naming two
// attestation chains and a proof chain, each behind a proxy that counts JSON-RPC calls. A transaction on the proof chain
// is confirmed by /v1/tx-proofs and /v1/interactions through that chain's own RPC, its receipt read once; a contract
// there is proven by owner() (subject ownership, controller authorization); a review's tx-interaction proof on it is checked through the service; a chain the file
// does not list is not checked (400 UNSUPPORTED_CHAIN for a tx proof)
// and costs no call anywhere; the attestation chains see nothing of these requests.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { checkReviewProof, readServiceTransaction } from "../client/reviews.ts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { ownedContract } from "./support/owned_contract.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { startThreeChains, threeChainsServiceEnv, type ThreeChains } from "./support/three_chains.ts";

const APP = "0x1111111111111111111111111111111111111111";
const dir = mkdtempSync(join(tmpdir(), "ats-proof-chains-"));
let three: ThreeChains;
let service: ServiceProcess;
/** The operator's explorer for the proof chain (EXPLORER_API_URLS): txlist answers by address. */
let explorer: ReturnType<typeof Bun.serve>;
const explorerTxs = new Map<string, Record<string, string>[]>();

beforeAll(async () => {
  three = await startThreeChains({ dataDir: dir });
  explorer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const result = explorerTxs.get((new URL(request.url).searchParams.get("address") ?? "").toLowerCase()) ?? [];
      return Response.json(result.length === 0 ? { status: "0", message: "No transactions found", result: [] } : { status: "1", message: "OK", result });
    },
  });
  service = await startServiceProcess({
    ...threeChainsServiceEnv(three, dir),
    EXPLORER_API_URLS: `31339=http://127.0.0.1:${explorer.port}/api`,
    LOG_LEVEL: "error",
    ...TEST_RELAY_LIMITS,
  }, 60_000);
}, 180_000);

afterAll(async () => {
  if (service !== undefined) expect(await service.stop()).toBe(0);
  await explorer?.stop(true);
  await three?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const proofChain = () => {
  const proof = three.chains[2];
  return defineChain({ id: proof.chainId, name: "proofs", nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 }, rpcUrls: { default: { http: [proof.nodeUrl] } } });
};

async function get(path: string): Promise<{ status: number; body: Record<string, any> }> {
  const res = await fetch(`${service.url}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any> };
}

/** Calls on a chain whose parameters name `hash`. */
const callsNaming = (chainId: number, hash: string) =>
  three.chains.find((c) => c.chainId === chainId)!.proxy.calls.filter((call) => JSON.stringify(call.params ?? []).toLowerCase().includes(hash.toLowerCase())).length;

/**
 * Mines the 12 blocks that settle a transaction (the chains file names no confirmations: 12). A receipt nearer the
 * head is read again at each ask, as a reorganisation may still take it back (e2e/tx_proofs_reorg_test.ts).
 */
async function settle(rpcUrl: string): Promise<void> {
  await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: ["0xc"] }) });
}

test("a transaction on the proof chain: /v1/tx-proofs and /v1/interactions confirm it, its receipt read once across requests; the attestation chains see none of it", async () => {
  const user = privateKeyToAccount(three.keys.users[0]!);
  const chain = proofChain();
  const hash = await createWalletClient({ chain, account: user, transport: http(chain.rpcUrls.default.http[0]) }).sendTransaction({ to: APP, value: 1n });
  const mined = await createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }).waitForTransactionReceipt({ hash, pollingInterval: 50 });
  await settle(chain.rpcUrls.default.http[0]!);
  explorerTxs.set(user.address.toLowerCase(), [
    { hash, from: user.address.toLowerCase(), to: APP, isError: "0", txreceipt_status: "1", blockNumber: String(mined.blockNumber) },
  ]);

  const before = three.calls(31339);
  for (let i = 0; i < 2; i++) {
    const proof = await get(`/v1/tx-proofs?chain=eip155:31339&txHash=${hash}`);
    expect(proof.status).toBe(200);
    expect(proof.body).toMatchObject({ chain: "eip155:31339", txHash: hash, from: user.address.toLowerCase(), to: APP, status: "success", blockNumber: Number(mined.blockNumber) });
    const interaction = await get(`/v1/interactions?chain=31339&wallet=${user.address}&contract=${APP}`);
    expect(interaction.status).toBe(200);
    expect(interaction.body).toEqual({ status: "verified", txHash: hash, blockNumber: Number(mined.blockNumber) });
  }
  // One receipt, the head it was judged settled by, and one block time on the proof chain for the four answers, and
  // nothing else there.
  expect(three.calls(31339, "eth_getTransactionReceipt")).toBe(1);
  expect(three.calls(31339, "eth_getBlockByNumber")).toBe(1);
  expect(three.calls(31339, "eth_blockNumber")).toBe(1);
  expect(three.calls(31339) - before).toBe(3);
  // The attestation chains' followers poll on their own; none of their calls is about this transaction.
  expect(callsNaming(31337, hash)).toBe(0);
  expect(callsNaming(31338, hash)).toBe(0);
  expect(three.calls(31337, "eth_getTransactionReceipt") + three.calls(31338, "eth_getTransactionReceipt")).toBe(0);
}, 60_000);

test("a chain the file does not list: /v1/interactions not checked, /v1/tx-proofs 400 UNSUPPORTED_CHAIN, no JSON-RPC call on any chain", async () => {
  const hash = `0x${"ab".repeat(32)}`;
  const wallet = privateKeyToAccount(three.keys.users[1]!).address;
  const proofCalls = three.calls(31339);
  const interaction = await get(`/v1/interactions?chain=eip155:8453&wallet=${wallet}&contract=${APP}`);
  expect(interaction).toEqual({ status: 200, body: { status: "not-checked", reason: "chain-not-read" } });
  const proof = await get(`/v1/tx-proofs?chain=8453&txHash=${hash}`);
  expect(proof.status).toBe(400);
  expect(proof.body.code).toBe("UNSUPPORTED_CHAIN");
  expect(three.calls(31339)).toBe(proofCalls);
  for (const chainId of [31337, 31338, 31339]) expect(callsNaming(chainId, hash)).toBe(0);
});

test("contract ownership on the proof chain: a contract there is proven by its owner() and is its controller's live evidence, read on that chain; a chain not read is not checked, never verified", async () => {
  const owner = privateKeyToAccount(three.keys.users[2]!);
  const chain = proofChain();
  const { abi, bytecode } = await ownedContract();
  const created = await createWalletClient({ chain, account: owner, transport: http(chain.rpcUrls.default.http[0]) }).deployContract({ abi, bytecode });
  const contract = (await createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) }).waitForTransactionReceipt({ hash: created, pollingInterval: 50 }))
    .contractAddress as Hex;
  const verify = async (subjectDid: string) => {
    const res = await fetch(`${service.url}/api/verify/subject-ownership`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ subjectDid, connectedWalletDid: `did:pkh:eip155:31337:${owner.address.toLowerCase()}` }),
    });
    return { status: res.status, body: await res.json() as Record<string, any> };
  };
  const ownerCalls = three.calls(31339, "eth_call");
  expect((await verify(`did:pkh:eip155:31339:${contract.toLowerCase()}`)).body).toMatchObject({ ok: true, status: "verified", method: "contract" });
  expect(three.calls(31339, "eth_call") - ownerCalls).toBe(1);
  expect(callsNaming(31337, contract.slice(2)) + callsNaming(31338, contract.slice(2))).toBe(0);

  // Controller authorization (§25): the contract's owner() on its chain is live evidence, kept as discovery's is.
  const authorization = (subjectDid: string, controller: string) =>
    get(`/v1/controller-authorization?subjectDid=${subjectDid}&controllerDid=did:pkh:eip155:31337:${controller.toLowerCase()}`);
  const subject = `did:pkh:eip155:31339:${contract.toLowerCase()}`;
  const live = await authorization(subject, owner.address);
  expect(live.status).toBe(200);
  expect(live.body).toMatchObject({ authorized: true, currentlyVerified: true, liveMethod: "contract-ownership" });
  const other = await authorization(subject, privateKeyToAccount(three.keys.users[4]!).address);
  expect(other.body).toMatchObject({ authorized: false, currentlyVerified: false, liveMethod: null });
  expect(three.calls(31339, "eth_call") - ownerCalls).toBe(2);

  const calls = three.chains.map((c) => three.calls(c.chainId, "eth_call") + three.calls(c.chainId, "eth_getCode"));
  const elsewhere = await verify(`did:pkh:eip155:8453:${contract.toLowerCase()}`);
  expect(elsewhere.body).toMatchObject({ ok: false, status: "failed", error: "The subject is on another chain", details: "Contract subjects are proven on eip155:31337, eip155:31338, eip155:31339 only" });
  const unread = await authorization(`did:pkh:eip155:8453:${contract.toLowerCase()}`, owner.address);
  expect(unread.body).toMatchObject({ authorized: false, currentlyVerified: false, liveMethod: null });
  expect(three.chains.map((c) => three.calls(c.chainId, "eth_call") + three.calls(c.chainId, "eth_getCode"))).toEqual(calls);
}, 60_000);

test("a review's tx-interaction proof on the proof chain is verified through the service; one on a chain not read is not checked", async () => {
  const user = privateKeyToAccount(three.keys.users[3]!);
  const chain = proofChain();
  const reads = createPublicClient({ chain, transport: http(chain.rpcUrls.default.http[0]) });
  const hash = await createWalletClient({ chain, account: user, transport: http(chain.rpcUrls.default.http[0]) }).sendTransaction({ to: APP, value: 1n });
  const mined = await reads.waitForTransactionReceipt({ hash, pollingInterval: 50 });
  await settle(chain.rpcUrls.default.http[0]!);
  const blockTime = (await reads.getBlock({ blockNumber: mined.blockNumber })).timestamp;
  // A review of the app's contract on the proof chain, by the wallet that used it, after it did.
  const review = { attester: user.address, subject: `did:pkh:eip155:31339:${APP}`, time: blockTime + 60n };
  const wrapper = (chainId: number) => ({ proofType: "tx-interaction", proofPurpose: "commercial-tx", proofObject: { chainId: `eip155:${chainId}`, txHash: hash } });
  const options = { otherChains: (chainId: number, txHash: Hex) => readServiceTransaction(chainId, txHash, { baseUrl: service.url }) };
  const receipts = three.calls(31339, "eth_getTransactionReceipt");
  expect(await checkReviewProof(wrapper(31339), review, options)).toMatchObject({ valid: true, reasons: [], transaction: { chainId: 31339, txHash: hash, senderRelation: "attester" } });
  expect(await checkReviewProof(wrapper(31339), review, options)).toMatchObject({ valid: true });
  expect(three.calls(31339, "eth_getTransactionReceipt") - receipts).toBe(1);
  // The same proof from another wallet's review: the chain's answer, judged by the rules.
  expect(await checkReviewProof(wrapper(31339), { ...review, attester: privateKeyToAccount(three.keys.users[4]!).address }, options)).toMatchObject({ valid: false });
  // A chain the deployment does not read: reported as not checked, never valid.
  const elsewhere = await checkReviewProof(wrapper(8453), { ...review, subject: `did:pkh:eip155:8453:${APP}` }, options);
  expect(elsewhere).toMatchObject({ valid: false, reasons: ["eip155:8453 is not the chain this verifier reads"] });
}, 60_000);
