/**
 * Relay submissions from a client (decisions §23): an idempotency key per write, an asynchronous submit, and waiting
 * for a submission by polling its URL. Browser-ready: `fetch`, `crypto.randomUUID` and timers only.
 */
import { AtsClientError } from "./errors.ts";
import { requestJson } from "./http.ts";
import { DELEGATED_ATTEST_BATCH_PATH, type AtsClientOptions, type DelegatedAttestBatchResult, type PreparedDelegatedAttestation } from "./delegated_attest.ts";

/** Where a submission stands (see docs/endpoints.md, relay submissions). */
export type SubmissionState = "pending" | "sent" | "replaced" | "mined" | "confirmed" | "failed";

/** A relay submission as `GET /v1/submissions/{id}` answers it. */
export type Submission = {
  submissionId: string;
  state: SubmissionState;
  txHash: string | null;
  uid: string | null;
  blockNumber: number | null;
  confirmations: number;
  feeBumps: number;
  error?: string;
  /** A batch's requests, in order: each sent one with its own uid once mined, each refused one with its refusal. */
  items?: SubmissionItem[];
  createdAt: string;
  updatedAt: string;
};

/** One request of a batch as its submission shows it. */
export type SubmissionItem =
  | { index: number; state: SubmissionState; uid: string | null }
  | { index: number; state: "refused"; uid: null; status: number; error: string; message: string; details?: string };

/** A write that may be retried: the same key on every retry of it, a new one for the next write. */
export type IdempotentOptions = AtsClientOptions & {
  /** Sent as `Idempotency-Key`; {@link newIdempotencyKey} makes one. */
  readonly idempotencyKey?: string | undefined;
};

/** A fresh idempotency key (a UUIDv4) for one write and its retries. */
export function newIdempotencyKey(): string {
  return crypto.randomUUID();
}

/** The headers of an idempotent write. */
function idempotencyHeaders(options: { readonly idempotencyKey?: string | undefined }): Record<string, string> {
  return options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey };
}

/** What an asynchronous submit gives back: the submission to wait for. */
export type AcceptedSubmission = { readonly submissionId: string; readonly accepted: boolean };

/**
 * Posts a signed delegated attestation with `Prefer: respond-async` (and the idempotency key, when given): the answer
 * comes once the submission is recorded (`accepted`), or when it finished first. Wait with {@link waitForSubmission}.
 * A refusal throws {@link AtsClientError} with the server's code.
 */
export async function submitDelegatedAttestationAsync(
  body: { prepared: PreparedDelegatedAttestation; signature: string; attester: string },
  options: IdempotentOptions & { readonly path?: string | undefined } = {},
): Promise<AcceptedSubmission> {
  const { body: answer, response } = await requestJson<{ submissionId?: string }>(options.path ?? "/v1/delegated-attest", {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: "POST",
    body,
    headers: { prefer: "respond-async", ...idempotencyHeaders(options) },
  });
  if (answer.submissionId === undefined) throw new AtsClientError("NETWORK_ERROR", "The service gave no submission id");
  return { submissionId: answer.submissionId, accepted: response.status === 202 };
}

/** What an asynchronous batch gives back: the submission to wait for, or the batch's full answer when it came first. */
export type AcceptedBatch =
  | { readonly accepted: true; readonly submissionId: string }
  | { readonly accepted: false; readonly result: DelegatedAttestBatchResult };

/**
 * Posts a batch with `Prefer: respond-async` (and the idempotency key, when given): 202 once every request was
 * checked and the submission recorded (`accepted`; wait with {@link waitForSubmission}, whose `items` carry each
 * request's uid or refusal), or the full answer when no request was sent or the batch finished first. A refusal of
 * the batch as a whole throws {@link AtsClientError}.
 */
export async function submitDelegatedAttestBatchAsync(
  requests: readonly { prepared: PreparedDelegatedAttestation; signature: string; attester: string; subjectDid?: string }[],
  options: IdempotentOptions & { readonly path?: string | undefined } = {},
): Promise<AcceptedBatch> {
  const { body: answer, response } = await requestJson<DelegatedAttestBatchResult & { submissionId: string | null }>(options.path ?? DELEGATED_ATTEST_BATCH_PATH, {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: "POST",
    body: { requests },
    headers: { prefer: "respond-async", ...idempotencyHeaders(options) },
  });
  if (response.status !== 202) return { accepted: false, result: answer };
  if (answer.submissionId === null || answer.submissionId === undefined) throw new AtsClientError("NETWORK_ERROR", "The service gave no submission id");
  return { accepted: true, submissionId: answer.submissionId };
}

/** Reads a submission by id; an unknown id throws {@link AtsClientError} `NOT_FOUND`. */
export async function fetchSubmission(submissionId: string, options: AtsClientOptions = {}): Promise<Submission> {
  const { body } = await requestJson<Submission>(`/v1/submissions/${encodeURIComponent(submissionId)}`, {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    method: "GET",
  });
  return body;
}

/** Options of {@link waitForSubmission}. */
export type WaitForSubmissionOptions = AtsClientOptions & {
  /** The states that end the wait; default `mined`, `confirmed` and `failed`. */
  readonly until?: readonly SubmissionState[] | undefined;
  /** How many reads at most (default 120). */
  readonly tries?: number | undefined;
  /** Milliseconds between reads (default 1000). */
  readonly intervalMs?: number | undefined;
};

/**
 * Polls a submission until its state is one of `until` and returns it; after `tries` reads without one, throws
 * {@link AtsClientError} `SUBMISSION_NOT_SETTLED` with the last read as its body.
 */
export async function waitForSubmission(submissionId: string, options: WaitForSubmissionOptions = {}): Promise<Submission> {
  const until = new Set(options.until ?? ["mined", "confirmed", "failed"]);
  const tries = options.tries ?? 120;
  let last: Submission | undefined;
  for (let read = 0; read < tries; read++) {
    if (read > 0) await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 1_000));
    last = await fetchSubmission(submissionId, options);
    if (until.has(last.state)) return last;
  }
  throw new AtsClientError("SUBMISSION_NOT_SETTLED", `Submission ${submissionId} is still ${last?.state ?? "unknown"}`, { body: last });
}
