import type { SubmissionStatus, SubmissionTracker, SubmissionView } from "../../../domain/submissions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";

/** Where a submission is read (decisions §23). */
export const SUBMISSION_PATH = "/v1/submissions";

/** How the relays track their submissions; absent: answers carry no `submissionId`. */
export type RelayTracking = { readonly tracker: SubmissionTracker; readonly status: SubmissionStatus; readonly log: Logger };

/** Whether a request asks to be answered before its work is done (RFC 7240 `Prefer: respond-async`). */
export function prefersAsync(request: Request): boolean {
  return /(^|[,\s])respond-async\s*(?=[,;]|$)/i.test(request.headers.get("prefer") ?? "");
}

/** The 202 of an asynchronous write: where to poll for its outcome. */
export function acceptedAnswer(submissionId: string, extra: Record<string, unknown> = {}, state = "pending"): Response {
  return json({ submissionId, state, ...extra }, 202, {
    location: `${SUBMISSION_PATH}/${submissionId}`,
    "preference-applied": "respond-async",
  });
}

/**
 * What a retry answers when the request that first held its idempotency key died after opening a submission (a
 * crash, decisions §23): the submission's outcome as the relay would have answered it (mined: the success; failed: its
 * error), or, while it is still on its way, the 202 of an asynchronous write. `view`: the submission as read, if known.
 */
export function submissionAnswer(submissionId: string, view: SubmissionView | undefined, extra: { chain: string } & Record<string, unknown>): Response {
  const { chain, ...rest } = extra;
  if (view === undefined) return json({ ...errorBody("OUTCOME_UNKNOWN", "The submission of this request is no longer known"), submissionId, ...rest }, statusOf("OUTCOME_UNKNOWN"));
  if (view.state === "mined" || view.state === "confirmed") {
    return json({ success: true, txHash: view.txHash, uid: view.uid, blockNumber: view.blockNumber, chain, submissionId, ...rest });
  }
  if (view.state === "failed") {
    const code = view.error ?? "SUBMISSION_FAILED";
    return json({ ...errorBody(code, "The submission failed; nothing of it was attested", view.txHash ?? undefined), submissionId, ...rest }, statusOf(code));
  }
  return acceptedAnswer(submissionId, { chain, ...rest }, view.state);
}
