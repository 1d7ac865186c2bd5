/**
 * What the widget makes of a send that did not answer with the review's uid (decisions §29: "a clear error with
 * retry"; §15 and §23 for what the relay promises). A refusal wrote nothing: the person may write the review again,
 * and signs it again. Any answer that leaves the write possible (503 `OUTCOME_UNKNOWN`, an answer lost on the way, a
 * 5xx that does not say nothing was done, the key still in use by the first send) is "unsure": the widget keeps the
 * signed review and its `Idempotency-Key`, and "Check again" reads its submission or sends the same bytes under the same
 * key, never a new signature. Before, every failure said "The review was not written", and "Try again" asked for a new
 * signature of the next nonce: a review the chain already had was written twice.
 *
 * Pure (no page): the widget's script calls it, widgets/send_outcome_test.ts tests it.
 */
import { pendingSubmissionOf } from "../client/delegated_attest.ts";
import { AtsClientError } from "../client/errors.ts";
import type { Submission } from "../client/submissions.ts";

/** A send's failure as the widget treats it. */
export type AfterSend =
  | { readonly kind: "refused" }
  | {
    readonly kind: "unsure";
    /**
     * Why it is not known: the relay said so, no answer came, the first send under the key still runs, or the relay
     * answered 202: the submission is still on its way (a retry of a send that died with its instance).
     */
    readonly why: "outcome-unknown" | "no-answer" | "in-use" | "waiting";
    /** The submission to read (an `OUTCOME_UNKNOWN` names it). */
    readonly submissionId?: string | undefined;
    readonly txHash?: string | undefined;
  };

/**
 * Server errors that did nothing and ask for the same request again (docs/endpoints.md, "Retries"): the review was not
 * written. A 503 `SUBMISSION_FAILED` is the delegate wallet unable to pay (nothing recorded); a 500 one is a
 * transaction that reverted (nothing attested, the nonce not taken).
 */
const NOTHING_DONE = new Set(["SIGNER_UNAVAILABLE", "SHUTTING_DOWN", "RPC_ERROR", "SUBMISSION_FAILED"]);

/** What a failed send of a signed review means for the person (see the module's comment). */
export function afterSendFailure(error: unknown): AfterSend {
  if (!(error instanceof AtsClientError)) return { kind: "unsure", why: "no-answer" };
  const body = typeof error.body === "object" && error.body !== null ? error.body as Record<string, unknown> : {};
  const text = (value: unknown) => typeof value === "string" && value !== "" ? value : undefined;
  if (error.code === "OUTCOME_UNKNOWN") return { kind: "unsure", why: "outcome-unknown", submissionId: text(body.submissionId), txHash: text(body.details) };
  if (error.code === "IDEMPOTENCY_KEY_IN_USE") return { kind: "unsure", why: "in-use" };
  // A 202 (client/delegated_attest.ts): the submission is on its way, nothing is on chain yet. Before, the widget took
  // it for the relay's success and showed "Review submitted" with no uid and no transaction, the signed review dropped.
  const pending = pendingSubmissionOf(error);
  if (pending !== undefined) return { kind: "unsure", why: "waiting", submissionId: pending.submissionId };
  // A 202 naming no submission, or a 2xx that is not the relay's success (a proxy's page): nothing says it was not written.
  if (error.code === "SUBMISSION_NOT_SETTLED" || (error.code === "INVALID_RESPONSE" && error.status !== undefined && error.status < 300)) {
    return { kind: "unsure", why: "no-answer" };
  }
  // No answer at all (a dropped connection), or one that is not the service's (a proxy's page).
  if (error.status === undefined) return { kind: "unsure", why: "no-answer" };
  if (error.status >= 500 && (error.code === "NETWORK_ERROR" || error.code === "INVALID_RESPONSE" || !NOTHING_DONE.has(error.code))) {
    return { kind: "unsure", why: "no-answer" };
  }
  return { kind: "refused" };
}

/** A submission read after an unsure send: written (with what to show), failed (nothing attested), or still on its way. */
export type SubmissionOutcome =
  | { readonly kind: "written"; readonly uid: string | null; readonly txHash: string | null }
  | { readonly kind: "failed"; readonly code: string | undefined }
  | { readonly kind: "waiting" };

/** Where a submission stands, for the widget. */
export function submissionOutcome(submission: Pick<Submission, "state" | "uid" | "txHash" | "error">): SubmissionOutcome {
  if (submission.state === "mined" || submission.state === "confirmed") return { kind: "written", uid: submission.uid, txHash: submission.txHash };
  if (submission.state === "failed") return { kind: "failed", code: submission.error };
  return { kind: "waiting" };
}

/** The sentence the unsure view shows. */
export function unsureText(
  outcome: Extract<AfterSend, { kind: "unsure" }> | { readonly why: "waiting"; readonly submissionId?: string | undefined; readonly txHash?: string | null | undefined },
): string {
  const tx = outcome.txHash ? ` Its transaction: ${outcome.txHash}.` : "";
  const submission = outcome.submissionId ? ` Its submission: ${outcome.submissionId}.` : "";
  switch (outcome.why) {
    case "outcome-unknown":
      return `The review was sent, but whether it is on chain is not known yet.${tx} Check again in a minute; do not sign it again.`;
    case "no-answer":
      return "The review was sent, but no answer from the service arrived. Check again: the same signed review is asked about, and it is never written twice.";
    case "in-use":
      return "The service is still writing the review. Check again in a moment.";
    case "waiting":
      return `The review's transaction is still on its way.${submission}${tx} Check again in a minute.`;
  }
}
