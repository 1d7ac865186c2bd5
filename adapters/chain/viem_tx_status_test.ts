/**
 * The reconciler's status reader against a provider whose receipts lag (a load-balanced backend behind the head
 * answers `eth_getTransactionReceipt` with null for a mined transaction): a transaction the node names a block for is
 * mined, never "replaced"; only one in no block (or unknown) whose nonce was passed is.
 */
import { describe, expect, test } from "bun:test";
import { createPublicClient, http, type PublicClient, RpcRequestError } from "viem";
import type { HexString, SignedTx } from "../../ports/eas.ts";
import { createViemTxStatusReader } from "./viem_witness.ts";

const WALLET = "0x00000000000000000000000000000000000000aa" as HexString;
const HASH = `0x${"ab".repeat(32)}` as HexString;
const known: SignedTx = { txHash: HASH, raw: "0x02", wallet: WALLET, nonce: 4 };

/** A node answering each method from a queue (the last answer repeats), counting the calls. */
function fakeNode(answers: Record<string, unknown[]>) {
  const calls: string[] = [];
  const client = {
    request({ method }: { method: string }) {
      calls.push(method);
      const queue = answers[method];
      if (queue === undefined) throw new Error(`unexpected ${method}`);
      return Promise.resolve(queue.length > 1 ? queue.shift() : queue[0]);
    },
  };
  return { calls, reader: createViemTxStatusReader({ client: client as unknown as PublicClient, easAddress: WALLET }) };
}
const inPool = { from: WALLET, nonce: "0x4", blockNumber: null };
const inBlock = { from: WALLET, nonce: "0x4", blockNumber: "0xc" };

describe("createViemTxStatusReader() with receipts that lag", () => {
  test("a transaction in a block with no receipt is included (mined, its outcome to come), whatever the wallet's nonce", async () => {
    const { reader, calls } = fakeNode({ eth_getTransactionReceipt: [null], eth_getTransactionByHash: [inBlock], eth_getTransactionCount: ["0x5"] });
    expect(await reader.status(HASH, known)).toEqual({ status: "included", blockNumber: 12n });
    expect(calls).toEqual(["eth_getTransactionReceipt", "eth_getTransactionByHash"]);
  });

  test("mined between the reads: the nonce passed, then the transaction found in a block is included, not replaced", async () => {
    const { reader } = fakeNode({ eth_getTransactionReceipt: [null], eth_getTransactionByHash: [inPool, inBlock], eth_getTransactionCount: ["0x5"] });
    expect(await reader.status(HASH, known)).toEqual({ status: "included", blockNumber: 12n });
  });

  test("replaced only when the nonce passed and the node holds the transaction in no block, or not at all", async () => {
    for (const tx of [inPool, null]) {
      const { reader, calls } = fakeNode({ eth_getTransactionReceipt: [null], eth_getTransactionByHash: [tx], eth_getTransactionCount: ["0x5"] });
      expect(await reader.status(HASH, known)).toEqual({ status: "replaced" });
      expect(calls).toEqual(["eth_getTransactionReceipt", "eth_getTransactionByHash", "eth_getTransactionCount", "eth_getTransactionReceipt", "eth_getTransactionByHash"]);
    }
  });

  test("the nonce still free: pending when held, not-found when unknown", async () => {
    expect(await fakeNode({ eth_getTransactionReceipt: [null], eth_getTransactionByHash: [inPool], eth_getTransactionCount: ["0x4"] }).reader.status(HASH, known)).toEqual({ status: "pending" });
    expect(await fakeNode({ eth_getTransactionReceipt: [null], eth_getTransactionByHash: [null], eth_getTransactionCount: ["0x4"] }).reader.status(HASH, known)).toEqual({ status: "not-found" });
  });
});

describe("createViemTxStatusReader(): rebroadcast by a wallet no sender holds", () => {
  /** A node whose `eth_sendRawTransaction` fails with the JSON-RPC error `code`, as viem's client throws it. */
  function refusing(code: number, message: string) {
    const client = {
      request({ method }: { method: string }) {
        if (method !== "eth_sendRawTransaction") throw new Error(`unexpected ${method}`);
        return Promise.reject(new RpcRequestError({ body: { method }, error: { code, message }, url: "http://node.invalid" }));
      },
    };
    return createViemTxStatusReader({ client: client as unknown as PublicClient, easAddress: WALLET });
  }

  test("the node's internal error (-32603) or a rate limit (-32005, 429) is rpc-error, as the sender's own send reads it; a refusal stays refused", async () => {
    // -32603 was "refused", so the reconciler released a record whose bytes could still land.
    expect(await refusing(-32603, "internal error").rebroadcast!(known)).toBe("rpc-error");
    expect(await refusing(-32005, "limit exceeded").rebroadcast!(known)).toBe("rpc-error");
    expect(await refusing(429, "Too Many Requests").rebroadcast!(known)).toBe("rpc-error");
    expect(await refusing(-32000, "already known").rebroadcast!(known)).toBe("accepted");
    expect(await refusing(-32000, "nonce too low").rebroadcast!(known)).toBe("refused");
  });
});

describe("createViemTxStatusReader(): rebroadcast through viem's client, as built in viem_eas.ts", () => {
  /** A node answering each `eth_sendRawTransaction` from `replies` (HTTP status, JSON-RPC error), counting the sends. */
  function node(replies: { status: number; code?: number; message: string }[]) {
    const sends: (number | undefined)[] = [];
    const fetchFn = (async (_url: unknown, init?: RequestInit) => {
      const body = JSON.parse(String(init?.body)) as { id: number; method: string };
      if (body.method !== "eth_sendRawTransaction") throw new Error(`unexpected ${body.method}`);
      const reply = replies[Math.min(sends.length, replies.length - 1)]!;
      sends.push(reply.code);
      const error = reply.code === undefined ? { message: reply.message } : { code: reply.code, message: reply.message };
      const answer = { jsonrpc: "2.0", id: body.id, error };
      return new Response(JSON.stringify(answer), { status: reply.status, headers: { "content-type": "application/json" } });
    }) as typeof fetch;
    const client = createPublicClient({ transport: http("http://node.invalid", { fetchFn, retryCount: 1, retryDelay: 1 }) }) as PublicClient;
    return { sends, reader: createViemTxStatusReader({ client, easAddress: WALLET }) };
  }

  test("sent once: an internal error then \"nonce too low\" reads the first answer (rpc-error), not the retry's (refused)", async () => {
    const { sends, reader } = node([
      { status: 200, code: -32603, message: "internal error" },
      { status: 200, code: -32000, message: "nonce too low" },
    ]);
    expect(await reader.rebroadcast!(known)).toBe("rpc-error");
    expect(sends).toEqual([-32603]);
  });

  test("a JSON-RPC error in a non-2xx HTTP reply (429, 503) is a failed exchange (rpc-error), as json_rpc.ts reads it", async () => {
    for (const status of [429, 503]) {
      const { sends, reader } = node([{ status, code: -32000, message: "nonce too low" }]);
      expect(await reader.rebroadcast!(known)).toBe("rpc-error");
      expect(sends).toHaveLength(1);
    }
    // The same answer in a 200 reply is the node's refusal.
    expect(await node([{ status: 200, code: -32000, message: "nonce too low" }]).reader.rebroadcast!(known)).toBe("refused");
  });

  test("an error without a numeric code in a 200 reply is no verdict (rpc-error), as the JSON-RPC client reads it (-1)", async () => {
    const { sends, reader } = node([{ status: 200, message: "upstream unavailable" }]);
    expect(await reader.rebroadcast!(known)).toBe("rpc-error");
    expect(sends).toHaveLength(1);
  });
});

describe("createViemTxStatusReader(): the chain's clock", () => {
  test("latestBlock is the latest block's number, hash and timestamp from one answer; undefined when the node has no answer", async () => {
    const block = { number: "0xc", hash: HASH, timestamp: "0x77359401" };
    expect(await fakeNode({ eth_getBlockByNumber: [block] }).reader.latestBlock()).toEqual({ number: 12n, hash: HASH, timestamp: 2_000_000_001n });
    expect(await fakeNode({ eth_getBlockByNumber: [null] }).reader.latestBlock()).toBeUndefined();
    // A node that fails the call (fakeNode throws for a method it does not know).
    expect(await fakeNode({}).reader.latestBlock()).toBeUndefined();
  });
});

describe("createViemTxStatusReader(): the blocks that prove a deadline passed", () => {
  /** A node answering from `answer` by method and parameters (undefined: it fails the call), recording each call. */
  function node(answer: (method: string, params: unknown[]) => unknown) {
    const calls: unknown[][] = [];
    const client = {
      request({ method, params }: { method: string; params: unknown[] }) {
        calls.push([method, ...params]);
        const result = answer(method, params);
        return result === undefined ? Promise.reject(new RpcRequestError({ body: {}, url: "http://node", error: { code: -32602, message: "header not found" } })) : Promise.resolve(result);
      },
    };
    return { calls, reader: createViemTxStatusReader({ client: client as unknown as PublicClient, easAddress: WALLET }) };
  }

  test("nonceAt asks the wallet's count at the block's number, never a tag; a node without that block fails it: undefined", async () => {
    const { calls, reader } = node((_, params) => (params[1] === "0xb" ? "0x5" : undefined));
    expect(await reader.nonceAt(WALLET, 11n)).toBe(5n);
    expect(calls).toEqual([["eth_getTransactionCount", WALLET, "0xb"]]);
    expect(await reader.nonceAt(WALLET, 12n)).toBeUndefined();
  });

  test("pendingBlock is the block the node would build next: its parent's hash and timestamp; undefined when it gives none", async () => {
    const parent = `0x${"cd".repeat(32)}` as HexString;
    const { calls, reader } = node(() => ({ number: "0xd", hash: null, parentHash: parent, timestamp: "0x77359410" }));
    expect(await reader.pendingBlock()).toEqual({ parentHash: parent, timestamp: 2_000_000_016n });
    expect(calls).toEqual([["eth_getBlockByNumber", "pending", false]]);
    expect(await node(() => null).reader.pendingBlock()).toBeUndefined();
    expect(await node(() => undefined).reader.pendingBlock()).toBeUndefined();
  });

  test("latestBlock without a hash (a node answering a block it has not sealed) proves nothing: undefined", async () => {
    expect(await node(() => ({ number: "0xc", hash: null, timestamp: "0x77359401" })).reader.latestBlock()).toBeUndefined();
  });
});

describe("createViemTxStatusReader(): block reads whose answer has no expected shape", () => {
  /** A node answering every call with `answer` (a function of the method and parameters), logging as the app does. */
  function answering(answer: (method: string, params: unknown[]) => unknown) {
    const logged: { event: string; fields: Record<string, unknown> }[] = [];
    const client = { request: ({ method, params }: { method: string; params: unknown[] }) => Promise.resolve(answer(method, params)) };
    const reader = createViemTxStatusReader({ client: client as unknown as PublicClient, easAddress: WALLET, log: (event, fields) => logged.push({ event, fields }) });
    return { logged, reader };
  }

  test("a null answer (older Besu's for a block past its head) is undefined: it threw, and ended the reconciler's round", async () => {
    const { reader } = answering(() => null);
    expect(await reader.nonceAt(WALLET, 11n)).toBeUndefined();
    expect(await reader.latestBlock()).toBeUndefined();
    expect(await reader.pendingBlock()).toBeUndefined();
  });

  test("a block or count in no expected shape (fields null, not hex, not an object) is undefined, never a throw", async () => {
    for (const answer of ["0xzz", 12, "latest", { number: null, hash: HASH, timestamp: "0x1" }, { number: "0xc", hash: HASH, timestamp: null }, { parentHash: null, timestamp: "0x1" }, { parentHash: HASH, timestamp: 7 }]) {
      const { reader } = answering(() => answer);
      expect(await reader.nonceAt(WALLET, 11n)).toBeUndefined();
      expect(await reader.latestBlock()).toBeUndefined();
      expect(await reader.pendingBlock()).toBeUndefined();
    }
  });

  test("a failed pending read is logged as getBlockByNumber(pending), told apart from the latest block's", async () => {
    const client = { request: () => Promise.reject(new Error("boom")) };
    const ops: unknown[] = [];
    const reader = createViemTxStatusReader({ client: client as unknown as PublicClient, easAddress: WALLET, log: (_, fields) => ops.push(fields.op) });
    await reader.latestBlock();
    await reader.pendingBlock();
    expect(ops).toEqual(["getBlockByNumber", "getBlockByNumber(pending)"]);
  });
});
