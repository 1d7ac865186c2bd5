/**
 * What the relay routes share around their use case (domain/submissions/relay_submission.ts): the HTTP request read
 * into a {@link RelayWrite}, and its outcome worded as an answer, kept for the idempotency key's retries.
 */
import { parseIdempotencyKey } from "../../../domain/idempotency/mod.ts";
import type { RelayWrite, RelayWriteOutcome, RelayWriteRun } from "../../../domain/submissions/mod.ts";
import type { SubmissionView } from "../../../domain/submissions/mod.ts";
import { IDEMPOTENCY_KEY_HEADER, REPLAYED_HEADER, replayed, storedAnswer } from "../../idempotency.ts";
import { prefersAsync } from "./_tracking.ts";

/** The write of `input` as `request` asks it, or the refusal of a malformed `Idempotency-Key` (400). */
export function relayWrite<In>(
  request: Request,
  scope: string,
  body: unknown,
  input: In,
  options: { readonly async?: boolean } = {},
): { readonly ok: true; readonly write: RelayWrite<In> } | { readonly ok: false; readonly code: "INVALID_INPUT"; readonly message: string } {
  const key = parseIdempotencyKey(request.headers.get(IDEMPOTENCY_KEY_HEADER));
  if (!key.ok) return key;
  const async = options.async ?? prefersAsync(request);
  // A body too large to read (413) has no text to compare a retry's with: answered beside the key, never kept, so the
  // same key with the body made smaller runs (found by review: it was 422 IDEMPOTENCY_KEY_REUSED).
  if (key.value === undefined || typeof body === "symbol") return { ok: true, write: { scope, async, input } };
  const keyed = { key: key.value, method: request.method, path: new URL(request.url).pathname, body: typeof body === "string" ? body : "" };
  return { ok: true, write: { scope, keyed, async, input } };
}

/** How a route words each outcome of its write. */
export type RelayWords<R> = {
  /** The key's refusal (422, or 409 with `retry-after`), or the caller's rate's 429, in the route's error body. */
  readonly refuse: (code: string, message: string, headers?: Record<string, string>) => Response;
  /** The answer of a submission whose first request died (a crash). */
  readonly resumed: (submissionId: string, view: SubmissionView | undefined) => Response;
  readonly accepted: (submissionId: string) => Response;
  readonly answered: (result: R, submissionId: string | undefined) => Response;
};

/** Words the outcome, and keeps the answer for the key's retries (decisions §23). */
export async function relayAnswer<R>(run: RelayWriteRun<R>, words: RelayWords<R>): Promise<Response> {
  const response = wordOutcome(run.outcome, words);
  if (run.keep !== undefined) await run.keep(await storedAnswer(response));
  // The outcome of a request whose kept answer named none yet, answered to its retry: a replay of that request.
  if (run.outcome.kind === "resumed" && run.outcome.replayed === true) response.headers.set(REPLAYED_HEADER, "true");
  return response;
}

function wordOutcome<R>(outcome: RelayWriteOutcome<R>, words: RelayWords<R>): Response {
  switch (outcome.kind) {
    case "replay":
      return replayed(outcome.answer);
    case "key-refused":
    case "rate-limited":
      return words.refuse(outcome.code, outcome.message, outcome.retryAfterSeconds === undefined ? undefined : { "retry-after": String(outcome.retryAfterSeconds) });
    case "resumed":
      return words.resumed(outcome.submissionId, outcome.view);
    case "accepted":
      return words.accepted(outcome.submissionId);
    case "answered":
      return words.answered(outcome.result, outcome.submissionId);
  }
}
