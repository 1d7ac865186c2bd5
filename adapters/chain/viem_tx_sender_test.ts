/**
 * The sender's use of `eth_sendRawTransactionSync` against a hand-written node (the answers no Anvil gives on demand:
 * "already known", an internal error, an answer that is not the receipt, bytes still on their way). The cases a real
 * Anvil can show are in e2e/send_sync_test.ts.
 */
import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { SignedTx } from "../../ports/eas.ts";
import type { WalletNonces } from "../../ports/storage.ts";
import { type CallOptions, createJsonRpc, type JsonRpc, NodeRpcError, RpcTransportError } from "./json_rpc.ts";
import { createTxSender, type SendSyncMode } from "./viem_tx_sender.ts";

type Call = { readonly method: string; readonly params: readonly unknown[]; readonly options: CallOptions | undefined };
type Answer = (call: Call) => unknown;

/** A node: `answers` by method (a function of the call, a value, or an Error to throw); the reads a send needs by default. */
function fakeNode(answers: Record<string, Answer>) {
  const calls: Call[] = [];
  const defaults: Record<string, Answer> = {
    eth_gasPrice: () => "0x3b9aca00",
    eth_maxPriorityFeePerGas: () => "0x1",
    eth_getTransactionCount: () => "0x7",
    eth_getTransactionReceipt: () => null,
  };
  const rpc: JsonRpc = {
    async request<T>(method: string, params: readonly unknown[], options?: CallOptions): Promise<T> {
      const call = { method, params, options };
      calls.push(call);
      const answer = answers[method] ?? defaults[method];
      if (answer === undefined) throw new Error(`unexpected ${method}`);
      const value = await answer(call);
      if (value instanceof Error) throw value;
      return value as T;
    },
  };
  return { rpc, calls, methods: () => calls.map((c) => c.method) };
}

function receiptOf(txHash: string, status = "0x1") {
  return { transactionHash: txHash, blockNumber: "0x10", gasUsed: "0x5208", status, logs: [] };
}

function sender(rpc: JsonRpc, options: { sendSync?: SendSyncMode; pauseMs?: number; graceMs?: number; receiptTimeoutMs?: number } = {}) {
  const key = generatePrivateKey();
  const events: string[] = [];
  const signed: SignedTx[] = [];
  const sent: string[] = [];
  const s = createTxSender({
    rpc,
    account: privateKeyToAccount(key),
    privateKey: key,
    chainId: 31337,
    log: (event) => void events.push(event),
    sendSync: options.sendSync,
    sendSyncPauseMs: options.pauseMs,
    sendSyncGraceMs: options.graceMs,
    receiptTimeoutMs: options.receiptTimeoutMs,
  });
  const send = (stillValid?: () => boolean) =>
    s.send({
      to: "0x000000000000000000000000000000000000dEaD",
      data: "0x",
      gas: 21_000n,
      onSigned: async (tx) => void signed.push(tx),
      onSent: async (hash) => void sent.push(hash),
      stillValid,
    });
  return { send, signed, sent, events };
}

/** A promise the test settles itself: a node holding a call. */
function held<T>() {
  let release!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (release = resolve));
  return { promise, release };
}

describe("createTxSender with eth_sendRawTransactionSync", () => {
  test("mined: the receipt in the sync answer decides (its status), one call sent alone and never retried by the client, no poll", async () => {
    const s0 = { signed: [] as SignedTx[] };
    const node = fakeNode({ eth_sendRawTransactionSync: () => receiptOf(s0.signed[0]!.txHash, "0x0") });
    const s = sender(node.rpc);
    s0.signed = s.signed;
    const outcome = await s.send();
    expect(outcome).toMatchObject({ ok: false, reason: "reverted", txHash: s.signed[0]!.txHash, blockNumber: 16n, gasUsed: 21_000n });
    expect(node.methods()).toEqual(["eth_gasPrice", "eth_maxPriorityFeePerGas", "eth_getTransactionCount", "eth_sendRawTransactionSync"]);
    expect(node.calls.at(-1)!.options).toEqual({ alone: true, retries: 0 });
    // Answered with its receipt: straight to the outcome, no "sent" record in between (issue 28).
    expect(s.sent).toEqual([]);
  });

  test("\"already known\" is accepted and the receipt polled; an answer that is not this hash's receipt too", async () => {
    for (const answer of [new NodeRpcError(-32000, "already known", undefined), { transactionHash: "0x1234", blockNumber: "0x1" }, "0xabc"]) {
      const box = { signed: [] as SignedTx[] };
      const node = fakeNode({
        eth_sendRawTransactionSync: () => answer,
        eth_getTransactionReceipt: () => receiptOf(box.signed[0]!.txHash),
      });
      const s = sender(node.rpc);
      box.signed = s.signed;
      expect(await s.send()).toMatchObject({ ok: true, txHash: s.signed[0]!.txHash });
      expect(node.methods().slice(3)).toEqual(["eth_sendRawTransactionSync", "eth_getTransactionReceipt"]);
    }
  });

  test("-32603 (a confirmation timeout or an internal error): the hash is asked about; absent → the same bytes plainly; the method rests", async () => {
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransactionSync: () => new NodeRpcError(-32603, "Transaction confirmation timeout", undefined),
      eth_getTransactionByHash: () => null,
      eth_sendRawTransaction: () => box.signed.at(-1)!.txHash,
      eth_getTransactionReceipt: () => receiptOf(box.signed.at(-1)!.txHash),
    });
    const s = sender(node.rpc);
    box.signed = s.signed;
    expect((await s.send()).ok).toBe(true);
    const sends = node.calls.filter((c) => c.method.startsWith("eth_send"));
    expect(sends.map((c) => c.method)).toEqual(["eth_sendRawTransactionSync", "eth_sendRawTransaction"]);
    expect(sends[1]!.params[0]).toBe(sends[0]!.params[0]);
    expect(node.methods()).toContain("eth_getTransactionByHash");
    expect(s.events).toContain("send_sync_paused");
    node.calls.length = 0;
    expect((await s.send()).ok).toBe(true);
    expect(node.methods()).not.toContain("eth_sendRawTransactionSync");
  });

  test("a lost exchange the node cannot be asked about: unknown outcome, onSent ran, not sent again", async () => {
    const node = fakeNode({
      eth_sendRawTransactionSync: () => new RpcTransportError("HTTP 502", 502),
      eth_getTransactionByHash: () => new RpcTransportError("The node could not be reached"),
    });
    const s = sender(node.rpc);
    const outcome = await s.send();
    expect(outcome).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
    expect(s.sent).toEqual([s.signed[0]!.txHash]);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual(["eth_sendRawTransactionSync"]);
  });

  test("no answer within the grace and the node does not know the hash: a plain refusal is not taken as 'not broadcast' while the sync bytes are on their way", async () => {
    const hold = held<unknown>();
    const node = fakeNode({
      eth_sendRawTransactionSync: () => hold.promise,
      eth_getTransactionByHash: () => null,
      eth_sendRawTransaction: () => new NodeRpcError(-32000, "nonce too low", undefined),
    });
    const s = sender(node.rpc, { graceMs: 1 });
    const outcome = await s.send();
    expect(outcome).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
    expect(node.methods().slice(3)).toEqual(["eth_sendRawTransactionSync", "eth_getTransactionByHash", "eth_sendRawTransaction", "eth_getTransactionByHash"]);
    expect(s.sent).toEqual([s.signed[0]!.txHash]);
    hold.release(new NodeRpcError(-32603, "Transaction confirmation timeout", undefined));
  });

  test("no answer within the grace, the transaction pending: accepted, the lock let go, the late sync answer ends the polls; after the pause the method is tried again", async () => {
    const hold = held<unknown>();
    let syncCalls = 0;
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransactionSync: () => (++syncCalls === 1 ? hold.promise : receiptOf(box.signed.at(-1)!.txHash)),
      eth_getTransactionByHash: () => ({ blockNumber: null }),
    });
    const s = sender(node.rpc, { graceMs: 1, pauseMs: 0 });
    box.signed = s.signed;
    const first = s.send();
    // The receipt is polled (the node has none) until the sync answer brings it.
    while (!node.methods().includes("eth_getTransactionReceipt")) await Bun.sleep(1);
    expect(s.sent).toEqual([s.signed[0]!.txHash]);
    expect(s.events).toEqual(["send_sync_paused"]);
    // The lock is free while the first sync call is still held; the pause (0 here) over, the next send tries the
    // sync method again, and is mined before the first has its answer.
    expect(await s.send()).toMatchObject({ ok: true, txHash: s.signed[1]!.txHash });
    expect(syncCalls).toBe(2);
    hold.release(receiptOf(s.signed[0]!.txHash));
    expect(await first).toMatchObject({ ok: true, txHash: s.signed[0]!.txHash, blockNumber: 16n });
    expect(s.signed.map((tx) => tx.nonce)).toEqual([7, 8]);
  });

  test("no answer within the grace but the node had mined it: the method does not rest", async () => {
    const hold = held<unknown>();
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransactionSync: () => hold.promise,
      eth_getTransactionByHash: () => ({ blockNumber: "0x10" }),
      eth_getTransactionReceipt: () => receiptOf(box.signed.at(-1)!.txHash),
    });
    const s = sender(node.rpc, { graceMs: 1 });
    box.signed = s.signed;
    expect((await s.send()).ok).toBe(true);
    expect(s.events).toEqual([]);
    hold.release(receiptOf(s.signed[0]!.txHash));
  });

  test("-32601, -32600, -32602 or words naming the method: the same bytes plainly at once, and never the sync method again", async () => {
    for (const refusal of [
      new NodeRpcError(-32601, "Method not found", undefined),
      new NodeRpcError(-32600, "Unsupported method: eth_sendRawTransactionSync", undefined),
      new NodeRpcError(-32602, "invalid params", undefined),
      new NodeRpcError(-32000, "the method eth_sendRawTransactionSync does not exist/is not available", undefined),
    ]) {
      const box = { signed: [] as SignedTx[] };
      const node = fakeNode({
        eth_sendRawTransactionSync: () => refusal,
        eth_sendRawTransaction: () => new NodeRpcError(-32000, "insufficient funds for gas * price + value", undefined),
        eth_getTransactionByHash: () => null,
      });
      const s = sender(node.rpc);
      box.signed = s.signed;
      // The plain send is refused too: refused, provably not broadcast.
      expect(await s.send()).toEqual({ ok: false, reason: "not-broadcast" });
      expect(node.methods().slice(3)).toEqual(["eth_sendRawTransactionSync", "eth_sendRawTransaction", "eth_getTransactionByHash"]);
      expect(s.sent).toEqual([]);
      node.calls.length = 0;
      await s.send();
      expect(node.methods()).not.toContain("eth_sendRawTransactionSync");
    }
  });

  test("RPC_SEND_SYNC=off: never the sync method", async () => {
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransaction: () => box.signed.at(-1)!.txHash,
      eth_getTransactionReceipt: () => receiptOf(box.signed.at(-1)!.txHash),
    });
    const s = sender(node.rpc, { sendSync: "off" });
    box.signed = s.signed;
    expect((await s.send()).ok).toBe(true);
    expect(node.methods().slice(3)).toEqual(["eth_sendRawTransaction", "eth_getTransactionReceipt"]);
  });
});

describe("createTxSender: stillValid, asked under the wallet's lock", () => {
  test("a send queued behind a slow one is asked once the lock is held: no → nothing signed or sent, the nonce left to the next send", async () => {
    // The first send's answer is held (a slow provider): the second waits for the wallet's lock meanwhile.
    const hold = held<unknown>();
    const box = { signed: [] as SignedTx[] };
    let sends = 0;
    const node = fakeNode({
      eth_sendRawTransaction: () => (++sends === 1 ? hold.promise : box.signed.at(-1)!.txHash),
      eth_getTransactionReceipt: (call) => receiptOf(String(call.params[0])),
    });
    const s = sender(node.rpc, { sendSync: "off" });
    box.signed = s.signed;
    const first = s.send(() => true);
    while (sends === 0) await Bun.sleep(1);
    // Valid as long as the first send has no answer: asked before the lock, it would say yes and be sent.
    let firstAnswered = false;
    let asked = 0;
    const second = s.send(() => {
      asked++;
      return !firstAnswered;
    });
    // Every step the second send can take before the lock is promise work (the fee read, answered by this node at
    // once), done before any timer: once this one fires, the second waits for the lock, whatever the machine's speed.
    await new Promise((resolve) => setImmediate(resolve));
    firstAnswered = true;
    hold.release(s.signed[0]!.txHash);
    expect(await first).toMatchObject({ ok: true, txHash: s.signed[0]!.txHash });
    expect(await second).toEqual({ ok: false, reason: "expired" });
    expect(asked).toBe(1);
    expect(s.signed).toHaveLength(1);
    expect(sends).toBe(1);
    expect(s.sent).toEqual([s.signed[0]!.txHash]);
    // The nonce the expired send would have used goes to the next one, with no read of the pending count.
    const reads = node.methods().filter((m) => m === "eth_getTransactionCount").length;
    expect(await s.send(() => true)).toMatchObject({ ok: true });
    expect(s.signed.map((tx) => tx.nonce)).toEqual([7, 8]);
    expect(node.methods().filter((m) => m === "eth_getTransactionCount").length).toBe(reads);
  });
});

describe("createTxSender: a read before signing that fails", () => {
  test("the pending nonce not read: rpc-error (never not-broadcast), nothing signed or sent; the next send reads it again", async () => {
    let countFails = true;
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_getTransactionCount: () => (countFails ? new NodeRpcError(-32000, "header not found", undefined) : "0x7"),
      eth_sendRawTransaction: () => box.signed.at(-1)!.txHash,
      eth_getTransactionReceipt: (call) => receiptOf(String(call.params[0])),
    });
    const s = sender(node.rpc, { sendSync: "off" });
    box.signed = s.signed;
    expect(await s.send()).toEqual({ ok: false, reason: "rpc-error" });
    expect(s.signed).toEqual([]);
    expect(s.sent).toEqual([]);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual([]);
    countFails = false;
    expect(await s.send()).toMatchObject({ ok: true });
    expect(s.signed.map((tx) => tx.nonce)).toEqual([7]);
  });

  test("several instances (shared nonces): the pending nonce not read is rpc-error too, and no nonce is recorded", async () => {
    const node = fakeNode({ eth_getTransactionCount: () => new RpcTransportError("The node could not be reached") });
    const key = generatePrivateKey();
    const used: (number | undefined)[] = [];
    const nonces: WalletNonces = {
      async withLock(_chainId, _address, send) {
        const locked = await send(3);
        used.push(locked.used);
        return locked.value;
      },
    };
    const signed: SignedTx[] = [];
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces, sendSync: "off" });
    const outcome = await s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n, onSigned: async (tx) => void signed.push(tx) });
    expect(outcome).toEqual({ ok: false, reason: "rpc-error" });
    expect(signed).toEqual([]);
    expect(used).toEqual([undefined]);
  });

  test("the fees not read: rpc-error, nothing signed or sent, no nonce read", async () => {
    const node = fakeNode({ eth_gasPrice: () => new RpcTransportError("The node could not be reached") });
    const s = sender(node.rpc, { sendSync: "off" });
    expect(await s.send()).toEqual({ ok: false, reason: "rpc-error" });
    expect(s.signed).toEqual([]);
    expect(node.methods().filter((m) => m === "eth_getTransactionCount" || m.startsWith("eth_send"))).toEqual([]);
  });

  test("a signed transaction the node refused and does not hold is still not-broadcast (the node's refusal, not a failed read)", async () => {
    const node = fakeNode({
      eth_sendRawTransaction: () => new NodeRpcError(-32000, "nonce too low", undefined),
      eth_getTransactionByHash: () => null,
    });
    const s = sender(node.rpc, { sendSync: "off" });
    expect(await s.send()).toEqual({ ok: false, reason: "not-broadcast" });
    expect(s.signed).toHaveLength(1);
  });

  test("a send whose answer was lost and the node cannot be asked about stays unknown-outcome, never rpc-error", async () => {
    const node = fakeNode({
      eth_sendRawTransaction: () => new RpcTransportError("HTTP 502", 502),
      eth_getTransactionByHash: () => new RpcTransportError("The node could not be reached"),
    });
    const s = sender(node.rpc, { sendSync: "off" });
    expect(await s.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
  });
});

describe("createTxSender(): the shared nonce's lock failing", () => {
  test("the lock not taken (its storage failed): nonce-unavailable, nothing signed or sent, never not-broadcast (the node's refusal)", async () => {
    const node = fakeNode({});
    const key = generatePrivateKey();
    const events: string[] = [];
    const nonces: WalletNonces = { withLock: () => Promise.reject(new Error("connection terminated")) };
    const signed: SignedTx[] = [];
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces, sendSync: "off", log: (event) => void events.push(event) });
    const outcome = await s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n, onSigned: async (tx) => void signed.push(tx) });
    expect(outcome).toEqual({ ok: false, reason: "nonce-unavailable" });
    expect(signed).toEqual([]);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual([]);
    expect(events).toContain("nonce_lock_error");
  });

  test("the lock failing after the pending nonce was not read keeps that answer: rpc-error", async () => {
    const node = fakeNode({ eth_getTransactionCount: () => new RpcTransportError("The node could not be reached") });
    const key = generatePrivateKey();
    const nonces: WalletNonces = {
      async withLock(_chainId, _address, send) {
        await send(3);
        throw new Error("connection terminated");
      },
    };
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces, sendSync: "off" });
    expect(await s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n })).toEqual({ ok: false, reason: "rpc-error" });
  });
});

describe("createTxSender(): the shared nonce's lock lost while its send runs", () => {
  /**
   * A lock the storage ends (the backend terminated, its idle timeout, a failover) once `reached` settles: `withLock`
   * rejects at once while the callback goes on, as Bun's `sql.begin` does.
   */
  function losingLock(reached: Promise<void>) {
    const used: (number | undefined)[] = [];
    const nonces: WalletNonces = {
      withLock(_chainId, _address, send) {
        void send(3).then((locked) => void used.push(locked.used), () => undefined);
        return reached.then(() => Promise.reject(new Error("terminating connection due to administrator command")));
      },
    };
    return { nonces, used };
  }

  test("lost while the signed bytes are on their way: the send's real outcome (never nonce-unavailable), sent once, and the wallet's local lock held until it ends", async () => {
    const sendReached = held<void>();
    const hold = held<unknown>();
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransaction: () => {
        sendReached.release();
        return hold.promise;
      },
      eth_getTransactionReceipt: (call) => receiptOf(String(call.params[0])),
    });
    const key = generatePrivateKey();
    const events: string[] = [];
    const lock = losingLock(sendReached.promise);
    let lockCalls = 0;
    const nonces: WalletNonces = {
      withLock(chainId, address, send) {
        return ++lockCalls === 1 ? lock.nonces.withLock(chainId, address, send) : send(4).then((locked) => locked.value);
      },
    };
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces, sendSync: "off", log: (event) => void events.push(event) });
    const request = { to: "0x000000000000000000000000000000000000dEaD" as const, data: "0x" as const, gas: 21_000n, onSigned: async (tx: SignedTx) => void box.signed.push(tx) };
    const first = s.send(request);
    await sendReached.promise;
    // The lock's rejection has reached the sender; a second send must still wait for the first's bytes.
    const second = s.send(request);
    await Bun.sleep(20);
    expect(events).toContain("nonce_lock_error");
    expect(box.signed).toHaveLength(1);
    expect(lockCalls).toBe(1);
    hold.release(box.signed[0]!.txHash);
    expect(await first).toMatchObject({ ok: true, txHash: box.signed[0]!.txHash });
    expect(await second).toMatchObject({ ok: true });
    expect(node.calls.filter((c) => c.method === "eth_sendRawTransaction").map((c) => c.params[0])).toEqual(box.signed.map((tx) => tx.raw));
    expect(box.signed.map((tx) => tx.nonce)).toEqual([7, 7]);
    expect(lock.used).toEqual([7]);
  });

  test("lost while the pending nonce is read (before signing): nonce-unavailable, and nothing is ever signed or sent", async () => {
    const countReached = held<void>();
    const count = held<unknown>();
    const node = fakeNode({
      eth_getTransactionCount: () => {
        countReached.release();
        return count.promise;
      },
      eth_sendRawTransaction: (call) => call.params[0],
    });
    const key = generatePrivateKey();
    const signed: SignedTx[] = [];
    const lock = losingLock(countReached.promise);
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces: lock.nonces, sendSync: "off" });
    const outcome = await s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n, onSigned: async (tx) => void signed.push(tx) });
    expect(outcome).toEqual({ ok: false, reason: "nonce-unavailable" });
    count.release("0x7");
    await Bun.sleep(20);
    expect(signed).toEqual([]);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual([]);
    expect(lock.used).toEqual([undefined]);
  });

  test("lost while the signer signs: nothing stored or sent (another instance may take the nonce now), nonce-unavailable", async () => {
    const signReached = held<void>();
    const signature = held<void>();
    const key = generatePrivateKey();
    const account = privateKeyToAccount(key);
    const node = fakeNode({ eth_sendRawTransaction: (call) => call.params[0] });
    const signed: SignedTx[] = [];
    const lock = losingLock(signReached.promise);
    const s = createTxSender({
      rpc: node.rpc,
      signer: {
        address: account.address,
        async signTransaction() {
          signReached.release();
          await signature.promise;
          return { ok: true, raw: "0x02", txHash: `0x${"ab".repeat(32)}` };
        },
      } as never,
      chainId: 31337,
      nonces: lock.nonces,
      sendSync: "off",
    });
    const pending = s.send({ to: "0x000000000000000000000000000000000000dEaD", data: "0x", gas: 21_000n, onSigned: async (tx) => void signed.push(tx) });
    await signReached.promise;
    await Bun.sleep(5);
    signature.release();
    expect(await pending).toEqual({ ok: false, reason: "nonce-unavailable" });
    await Bun.sleep(20);
    expect(signed).toEqual([]);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual([]);
  });
});

describe("createTxSender(): a lost first answer, then the same bytes refused", () => {
  test("the resend refused (\"nonce too low\": the first bytes were mined) and the hash found on asking again: accepted, never not-broadcast", async () => {
    // A load-balanced provider: the backend asked first had not seen the bytes the lost answer delivered.
    let asked = 0;
    const box = { signed: [] as SignedTx[] };
    const node = fakeNode({
      eth_sendRawTransaction: (call) => (node.calls.filter((c) => c.method === call.method).length === 1 ? new RpcTransportError("HTTP 502", 502) : new NodeRpcError(-32000, "nonce too low", undefined)),
      eth_getTransactionByHash: () => (++asked === 1 ? null : { blockNumber: "0x10" }),
      eth_getTransactionReceipt: () => receiptOf(box.signed[0]!.txHash),
    });
    const s = sender(node.rpc, { sendSync: "off" });
    box.signed = s.signed;
    expect(await s.send()).toMatchObject({ ok: true, txHash: s.signed[0]!.txHash });
    expect(node.methods().slice(3)).toEqual(["eth_sendRawTransaction", "eth_getTransactionByHash", "eth_sendRawTransaction", "eth_getTransactionByHash", "eth_getTransactionReceipt"]);
  });

  test("the resend refused and the hash still unknown: unknown-outcome (the reconciler settles it), never not-broadcast", async () => {
    let sends = 0;
    const node = fakeNode({
      eth_sendRawTransaction: () => (++sends === 1 ? new RpcTransportError("The node could not be reached") : new NodeRpcError(-32000, "nonce too low", undefined)),
      eth_getTransactionByHash: () => null,
    });
    const s = sender(node.rpc, { sendSync: "off" });
    expect(await s.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
    expect(s.sent).toEqual([s.signed[0]!.txHash]);
    expect(sends).toBe(2);
  });

  test("the plain send is never retried by the JSON-RPC client: a 502 is the sender's lost answer, not a refusal that looks first-hand", async () => {
    // The client retried the lost exchange on its own; the retry's "nonce too low" (the first bytes had landed) then
    // read as the node's first answer: not broadcast, everything given back, for a transaction that may be mined.
    let sends = 0;
    const fetchFn = (async (_url: unknown, init?: { body?: unknown }) => {
      const body = JSON.parse(String(init?.body)) as { id: number; method: string } | { id: number; method: string }[];
      const calls = Array.isArray(body) ? body : [body];
      if (calls.some((c) => c.method === "eth_sendRawTransaction") && ++sends === 1) return new Response("bad gateway", { status: 502 });
      const answer = (c: { id: number; method: string }) => {
        switch (c.method) {
          case "eth_gasPrice":
            return { jsonrpc: "2.0", id: c.id, result: "0x3b9aca00" };
          case "eth_maxPriorityFeePerGas":
            return { jsonrpc: "2.0", id: c.id, result: "0x1" };
          case "eth_getTransactionCount":
            return { jsonrpc: "2.0", id: c.id, result: "0x7" };
          case "eth_getTransactionByHash":
            return { jsonrpc: "2.0", id: c.id, result: null };
          default:
            return { jsonrpc: "2.0", id: c.id, error: { code: -32000, message: "nonce too low" } };
        }
      };
      return Response.json(Array.isArray(body) ? calls.map(answer) : answer(calls[0]!));
    }) as unknown as typeof fetch;
    const s = sender(createJsonRpc({ url: "http://node.invalid", fetchFn, retryDelayMs: 1 }), { sendSync: "off" });
    expect(await s.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
    // The first send, and the sender's own resend after asking about the hash; no third.
    expect(sends).toBe(2);
  });
});

describe("createTxSender(): the node's internal error (-32603) to a plain send", () => {
  test("is settled as a lost answer, by the hash (held → accepted; unknown after the resend → unknown-outcome), never not-broadcast", async () => {
    const box = { signed: [] as SignedTx[] };
    const held = fakeNode({
      eth_sendRawTransaction: () => new NodeRpcError(-32603, "internal error", undefined),
      eth_getTransactionByHash: () => ({ blockNumber: null }),
      eth_getTransactionReceipt: () => receiptOf(box.signed[0]!.txHash),
    });
    const first = sender(held.rpc, { sendSync: "off" });
    box.signed = first.signed;
    expect(await first.send()).toMatchObject({ ok: true, txHash: first.signed[0]!.txHash });
    const unseen = fakeNode({
      eth_sendRawTransaction: () => new NodeRpcError(-32603, "internal error", undefined),
      eth_getTransactionByHash: () => null,
    });
    const second = sender(unseen.rpc, { sendSync: "off" });
    expect(await second.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: second.signed[0]!.txHash });
  });
});

describe("createTxSender(): the shared nonce's lock lost while the signed transaction is stored", () => {
  test("nonce-unavailable and the bytes never sent (another instance may hold the nonce now): the lock was asked only before the write", async () => {
    const storing = held<void>();
    const stored = held<void>();
    const node = fakeNode({ eth_sendRawTransaction: (call) => call.params[0], eth_getTransactionReceipt: (call) => receiptOf(String(call.params[0])) });
    const key = generatePrivateKey();
    const signed: SignedTx[] = [];
    const nonces: WalletNonces = {
      withLock(_chainId, _address, send) {
        void send(3).catch(() => undefined);
        return storing.promise.then(() => Promise.reject(new Error("terminating connection due to administrator command")));
      },
    };
    const s = createTxSender({ rpc: node.rpc, account: privateKeyToAccount(key), privateKey: key, chainId: 31337, nonces, sendSync: "off" });
    const outcome = s.send({
      to: "0x000000000000000000000000000000000000dEaD",
      data: "0x",
      gas: 21_000n,
      onSigned: async (tx) => {
        signed.push(tx);
        // The lock ends while the record is written.
        storing.release();
        await stored.promise;
      },
    });
    await storing.promise;
    await Bun.sleep(5);
    stored.release();
    expect(await outcome).toEqual({ ok: false, reason: "nonce-unavailable" });
    expect(signed).toHaveLength(1);
    expect(node.methods().filter((m) => m.startsWith("eth_send"))).toEqual([]);
  });
});

describe("createTxSender(): a provider's rate limit answering a plain send", () => {
  test("-32005 \"limit exceeded\", JSON-RPC 429 or HTTP 429 is settled as a lost answer, by the hash (held → accepted; unknown → unknown-outcome), never not-broadcast", async () => {
    // Sent once (the client no longer retries the send), a rate limit read as the node's refusal: 500 SUBMISSION_FAILED
    // and everything given back, though the node gave no verdict on the bytes.
    for (const limit of [() => new NodeRpcError(-32005, "limit exceeded", undefined), () => new NodeRpcError(429, "Too Many Requests", undefined), () => new RpcTransportError("HTTP 429", 429)]) {
      const box = { signed: [] as SignedTx[] };
      const holding = fakeNode({
        eth_sendRawTransaction: limit,
        eth_getTransactionByHash: () => ({ blockNumber: null }),
        eth_getTransactionReceipt: () => receiptOf(box.signed[0]!.txHash),
      });
      const first = sender(holding.rpc, { sendSync: "off" });
      box.signed = first.signed;
      expect(await first.send()).toMatchObject({ ok: true, txHash: first.signed[0]!.txHash });
      const unseen = fakeNode({ eth_sendRawTransaction: limit, eth_getTransactionByHash: () => null });
      const second = sender(unseen.rpc, { sendSync: "off" });
      expect(await second.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: second.signed[0]!.txHash });
    }
  });

  test("-32007 (a rate limit) and -1 (unknown), retried by viem like -32005, are a lost answer too, never not-broadcast", async () => {
    // They were missing from the codes read as no verdict: "refused", so not-broadcast and everything given back.
    for (const code of [-32007, -1]) {
      const unseen = fakeNode({ eth_sendRawTransaction: () => new NodeRpcError(code, "request limit reached", undefined), eth_getTransactionByHash: () => null });
      const s = sender(unseen.rpc, { sendSync: "off" });
      expect(await s.send()).toEqual({ ok: false, reason: "unknown-outcome", txHash: s.signed[0]!.txHash });
    }
  });
});
