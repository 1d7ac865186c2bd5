/**
 * Sending by EIP-7966 `eth_sendRawTransactionSync` (issue 28, RPC_SEND_SYNC): on a real Anvil behind the counting
 * JSON-RPC proxy. The node mines on arrival: one exchange for the send and its receipt. It does not: the wallet's
 * lock is let go after the grace, the next send is not held behind the first's block, both land. The node lacks the
 * method: one plain send of the same bytes, and no sync call again. The sync answer is lost, or refused: the outcome
 * keeps the meaning of decisions §15, and nothing is sent twice but the same bytes.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "bun:test";
import { createPublicClient, createTestClient, type Hex, http, keccak256 } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createViemEas } from "../adapters/chain/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import type { SignedTx } from "../ports/eas.ts";
import { startStack, type Stack } from "./harness.ts";
import { postDelegatedAttest, replayRecordOf, signedReviewBody } from "./support/review_signer.ts";
import { inFrontOf, isSend, type RpcCall, type RpcProxy, startRpcProxy } from "./support/rpc_proxy.ts";

const SYNC = "eth_sendRawTransactionSync";
const PLAIN = "eth_sendRawTransaction";
/**
 * The sync grace of the senders that talk to a node mining on arrival: longer than the JSON-RPC client's own timeout,
 * so the node's answer (or the proxy's in its place) decides, however late a loaded machine delivers it. With the
 * 100 ms default, a late answer sends the sender to ask about the hash and poll for the receipt, and the calls counted
 * here would depend on the machine's speed. The test of a node that does not mine on arrival keeps the default.
 */
const ANSWER_AWAITED_MS = 120_000;
let proxy: RpcProxy;
let stack: Stack;

beforeAll(async () => {
  proxy = startRpcProxy("");
  stack = await startStack({ rpcUrlFor: inFrontOf(proxy), sendSyncGraceMs: ANSWER_AWAITED_MS });
});
afterAll(async () => {
  await stack?.stop();
  await proxy?.stop();
});
beforeEach(() => {
  proxy.onHttp = undefined;
  proxy.onCall = undefined;
  proxy.onAnswered = undefined;
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });
const testClient = () => createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });
const delegate = () => privateKeyToAccount(stack.devnet.keys.delegate).address;
const nonceOf = (address: Hex) => chain().getTransactionCount({ address });

/** The transaction a call is about: the hash of the bytes it sends, or the hash it names. */
const hashOf = (call: RpcCall): string => {
  const param = String(call.params?.[0] ?? "").toLowerCase();
  return isSend(call.method) ? keccak256(param as Hex) : param;
};

/** The proxy's calls from `mark` on that send, or ask about, one of `hashes` (the service's other traffic left out). */
function callsFor(mark: number, hashes: readonly Hex[]): RpcCall[] {
  const ours = new Set(hashes.map((h) => h.toLowerCase()));
  return proxy.calls.slice(mark).filter((c) => ours.has(hashOf(c)));
}

const attest = (body: unknown, base = stack.baseUrl) => postDelegatedAttest(base, body);

async function review() {
  const key = generatePrivateKey();
  return await signedReviewBody({ chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids }, key);
}

const replayRow = (signature: Hex) => replayRecordOf(stack.dir, stack.service.chainId, signature);

/** Waits until `check` holds (polling; no timing is asserted). */
async function until(check: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 1_000; i++) {
    if (await check()) return;
    await Bun.sleep(10);
  }
  throw new Error("the condition never held");
}

/**
 * A wallet of its own with a sender of its own (what the sender learns about the node stays with it), through the
 * proxy; `signed` lists its transactions in the order they were stored, `events` what it logged.
 */
async function ownSender({ productionGrace = false }: { productionGrace?: boolean } = {}) {
  const key = generatePrivateKey();
  const wallet = privateKeyToAccount(key).address;
  await testClient().setBalance({ address: wallet, value: 10n ** 18n });
  const events: string[] = [];
  const eas = createViemEas({
    rpcUrl: proxy.url,
    chainId: stack.devnet.chainId,
    easAddress: stack.service.easAddress,
    log: (event) => void events.push(event),
    sendSyncGraceMs: productionGrace ? undefined : ANSWER_AWAITED_MS,
  });
  const sender = eas.senderFor(key);
  const signed: SignedTx[] = [];
  /** A value transfer to itself, or a call EAS reverts (it has no fallback). */
  const send = (kind: "transfer" | "revert" = "transfer") =>
    sender.send({
      to: kind === "transfer" ? wallet : stack.service.easAddress,
      data: "0x",
      gas: kind === "transfer" ? 21_000n : 100_000n,
      onSigned: async (tx) => void signed.push(tx),
    });
  return { wallet, send, signed, events };
}

describe("eth_sendRawTransactionSync on a node that mines on arrival", () => {
  test("a delegated attestation's send and receipt are one exchange: no plain send, no receipt poll", async () => {
    const body = await review();
    const before = await nonceOf(delegate());
    const mark = proxy.calls.length;
    const res = await attest(body);
    expect(res.status).toBe(200);
    const calls = proxy.calls.slice(mark);
    expect(calls.filter((c) => c.method === SYNC)).toHaveLength(1);
    expect(calls.filter((c) => [PLAIN, "eth_getTransactionReceipt", "eth_getTransactionByHash"].includes(c.method))).toEqual([]);
    expect(keccak256(calls.find((c) => c.method === SYNC)!.params[0] as Hex)).toBe(res.body.txHash);
    expect(await nonceOf(delegate())).toBe(before + 1);
    expect(await replayRow(body.signature)).toMatchObject({ state: "mined", uid: res.body.uid });
    const uid = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [res.body.uid] });
    expect(uid.attester).toBe(body.attester);
  });

  test("a reverted transaction is reverted from the sync answer's receipt", async () => {
    const own = await ownSender();
    const mark = proxy.calls.length;
    const outcome = await own.send("revert");
    expect(outcome).toMatchObject({ ok: false, reason: "reverted", txHash: own.signed[0]!.txHash });
    expect(callsFor(mark, [own.signed[0]!.txHash]).map((c) => c.method)).toEqual([SYNC]);
    expect((await chain().getTransactionReceipt({ hash: own.signed[0]!.txHash })).status).toBe("reverted");
  });

  test("the sync answer is lost after the node took it: settled by the hash as accepted (200), the same bytes only, one nonce", async () => {
    const body = await review();
    const before = await nonceOf(delegate());
    proxy.onAnswered = (calls) => (calls.some((c) => c.method === SYNC) ? new Response("bad gateway", { status: 502 }) : undefined);
    const mark = proxy.calls.length;
    const res = await attest(body);
    expect(res.status).toBe(200);
    expect(res.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    const calls = callsFor(mark, [res.body.txHash]);
    // Not retried by the JSON-RPC client, not sent again: the node was asked about the hash and holds it; then the
    // receipt is polled, as after a plain send.
    expect(calls.filter((c) => c.method !== "eth_getTransactionReceipt").map((c) => c.method)).toEqual([SYNC, "eth_getTransactionByHash"]);
    expect(calls.filter((c) => c.method === "eth_getTransactionReceipt").length).toBeGreaterThan(0);
    expect(proxy.calls.slice(mark).filter((c) => isSend(c.method))).toHaveLength(1);
    expect(await nonceOf(delegate())).toBe(before + 1);
    expect(await replayRow(body.signature)).toMatchObject({ state: "mined", txHash: res.body.txHash, uid: res.body.uid });
    proxy.onAnswered = undefined;
    expect((await attest(body)).body).toMatchObject({ code: "DUPLICATE", details: res.body.uid });
  });

  test("a refused sync send is refused: 500 SUBMISSION_FAILED, the same bytes tried plainly once, nothing on chain, released", async () => {
    const body = await review();
    const before = await nonceOf(delegate());
    proxy.onCall = (call) => (isSend(call.method) ? { code: -32000, message: "replacement transaction underpriced" } : undefined);
    const mark = proxy.calls.length;
    const refused = await attest(body);
    expect([refused.status, refused.body.code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(JSON.stringify(refused.body)).not.toContain("underpriced");
    const sent = proxy.calls.slice(mark).filter((c) => isSend(c.method));
    expect(sent.map((c) => c.method)).toEqual([SYNC, PLAIN]);
    expect(sent[1]!.params[0]).toBe(sent[0]!.params[0]);
    expect(callsFor(mark, [keccak256(sent[0]!.params[0] as Hex)]).map((c) => c.method)).toEqual([SYNC, PLAIN, "eth_getTransactionByHash"]);
    expect(await nonceOf(delegate())).toBe(before);
    expect(await replayRow(body.signature)).toBeUndefined();
    // The refusal was the node's, not the method's: the next send goes by the sync method again.
    proxy.onCall = undefined;
    const next = proxy.calls.length;
    expect((await attest(body)).status).toBe(200);
    expect(proxy.calls.slice(next).filter((c) => isSend(c.method)).map((c) => c.method)).toEqual([SYNC]);
  });

  test("RPC_SEND_SYNC=off: a plain send and receipt polls", async () => {
    const plain = await stack.restartService({ RPC_SEND_SYNC: "off" });
    try {
      const mark = proxy.calls.length;
      const res = await attest(await review(), plain.url);
      expect(res.status).toBe(200);
      const methods = callsFor(mark, [res.body.txHash]).map((c) => c.method);
      expect(methods[0]).toBe(PLAIN);
      expect(methods.slice(1).length).toBeGreaterThan(0);
      expect(methods.slice(1).every((m) => m === "eth_getTransactionReceipt")).toBe(true);
    } finally {
      await plain.stop();
    }
  });
});

describe("a node that does not mine on arrival", () => {
  test("the first sync send lets go of the wallet's lock after the grace; the second is not held behind it for a block; both land", async () => {
    // The production grace: the node holds the sync call until its block, which only the test mines.
    const own = await ownSender({ productionGrace: true });
    const start = await nonceOf(own.wallet);
    const blockBefore = await chain().getBlockNumber({ cacheTime: 0 });
    let syncAnswers = 0;
    proxy.onAnswered = (calls) => void (syncAnswers += calls.filter((c) => c.method === SYNC).length);
    // The question about the first's hash goes on once the node holds it: the 100 ms grace is the sender's, but how
    // soon the sync call reaches the node (through this process's proxy) is the machine's; asked before, the node
    // says "absent" and the same bytes go again plainly (red when the sync call was 300 ms on its way).
    proxy.onHttp = async (calls) => {
      const asked = calls.find((c) => c.method === "eth_getTransactionByHash")?.params[0] as Hex | undefined;
      if (asked !== undefined) await until(async () => await chain().getTransaction({ hash: asked }).then(() => true, () => false));
      return undefined;
    };
    const mark = proxy.calls.length;
    await testClient().setAutomine(false);
    let first: ReturnType<typeof own.send>;
    let second: ReturnType<typeof own.send>;
    try {
      first = own.send();
      second = own.send();
      // Wait until both transactions went to the node (no time is asserted).
      await until(() => proxy.calls.slice(mark).filter((c) => isSend(c.method)).length >= 2);
      const hashes = own.signed.map((tx) => tx.txHash);
      expect(own.signed.map((tx) => tx.nonce)).toEqual([start, start + 1]);
      // The first went by the sync method, was found pending by its hash, and the second then went plainly.
      expect(callsFor(mark, hashes).filter((c) => c.method !== "eth_getTransactionReceipt").map((c) => [c.method, hashes.indexOf(hashOf(c) as Hex)]))
        .toEqual([[SYNC, 0], ["eth_getTransactionByHash", 0], [PLAIN, 1]]);
      // All while the node mined nothing and still held the first sync call: the second was not held behind its block.
      expect(await chain().getBlockNumber({ cacheTime: 0 })).toBe(blockBefore);
      expect(syncAnswers).toBe(0);
      expect(await chain().getTransactionCount({ address: own.wallet, blockTag: "pending" })).toBe(start + 2);
      await testClient().mine({ blocks: 1 });
    } finally {
      await testClient().setAutomine(true);
    }
    const [a, b] = await Promise.all([first, second]);
    expect([a.ok, b.ok]).toEqual([true, true]);
    if (!a.ok || !b.ok) return;
    expect([a.txHash, b.txHash]).toEqual(own.signed.map((tx) => tx.txHash));
    expect(a.blockNumber).toBe(blockBefore + 1n);
    expect(b.blockNumber).toBe(blockBefore + 1n);
    expect(await nonceOf(own.wallet)).toBe(start + 2);
    // Each transaction went to the node once; the sync method now rests, said once in the log.
    expect(proxy.calls.slice(mark).filter((c) => isSend(c.method))).toHaveLength(2);
    expect(own.events.filter((e) => e === "send_sync_paused")).toHaveLength(1);
    const third = proxy.calls.length;
    expect((await own.send()).ok).toBe(true);
    expect(callsFor(third, [own.signed[2]!.txHash]).filter((c) => isSend(c.method)).map((c) => c.method)).toEqual([PLAIN]);
  });
});

describe("a node without eth_sendRawTransactionSync", () => {
  test("-32601: the same bytes go plainly at once, under the same nonce; the next sends never try the sync method; both outcomes right", async () => {
    const own = await ownSender();
    const start = await nonceOf(own.wallet);
    proxy.onCall = (call) => (call.method === SYNC ? { code: -32601, message: "Method not found" } : undefined);
    const mark = proxy.calls.length;
    const mined = await own.send();
    expect(mined).toMatchObject({ ok: true, txHash: own.signed[0]!.txHash });
    const first = callsFor(mark, [own.signed[0]!.txHash]);
    expect(first.filter((c) => c.method !== "eth_getTransactionReceipt").map((c) => c.method)).toEqual([SYNC, PLAIN]);
    expect(first[1]!.params[0]).toBe(first[0]!.params[0]);
    expect(own.events).toContain("send_sync_off");
    const next = proxy.calls.length;
    const reverted = await own.send("revert");
    expect(reverted).toMatchObject({ ok: false, reason: "reverted", txHash: own.signed[1]!.txHash });
    expect(proxy.calls.slice(next).filter((c) => c.method === SYNC)).toEqual([]);
    expect(callsFor(next, [own.signed[1]!.txHash]).filter((c) => isSend(c.method)).map((c) => c.method)).toEqual([PLAIN]);
    expect(own.signed.map((tx) => tx.nonce)).toEqual([start, start + 1]);
    expect(await nonceOf(own.wallet)).toBe(start + 2);
  });

  test("a refusal in other words that the plain method does not share: sent plainly, and the sync method is left for good", async () => {
    const own = await ownSender();
    proxy.onCall = (call) => (call.method === SYNC ? { code: -32000, message: "rpc gateway: call rejected" } : undefined);
    const mark = proxy.calls.length;
    expect((await own.send()).ok).toBe(true);
    expect(callsFor(mark, [own.signed[0]!.txHash]).filter((c) => isSend(c.method)).map((c) => c.method)).toEqual([SYNC, PLAIN]);
    proxy.onCall = undefined;
    const next = proxy.calls.length;
    expect((await own.send()).ok).toBe(true);
    expect(callsFor(next, [own.signed[1]!.txHash]).filter((c) => isSend(c.method)).map((c) => c.method)).toEqual([PLAIN]);
  });
});
