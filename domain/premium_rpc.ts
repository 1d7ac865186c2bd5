/**
 * Premium reads (decisions §12): a signed-in account sends read-only JSON-RPC (one call or a batch) and the
 * service forwards it to the chain, counting each forwarded call against the plan's premium reads. Every
 * other method, and an `eth_getLogs` over too wide a range, is answered with a JSON-RPC error object and never
 * forwarded (nor counted).
 */
import type { Account } from "../ports/accounts.ts";
import type { Clock } from "../ports/clock.ts";
import type { PremiumReadLedger, RawRpc, RpcAnswer, RpcCall } from "../ports/premium_reads.ts";
import { quotaYear } from "./plans.ts";
import { fail, ok, type Result } from "./result.ts";

/** The methods that only read. */
export const PREMIUM_METHODS: ReadonlySet<string> = new Set([
  "eth_chainId",
  "eth_blockNumber",
  "eth_call",
  "eth_getBalance",
  "eth_getCode",
  "eth_getLogs",
  "eth_getTransactionReceipt",
  "eth_getTransactionByHash",
  "eth_getBlockByNumber",
  "eth_getStorageAt",
]);

/** The largest batch accepted. */
export const MAX_BATCH = 100;

/** What the premium proxy needs. */
export type PremiumRpcDeps = {
  readonly ledger: PremiumReadLedger;
  readonly rpc: RawRpc;
  readonly clock: Clock;
  /** Premium reads per plan per year. */
  readonly limits: Readonly<Record<Account["plan"], number>>;
  /** The widest `eth_getLogs` range, in blocks (`PREMIUM_RPC_MAX_LOG_RANGE`). */
  readonly maxLogRange: bigint;
};

/** A JSON-RPC error object for one call. */
type RpcError = { jsonrpc: "2.0"; id: string | number | null; error: { code: number; message: string } };

/** The answer: one JSON-RPC response object, or an array for a batch. */
export type PremiumRpc = (
  body: unknown,
  account: Account,
) => Promise<Result<unknown, "INVALID_INPUT" | "PREMIUM_READ_LIMIT_EXCEEDED" | "NETWORK_ERROR">>;

const isId = (id: unknown): id is string | number | null => id === null || typeof id === "string" || typeof id === "number";
const rpcError = (id: string | number | null, code: number, message: string): RpcError => ({ jsonrpc: "2.0", id, error: { code, message } });

/**
 * What is wrong with the shape of one JSON-RPC request (undefined: nothing), with the JSON-RPC code a call of a
 * batch is answered with; a single request with such a fault is refused whole (400 `INVALID_INPUT`).
 */
export function requestShapeFault(raw: unknown): { code: -32600 | -32602; message: string } | undefined {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return { code: -32600, message: "A call must be a JSON-RPC request object" };
  const call = raw as Record<string, unknown>;
  if (call.jsonrpc !== "2.0") return { code: -32600, message: 'jsonrpc must be "2.0"' };
  if (call.id !== undefined && !isId(call.id)) return { code: -32600, message: "id must be a string, a number or null" };
  if (typeof call.method !== "string" || call.method === "") return { code: -32600, message: "method must be a method name" };
  if (call.params !== undefined && !Array.isArray(call.params)) return { code: -32602, message: "params must be an array" };
  return undefined;
}

/** Builds the premium proxy. */
export function createPremiumRpc(deps: PremiumRpcDeps): PremiumRpc {
  return async function premiumRpc(body, account) {
    const batch = Array.isArray(body);
    const calls = batch ? body as unknown[] : [body];
    if (batch && calls.length === 0) return fail("INVALID_INPUT", "An empty batch");
    if (calls.length > MAX_BATCH) return fail("INVALID_INPUT", `A batch holds at most ${MAX_BATCH} calls`);
    if (!batch) {
      const fault = requestShapeFault(body);
      if (fault !== undefined) {
        return fail("INVALID_INPUT", typeof body === "object" && body !== null ? fault.message : "Body must be a JSON-RPC request object or a batch (array)");
      }
    }

    // Each call: forwarded, or answered here with an error object.
    const answers: (RpcError | { forward: RpcCall })[] = [];
    // The head, read at most once per request and only for an eth_getLogs bound that needs it (not counted).
    let head: Promise<bigint | undefined> | undefined;
    const readHead = (): Promise<bigint | undefined> => {
      head ??= deps.rpc.forward([{ jsonrpc: "2.0", id: 0, method: "eth_blockNumber", params: [] }]).then((answers) => {
        const result = answers?.[0]?.result;
        return typeof result === "string" && /^0x[0-9a-f]{1,16}$/i.test(result) ? BigInt(result) : undefined;
      });
      return head;
    };
    for (const raw of calls) {
      const call = raw as { id?: unknown; method: string; params?: unknown[] };
      const id = typeof raw === "object" && raw !== null && isId(call.id) ? call.id : null;
      const fault = requestShapeFault(raw);
      if (fault !== undefined) {
        answers.push(rpcError(id, fault.code, fault.code === -32600 ? `Invalid request: ${fault.message}` : fault.message));
        continue;
      }
      const params = call.params ?? [];
      if (!PREMIUM_METHODS.has(call.method)) {
        answers.push(rpcError(id, -32601, `Method not allowed: only read methods are served (${call.method.slice(0, 100)})`));
        continue;
      }
      if (call.method === "eth_getLogs") {
        const refused = await checkLogRange(params[0], readHead, deps.maxLogRange);
        if (refused === "unreachable") return fail("NETWORK_ERROR", "The chain did not answer");
        if (refused !== undefined) {
          answers.push(rpcError(id, -32602, refused));
          continue;
        }
      }
      answers.push({ forward: { jsonrpc: "2.0", id, method: call.method, params } });
    }

    const forwarded = answers.flatMap((a) => ("forward" in a ? [a.forward] : []));
    if (forwarded.length === 0) return ok(batch ? answers : answers[0]);
    // One reservation for the whole request, before anything is sent: all of it fits, or nothing is forwarded.
    const year = quotaYear(deps.clock.nowMs());
    if (!(await deps.ledger.reserve(account.id, year, forwarded.length, deps.limits[account.plan]))) {
      return fail("PREMIUM_READ_LIMIT_EXCEEDED", "Premium read limit exceeded");
    }
    // The node sees our own ids, so the client's (which may repeat, or be null) cannot be confused.
    const results = await deps.rpc.forward(forwarded.map((c, i) => ({ ...c, id: i })));
    if (results === undefined) {
      // Nothing was served: the reads are given back.
      await deps.ledger.release(account.id, year, forwarded.length);
      return fail("NETWORK_ERROR", "The chain did not answer");
    }
    // Every forwarded call counts, a call the node answered with an error included (it was served).
    const byId = new Map<unknown, RpcAnswer>(results.map((r) => [r.id, r]));
    let next = 0;
    const out = answers.map((a) => {
      if (!("forward" in a)) return a;
      const answer = byId.get(next++);
      if (answer === undefined) return rpcError(a.forward.id, -32603, "The node gave no answer to this call");
      return answer.error !== undefined
        ? { jsonrpc: "2.0", id: a.forward.id, error: answer.error }
        : { jsonrpc: "2.0", id: a.forward.id, result: answer.result ?? null };
    });
    return ok(batch ? out : out[0]);
  };
}

/** The block tags that stand for the head (a missing or null bound too): `pending` is counted as the head. */
const HEAD_TAGS: ReadonlySet<unknown> = new Set([undefined, null, "latest", "pending", "safe", "finalized"]);

/**
 * Why an `eth_getLogs` filter is refused (undefined: allowed), or "unreachable" when the head was needed and could
 * not be read. Block tags are resolved to numbers first (`earliest` is 0, the others and a missing bound the
 * head, read only when needed); a `blockHash` filter is one block.
 */
async function checkLogRange(
  filter: unknown,
  readHead: () => Promise<bigint | undefined>,
  maxRange: bigint,
): Promise<string | undefined> {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return "eth_getLogs takes a filter object";
  const f = filter as Record<string, unknown>;
  if (f.blockHash !== undefined) return typeof f.blockHash === "string" ? undefined : "blockHash must be a block hash";
  const fixed = (value: unknown): bigint | "head" | undefined => {
    if (HEAD_TAGS.has(value)) return "head";
    if (value === "earliest") return 0n;
    if (typeof value === "string" && /^0x[0-9a-fA-F]{1,16}$/.test(value)) return BigInt(value);
    return undefined;
  };
  const from = fixed(f.fromBlock);
  const to = fixed(f.toBlock);
  if (from === undefined) return "fromBlock must be a block number (hex) or a block tag";
  if (to === undefined) return "toBlock must be a block number (hex) or a block tag";
  const head = from === "head" || to === "head" ? await readHead() : 0n;
  if (head === undefined) return "unreachable";
  const first = from === "head" ? head : from;
  const last = to === "head" ? head : to;
  if (last - first + 1n > maxRange) return `eth_getLogs range too wide: at most ${maxRange} blocks`;
  return undefined;
}
