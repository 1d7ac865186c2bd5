/**
 * A served chain whose node could not be checked at start (decisions §30: one provider down fails closed on its chain
 * only). Every chain's node is asked its chain id at start (app/foundation.ts); a node that answers another chain's id
 * stops the start, but a node that does not answer (a provider's 503, a timeout) of a chain other than the default no
 * longer does. That chain is served through this gate instead: every JSON-RPC exchange with its node waits for the
 * check, which is asked again on the chain's next exchange (its index follower's poll, a read or a write), at most
 * once per `retryMs`. Until the node answers the chain's own id every exchange fails as a node that does not answer
 * (the routes' 5xx for a failing chain: 500 `RPC_ERROR`, 503 `INDEX_STALE`, a proof `not-checked`), and nothing is
 * sent to the node but the check. Once it answers its own id the gate opens for good. Once it answers another chain's
 * id (a misconfiguration found late: the provider's URL now reaches another chain) the chain stays closed until a
 * restart, which then refuses to start; the finding is logged at error level once. An exchange waiting for a check
 * in flight rejects with its own signal's reason as soon as that signal aborts (as a fetch would): the check goes on for
 * the exchanges still waiting and for the next one. Before, an aborted exchange waited for the check's own timeout
 * (10 s), far past the caller's.
 */
import type { Http1Post } from "./http1_post.ts";
import { untilAborted } from "./_until_aborted.ts";

/** What one check of a chain's node found. */
export type ChainCheck =
  | { readonly kind: "ok" }
  /** The node did not answer (a network error, a 5xx, a timeout): asked again later. */
  | { readonly kind: "unanswered" }
  /** The node answered, and it is not the chain meant (another chain id, no EAS at the anchored address). */
  | { readonly kind: "wrong"; readonly problem: string };

/** The gate's state: `checked` and `wrong` are final. */
export type ChainGateState = "unchecked" | "checked" | "wrong";

/** Options of {@link createChainCheckGate}. */
export type ChainCheckGateOptions = {
  /** The chain's CAIP-2 id (logs and the error's message). */
  readonly caip2: string;
  /** Asks the node (through a fetch the gate does not hold); never throws. */
  readonly check: () => Promise<ChainCheck>;
  /** An unanswered check's exchanges fail at once for this long before the node is asked again; default 1,000 ms. */
  readonly retryMs?: number | undefined;
  /** The clock of `retryMs`; default `Date.now`. */
  readonly nowMs?: (() => number) | undefined;
  readonly log?: ((level: "info" | "error", event: string, fields: Record<string, unknown>) => void) | undefined;
};

/** A chain's gate: its state, and its node's fetch and POST held until the check passes. */
export type ChainCheckGate = {
  readonly state: () => ChainGateState;
  /**
   * Resolves once the chain was checked (asking the node now when due); rejects with {@link ChainNotCheckedError}
   * otherwise, or with `signal`'s reason as soon as it aborts (the check in flight goes on).
   */
  readonly ready: (signal?: AbortSignal | null | undefined) => Promise<void>;
  /** `inner` for this chain's node, behind the gate. */
  readonly fetch: (inner: typeof fetch) => typeof fetch;
  /** `inner` for this chain's node, behind the gate. */
  readonly post: (inner: Http1Post) => Http1Post;
};

/** An exchange with a chain whose node was not (or wrongly) checked; never sent to a client (the routes' codes are). */
export class ChainNotCheckedError extends Error {
  constructor(caip2: string, wrong: boolean) {
    super(wrong ? `The node of ${caip2} serves another chain` : `The node of ${caip2} has not answered its chain id yet`);
    this.name = "ChainNotCheckedError";
  }
}

/** Builds a closed gate (`unchecked`); the first exchange asks the node. */
export function createChainCheckGate(options: ChainCheckGateOptions): ChainCheckGate {
  const retryMs = options.retryMs ?? 1_000;
  const nowMs = options.nowMs ?? Date.now;
  let state: ChainGateState = "unchecked";
  let asking: Promise<void> | undefined;
  let lastAskedMs: number | undefined;

  const ask = async (): Promise<void> => {
    const found = await options.check().catch((): ChainCheck => ({ kind: "unanswered" }));
    if (state !== "unchecked") return;
    if (found.kind === "ok") {
      state = "checked";
      options.log?.("info", "chain_checked", { chain: options.caip2 });
    } else if (found.kind === "wrong") {
      state = "wrong";
      options.log?.("error", "chain_wrong_node", { chain: options.caip2, problem: found.problem, action: "the chain stays closed; fix its rpcUrl in CHAINS_FILE and restart" });
    }
  };

  const ready = async (signal?: AbortSignal | null | undefined): Promise<void> => {
    if (state === "checked") return;
    signal?.throwIfAborted();
    if (state === "unchecked") {
      if (asking === undefined && (lastAskedMs === undefined || nowMs() - lastAskedMs >= retryMs)) {
        lastAskedMs = nowMs();
        asking = ask().finally(() => {
          asking = undefined;
        });
      }
      if (asking !== undefined) await untilAborted(asking, signal);
    }
    // Read again: the check above may have changed it.
    const now = state as ChainGateState;
    if (now !== "checked") throw new ChainNotCheckedError(options.caip2, now === "wrong");
  };

  return {
    state: () => state,
    ready,
    fetch: (inner) =>
      Object.assign(
        (input: RequestInfo | URL, init?: RequestInit) =>
          state === "checked" ? inner(input, init) : ready(init?.signal ?? (input instanceof Request ? input.signal : undefined)).then(() => inner(input, init)),
        { preconnect: inner.preconnect },
      ) as typeof fetch,
    post: (inner) =>
      Object.assign(
        (body: string, signal: AbortSignal) => (state === "checked" ? inner(body, signal) : ready(signal).then(() => inner(body, signal))),
        { idle: inner.idle },
      ),
  };
}
