/**
 * What the two relays' batch routes share (decisions §23): the `{requests: [...]}` body, the one submission record of
 * the batch's transaction, and the answer `{submissionId, txHash, results}` with one result per request, in order:
 * `{uid}`, or `{status, code, error}` as the single route would have answered that request.
 */
import { type DelegatedAttestBatchOutcome, MAX_BATCH_ITEMS } from "../../../domain/delegation/mod.ts";
import type { RelayResult } from "../../../domain/submissions/mod.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { acceptedAnswer, type RelayTracking, trackedRelay } from "./_tracking.ts";

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

/** What the submission record keeps of a batch: its transaction's outcome, the first item's uid once mined. */
function asRelayResult(outcome: DelegatedAttestBatchOutcome): RelayResult & { readonly batch: DelegatedAttestBatchOutcome } {
  if (outcome.sent === "mined" && outcome.txHash !== null) {
    const first = outcome.results.find((r) => r.ok);
    return { ok: true, value: { txHash: outcome.txHash, uid: first?.ok ? first.value.uid : null, blockNumber: outcome.blockNumber ?? 0n }, batch: outcome };
  }
  const code = outcome.sent === "unknown" ? "OUTCOME_UNKNOWN" : "SUBMISSION_FAILED";
  return { ok: false, code, details: outcome.txHash ?? undefined, batch: outcome };
}

/**
 * Runs a batch under its submission's record (opened when its one transaction is handed to the chain) and words
 * the answer. A batch is answered when its transaction is (`Prefer: respond-async` is not applied to batches: each
 * request's refusal is part of the answer).
 */
export async function batchAnswer(
  tracking: RelayTracking | undefined,
  context: { readonly scope: string; readonly attach?: ((submissionId: string) => Promise<void>) | undefined },
  run: (onSubmitting: ((key: string) => Promise<void>) | undefined) => Promise<DelegatedAttestBatchOutcome>,
  extra: Record<string, unknown> = {},
): Promise<{ response: Response; outcome: DelegatedAttestBatchOutcome | undefined }> {
  const tracked = await trackedRelay(tracking, { ...context, async: false }, async (onSubmitting) => asRelayResult(await run(onSubmitting)));
  if (tracked.kind === "accepted") return { response: acceptedAnswer(tracked.submissionId, extra), outcome: undefined };
  const outcome = tracked.result.batch;
  const results = outcome.results.map((result) => {
    if (result.ok) return { uid: result.value.uid };
    const status = result.status ?? (result.unavailable ? 503 : statusOf(result.code));
    return { status, ...errorBody(result.code, result.message, result.details) };
  });
  return {
    response: json({ submissionId: tracked.submissionId ?? null, txHash: outcome.txHash, results, ...extra }),
    outcome,
  };
}

/**
 * What a retry answers when the request that first held the batch's idempotency key died after its transaction was
 * handed to the chain (decisions §23): the submission's state and transaction; each request then answers with its
 * own outcome when sent again (DUPLICATE with its uid once mined).
 */
export async function batchResume(tracking: RelayTracking, submissionId: string, extra: Record<string, unknown> = {}): Promise<Response> {
  const found = await tracking.status.read(submissionId);
  if (!found.ok) return json({ ...errorBody("OUTCOME_UNKNOWN", "The submission of this batch is no longer known"), submissionId, ...extra }, statusOf("OUTCOME_UNKNOWN"));
  const view = found.value;
  if (view.state !== "mined" && view.state !== "confirmed" && view.state !== "failed") return acceptedAnswer(submissionId, extra, view.state);
  return json({ submissionId, txHash: view.txHash, state: view.state, results: null, ...extra });
}
