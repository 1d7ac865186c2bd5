/**
 * A lean JSON-RPC client for the delegated-attestation hot path (issue 28): the calls made in one turn of the event
 * loop go out as one HTTP batch, answers are matched by id, and a call costs one object and one promise. viem's
 * client does the same through several layers (request builders, retry and timeout wrappers, formatters, a batch
 * scheduler per call): about 0.25 ms of CPU per call against 0.11 ms here on the benchmark machine, and a delegated
 * attestation makes six. Everything else keeps using viem.
 *
 * Failures keep the distinctions the submission path depends on (decisions §15): {@link NodeRpcError} is the node's
 * own answer to one call (a refusal, a revert); {@link RpcTransportError} is an exchange that failed as a whole (no
 * connection, a timeout, an HTTP status, an unreadable body), after which the node may or may not have run the calls.
 * Retries follow viem's transport, which this replaces: once, after 150 ms, for what viem retries (no answer, HTTP
 * 403/408/413/429/500/502/503/504, JSON-RPC codes -1, 429, -32005, -32007, -32603). Error messages name no URL.
 *
 * Given `metrics`, it counts what the service's metered fetch counts (app/foundation.ts, `meteredRpcFetch`), from
 * the calls and answers it holds anyway instead of parsing the request again and cloning the response: calls by
 * method, round-trip time, and failures (timeout, network, HTTP status, JSON-RPC error objects by code and method).
 */
import type { Metrics } from "../../ports/metrics.ts";
import type { Http1Post } from "./http1_post.ts";

/** The node answered the call with a JSON-RPC error object. */
export class NodeRpcError extends Error {
  override readonly name = "NodeRpcError";
  constructor(
    readonly code: number,
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }
}

/** The HTTP exchange failed as a whole: the node may or may not have run its calls. */
export class RpcTransportError extends Error {
  override readonly name = "RpcTransportError";
  constructor(
    message: string,
    /** The HTTP status, when one came. */
    readonly status?: number | undefined,
    readonly timedOut = false,
  ) {
    super(message);
  }
}

/** Sends JSON-RPC calls; calls made in the same turn share one HTTP round trip. */
export type JsonRpc = {
  readonly request: <T = unknown>(method: string, params: readonly unknown[], options?: CallOptions) => Promise<T>;
};

/**
 * Per-call options. A call the node may hold open (`eth_sendRawTransactionSync` on a node that does not mine on
 * arrival holds it until mined or for its own timeout) goes `alone`, so the calls of the same turn are not held with
 * it, and with `retries: 0`, so a failure is not sent again blindly (its caller settles it).
 */
export type CallOptions = {
  /** Retries after a retryable failure (default the client's `retryCount`). */
  readonly retries?: number | undefined;
  /** Sent in an HTTP request of its own instead of the turn's batch. */
  readonly alone?: boolean | undefined;
};

/** Options of {@link createJsonRpc}. */
export type JsonRpcOptions = {
  readonly url: string;
  /** The fetch to send with (the service passes the metered one; tests a counting one). */
  readonly fetchFn?: typeof fetch | undefined;
  /** Sends over kept-alive sockets instead of `fetchFn` (http1_post.ts: a plain-http node, no proxy); meter with `metrics`. */
  readonly post?: Http1Post | undefined;
  /** How long one round trip may take, in ms (default 10,000). */
  readonly timeoutMs?: number | undefined;
  /** Retries of a call after a retryable failure (default 1, as the viem transport this replaces). */
  readonly retryCount?: number | undefined;
  /** Delay before a retry, in ms (default 150). */
  readonly retryDelayMs?: number | undefined;
  /** Where to count calls, round trips and failures; pass an unmetered `fetchFn` with it. */
  readonly metrics?: Metrics | undefined;
};

type Pending = {
  readonly id: number;
  readonly method: string;
  readonly params: readonly unknown[];
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
};

type Answer = { readonly id?: unknown; readonly result?: unknown; readonly error?: { code?: unknown; message?: unknown; data?: unknown } | null };

const RETRY_STATUSES = new Set([403, 408, 413, 429, 500, 502, 503, 504]);
/**
 * JSON-RPC error codes viem's transport retries: an unknown error (-1), an internal error (-32603), a provider's rate
 * limit (-32005 "limit exceeded", -32007, 429). The call may have run (-32603) or was not run: no verdict on a send's
 * bytes either (rawSendAnswer in _tx_delivery.ts reads them so, from this one set).
 */
export const RETRY_CODES: ReadonlySet<number> = new Set([-1, 429, -32005, -32007, -32603]);

/** Whether viem's transport would retry after this failure. */
export function retryable(error: unknown): boolean {
  if (error instanceof NodeRpcError) return RETRY_CODES.has(error.code);
  if (error instanceof RpcTransportError) return error.status === undefined || RETRY_STATUSES.has(error.status);
  return false;
}

/** Builds the client. */
export function createJsonRpc(options: JsonRpcOptions): JsonRpc {
  const fetchFn = options.fetchFn ?? fetch;
  const post = options.post;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const retryCount = options.retryCount ?? 1;
  const retryDelayMs = options.retryDelayMs ?? 150;
  const metrics = options.metrics;
  let nextId = 1;
  let queued: Pending[] = [];

  const flush = () => {
    const batch = queued;
    queued = [];
    void exchange(batch);
  };

  /** One HTTP exchange: the status, and the body's text on demand (a refused answer's body is not read). */
  async function roundTrip(body: string, signal: AbortSignal): Promise<{ readonly status: number; readonly text: () => Promise<string> }> {
    if (post !== undefined) {
      const answer = await post(body, signal);
      return { status: answer.status, text: () => Promise.resolve(answer.text) };
    }
    const response = await fetchFn(options.url, { method: "POST", headers: { "content-type": "application/json" }, body, signal });
    if (!response.ok) await response.body?.cancel().catch(() => {});
    return { status: response.status, text: () => response.text() };
  }

  async function exchange(batch: Pending[]): Promise<void> {
    const body = JSON.stringify(batch.map((call) => ({ jsonrpc: "2.0", id: call.id, method: call.method, params: call.params })));
    if (metrics !== undefined) for (const call of batch) metrics.increment("ats_rpc_calls_total", { method: call.method });
    // A timer cleared once answered: AbortSignal.timeout's would stay pending for the whole timeout after every call.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    const timeout = controller.signal;
    const started = performance.now();
    let answers: unknown;
    try {
      let answer: { readonly status: number; readonly text: () => Promise<string> };
      try {
        answer = await roundTrip(body, timeout);
      } catch (error) {
        metrics?.increment("ats_rpc_failures_total", { reason: timeout.aborted ? "timeout" : "network" });
        throw error;
      } finally {
        metrics?.observe("ats_rpc_round_trip_seconds", (performance.now() - started) / 1000);
      }
      if (answer.status < 200 || answer.status > 299) {
        metrics?.increment("ats_rpc_failures_total", { reason: `http_${answer.status}` });
        throw new RpcTransportError(`HTTP ${answer.status}`, answer.status);
      }
      try {
        answers = JSON.parse(await answer.text());
      } catch {
        throw new RpcTransportError("The node's answer is not JSON", answer.status);
      }
    } catch (error) {
      const failure = error instanceof RpcTransportError
        ? error
        : new RpcTransportError(timeout.aborted ? "The node did not answer in time" : "The node could not be reached", undefined, timeout.aborted);
      for (const call of batch) call.reject(failure);
      return;
    } finally {
      clearTimeout(timer);
    }
    // A node that refuses a whole batch answers one error object: every call gets it.
    if (!Array.isArray(answers)) {
      const error = nodeError(answers as Answer) ?? new RpcTransportError("The node's answer is not a batch answer");
      if (metrics !== undefined && error instanceof NodeRpcError) {
        metrics.increment("ats_rpc_failures_total", { reason: "rpc_error", code: codeLabel(error.code), method: batch.length === 1 ? batch[0]!.method : "unknown" });
      }
      for (const call of batch) call.reject(error);
      return;
    }
    const byId = new Map<unknown, Answer>();
    for (const answer of answers as Answer[]) if (typeof answer === "object" && answer !== null) byId.set(answer.id, answer);
    for (const call of batch) {
      const answer = byId.get(call.id);
      if (answer === undefined) call.reject(new RpcTransportError("The node's batch answer lacks a call"));
      else {
        const error = nodeError(answer);
        if (error === undefined) call.resolve(answer.result);
        else {
          metrics?.increment("ats_rpc_failures_total", { reason: "rpc_error", code: codeLabel(answer.error?.code), method: call.method });
          call.reject(error);
        }
      }
    }
  }

  const once = (method: string, params: readonly unknown[], alone: boolean): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = { id: nextId++, method, params, resolve, reject };
      if (alone) return void exchange([call]);
      if (queued.length === 0) setImmediate(flush);
      queued.push(call);
    });

  return {
    async request<T>(method: string, params: readonly unknown[], callOptions?: CallOptions): Promise<T> {
      const retries = callOptions?.retries ?? retryCount;
      const alone = callOptions?.alone === true;
      for (let attempt = 0; ; attempt++) {
        try {
          return (await once(method, params, alone)) as T;
        } catch (error) {
          if (attempt >= retries || !retryable(error)) throw error;
          await Bun.sleep(retryDelayMs * 2 ** attempt);
        }
      }
    },
  };
}

/** A JSON-RPC error code as a label value: an integer in the spec's range, else `other` (as the metered fetch). */
const codeLabel = (code: unknown) =>
  typeof code === "number" && Number.isInteger(code) && Math.abs(code) <= 32_768 ? String(code) : "other";

function nodeError(answer: Answer): NodeRpcError | undefined {
  const error = answer?.error;
  if (error === undefined || error === null || typeof error !== "object") return undefined;
  const code = typeof error.code === "number" ? error.code : -1;
  return new NodeRpcError(code, typeof error.message === "string" ? error.message : "JSON-RPC error", error.data);
}

/** A hex quantity (`0x1a`) as a bigint; throws on anything else. */
export function quantity(value: unknown): bigint {
  if (typeof value !== "string" || !/^0x[0-9a-fA-F]+$/.test(value)) throw new RpcTransportError("The node answered with an unreadable quantity");
  return BigInt(value);
}
