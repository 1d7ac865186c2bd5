/**
 * What the two relays' batch routes share (decisions §23): the `{requests: [...]}` body, the one submission record of
 * the batch's transaction (with each request's place in it), and the answer `{submissionId, txHash, results}` with one
 * result per request, in order: `{uid}`, or `{status, code, error}` as the single route would have answered that
 * request (a 429's `Retry-After` as `retryAfter`, in seconds). With `Prefer: respond-async`, 202 and `Location` once
 * every request was checked and the submission recorded.
 */
import { type BatchItemResult, type BatchLayout, type DelegatedAttestBatchOutcome, MAX_BATCH_ITEMS } from "../../../domain/delegation/mod.ts";
import type { RelayResult, SubmissionView } from "../../../domain/submissions/mod.ts";
import type { SubmissionItem } from "../../../ports/submission_records.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import type { RelaySend } from "../../../domain/submissions/mod.ts";
import { acceptedAnswer } from "./_tracking.ts";
import type { RelayWords } from "./_relay_answer.ts";

/** The path of a relay's batch route, after the single route's. */
export const batchPath = (single: string) => `${single}/batch`;

/** The requests of a batch body, or why it is refused as a whole (400 INVALID_INPUT). */
export function batchRequests(body: unknown): { ok: true; requests: readonly unknown[] } | { ok: false; message: string } {
  const requests = typeof body === "object" && body !== null && !Array.isArray(body) ? (body as { requests?: unknown }).requests : undefined;
  if (!Array.isArray(requests)) return { ok: false, message: "The body must be {requests: [...]}: the single route's bodies" };
  if (requests.length < 1 || requests.length > MAX_BATCH_ITEMS) {
    return { ok: false, message: `requests must hold 1 to ${MAX_BATCH_ITEMS} bodies, not ${requests.length}` };
  }
  return { ok: true, requests };
}

/** The status a refused request is answered with, as the single route would answer it. */
const statusOfRefusal = (result: { code: string; status?: number | undefined; unavailable?: true | undefined }) =>
  result.status ?? (result.unavailable ? 503 : statusOf(result.code));

/**
 * A request's result in a batch answer. A 429 carries `retryAfter`, the seconds the single route's `Retry-After` would
 * have said (found by review: dropped, a client was told to wait with nothing saying how long). A field of the item, not
 * the 200's `Retry-After` header: a header says nothing on a 200, and the items of one batch may wait for different
 * limits (the hour's budget, an attester's rate).
 */
function resultOf(result: BatchItemResult) {
  if (result.ok) return { uid: result.value.uid };
  const retryAfter = result.retryAfterSeconds === undefined ? {} : { retryAfter: result.retryAfterSeconds };
  return { status: statusOfRefusal(result), ...errorBody(result.code, result.message, result.details), ...retryAfter };
}

/** The batch's requests as its submission record keeps them: each sent one's replay key, each refused one's answer. */
function recordedItems(layout: BatchLayout): SubmissionItem[] {
  return layout.map((item) => {
    if ("ref" in item) return { ref: item.ref };
    const { code, message, details } = item.refused;
    return { refused: { code, message, status: statusOfRefusal(item.refused), ...(details === undefined ? {} : { details }) } };
  });
}

/** What the submission record keeps of a batch: its transaction's outcome, with each sent request's uid once mined. */
function asRelayResult(outcome: DelegatedAttestBatchOutcome, layout: BatchLayout | undefined): BatchRelayResult {
  if (outcome.sent === "mined" && outcome.txHash !== null) {
    const first = outcome.results.find((r) => r.ok);
    const uids: Record<string, string | null> = {};
    layout?.forEach((item, index) => {
      const result = outcome.results[index];
      if ("ref" in item) uids[item.ref] = result?.ok ? result.value.uid : null;
    });
    const value = { txHash: outcome.txHash, uid: first?.ok ? first.value.uid : null, blockNumber: outcome.blockNumber ?? 0n, uids };
    return { ok: true, value, batch: outcome };
  }
  const code = outcome.sent === "unknown" ? "OUTCOME_UNKNOWN" : "SUBMISSION_FAILED";
  return { ok: false, code, details: outcome.txHash ?? undefined, batch: outcome };
}

/** A batch's outcome as its submission record keeps it, with the outcome itself for the answer. */
export type BatchRelayResult = RelayResult & { readonly batch: DelegatedAttestBatchOutcome };

/**
 * The batch relay as the write's use case sends it: the submission record is opened, when its one transaction is handed
 * to the chain, with every request's place in it (each refusal worded as the single route would answer it).
 */
export function batchSend(
  run: (requests: readonly unknown[], onSubmitting: ((chainId: number, key: string, layout: BatchLayout) => Promise<void>) | undefined) => Promise<DelegatedAttestBatchOutcome>,
): RelaySend<readonly unknown[], BatchRelayResult> {
  return async (requests, onSubmitting) => {
    let layout: BatchLayout | undefined;
    const recording = onSubmitting === undefined ? undefined : async (chainId: number, key: string, items: BatchLayout) => {
      layout = items;
      await onSubmitting(chainId, key, recordedItems(items));
    };
    return asRelayResult(await run(requests, recording), layout);
  };
}

/** How the batch routes word their write's outcomes; `extra` joins every answer (`chain`, the public relay's `elapsed`). */
export function batchWords(refuse: RelayWords<BatchRelayResult>["refuse"], extra: () => Record<string, unknown>): RelayWords<BatchRelayResult> {
  return {
    refuse,
    resumed: (submissionId, view) => batchResume(submissionId, view, extra()),
    accepted: (submissionId) => acceptedAnswer(submissionId, extra()),
    answered: (result, submissionId) =>
      json({ submissionId: submissionId ?? null, txHash: result.batch.txHash, results: result.batch.results.map(resultOf), ...extra() }),
  };
}

/** A batch's results as its submission shows them, in the words of the first answer; null for a record without them. */
function resultsOf(view: SubmissionView) {
  if (view.items === undefined) return null;
  return view.items.map((item) => {
    if (item.state === "refused") return { status: item.status, ...errorBody(item.error, item.message, item.details) };
    if (item.state === "mined" || item.state === "confirmed") return { uid: item.uid };
    const code = view.error ?? "SUBMISSION_FAILED";
    return { status: statusOf(code), ...errorBody(code, "The batch's transaction failed; nothing of it was attested", view.txHash ?? undefined) };
  });
}

/**
 * What a retry answers when the request that first held the batch's idempotency key died after its transaction was
 * handed to the chain (decisions §23): once the submission settled (by the relay or the reconciler), the batch's
 * answer with each request's result (its own uid, or its refusal); while it is on its way, the 202 of the submission.
 */
function batchResume(submissionId: string, view: SubmissionView | undefined, extra: Record<string, unknown>): Response {
  if (view === undefined) return json({ ...errorBody("OUTCOME_UNKNOWN", "The submission of this batch is no longer known"), submissionId, ...extra }, statusOf("OUTCOME_UNKNOWN"));
  if (view.state !== "mined" && view.state !== "confirmed" && view.state !== "failed") return acceptedAnswer(submissionId, extra, view.state);
  return json({ submissionId, txHash: view.txHash, results: resultsOf(view), ...extra });
}
