import type { RawRpc, RpcAnswer, RpcSendOutcome } from "../../ports/premium_reads.ts";
import { ChainNotCheckedError, refusedUnsent } from "./chain_check_gate.ts";

/** What {@link createFetchRawRpc} needs. */
export type FetchRawRpcOptions = {
  readonly rpcUrl: string;
  /** The fetch to send with (main.ts passes the metered one); default the global fetch. */
  readonly fetchFn?: typeof fetch | undefined;
  /** How long one round trip may take, in ms (default 10,000; `PREMIUM_RPC_TIMEOUT_MS`). */
  readonly timeoutMs?: number | undefined;
  /** Aborted when the service stops: a round trip still waiting on the node ends then, not at its timeout. */
  readonly signal?: AbortSignal | undefined;
};

const isAnswer = (value: unknown): value is RpcAnswer =>
  typeof value === "object" && value !== null && !Array.isArray(value) && "id" in value &&
  ("result" in value || (typeof (value as { error?: unknown }).error === "object" && (value as { error?: unknown }).error !== null));

/**
 * Transport errors that happen before a request is written: the node was never reached (no connection, no
 * name, no TLS), so nothing can have run. Any other failure (a reset, an abort) may come after the node took
 * the request.
 */
const NOT_CONNECTED = new Set([
  "ECONNREFUSED", "ConnectionRefused", "FailedToOpenSocket", "ENOTFOUND", "EAI_AGAIN", "EAI_FAIL", "ENETUNREACH", "EHOSTUNREACH",
  "CERT_HAS_EXPIRED", "DEPTH_ZERO_SELF_SIGNED_CERT", "SELF_SIGNED_CERT_IN_CHAIN", "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY", "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** HTTP statuses saying a gateway's time ran out while the node worked on the request: the calls may have run. */
const GATEWAY_TIMEOUTS = new Set([408, 504, 524]);

/**
 * JSON-RPC calls sent to the node as one batch over HTTP, as they are. `send` tells what became of them:
 * answered; `not_sent` when the connection could not be made, the chain's gate held the calls (its node being
 * checked again: app/chain_checks.ts; the timeout or the service's stop ending them while they waited there included),
 * or the node (or its gateway) refused the batch with an HTTP status other than
 * 200 and other than a gateway timeout (providers answer 429/5xx before running anything); `lost` for a timeout,
 * the service stopping, a connection dropped once the request was written, a gateway timeout, or a 200 whose body is
 * not an array of JSON-RPC responses (a node that refuses the whole batch answers one error object): the node may have
 * run those. `forward` is the answers or undefined. The node's text never leaves here.
 */
export function createFetchRawRpc(options: FetchRawRpcOptions): RawRpc {
  const fetchFn = options.fetchFn ?? fetch;
  async function send(calls: Parameters<RawRpc["send"]>[0]): Promise<RpcSendOutcome> {
    // Stopping already: nothing is sent.
    if (options.signal?.aborted) return { kind: "not_sent" };
    const timeout = AbortSignal.timeout(options.timeoutMs ?? 10_000);
    // One signal per send: the chain's gate says by it whether these calls were refused before reaching the node.
    const signal = options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]);
    try {
      const response = await fetchFn(options.rpcUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(calls),
        signal,
      });
      if (!response.ok) {
        await response.body?.cancel().catch(() => {});
        return GATEWAY_TIMEOUTS.has(response.status) ? { kind: "lost", timedOut: true } : { kind: "not_sent" };
      }
      const body: unknown = await response.json();
      if (!Array.isArray(body) || !body.every(isAnswer)) return { kind: "lost", timedOut: false };
      return { kind: "answered", answers: body };
    } catch (error) {
      // The chain's gate held the calls (its node being checked again after a failed exchange): never sent. So were calls
      // whose timeout or stop came while they waited there for the check: the rejection is then the signal's reason, as
      // for calls aborted on the wire, and they were counted lost (the reads spent) though the node never saw them.
      if (error instanceof ChainNotCheckedError || refusedUnsent(signal)) return { kind: "not_sent" };
      const code = (error as { code?: unknown } | undefined)?.code;
      if (typeof code === "string" && NOT_CONNECTED.has(code)) return { kind: "not_sent" };
      return { kind: "lost", timedOut: timeout.aborted };
    }
  }
  return {
    send,
    async forward(calls) {
      const outcome = await send(calls);
      return outcome.kind === "answered" ? outcome.answers : undefined;
    },
  };
}
