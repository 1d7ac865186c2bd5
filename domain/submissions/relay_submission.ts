/**
 * The write of a relay request as one use case (decisions §23, issue 47 item 2): its idempotency key, the submission
 * record opened when the relay hands the transaction to the chain, the relay itself, and the outcome kept on the
 * record. The route only turns the HTTP request into a {@link RelayWrite} and the {@link RelayWriteOutcome} back into
 * an answer, which it hands to `keep` so that a retry under the key gets it again.
 */
import type { IdempotencyAnswer, IdempotencyDecision, Idempotency } from "../idempotency/mod.ts";
import type { RateLimiter } from "../rate_limit.ts";
import { keepsStoredAnswer } from "../idempotency/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import type { StoredAnswer } from "../../ports/idempotency.ts";
import type { SubmissionItem } from "../../ports/submission_records.ts";
import type { SubmissionStatus, SubmissionView } from "./submission_status.ts";
import type { RelayResult, SubmissionTracker } from "./submission_tracker.ts";

/**
 * Opens the submission when the relay hands its transaction to the chain (a batch's with each of its requests), for
 * the replay record `key` on chain `chainId` (a record's identity is (chain, signature), decisions §30).
 */
export type OnSubmitting = (chainId: number, key: string, items?: readonly SubmissionItem[]) => Promise<void>;

/** The relay as the use case drives it: `input` sent, the submission opened through `onSubmitting` (absent: none). */
export type RelaySend<In, R extends RelayResult> = (input: In, onSubmitting: OnSubmitting | undefined) => Promise<R>;

/** What the use case needs; without `tracking` answers carry no submission, without `idempotency` keys are ignored. */
export type RelaySubmissionDeps = {
  readonly idempotency?: Idempotency | undefined;
  readonly tracking?: { readonly tracker: SubmissionTracker; readonly status: SubmissionStatus; readonly log: Logger } | undefined;
};

/** A request's idempotency key with what "the same request" means (decisions §23). */
export type KeyedRequest = { readonly key: string; readonly method: string; readonly path: string; readonly body: string };

/**
 * The caller's turns a relay write takes (decisions §23; the public relay's keyed writes per client address, the
 * private relay's writes per account), taken around the key's lookup so that a retry answered from its key costs no
 * turn of new work, and new work under a key never gets past the turns:
 * - a turn is taken first; a request its key answers (a kept answer replayed, 422 `IDEMPOTENCY_KEY_REUSED`, 409
 *   `IDEMPOTENCY_KEY_IN_USE`, a kept 503 `OUTCOME_UNKNOWN` taken back and answered from its submission) gives it
 *   back and takes one of `lookups` instead (when `lookups` has none left the turn stays spent, so lookups under the
 *   turns are bounded by the two together);
 * - past the turns, one of `lookups` buys a read of the key's record (one read by its primary key, nothing written):
 *   its answer when it has one, else 429 with the turns' `Retry-After` (the request is new work); past both, 429 with
 *   no read at all. A stream of unknown keys past the limit is so bounded to `lookups` reads a minute.
 * Without `lookups` every request takes a turn before its key is looked up (as before). A 429 is never kept.
 */
export type WriteRate = {
  /** The bucket's key: `client:<address>` or `account:<id>`. */
  readonly key: string;
  readonly turns: RateLimiter;
  readonly lookups?: RateLimiter | undefined;
  /** The 429's message, worded by the route. */
  readonly message: (retryAfterSeconds: number) => string;
};

/** One relay write as the route read it. */
export type RelayWrite<In> = {
  /** Whose keys and submissions (`account:<id>`, or `client:<address>` where there is no account). */
  readonly scope: string;
  /** The `Idempotency-Key` and the request it names; absent: no key was sent. */
  readonly keyed?: KeyedRequest | undefined;
  /** `Prefer: respond-async`: answered once the submission is recorded; the relay runs on. */
  readonly async: boolean;
  /** The typed request the relay sends. */
  readonly input: In;
  /**
   * Without `keyed`: told the submission's id once it is opened, for a key held outside (a paid write's, whose key is
   * kept around its payment: http/idempotency.ts), so a retry after a crash answers from it.
   */
  readonly attach?: ((submissionId: string) => Promise<void>) | undefined;
  /** The caller's turns ({@link WriteRate}); absent: none taken here. */
  readonly rate?: WriteRate | undefined;
};

/** What a relay write came to. */
export type RelayWriteOutcome<R> =
  /** A retry of a finished request: its stored answer, given again. */
  | { readonly kind: "replay"; readonly answer: StoredAnswer }
  /** Past the caller's turns ({@link WriteRate}): 429 with `Retry-After`, nothing stored or run. */
  | { readonly kind: "rate-limited"; readonly code: "RATE_LIMITED"; readonly message: string; readonly retryAfterSeconds: number }
  /** The key is another request's (422) or still in use (409 with `retryAfterSeconds`). */
  | { readonly kind: "key-refused"; readonly code: string; readonly message: string; readonly retryAfterSeconds?: number | undefined }
  /**
   * The request that first held the key died after opening this submission (a crash), or was answered 503
   * `OUTCOME_UNKNOWN` about it (`replayed`: that answer was kept): answer as it stands.
   */
  | { readonly kind: "resumed"; readonly submissionId: string; readonly view: SubmissionView | undefined; readonly replayed?: boolean | undefined }
  /** `async` and the submission was recorded: answer 202 now; the rest runs on. */
  | { readonly kind: "accepted"; readonly submissionId: string }
  /** The relay answered; `submissionId` once a transaction was handed to the chain. */
  | { readonly kind: "answered"; readonly result: R; readonly submissionId: string | undefined };

/** An outcome, and where its answer is kept for the key's retries (absent: nothing to keep, no key). */
export type RelayWriteRun<R> = {
  readonly outcome: RelayWriteOutcome<R>;
  readonly keep?: ((answer: StoredAnswer | undefined) => Promise<void>) | undefined;
};

/** Runs one relay write (see the module's comment). */
export type RelaySubmission<In, R extends RelayResult> = (write: RelayWrite<In>) => Promise<RelayWriteRun<R>>;

/** Builds the use case of one relay route over its `send`. */
export function createRelaySubmission<In, R extends RelayResult>(deps: RelaySubmissionDeps, send: RelaySend<In, R>): RelaySubmission<In, R> {
  return async (write) => {
    const rate = write.rate;
    const turn = rate?.turns.take(rate.key);
    const idempotency = deps.idempotency;
    if (write.keyed === undefined || idempotency === undefined) {
      if (turn !== undefined && !turn.allowed) return { outcome: rateLimited(rate!, turn.retryAfterSeconds) };
      return { outcome: await tracked(deps, write, send, write.attach) };
    }
    const request = { scope: write.scope, ...write.keyed };
    if (turn !== undefined && !turn.allowed) {
      // Past the turns: the key's record may hold this request's answer; a read of it takes one of the lookups.
      const lookup = idempotency.lookup;
      const held = lookup !== undefined && rate!.lookups?.take(rate!.key).allowed === true ? await lookup(request) : undefined;
      return { outcome: held === undefined ? rateLimited(rate!, turn.retryAfterSeconds) : keyAnswer(held) };
    }
    const decision = await idempotency(request);
    // Answered by its key: the turn of new work is given back, a lookup's taken instead (while there is one). So is a
    // kept 503 OUTCOME_UNKNOWN taken back (`kept`): it is answered from its submission and never sends (underKey).
    // Before, each such retry spent a turn, and a client polling its unknown outcome ran out of writes.
    if (decision.kind !== "run" || decision.kept !== undefined) {
      if (rate !== undefined && rate.lookups?.take(rate.key).allowed === true) rate.turns.take(rate.key, -1);
    }
    if (decision.kind !== "run") return { outcome: keyAnswer(decision) };
    return await underKey(deps, write, send, decision);
  };
}

/** What a key answers without running: its kept answer, or its refusal. */
function keyAnswer<R>(answer: IdempotencyAnswer): RelayWriteOutcome<R> {
  if (answer.kind === "replay") return { kind: "replay", answer: answer.answer };
  const retryAfterSeconds = answer.kind === "in-use" ? answer.retryAfterSeconds : undefined;
  return { kind: "key-refused", code: answer.code, message: answer.message, retryAfterSeconds };
}

/** The 429 of a write past its caller's turns, worded by the route; never kept. */
function rateLimited<R>(rate: WriteRate, retryAfterSeconds: number): RelayWriteOutcome<R> {
  return { kind: "rate-limited", code: "RATE_LIMITED", message: rate.message(retryAfterSeconds), retryAfterSeconds };
}

/** The first request under its key (or a retry of one that died): runs, and keeps its answer once worded. */
async function underKey<In, R extends RelayResult>(
  deps: RelaySubmissionDeps,
  write: RelayWrite<In>,
  send: RelaySend<In, R>,
  decision: Extract<IdempotencyDecision, { kind: "run" }>,
): Promise<RelayWriteRun<R>> {
  const keep = (answer: StoredAnswer | undefined) => decision.finish(answer !== undefined && keepsStoredAnswer(answer) ? answer : undefined);
  // A kept 503 OUTCOME_UNKNOWN (or a batch's answer with one) taken back to answer from its submission (decisions §23).
  const kept = decision.kept;
  const givenBack = async (answer: StoredAnswer): Promise<RelayWriteRun<R>> => {
    await decision.finish(answer);
    return { outcome: { kind: "replay", answer } };
  };
  try {
    const resumed = decision.resumed;
    const status = deps.tracking?.status;
    if (resumed === undefined || status === undefined) {
      if (kept !== undefined) return await givenBack(kept);
      return { outcome: await tracked(deps, write, send, decision.attach), keep };
    }
    const found = await status.read(resumed);
    const view = found.ok ? found.value : undefined;
    // A submission still on its way (or no longer known) is answered as it stands and not kept: the key stays with the
    // write (its lease runs on), and a retry past it asks again and gets the outcome once settled, as the witness's
    // and the paid relay's resumes do (http/idempotency.ts). Before, its 202 was kept, and replayed for the key's 24
    // hours after the write was mined. A kept answer taken back is given back as it was, and replayed.
    const settled = view !== undefined && (view.state === "mined" || view.state === "confirmed" || view.state === "failed");
    if (!settled && kept !== undefined) return await givenBack(kept);
    return { outcome: { kind: "resumed", submissionId: resumed, view, replayed: kept !== undefined }, keep: settled ? keep : () => Promise.resolve() };
  } catch (error) {
    await decision.finish(kept);
    throw error;
  }
}

/**
 * Runs the relay under its submission's record: opened when the relay hands the transaction to the chain (every check
 * passed, the signature recorded), it keeps the relay's outcome. With `async`, the outcome is known as soon as the
 * record exists, and the relay runs on; a request refused by its checks is answered as without it.
 */
async function tracked<In, R extends RelayResult>(
  deps: RelaySubmissionDeps,
  write: RelayWrite<In>,
  send: RelaySend<In, R>,
  attach: ((submissionId: string) => Promise<void>) | undefined,
): Promise<RelayWriteOutcome<R>> {
  const tracking = deps.tracking;
  if (tracking === undefined) return { kind: "answered", result: await send(write.input, undefined), submissionId: undefined };
  const state: Opened = { id: undefined, chainId: 0, ref: "", signal: undefined, began: tracking.tracker.began() };
  const onSubmitting: OnSubmitting = async (chainId, key, items) => {
    state.id = await tracking.tracker.open(write.scope, chainId, key, items);
    state.chainId = chainId;
    state.ref = key;
    await attach?.(state.id);
    state.signal?.();
  };
  if (!write.async) {
    const result = await send(write.input, onSubmitting);
    await settle(tracking, state, result, write.scope);
    return { kind: "answered", result, submissionId: state.id };
  }
  const recorded = new Promise<undefined>((resolve) => (state.signal = () => resolve(undefined)));
  const work = send(write.input, onSubmitting).then(async (result) => {
    await settle(tracking, state, result, write.scope);
    return { result };
  });
  const first = await Promise.race([work, recorded]);
  if (first !== undefined) return { kind: "answered", result: first.result, submissionId: state.id };
  work.catch((error: unknown) => tracking.log.error("relay_async_error", { submissionId: state.id, error: messageOf(error) }));
  return { kind: "accepted", submissionId: state.id! };
}

/** The submission a relay request opened, once it did. */
type Opened = { id: string | undefined; chainId: number; ref: string; signal: (() => void) | undefined; readonly began: number };

/**
 * Keeps the relay's outcome on the submission it opened (or leaves it to the reconciler). A failure to keep it must not
 * turn the relay's answer into an error: the submission's state is then read from its replay record, as while open.
 */
async function settle(tracking: NonNullable<RelaySubmissionDeps["tracking"]>, opened: Opened, result: RelayResult, scope: string): Promise<void> {
  if (opened.id === undefined) return;
  try {
    await tracking.tracker.settle(opened.id, opened.chainId, opened.ref, result, scope, opened.began);
  } catch (error) {
    tracking.log.warn("submission_settle_failed", { submissionId: opened.id, error: messageOf(error) });
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));
