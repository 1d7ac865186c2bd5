import type { Clock } from "../../ports/clock.ts";
import type { IdempotencyRecord, IdempotencyStore, StoredAnswer } from "../../ports/idempotency.ts";
import { requestFingerprint } from "./idempotency_key.ts";

/** How long a key is kept (decisions §23: 24 h). */
export const IDEMPOTENCY_KEEP_MS = 24 * 60 * 60_000;

/**
 * How long a running request holds its key before a retry may take it over: longer than any request may run (the
 * route deadline, 245 s, http/instrument.ts), so only a request that died with its instance (a crash) loses its key.
 */
export const IDEMPOTENCY_LEASE_MS = 5 * 60_000;

/** What a retry told `IDEMPOTENCY_KEY_IN_USE` waits before trying again. */
export const IDEMPOTENCY_RETRY_AFTER_SECONDS = 1;

/** A request carrying an idempotency key. */
export type IdempotentRequest = {
  /** Whose keys it is among (an account, or a client address on the public relay). */
  readonly scope: string;
  readonly key: string;
  readonly method: string;
  readonly path: string;
  readonly body: string;
};

/** What to do with a request that carries a key. */
export type IdempotencyDecision =
  /**
   * The first request with this key: run it, then hand its answer to `finish` (undefined when it is not kept); a
   * submission it opens is noted with `attach`. `resumed`: the key of a request that died after opening this
   * submission (a crash), whose outcome the retry answers with instead of running again (decisions §23). `kept`: the
   * key's kept answer when it named no outcome yet (503 `OUTCOME_UNKNOWN`, {@link awaitsOutcome}) and this retry took
   * the key back to answer from `resumed` as it now stands, the same way; while that is still on its way, the retry is
   * answered `kept` again, handed back to `finish` (as on a throw). Absent: a first request, or a dead one's.
   */
  | {
    readonly kind: "run";
    readonly finish: (answer: StoredAnswer | undefined) => Promise<void>;
    readonly attach: (submissionId: string) => Promise<void>;
    readonly resumed: string | undefined;
    readonly kept?: StoredAnswer | undefined;
  }
  /** A retry of a finished request: give its stored answer again. */
  | { readonly kind: "replay"; readonly answer: StoredAnswer }
  /** The key was used for another request: 422. */
  | { readonly kind: "reused"; readonly code: "IDEMPOTENCY_KEY_REUSED"; readonly message: string }
  /** The first request with this key is still running: 409 with `Retry-After`. */
  | { readonly kind: "in-use"; readonly code: "IDEMPOTENCY_KEY_IN_USE"; readonly message: string; readonly retryAfterSeconds: number };

/** What {@link createIdempotency} needs. */
export type IdempotencyDeps = {
  readonly store: IdempotencyStore;
  readonly clock: Clock;
  /** How long a key is kept; absent: {@link IDEMPOTENCY_KEEP_MS}. */
  readonly keepMs?: number | undefined;
  /** How long a running request holds its key; absent: {@link IDEMPOTENCY_LEASE_MS}. */
  readonly leaseMs?: number | undefined;
};

/** What a key's record answers without running anything: a kept answer, or the key's refusal (422, 409). */
export type IdempotencyAnswer = Exclude<IdempotencyDecision, { kind: "run" }>;

/**
 * What a key's record holds for a request, read without writing: its answer (a kept answer, or 422 / 409 as the
 * decision would say), `free` when the request would write a new record (none, or an expired one), `dead` when it would
 * take over the record of a request with its fingerprint that died (a crash).
 */
export type HeldKey = IdempotencyAnswer | { readonly kind: "free" } | { readonly kind: "dead" };

/**
 * Decides, for a request with an idempotency key, whether it runs, replays, or is refused (decisions §23). `lookup`
 * reads the key's record without writing one: its answer when the record has one for this request (a kept answer, or
 * 422 / 409 as the decision would say), undefined when the request would run (no record, an expired one, a dead
 * request's the retry would take over); `held` reads the same, telling those last apart. Absent on a rule built
 * without a store that reads (tests of other things).
 */
export type Idempotency = ((request: IdempotentRequest) => Promise<IdempotencyDecision>) & {
  readonly lookup?: ((request: IdempotentRequest) => Promise<IdempotencyAnswer | undefined>) | undefined;
  readonly held?: ((request: IdempotentRequest) => Promise<HeldKey>) | undefined;
};

/**
 * Builds the idempotency rule of writes (decisions §23): the key's record is written before the work, so of two
 * requests with one key exactly one runs wherever they arrive; a retry of the same request gets the first answer, a
 * different request under the key is refused, and a request still running makes its retry wait.
 */
export function createIdempotency(deps: IdempotencyDeps): Idempotency {
  const keepMs = deps.keepMs ?? IDEMPOTENCY_KEEP_MS;
  const leaseMs = deps.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const idempotency = async function idempotency(request: IdempotentRequest): Promise<IdempotencyDecision> {
    const fingerprint = requestFingerprint(request);
    const nowMs = deps.clock.nowMs();
    const { scope, key } = request;
    const leaseUntilMs = nowMs + leaseMs;
    const begun = await deps.store.begin({ scope, key, fingerprint, createdAtMs: nowMs, expiresAtMs: nowMs + keepMs, leaseUntilMs });
    const run = (resumed: string | undefined, kept?: StoredAnswer): IdempotencyDecision => ({
      kind: "run",
      finish: (answer) => (answer === undefined ? deps.store.abandon(scope, key) : deps.store.complete(scope, key, answer)),
      attach: (submissionId) => deps.store.attach(scope, key, submissionId),
      resumed,
      ...(kept === undefined ? {} : { kept }),
    });
    if (begun.kind === "started") return run(begun.submissionId ?? undefined);
    const held = heldAnswer(begun.record, fingerprint);
    // A kept answer that named no outcome yet, given by a request that did not die: its retry answers from the submission
    // it noted, as a dead request's does. Kept as it was, it said "unknown" for the key's 24 hours after the write was
    // mined, or released and its signature accepted again.
    const noted = begun.record.submissionId;
    if (held.kind !== "replay" || noted === null || deps.store.reopen === undefined || !awaitsOutcome(held.answer)) return held;
    if (await deps.store.reopen(scope, key, { fingerprint, answer: held.answer, nowMs, leaseUntilMs })) return run(noted, held.answer);
    // Another retry took it back first, and is answering from the submission now.
    return IN_USE;
  };
  const held = async (request: IdempotentRequest): Promise<HeldKey> => {
    const record = await deps.store.find(request.scope, request.key);
    const fingerprint = requestFingerprint(request);
    // What `begin` would take (the stores' rule): no record, an expired one, or a dead request's with this fingerprint.
    const nowMs = deps.clock.nowMs();
    if (record === undefined || record.expiresAtMs <= nowMs) return { kind: "free" };
    if (record.state === "running" && record.leaseUntilMs <= nowMs && record.fingerprint === fingerprint) return { kind: "dead" };
    return heldAnswer(record, fingerprint);
  };
  const lookup = async (request: IdempotentRequest): Promise<IdempotencyAnswer | undefined> => {
    const found = await held(request);
    return found.kind === "free" || found.kind === "dead" ? undefined : found;
  };
  return Object.assign(idempotency, { lookup, held });
}

/** What a key held by a request answers another with `fingerprint`: its kept answer, or 422, or 409 while it runs. */
function heldAnswer(held: IdempotencyRecord, fingerprint: string): IdempotencyAnswer {
  if (held.fingerprint !== fingerprint) {
    return { kind: "reused", code: "IDEMPOTENCY_KEY_REUSED", message: "This Idempotency-Key was used for a different request" };
  }
  if (held.state === "done" && held.answer !== null) return { kind: "replay", answer: held.answer };
  return IN_USE;
}

const IN_USE: IdempotencyAnswer = {
  kind: "in-use",
  code: "IDEMPOTENCY_KEY_IN_USE",
  message: "A request with this Idempotency-Key is still being processed",
  retryAfterSeconds: IDEMPOTENCY_RETRY_AFTER_SECONDS,
};

/**
 * Whether a kept answer names no outcome yet: a 503 `OUTCOME_UNKNOWN` (a send whose fate was not known; a tool's
 * answer alike), or a batch's 200 one of whose requests is one (its transaction's fate not known). A retry under its key
 * answers from the submission it noted, when it noted one ({@link createIdempotency}).
 */
export function awaitsOutcome(answer: Pick<StoredAnswer, "status" | "body">): boolean {
  if (answer.status === 503) return storedAnswerCode(answer) === "OUTCOME_UNKNOWN";
  const results = answer.status === 200 ? bodyOf(answer)?.results : undefined;
  return Array.isArray(results) && results.some((r) => (r as { code?: unknown } | null)?.code === "OUTCOME_UNKNOWN");
}

/**
 * The refusals that did nothing and ask for the same request again: the payment stage's before the route's checks
 * (the facilitator unreachable, the payer's balance held by its open payments), a signer that gave no signature, an
 * instance shutting down. Kept, a retry under the same key replayed "retry" for the key's 24 hours.
 */
const RETRY_ME = new Set(["FACILITATOR_UNAVAILABLE", "PAYMENT_IN_PROGRESS", "SIGNER_UNAVAILABLE", "SHUTTING_DOWN"]);

/**
 * The `error` of a relay's 409 `DUPLICATE` whose signature's transaction is on its way (signed or sent, neither mined
 * nor reverted): its `details` is the transaction's hash, as a mined one's is the uid (or the hash, the uid unknown),
 * so these words are what tells the keeping rule that it names no outcome yet (decisions §2 keeps the body `{error,
 * code, details}`). domain/delegation/_refusals.ts words it with them.
 */
export const DUPLICATE_ON_ITS_WAY = "Duplicate submission: its transaction is on its way";

/**
 * Whether an answer is kept for the key's retries (decisions §23): every answer given once the route's checks began,
 * errors included, except a rate limit's 429, the refusals that come before any check: no credential (401) or no
 * payment yet (402), after which the client retries with one under the same key, and those whose `code` (and
 * `details`, `error`) say nothing was done and the same request may be sent again ({@link RETRY_ME}).
 */
export function keepsAnswer(
  status: number,
  code?: string | undefined,
  options: { readonly details?: string | undefined; readonly error?: string | undefined } = {},
): boolean {
  return status !== 401 && status !== 402 && !didNothing(status, code, options);
}

/**
 * Whether an answer says nothing was done and the same request may come again: a rate limit's 429, {@link RETRY_ME},
 * a read of the chain that failed before anything was sent (`RPC_ERROR`: the nonce, the delegate's balance, the
 * simulation, the sending wallet's own pending nonce or fees just before signing; a failure after sending is
 * `OUTCOME_UNKNOWN`), a lookup a write's checks depend on that could not be
 * made (502 `NETWORK_ERROR`: the subject's ownership or the attestation `refUID` names on the private relay, the
 * witness's endpoint evidence when no source confirmed the controller and one could not be read; every one of them
 * comes before a write is reserved, a payment settled or anything sent, decisions §12 and §8), and the delegate wallet
 * that cannot pay right now (503 `SUBMISSION_FAILED`, "nothing was recorded"; a 500 `SUBMISSION_FAILED` is a
 * transaction that failed, and is kept). Kept, a client retrying the 5xx under its key was answered the same refusal
 * for 24 hours, though the same request without the key went through (a 502 `NETWORK_ERROR` of a DNS outage was
 * replayed after DNS answered again). A write route that could answer `NETWORK_ERROR` after doing something must say
 * so with another code (`OUTCOME_UNKNOWN`); the route deadline's `NETWORK_ERROR` (http/instrument.ts) is answered
 * beside the key, which keeps the route's own answer. Nor a relay's 409 `DUPLICATE` that names no outcome (no uid,
 * no transaction hash in `details`: the same signature "being processed" by another request, or another signature of
 * the attester's nonce in flight): that other request may yet give the signature back (a chain read that failed, a
 * wallet that cannot pay), and kept, a retry under the key replayed "being processed" for 24 hours while the same
 * request without it went through. Nor one naming a transaction still on its way ({@link DUPLICATE_ON_ITS_WAY}): the
 * reconciler may yet release its record (its deadline passed with nothing on chain, or its bytes got no verdict for
 * long enough), after which the signature is accepted again (decisions §15), and kept, a retry under the key replayed
 * "on its way" for 24 hours. A `DUPLICATE` naming the attestation's uid, or its mined or reverted transaction, is kept:
 * that is the request's outcome. Nor a 500 `INTERNAL_ERROR`: a thrown error's answer, never kept, or one a write words
 * when nothing was done (the relays' delegate wallet whose nonce, shared by the instances, could not be taken).
 */
function didNothing(status: number, code: string | undefined, body: { readonly details?: string | undefined; readonly error?: string | undefined }): boolean {
  if (status === 429) return true;
  if (code === undefined) return false;
  if (code === "DUPLICATE" && status === 409) return body.details === undefined || body.error === DUPLICATE_ON_ITS_WAY;
  if (code === "INTERNAL_ERROR") return status === 500;
  return RETRY_ME.has(code) || code === "RPC_ERROR" || code === "NETWORK_ERROR" || (code === "SUBMISSION_FAILED" && status === 503);
}

/**
 * `details` of a batch's request given back unsent because another of the batch expired in the delegate wallet's queue
 * (domain/delegation/delegated_attest_batch.ts, which words it).
 */
const BATCH_EXPIRED = "BATCH_EXPIRED";

/**
 * {@link keepsAnswer} of an answer as it is kept: its status, and the `code` of its body when it is an error body. A
 * batch's 200 (`{results: [...]}`) whose every result is such a refusal ({@link didNothing}: the signer gave no
 * signature for the one transaction, every item rate-limited, the wallet unable to pay, every item's signature on its
 * way under another request) did nothing either, and is not
 * kept: its retry under the same key runs, as the single route's does. Nor is one that sent no transaction
 * (`txHash: null`) while any of its results is such a refusal: the others were refused for their own reasons (a 400, a
 * 409 naming the uid), which its retry finds again as they were, and kept, the refused ones' "send it again" was
 * replayed for 24 hours (found by review: a batch of a request on record and one whose wallet read failed). A request
 * of a batch not sent because another of its requests expired while the batch waited for the delegate wallet (400
 * `INVALID_INPUT`, `details: "BATCH_EXPIRED"`, domain/delegation/delegated_attest_batch.ts) counts as one: nothing
 * was sent, and the same batch run again sends it (the expired one then refused on arrival, as it was answered).
 */
export function keepsStoredAnswer(answer: Pick<StoredAnswer, "status" | "body">): boolean {
  const body = bodyOf(answer);
  if (answer.status === 200 && Array.isArray(body?.results) && body.results.length > 0) {
    const refusedForNothing = body.results.map((r) => {
      const item = r as { status?: unknown; code?: unknown; details?: unknown; error?: unknown } | null;
      if (typeof item?.code !== "string") return false;
      if (item.code === "INVALID_INPUT" && wordsOf(item).details === BATCH_EXPIRED) return true;
      return didNothing(typeof item.status === "number" ? item.status : 0, item.code, wordsOf(item));
    });
    if (refusedForNothing.every(Boolean) || (body.txHash === null && refusedForNothing.some(Boolean))) return false;
  }
  return keepsAnswer(answer.status, storedAnswerCode(answer), answer.status >= 400 ? wordsOf(body) : {});
}

/** The `details` and `error` of an error body (or a batch's refused item), those that are strings. */
function wordsOf(body: { details?: unknown; error?: unknown } | null | undefined): { details?: string | undefined; error?: string | undefined } {
  return {
    details: typeof body?.details === "string" ? body.details : undefined,
    error: typeof body?.error === "string" ? body.error : undefined,
  };
}

/** The `code` of an error answer's body (`{error, code}`); undefined for a success or a body that is not one. */
export function storedAnswerCode(answer: Pick<StoredAnswer, "status" | "body">): string | undefined {
  const code = answer.status >= 400 ? bodyOf(answer)?.code : undefined;
  return typeof code === "string" ? code : undefined;
}

function bodyOf(answer: Pick<StoredAnswer, "body">): { code?: unknown; details?: unknown; error?: unknown; results?: unknown; txHash?: unknown } | undefined {
  try {
    return JSON.parse(answer.body) as { code?: unknown; details?: unknown; error?: unknown; results?: unknown; txHash?: unknown };
  } catch {
    return undefined;
  }
}
