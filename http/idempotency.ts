import {
  awaitsOutcome,
  type Idempotency,
  idempotencyRecordRef,
  type IdempotencyAnswer,
  type IdempotencyDecision,
  type IdempotentRequest,
  IDEMPOTENCY_RETRY_AFTER_SECONDS,
  keepsStoredAnswer,
  parseIdempotencyKey,
  storedAnswerCode,
} from "../domain/idempotency/mod.ts";
import type { StoredAnswer } from "../ports/idempotency.ts";
import { errorBody, json, statusOf } from "./errors.ts";

/** The request header of a write's idempotency key (decisions §23). */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";
/** The answer header that says an answer is the stored one of an earlier request with the key. */
export const REPLAYED_HEADER = "idempotent-replayed";

/** Headers of an answer that belong to the one exchange and are not given again to a retry. */
const EXCHANGE_HEADERS: ReadonlySet<string> = new Set(["set-cookie", "x-request-id", "date", "content-length", "etag", "cache-control"]);

/** How a route words a refusal (the EAS routes add `elapsed`); absent: the one error body. */
export type Refuse = (code: string, message: string, headers?: Record<string, string>) => Response;

/** Where a write's idempotency key belongs. */
export type IdempotentWrite = {
  /** Whose keys (decisions §23): `account:<id>`, or `client:<address>` where there is no account. */
  readonly scope: string;
  /** The body as the route read it: part of what "the same request" means. */
  readonly body: unknown;
  /**
   * The answer of what a request that died (a crash) noted under the key (decisions §23: it answers as that write's
   * outcome says); undefined (or absent) when nothing was written: the retry runs the write again. A resumed 503
   * `OUTCOME_UNKNOWN` (still on its way) is not kept: the key stays with the write, and a later retry asks again. A
   * kept 503 `OUTCOME_UNKNOWN` whose request noted a write is answered the same way on its retry (with
   * `Idempotent-Replayed: true`), and kept as it was while the write is still on its way; absent, it is replayed.
   * `keyRef` names the key's record as `IdempotentRun.keyRef` does.
   */
  readonly resume?: ((noted: string, keyRef: string) => Promise<Response | undefined>) | undefined;
  /**
   * The scope is the request's own word until `run` verifies it (a paid write's payer, named by its payment header,
   * verified by the facilitator): the key's record is begun by `run` through `begin` once it is, so a request that is
   * not its scope's never takes, holds or fills a key of that scope (decisions §23 with §13). What the key holds is
   * answered first (a retry's kept answer; 422 or 409 of a verified request's record), and the record of a request
   * that died with this one's fingerprint is taken over at once, before `run` (its resume).
   */
  readonly verifiedInRun?: boolean | undefined;
};

/** What a write run under a key may tell its key: the submission it opened; and where it begins the key. */
export type IdempotentRun = {
  readonly attach?: ((submissionId: string) => Promise<void>) | undefined;
  /**
   * Names the key's record (domain/idempotency `idempotencyRecordRef`), the run's once it holds it (from the start, or
   * once `begin` took it): what an x402 payment reserved by the run records, so a retry that takes a dead request's
   * record over resumes only the payment that record reserved (decisions §23 with §13). Absent without a key.
   */
  readonly keyRef?: string | undefined;
  /**
   * Given to the run of a write whose scope it verifies (`verifiedInRun`): takes the key once the scope is verified,
   * before any work. Undefined: the run goes on under the key; else the key's answer (its kept answer, 422, 409), which
   * the run answers with, having done nothing. Not called: the run answered before the scope was verified, and nothing
   * of it is kept.
   */
  readonly begin?: KeyBegin | undefined;
};

/** `IdempotentRun.begin`, with a read of the key that writes nothing (`held`). */
export type KeyBegin = (() => Promise<Response | undefined>) & {
  /**
   * The key's answer when a request with these very bytes (the same payment header) holds it: its kept answer, or 409
   * `IDEMPOTENCY_KEY_IN_USE` while it runs (or died: its retry takes it over); undefined when the key is free or holds
   * another request's. Read without writing, for a run that answers before its scope is verified because this request's
   * twin got further (its payment reserved): the twin's key answers, not the run's refusal.
   */
  readonly held?: (() => Promise<Response | undefined>) | undefined;
};

const plainRefusal: Refuse = (code, message, headers = {}) => json(errorBody(code, message), statusOf(code), headers);

/**
 * Runs a write under its `Idempotency-Key` (decisions §23): without a key (or without the rule wired) the write just
 * runs; with one, the first request runs and its answer is stored, a retry of the same request gets that answer again
 * with `Idempotent-Replayed: true`, another request under the key is 422 `IDEMPOTENCY_KEY_REUSED`, and a retry while
 * the first still runs is 409 `IDEMPOTENCY_KEY_IN_USE` with `Retry-After`. A malformed key is 400 `INVALID_INPUT`.
 */
export async function idempotent(
  idempotency: Idempotency | undefined,
  request: Request,
  write: IdempotentWrite,
  run: (context: IdempotentRun) => Promise<Response>,
  refuse: Refuse = plainRefusal,
): Promise<Response> {
  const key = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER));
  if (!key.ok) return refuse(key.code, key.message);
  // A body too large to read (413) has no text to compare a retry's with: answered beside the key (as relayWrite does).
  if (key.value === undefined || idempotency === undefined || typeof write.body === "symbol") return await run({});
  const body = typeof write.body === "string" ? write.body : "";
  const keyed: IdempotentRequest = { scope: write.scope, key: key.value, method: request.method, path: new URL(request.url).pathname, body };
  const keyRef = idempotencyRecordRef(keyed);
  // A paid write's key is begun once its payer is verified (`verifiedInRun`); the decision it hands back here is a key
  // taken over from a request with these very bytes that noted a write (a dead one's, a kept answer that named none yet).
  const decision = write.verifiedInRun === true ? await verifiedKey(idempotency, keyed, keyRef, run, refuse) : await idempotency(keyed);
  if (decision instanceof Response) return decision;
  if (decision.kind !== "run") return keyAnswer(decision, refuse);
  // A kept "outcome unknown" taken back to answer from the write its request noted (decisions §23), as below.
  const kept = decision.kept;
  if (kept !== undefined && write.resume === undefined) return await givenBack(decision.finish, kept);
  let response: Response;
  let resumed: Response | undefined;
  try {
    const noted = decision.resumed;
    resumed = noted !== undefined && write.resume !== undefined ? await write.resume(noted, keyRef) : undefined;
    response = resumed ?? await run({ attach: decision.attach, keyRef });
  } catch (error) {
    await decision.finish(kept);
    throw error;
  }
  const answer = await storedAnswer(response);
  if (resumed !== undefined && storedAnswerCode(answer) === "OUTCOME_UNKNOWN") return kept === undefined ? response : await givenBack(decision.finish, kept);
  // A resumed answer that is not kept (a paid write's payment another key's request holds, http/_x402_resume.ts)
  // never replaces a kept answer taken back: that stays, as on a throw.
  if (resumed !== undefined && kept !== undefined && !keepsStoredAnswer(answer)) return await givenBack(decision.finish, kept);
  await decision.finish(keepsStoredAnswer(answer) ? answer : undefined);
  // The outcome of the request a kept answer was given to, answered to its retry.
  return resumed !== undefined && kept !== undefined ? replayed(answer) : response;
}

/** A kept answer taken back whose write is still on its way: kept again, and replayed. */
async function givenBack(finish: (answer: StoredAnswer | undefined) => Promise<void>, kept: StoredAnswer): Promise<Response> {
  await finish(kept);
  return replayed(kept);
}

/** What a key held by another request (or by this one's first try) answers without running. */
function keyAnswer(answer: IdempotencyAnswer, refuse: Refuse): Response {
  switch (answer.kind) {
    case "replay":
      return replayed(answer.answer);
    case "reused":
      return refuse(answer.code, answer.message);
    case "in-use":
      return refuse(answer.code, answer.message, { "retry-after": String(answer.retryAfterSeconds) });
  }
}

type RunDecision = Extract<IdempotencyDecision, { kind: "run" }>;

const IN_USE: IdempotencyAnswer = {
  kind: "in-use",
  code: "IDEMPOTENCY_KEY_IN_USE",
  message: "A request with this Idempotency-Key is still being processed",
  retryAfterSeconds: IDEMPOTENCY_RETRY_AFTER_SECONDS,
};

/**
 * The key of a write whose scope `run` verifies (`IdempotentWrite.verifiedInRun`), before anything is verified. What
 * the key holds is answered from a read that writes nothing (a retry's kept answer, 422, 409). Only a request with these
 * very bytes (the same payment header, which a verified request's record was begun with) takes the key before its run,
 * and only to answer from a write that record noted (a dead request's, or a kept answer that named no outcome yet): that
 * decision is handed back to be resumed. Anything else is `verifiedRun`, the key begun once the scope is verified. Before,
 * a key read held by another request (422, 409) was taken by this one when it turned free meanwhile (its request's
 * answer not kept, or the record expired), before anything was verified: a forged header naming the payer had its 409
 * `PAYMENT_ALREADY_USED` kept there, and the payer's retry was 422 for 24 hours (found by review).
 */
async function verifiedKey(idempotency: Idempotency, keyed: IdempotentRequest, keyRef: string, run: (context: IdempotentRun) => Promise<Response>, refuse: Refuse) {
  const held = idempotency.held === undefined ? { kind: "free" as const } : await idempotency.held(keyed);
  if (held.kind === "reused" || held.kind === "in-use") return keyAnswer(held, refuse);
  if (held.kind === "replay" && !awaitsOutcome(held.answer)) return replayed(held.answer);
  if (held.kind !== "free") {
    const taken = await idempotency(keyed);
    if (taken.kind !== "run" || taken.resumed !== undefined) return taken;
    // Nothing noted to answer from: the key turned free since the read (or its dead request wrote nothing). Given up
    // before anything runs, so no request holds it unverified; the run begins it once verified.
    await taken.finish(undefined);
  }
  return await verifiedRun(idempotency, keyed, keyRef, run, refuse);
}

/**
 * A write whose scope `run` verifies (`IdempotentWrite.verifiedInRun`), under a key no record holds: the record is
 * begun when `run` calls `begin`, its scope verified, and its answer kept from then on as any write's. A run that
 * answers without calling it (a payment refused, or one named by a header it was not signed by) leaves no record. A
 * key found at `begin` taken over from a request with these bytes that noted a write (it died, or its kept answer named
 * no outcome, between the read and now) is handed back to be resumed as any retry's, this run given up unpaid: before,
 * a dead request's record was left with its lease renewed (409 for the lease's 5 minutes) and a kept answer was
 * replayed without asking its write.
 */
async function verifiedRun(
  idempotency: Idempotency,
  keyed: IdempotentRequest,
  keyRef: string,
  run: (context: IdempotentRun) => Promise<Response>,
  refuse: Refuse,
): Promise<Response | RunDecision> {
  let decision: RunDecision | undefined;
  let resumes: RunDecision | undefined;
  const begin = async (): Promise<Response | undefined> => {
    // The answer the run gives up with when it hands the key back: never the client's (see below).
    if (resumes !== undefined) return keyAnswer(IN_USE, refuse);
    if (decision !== undefined) return undefined;
    const taken = await idempotency(keyed);
    if (taken.kind !== "run") return keyAnswer(taken, refuse);
    if (taken.resumed !== undefined) {
      resumes = taken;
      return keyAnswer(IN_USE, refuse);
    }
    decision = taken;
    return undefined;
  };
  const held = async (): Promise<Response | undefined> => {
    const found = idempotency.held === undefined ? undefined : await idempotency.held(keyed);
    if (found?.kind === "replay") return replayed(found.answer);
    return found?.kind === "in-use" || found?.kind === "dead" ? keyAnswer(IN_USE, refuse) : undefined;
  };
  let response: Response;
  try {
    response = await run({ attach: (submissionId) => decision?.attach(submissionId) ?? Promise.resolve(), begin: Object.assign(begin, { held }), keyRef });
  } catch (error) {
    await decision?.finish(undefined);
    await resumes?.finish(resumes.kept);
    throw error;
  }
  if (resumes !== undefined) return resumes;
  if (decision === undefined) return response;
  const kept = await storedAnswer(response);
  await decision.finish(keepsStoredAnswer(kept) ? kept : undefined);
  return response;
}

/** The answer as it is kept: status, the headers that describe it, and its text. */
export async function storedAnswer(response: Response): Promise<StoredAnswer> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!EXCHANGE_HEADERS.has(name.toLowerCase())) headers[name.toLowerCase()] = value;
  });
  return { status: response.status, headers, body: await response.clone().text() };
}

/** A stored answer given again. */
export function replayed(answer: StoredAnswer): Response {
  return new Response(answer.body === "" ? null : answer.body, { status: answer.status, headers: { ...answer.headers, [REPLAYED_HEADER]: "true" } });
}
