import {
  type Idempotency,
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
   */
  readonly resume?: ((noted: string) => Promise<Response | undefined>) | undefined;
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
   * Given to the run of a write whose scope it verifies (`verifiedInRun`): takes the key once the scope is verified,
   * before any work. Undefined: the run goes on under the key; else the key's answer (its kept answer, 422, 409), which
   * the run answers with, having done nothing. Not called: the run answered before the scope was verified, and nothing
   * of it is kept.
   */
  readonly begin?: (() => Promise<Response | undefined>) | undefined;
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
  // A paid write's key is begun once its payer is verified (`verifiedInRun`). A key held already is answered below as
  // any write's (its kept answer, the reopening of one that named no outcome, a dead request's taken over, 422, 409):
  // its record was begun by a verified request, and only these very bytes take it back.
  if (write.verifiedInRun === true && idempotency.held !== undefined && (await idempotency.held(keyed)).kind === "free") {
    return await verifiedRun(idempotency, keyed, run, refuse);
  }
  const decision = await idempotency(keyed);
  if (decision.kind !== "run") return keyAnswer(decision, refuse);
  // A kept "outcome unknown" taken back to answer from the write its request noted (decisions §23), as below.
  const kept = decision.kept;
  if (kept !== undefined && write.resume === undefined) return await givenBack(decision.finish, kept);
  let response: Response;
  let resumed: Response | undefined;
  try {
    const noted = decision.resumed;
    resumed = noted !== undefined && write.resume !== undefined ? await write.resume(noted) : undefined;
    response = resumed ?? await run({ attach: decision.attach });
  } catch (error) {
    await decision.finish(kept);
    throw error;
  }
  const answer = await storedAnswer(response);
  if (resumed !== undefined && storedAnswerCode(answer) === "OUTCOME_UNKNOWN") return kept === undefined ? response : await givenBack(decision.finish, kept);
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

/**
 * A write whose scope `run` verifies (`IdempotentWrite.verifiedInRun`), under a key no record holds: the record is
 * begun when `run` calls `begin`, its scope verified, and its answer kept from then on as any write's. A run that
 * answers without calling it (a payment refused, or one named by a header it was not signed by) leaves no record.
 */
async function verifiedRun(idempotency: Idempotency, keyed: IdempotentRequest, run: (context: IdempotentRun) => Promise<Response>, refuse: Refuse) {
  let decision: Extract<IdempotencyDecision, { kind: "run" }> | undefined;
  const begin = async (): Promise<Response | undefined> => {
    if (decision !== undefined) return undefined;
    const taken = await idempotency(keyed);
    if (taken.kind !== "run") return keyAnswer(taken, refuse);
    // Held meanwhile by a request with this fingerprint (begun and done, or dead, between the read above and now): its
    // answer, or its resume, is its retry's, before any payment is taken.
    if (taken.kept !== undefined) return await givenBack(taken.finish, taken.kept);
    if (taken.resumed !== undefined) {
      // The record is left as it is (its lease renewed): a retry past the lease resumes it.
      return keyAnswer({ kind: "in-use", code: "IDEMPOTENCY_KEY_IN_USE", message: "A request with this Idempotency-Key is still being processed", retryAfterSeconds: IDEMPOTENCY_RETRY_AFTER_SECONDS }, refuse);
    }
    decision = taken;
    return undefined;
  };
  let response: Response;
  try {
    response = await run({ attach: (submissionId) => decision?.attach(submissionId) ?? Promise.resolve(), begin });
  } catch (error) {
    await decision?.finish(undefined);
    throw error;
  }
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
