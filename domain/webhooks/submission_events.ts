/**
 * `submission.settled` (decisions §22, §23): when a relay submission of an account is settled (by the relay or by the
 * reconciler), its outcome goes to the account's endpoints that asked for the event.
 */
import type { Clock } from "../../ports/clock.ts";
import type { SubmissionOutcome, SubmissionRecordStore } from "../../ports/submission_records.ts";
import type { WebhookStore } from "../../ports/webhooks.ts";
import type { ChainAnswer } from "../chains/mod.ts";
import { derivedEventId, webhookMessage } from "./events.ts";

/** What the event needs. */
export type SubmissionEventsDeps = {
  readonly store: Pick<WebhookStore, "accountEndpoints" | "publish">;
  readonly records: Pick<SubmissionRecordStore, "find">;
  readonly clock: Clock;
  /**
   * The chain of a settlement that names none (decisions §30: events carry `chain`): the deployment's default chain.
   * Undefined: such an event carries no `chain`.
   */
  readonly chain?: ChainAnswer | undefined;
};

/** Whether a submission of `scope` has anyone to tell of its settlement: an account's (its endpoints may ask). */
export function settlementConcerns(scope: string): boolean {
  return scope.startsWith("account:");
}

/** The tracker's `onSettled`: publishes `submission.settled` to the submission's account (none for the public relay). */
export function createSubmissionEvents(deps: SubmissionEventsDeps) {
  return async function submissionSettled(
    event: {
      readonly submissionId: string;
      readonly outcome: SubmissionOutcome;
      readonly scope?: string | undefined;
      /** The chain the submission was sent to, where the relay knows it; else `deps.chain`. */
      readonly chain?: ChainAnswer | undefined;
    },
  ): Promise<void> {
    // The relay that opened the submission names its scope; the reconciler and the sweep do not (a read of the record).
    const scope = event.scope ?? (await deps.records.find(event.submissionId))?.scope;
    if (scope === undefined || !settlementConcerns(scope)) return;
    const endpoints = (await deps.store.accountEndpoints(scope.slice("account:".length))).filter((e) => e.events.includes("submission.settled"));
    if (endpoints.length === 0) return;
    const o = event.outcome;
    const chain = event.chain ?? deps.chain;
    const data = {
      submissionId: event.submissionId,
      state: o.state,
      txHash: o.txHash,
      uid: o.state === "mined" ? o.uid : null,
      blockNumber: o.state === "mined" ? Number(o.blockNumber) : null,
      feeBumps: o.feeBumps,
      ...(o.state === "failed" ? { error: o.error } : {}),
      ...(chain === undefined ? {} : { chain }),
    };
    const message = webhookMessage(derivedEventId("submission.settled", event.submissionId), "submission.settled", deps.clock.nowMs(), data);
    await deps.store.publish([message], endpoints.map((e) => ({ messageId: message.id, endpointId: e.id })), []);
  };
}
