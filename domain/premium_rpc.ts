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

/** Builds the premium proxy. */
export function createPremiumRpc(deps: PremiumRpcDeps): PremiumRpc {
  return async function premiumRpc(body, account) {
    const batch = Array.isArray(body);
    const calls = batch ? body as unknown[] : [body];
    if (calls.length === 0) return fail("INVALID_INPUT", "An empty batch");
    if (calls.length > MAX_BATCH) return fail("INVALID_INPUT", `A batch holds at most ${MAX_BATCH} calls`);
    if (!batch && (typeof body !== "object" || body === null)) return fail("INVALID_INPUT", "Body must be a JSON-RPC request or a batch");

    // Each call: forwarded, or answered here with an error object.
    const answers: (RpcError | { forward: RpcCall })[] = [];
    let head: bigint | undefined;
    let headRead = false;
    const readHead = async (): Promise<bigint | undefined> => {
      if (headRead) return head;
      headRead = true;
      const [answer] = (await deps.rpc.forward([{ jsonrpc: "2.0", id: "head", method: "eth_blockNumber", params: [] }])) ?? [];
      head = typeof answer?.result === "string" && /^0x[0-9a-f]+$/i.test(answer.result) ? BigInt(answer.result) : undefined;
      return head;
    };
    for (const raw of calls) {
      const call = raw as Record<string, unknown> | null;
      const id = typeof call === "object" && call !== null && isId(call.id) ? call.id : null;
      if (typeof call !== "object" || call === null || Array.isArray(call) || call.jsonrpc !== "2.0" || typeof call.method !== "string") {
        answers.push(rpcError(id, -32600, "Invalid request"));
        continue;
      }
      const params = call.params === undefined ? [] : call.params;
      if (!Array.isArray(params)) {
        answers.push(rpcError(id, -32602, "params must be an array"));
        continue;
      }
      if (!PREMIUM_METHODS.has(call.method)) {
        answers.push(rpcError(id, -32601, `Method not allowed: only read methods are served (${call.method})`));
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
    const year = quotaYear(deps.clock.nowMs());
    if (forwarded.length > 0) {
      if (!(await deps.ledger.reserve(account.id, year, forwarded.length, deps.limits[account.plan]))) {
        return fail("PREMIUM_READ_LIMIT_EXCEEDED", "Premium read limit exceeded");
      }
      // The node sees our own ids, so the client's (which may repeat) cannot be confused.
      const sent = forwarded.map((c, i) => ({ ...c, id: i }));
      const results = await deps.rpc.forward(sent);
      if (results === undefined) {
        await deps.ledger.release(account.id, year, forwarded.length);
        return fail("NETWORK_ERROR", "The chain did not answer");
      }
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
    }
    return ok(batch ? answers : answers[0]);
  };
}

/** Why an `eth_getLogs` filter is refused (undefined: allowed); block tags resolved first, a missing bound is the head. */
async function checkLogRange(
  filter: unknown,
  readHead: () => Promise<bigint | undefined>,
  maxRange: bigint,
): Promise<string | "unreachable" | undefined> {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter)) return "eth_getLogs takes a filter object";
  const f = filter as Record<string, unknown>;
  if (f.blockHash !== undefined) return typeof f.blockHash === "string" ? undefined : "blockHash must be a hash";
  const bound = async (value: unknown): Promise<bigint | string | "unreachable"> => {
    if (value === undefined || value === "latest" || value === "pending" || value === "safe" || value === "finalized") {
      return (await readHead()) ?? "unreachable";
    }
    if (value === "earliest") return 0n;
    if (typeof value === "string" && /^0x[0-9a-fA-F]{1,16}$/.test(value)) return BigInt(value);
    return "fromBlock and toBlock must be block numbers (hex) or tags";
  };
  const from = await bound(f.fromBlock);
  const to = await bound(f.toBlock);
  if (from === "unreachable" || to === "unreachable") return "unreachable";
  if (typeof from === "string") return from;
  if (typeof to === "string") return to;
  if (to - from + 1n > maxRange) return `eth_getLogs range too wide: at most ${maxRange} blocks`;
  return undefined;
}
