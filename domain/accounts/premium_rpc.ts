/**
 * Premium reads (decisions §12): a signed-in account sends read-only JSON-RPC (one call or a batch) and the
 * service forwards it to the chain, counting each forwarded call against the plan's premium reads. Every
 * other method, and an `eth_getLogs` over too wide a range, is answered with a JSON-RPC error object and never
 * forwarded (nor counted).
 *
 * Issue 23 (a free account parked an endless loop on the node through an `eth_call` state override with gas
 * 0xffffffffffff, at no charge): each forwarded call's params are rebuilt from what a read needs, never passed
 * through (see {@link rebuildParams}); an `eth_call`'s gas is capped; a call handed to the node is a read spent
 * whatever becomes of it; and requests waiting on the node are bounded per account and overall, so a slow node
 * holds neither the service's other work nor its shutdown.
 */
import type { Account } from "../../ports/accounts.ts";
import type { Clock } from "../../ports/clock.ts";
import type { PremiumReadLedger, RawRpc, RpcAnswer, RpcCall } from "../../ports/premium_reads.ts";
import { quotaYear } from "./plans.ts";
import { type Fail, fail, ok, type Ok } from "../result.ts";
import { type LogRange, logRangeOf, rangeRefusal, rebuildParams } from "./_rpc_params.ts";

export { rebuildParams } from "./_rpc_params.ts";

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

/**
 * The default gas cap of an `eth_call` (`PREMIUM_RPC_MAX_CALL_GAS`): a block's worth on mainnet and Anvil. Measured
 * on Anvil 1.7.1 (2-core VM): an endless JUMPDEST/PUSH1/JUMP loop runs 24 ms at 30,000,000 gas, 790 ms at 10^9, and
 * would run days at 0xffffffffffff.
 */
export const DEFAULT_MAX_CALL_GAS = 30_000_000n;

/** The default bound on requests waiting on the node at once, per account and overall. */
export const DEFAULT_MAX_IN_FLIGHT = { perAccount: 4, overall: 16 } as const;

/** What the premium proxy needs. */
export type PremiumRpcDeps = {
  readonly ledger: PremiumReadLedger;
  readonly rpc: RawRpc;
  readonly clock: Clock;
  /** Premium reads per plan per year. */
  readonly limits: Readonly<Record<Account["plan"], number>>;
  /** The widest `eth_getLogs` range, in blocks (`PREMIUM_RPC_MAX_LOG_RANGE`). */
  readonly maxLogRange: bigint;
  /** The most gas an `eth_call` is run with, and the gas of one that names none (default {@link DEFAULT_MAX_CALL_GAS}). */
  readonly maxCallGas?: bigint | undefined;
  /** Requests of one account waiting on the node at once (default {@link DEFAULT_MAX_IN_FLIGHT}); past it 429. */
  readonly maxInFlightPerAccount?: number | undefined;
  /** Requests of all accounts waiting on the node at once (default {@link DEFAULT_MAX_IN_FLIGHT}); past it 429. */
  readonly maxInFlight?: number | undefined;
};

/** A JSON-RPC error object for one call. */
type RpcError = { jsonrpc: "2.0"; id: string | number | null; error: { code: number; message: string } };

/** A failure of the request as a whole; `retryAfterSeconds` is set on RATE_LIMITED. */
export type PremiumRpcFailure = Fail<"INVALID_INPUT" | "PREMIUM_READ_LIMIT_EXCEEDED" | "NETWORK_ERROR" | "RATE_LIMITED"> & {
  readonly retryAfterSeconds?: number;
};

/** The answer: one JSON-RPC response object, or an array for a batch. */
export type PremiumRpc = (body: unknown, account: Account) => Promise<Ok<unknown> | PremiumRpcFailure>;

/** When a client whose requests are all waiting on the node may try again, in seconds. */
const RETRY_AFTER_SECONDS = 1;

const isId = (id: unknown): id is string | number | null => id === null || typeof id === "string" || typeof id === "number";
const rpcError = (id: string | number | null, code: number, message: string): RpcError => ({ jsonrpc: "2.0", id, error: { code, message } });

/**
 * The node's error for one call, as the client gets it: its code and data (a revert's reason) as the node sent them, its
 * message too unless it names an address of the provider's (a URL) or runs long. A provider's own notices ("daily
 * limit reached, upgrade at https://…") passed through verbatim: the service's RPC provider, and its text, reached the
 * client.
 */
function nodeCallError(error: { readonly code: number; readonly message: string; readonly data?: unknown }) {
  const plain = typeof error.message === "string" && error.message.length <= 200 && !/[a-z][a-z0-9+.-]*:\/\//i.test(error.message);
  return {
    code: error.code,
    message: plain ? error.message : "The node refused the call",
    ...(error.data === undefined ? {} : { data: error.data }),
  };
}

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
  const maxCallGas = deps.maxCallGas ?? DEFAULT_MAX_CALL_GAS;
  const maxPerAccount = deps.maxInFlightPerAccount ?? DEFAULT_MAX_IN_FLIGHT.perAccount;
  const maxOverall = deps.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT.overall;
  // Requests waiting on the node, overall and per account: a slot is taken before the first call to the node
  // (the head read included) and given back when the request ends, however it ends.
  let inFlight = 0;
  const inFlightOf = new Map<string, number>();

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

    // Each call: forwarded (with params rebuilt), or answered here with an error object. Everything that needs
    // no node is decided first, so a request that forwards nothing takes no slot.
    const answers: (RpcError | { forward: RpcCall; logs?: LogRange })[] = [];
    for (const raw of calls) {
      const call = raw as { id?: unknown; method: string; params?: unknown[] };
      const id = typeof raw === "object" && raw !== null && isId(call.id) ? call.id : null;
      const fault = requestShapeFault(raw);
      if (fault !== undefined) {
        answers.push(rpcError(id, fault.code, fault.code === -32600 ? `Invalid request: ${fault.message}` : fault.message));
        continue;
      }
      if (!PREMIUM_METHODS.has(call.method)) {
        answers.push(rpcError(id, -32601, `Method not allowed: only read methods are served (${call.method.slice(0, 100)})`));
        continue;
      }
      const params = rebuildParams(call.method, call.params ?? [], maxCallGas);
      if (typeof params === "string") {
        answers.push(rpcError(id, -32602, params));
        continue;
      }
      let logs: LogRange | undefined;
      if (call.method === "eth_getLogs") {
        const range = logRangeOf(params[0]);
        if (typeof range === "string") {
          answers.push(rpcError(id, -32602, range));
          continue;
        }
        logs = range;
      }
      answers.push({ forward: { jsonrpc: "2.0", id, method: call.method, params }, ...(logs === undefined ? {} : { logs }) });
    }
    if (!answers.some((a) => "forward" in a)) return ok(batch ? answers : answers[0]);

    const mine = inFlightOf.get(account.id) ?? 0;
    if (inFlight >= maxOverall || mine >= maxPerAccount) {
      return {
        ...fail("RATE_LIMITED" as const, "Too many premium requests waiting on the chain; try again shortly"),
        retryAfterSeconds: RETRY_AFTER_SECONDS,
      };
    }
    inFlight++;
    inFlightOf.set(account.id, mine + 1);
    try {
      return await serve(answers, batch, account);
    } finally {
      inFlight--;
      const left = (inFlightOf.get(account.id) ?? 1) - 1;
      if (left <= 0) inFlightOf.delete(account.id);
      else inFlightOf.set(account.id, left);
    }
  };

  /** Checks the log ranges that need the head, reserves the reads, sends, and answers in the request's order. */
  async function serve(
    checked: (RpcError | { forward: RpcCall; logs?: LogRange })[],
    batch: boolean,
    account: Account,
  ): Promise<Ok<unknown> | PremiumRpcFailure> {
    // The head, read at most once per request and only for an eth_getLogs bound that needs it (not counted).
    let head: Promise<bigint | undefined> | undefined;
    const readHead = (): Promise<bigint | undefined> => {
      head ??= deps.rpc.forward([{ jsonrpc: "2.0", id: 0, method: "eth_blockNumber", params: [] }]).then((answers) => {
        const result = answers?.[0]?.result;
        return typeof result === "string" && /^0x[0-9a-f]{1,16}$/i.test(result) ? BigInt(result) : undefined;
      });
      return head;
    };
    const answers: (RpcError | { forward: RpcCall })[] = [];
    for (const a of checked) {
      if ("forward" in a && a.logs !== undefined) {
        const refused = await rangeRefusal(a.logs, readHead, deps.maxLogRange);
        if (refused === "unreachable") return fail("NETWORK_ERROR", "The chain did not answer");
        if (refused !== undefined) {
          answers.push(rpcError(a.forward.id, -32602, refused));
          continue;
        }
      }
      answers.push(a);
    }

    const forwarded = answers.flatMap((a) => ("forward" in a ? [a.forward] : []));
    if (forwarded.length === 0) return ok(batch ? answers : answers[0]);
    // One reservation for the whole request, before anything is sent: all of it fits, or nothing is forwarded.
    const year = quotaYear(deps.clock.nowMs());
    if (!(await deps.ledger.reserve(account.id, year, forwarded.length, deps.limits[account.plan]))) {
      return fail("PREMIUM_READ_LIMIT_EXCEEDED", "Premium read limit exceeded");
    }
    // The node sees our own ids, so the client's (which may repeat, or be null) cannot be confused.
    const outcome = await deps.rpc.send(forwarded.map((c, i) => ({ ...c, id: i })));
    if (outcome.kind === "not_sent") {
      // The node never took the calls: the reads are given back.
      await deps.ledger.release(account.id, year, forwarded.length);
      return fail("NETWORK_ERROR", "The chain did not answer");
    }
    // Handed to the node, the calls may have run (and been billed): the reads stay spent.
    if (outcome.kind === "lost") return fail("NETWORK_ERROR", outcome.timedOut ? "The chain did not answer in time" : "The chain's answer was lost");
    // Every forwarded call counts, a call the node answered with an error included (it was served).
    const byId = new Map<unknown, RpcAnswer>(outcome.answers.map((r) => [r.id, r]));
    let next = 0;
    const out = answers.map((a) => {
      if (!("forward" in a)) return a;
      const answer = byId.get(next++);
      if (answer === undefined) return rpcError(a.forward.id, -32603, "The node gave no answer to this call");
      return answer.error !== undefined
        ? { jsonrpc: "2.0", id: a.forward.id, error: nodeCallError(answer.error) }
        : { jsonrpc: "2.0", id: a.forward.id, result: answer.result ?? null };
    });
    return ok(batch ? out : out[0]);
  }
}
