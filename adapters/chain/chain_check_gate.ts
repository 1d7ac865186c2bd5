/**
 * A served chain's node checked again (decisions §30: one provider down fails closed on its chain only; a chain is
 * never served another chain's data). Every chain's node is asked its chain id at start (app/foundation.ts); a node
 * that answers another chain's id stops the start, but a node that does not answer (a provider's 503, a timeout) of a
 * chain other than the default no longer does. That chain starts behind this gate `unchecked`: every JSON-RPC exchange
 * with its node waits for the check, which is asked again on the chain's next exchange (its index follower's poll, a
 * read or a write), at most once per `retryMs`. Until the node answers the chain's own id every exchange fails as a
 * node that does not answer (the routes' 5xx for a failing chain: 500 `RPC_ERROR`, 503 `INDEX_STALE`, a proof
 * `not-checked`), and nothing is sent to the node but the check. Once it answers its own id the gate opens. Once it
 * answers another chain's id (a misconfiguration found late: the provider's URL now reaches another chain) the chain
 * stays closed until a restart, which then refuses to start; the finding is logged at error level once.
 *
 * A chain checked at start is served through its gate too (`initial: "checked"`), and so is an open gate: an exchange
 * that fails the way a provider's outage or a switch of its backend does (the fetch or POST rejects, not aborted by
 * its caller, or answers HTTP 5xx; a 429 is the provider's answer and is not counted) closes the gate again,
 * `unchecked`, logged once (`chain_recheck`): the chain's next exchange asks the node its chain id first, as at start,
 * and so does every exchange after it (one check at a time, not once per `retryMs`) until the node answers. Before,
 * once a chain served nothing asked again: a provider that answered 503 for a while and then pointed the URL at another
 * chain's node had that chain's nonces, index and proofs served under this chain's name. An exchange that succeeds
 * costs one status read; nothing more is sent while exchanges succeed.
 *
 * An exchange waiting for a check in flight rejects with its own signal's reason as soon as that signal aborts (as a
 * fetch would): the check goes on for the exchanges still waiting and for the next one. Before, an aborted exchange
 * waited for the check's own timeout (10 s), far past the caller's. The rejection is the signal's reason itself, as a
 * fetch aborted before sending gives (viem's transport tells an abort by its name `AbortError`), so a caller that must
 * know whether its request reached the node asks {@link refusedUnsent} about its signal.
 *
 * An `empty` check (the node answered the chain's id but nothing where EAS should be: a lagging or recovering backend)
 * is asked again like an unanswered one, logged at warn once: only an answer that shows another chain (its id, another
 * EAS version, a revert) is final. Before, an empty answer was final too, and a held chain whose backend came back
 * still syncing stayed closed until a restart. Empty answers that last `emptyErrorAfterMs` (10 minutes by the gate's
 * clock, from the first of them until a check passes) are logged once more, at error level: a node that keeps
 * answering empty may be a misconfiguration (the anchors' EAS address without EAS, another network reusing the chain
 * id), which `wrong` used to report at error level, and a chain closed in silence looks like an outage. The gate still
 * asks again: a backend may sync for longer.
 */
import type { Http1Post } from "./http1_post.ts";
import { untilAborted } from "./_until_aborted.ts";

/** What one check of a chain's node found. */
export type ChainCheck =
  | { readonly kind: "ok" }
  /** The node did not answer (a network error, a 5xx, a timeout): asked again later. */
  | { readonly kind: "unanswered" }
  /**
   * The node answered with nothing where the chain meant has something (an empty `eth_call` at EAS's address: no code
   * there on a backend that lags or is still syncing): asked again later, as `unanswered`, and logged at warn once, and
   * at error level once when such answers have lasted `emptyErrorAfterMs`.
   */
  | { readonly kind: "empty"; readonly problem: string }
  /** The node answered, and it is not the chain meant (another chain id, another EAS version, a revert). */
  | { readonly kind: "wrong"; readonly problem: string };

/** The gate's state: `wrong` is final; `checked` turns `unchecked` again after a failed exchange. */
export type ChainGateState = "unchecked" | "checked" | "wrong";

/** Options of {@link createChainCheckGate}. */
export type ChainCheckGateOptions = {
  /** The chain's CAIP-2 id (logs and the error's message). */
  readonly caip2: string;
  /** Asks the node (through a fetch the gate does not hold); never throws. */
  readonly check: () => Promise<ChainCheck>;
  /** An unanswered check's exchanges fail at once for this long before the node is asked again; default 1,000 ms. */
  readonly retryMs?: number | undefined;
  /** The clock of `retryMs` and `emptyErrorAfterMs`; default `Date.now`. */
  readonly nowMs?: (() => number) | undefined;
  /**
   * How long the node may keep answering `empty` before it is logged at error level (once): a backend syncing answers so
   * for minutes, a misconfiguration (the anchors' EAS address without EAS, another network reusing the chain id) for
   * good. Default 600,000 ms (10 minutes).
   */
  readonly emptyErrorAfterMs?: number | undefined;
  readonly log?: ((level: "info" | "warn" | "error", event: string, fields: Record<string, unknown>) => void) | undefined;
  /** `checked` for a chain whose node answered its chain id at start; default `unchecked`. */
  readonly initial?: "unchecked" | "checked" | undefined;
  /**
   * What the operator does about a node found wrong, in `chain_wrong_node`'s action: the setting that names this
   * node (`fix RPC_URL and restart`, `fix its rpcUrl in CHAINS_FILE and restart`; app/chain_checks.ts words them, and
   * says to set `DEFAULT_CHAIN` too when a restart would not refuse another chain); default `fix its node's URL and
   * restart`. The gate does not know which setting served the chain: a log naming CHAINS_FILE to an operator who set
   * RPC_URL alone sent them looking for a file they do not have.
   */
  readonly fixHint?: string | undefined;
};

/** A chain's gate: its state, and its node's fetch and POST held until the check passes. */
export type ChainCheckGate = {
  readonly state: () => ChainGateState;
  /**
   * Resolves once the chain was checked (asking the node now when due); rejects with {@link ChainNotCheckedError}
   * otherwise, or with `signal`'s reason as soon as it aborts (the check in flight goes on). When it rejects,
   * {@link refusedUnsent} is true for `signal`.
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

// The signals of exchanges a gate refused before sending them (their check unanswered or wrong, or the signal aborting
// while they waited for it). Kept by signal, not by error: the rejection is the signal's reason, which one signal (the
// service's stop) may share with exchanges that were sent and then aborted.
const refused = new WeakSet<AbortSignal>();

/**
 * Whether a gate refused an exchange made with `signal` before anything was sent to the node: its check unanswered or
 * wrong, or `signal` aborting while the exchange waited for the check. Meaningful for a signal given to one exchange
 * (the premium pass-through makes one per send: app/chain_checks.ts, adapters/chain/fetch_raw_rpc.ts).
 */
export function refusedUnsent(signal: AbortSignal): boolean {
  return refused.has(signal);
}

/** Builds a gate, closed (`unchecked`, the first exchange asks the node) unless `initial` is `checked`. */
export function createChainCheckGate(options: ChainCheckGateOptions): ChainCheckGate {
  const retryMs = options.retryMs ?? 1_000;
  const nowMs = options.nowMs ?? Date.now;
  let state: ChainGateState = options.initial ?? "unchecked";
  let asking: Promise<void> | undefined;
  let lastAskedMs: number | undefined;
  // Closed again by a failed exchange: every exchange asks the check (one at a time) until the node answers, not once per
  // `retryMs`. Each sends the check instead of itself, so the node is asked no more than before, and the chain serves on
  // the first exchange after its provider is back rather than up to `retryMs` later.
  let rechecking = false;
  // An empty answer is warned of once until the node is checked, not on each retry of a backend that lags for minutes;
  // empty answers since `emptySinceMs` (the first of them) that last `emptyErrorAfterMs` are logged at error level once.
  const emptyErrorAfterMs = options.emptyErrorAfterMs ?? 600_000;
  let emptySinceMs: number | undefined;
  let erredEmpty = false;

  const ask = async (): Promise<void> => {
    const found = await options.check().catch((): ChainCheck => ({ kind: "unanswered" }));
    if (state !== "unchecked") return;
    if (found.kind === "ok") {
      state = "checked";
      rechecking = false;
      emptySinceMs = undefined;
      erredEmpty = false;
      options.log?.("info", "chain_checked", { chain: options.caip2 });
    } else if (found.kind === "wrong") {
      state = "wrong";
      const action = `the chain stays closed; ${options.fixHint ?? "fix its node's URL and restart"}`;
      options.log?.("error", "chain_wrong_node", { chain: options.caip2, problem: found.problem, action });
    } else if (found.kind === "empty") {
      const now = nowMs();
      if (emptySinceMs === undefined) {
        emptySinceMs = now;
        options.log?.("warn", "chain_check_empty", { chain: options.caip2, problem: found.problem, action: "the chain stays closed; its node is asked again at its next exchange" });
      } else if (!erredEmpty && now - emptySinceMs >= emptyErrorAfterMs) {
        // Still not final (a backend may sync for longer), but no longer a lag to wait out quietly: the chain has served
        // nothing all this while, and before the empty answer was not final, this was `chain_wrong_node` at error level.
        erredEmpty = true;
        const minutes = Math.round((now - emptySinceMs) / 60_000);
        options.log?.("error", "chain_check_empty", {
          chain: options.caip2,
          problem: found.problem,
          minutes,
          action: "the chain stays closed and its node is asked again; check the EAS address the trust anchors give this chain, and that its node serves this network (not another one reusing its chain id)",
        });
      }
    }
  };

  const ready = async (signal?: AbortSignal | null | undefined): Promise<void> => {
    try {
      await waitForCheck(signal);
    } catch (error) {
      if (signal !== null && signal !== undefined) refused.add(signal);
      throw error;
    }
  };

  const waitForCheck = async (signal: AbortSignal | null | undefined): Promise<void> => {
    if (state === "checked") return;
    signal?.throwIfAborted();
    if (state === "unchecked") {
      if (asking === undefined && (rechecking || lastAskedMs === undefined || nowMs() - lastAskedMs >= retryMs)) {
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

  /** A failed exchange with an open gate's node: the next exchange checks its chain id first. */
  const suspect = (): void => {
    if (state !== "checked") return;
    state = "unchecked";
    rechecking = true;
    options.log?.("warn", "chain_recheck", { chain: options.caip2, action: "its next exchange asks the node its chain id first" });
  };
  // Not 429: a provider that rate-limits the service answered, and a check per 429 would add calls against the limit and
  // fail every exchange waiting on it whenever the check itself is limited.
  const failedStatus = (status: number) => status >= 500;
  // Only the exchange sent to the node is watched, never the gate's own refusal (nothing was sent). An exchange its caller
  // aborted (its deadline, a node that hangs) is not counted: the caller's retry or the next exchange finds out, and a
  // hanging node's retries are not replaced by checks of their own.
  const watched = <T extends { readonly status: number }>(exchange: Promise<T>, signal: AbortSignal | null | undefined): Promise<T> =>
    exchange.then((answer) => {
      if (failedStatus(answer.status)) suspect();
      return answer;
    }, (error: unknown) => {
      if (signal?.aborted !== true) suspect();
      throw error;
    });

  return {
    state: () => state,
    ready,
    fetch: (inner) =>
      Object.assign(
        (input: RequestInfo | URL, init?: RequestInit) => {
          const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
          const send = () => watched(inner(input, init), signal);
          return state === "checked" ? send() : ready(signal).then(send);
        },
        { preconnect: inner.preconnect },
      ) as typeof fetch,
    post: (inner) =>
      Object.assign(
        (body: string, signal: AbortSignal) => {
          const send = () => watched(inner(body, signal), signal);
          return state === "checked" ? send() : ready(signal).then(send);
        },
        { idle: inner.idle },
      ),
  };
}
