import type { RelayResult, SubmissionStatus, SubmissionTracker } from "../../../domain/submissions/mod.ts";
import type { SubmissionItem } from "../../../ports/submission_records.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";

/** Where a submission is read (decisions §23). */
export const SUBMISSION_PATH = "/v1/submissions";

/** How the relays track their submissions; absent: answers carry no `submissionId`. */
export type RelayTracking = { readonly tracker: SubmissionTracker; readonly status: SubmissionStatus; readonly log: Logger };

/** What a tracked relay request came to. */
export type Tracked<R> =
  /** `Prefer: respond-async` and the submission was recorded: answer 202 now; the rest runs on. */
  | { readonly kind: "accepted"; readonly submissionId: string }
  /** The relay answered; `submissionId` once a transaction was handed to the chain. */
  | { readonly kind: "answered"; readonly result: R; readonly submissionId: string | undefined };

/** Opens the submission when the relay hands its transaction to the chain (a batch's with each of its requests). */
export type OnSubmitting = (key: string, items?: readonly SubmissionItem[]) => Promise<void>;

/** Whether a request asks to be answered before its work is done (RFC 7240 `Prefer: respond-async`). */
export function prefersAsync(request: Request): boolean {
  return /(^|[,\s])respond-async\s*(?=[,;]|$)/i.test(request.headers.get("prefer") ?? "");
}

/**
 * Runs one relay request under its submission's record (decisions §23): the record is opened when the relay hands
 * the transaction to the chain (every check passed, the signature recorded), and keeps the relay's outcome. With
 * `async`, the answer is given as soon as the record exists, and the relay runs on; a request refused by its
 * checks is answered as without it.
 */
export async function trackedRelay<R extends RelayResult>(
  tracking: RelayTracking | undefined,
  { scope, async, attach }: {
    readonly scope: string;
    readonly async: boolean;
    /** Tells the request's idempotency key which submission it opened (decisions §23). */
    readonly attach?: ((submissionId: string) => Promise<void>) | undefined;
  },
  run: (onSubmitting: OnSubmitting | undefined) => Promise<R>,
): Promise<Tracked<R>> {
  if (tracking === undefined) return { kind: "answered", result: await run(undefined), submissionId: undefined };
  let opened: { id: string; ref: string } | undefined;
  let signal = () => {};
  const recorded = new Promise<void>((resolve) => (signal = resolve));
  const onSubmitting = async (key: string, items?: readonly SubmissionItem[]) => {
    opened = { id: await tracking.tracker.open(scope, key, items), ref: key };
    await attach?.(opened.id);
    signal();
  };
  const work = run(onSubmitting).then(async (result) => {
    // Kept here (or by the reconciler): the tracker's onSettled is where `submission.settled` will be emitted.
    // A failure to keep it must not turn the relay's answer into an error: the submission's state is then read from
    // its replay record, as while it was open.
    if (opened !== undefined) {
      await tracking.tracker.settle(opened.id, opened.ref, result, scope).catch((error: unknown) =>
        tracking.log.warn("submission_settle_failed", { submissionId: opened?.id, error: error instanceof Error ? error.message : String(error) }));
    }
    return result;
  });
  if (!async) {
    const result = await work;
    return { kind: "answered", result, submissionId: opened?.id };
  }
  const first = await Promise.race([work.then((result) => ({ result })), recorded.then(() => undefined)]);
  if (first !== undefined) return { kind: "answered", result: first.result, submissionId: opened?.id };
  work.catch((error: unknown) =>
    tracking.log.error("relay_async_error", { submissionId: opened?.id, error: error instanceof Error ? error.message : String(error) }));
  return { kind: "accepted", submissionId: opened!.id };
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
 * error), or, while it is still on its way, the 202 of an asynchronous write.
 */
export async function submissionAnswer(tracking: RelayTracking, submissionId: string, extra: { chain: string } & Record<string, unknown>): Promise<Response> {
  const { chain, ...rest } = extra;
  const found = await tracking.status.read(submissionId);
  if (!found.ok) return json({ ...errorBody("OUTCOME_UNKNOWN", "The submission of this request is no longer known"), submissionId, ...rest }, statusOf("OUTCOME_UNKNOWN"));
  const view = found.value;
  if (view.state === "mined" || view.state === "confirmed") {
    return json({ success: true, txHash: view.txHash, uid: view.uid, blockNumber: view.blockNumber, chain, submissionId, ...rest });
  }
  if (view.state === "failed") {
    const code = view.error ?? "SUBMISSION_FAILED";
    return json({ ...errorBody(code, "The submission failed; nothing of it was attested", view.txHash ?? undefined), submissionId, ...rest }, statusOf(code));
  }
  return acceptedAnswer(submissionId, rest, view.state);
}
