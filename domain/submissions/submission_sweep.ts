import type { Clock } from "../../ports/clock.ts";
import type { ReplayStore } from "../../ports/replay_store.ts";
import type { SubmissionOutcome, SubmissionRecord, SubmissionRecordStore } from "../../ports/submission_records.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { RELAY_BOOK } from "./submission_status.ts";
import type { SubmissionSettled } from "./submission_tracker.ts";

/** What the sweep needs. */
export type SubmissionSweepDeps = {
  readonly records: SubmissionRecordStore;
  readonly replay: ReplayStore;
  readonly clock: Clock;
  readonly replacements?: TxReplacementStore | undefined;
  /** Told once per submission the sweep settles (the `submission.settled` seam, as the tracker's). */
  readonly onSettled?: SubmissionSettled | undefined;
  /** Only submissions older than this are swept, so a relay still answering keeps its own (default 60 s). */
  readonly minAgeMs?: number | undefined;
  /** At most this many per sweep (default 200). */
  readonly batch?: number | undefined;
};

/**
 * Settles the submissions whose replay record ended while nobody kept the outcome on them: the process died between
 * the relay recording the chain's answer (or the reconciler settling it) and the submission's own record, so the
 * reconciler, which follows open replay records, will never see it again (decisions §23). A mined or reverted record
 * gives its outcome (a batch: each sent request's uid from its own record); a record that is gone was given back with
 * nothing on chain; one still on its way is left to the reconciler. Each settled submission is told once, whoever
 * settles it first (the stores settle an open record once).
 */
export function createSubmissionSweep(deps: SubmissionSweepDeps): () => Promise<number> {
  const minAgeMs = deps.minAgeMs ?? 60_000;
  const batch = deps.batch ?? 200;

  async function outcomeOf(record: SubmissionRecord): Promise<SubmissionOutcome | undefined> {
    const live = await deps.replay.find(record.ref);
    const feeBumps = (await deps.replacements?.list(RELAY_BOOK, record.ref))?.length ?? 0;
    if (live === undefined) return { state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps };
    if (live.state === "reverted") return { state: "failed", txHash: live.txHash, error: "SUBMISSION_FAILED", feeBumps };
    if (live.state !== "mined") return undefined;
    const mined = { state: "mined" as const, txHash: live.txHash ?? "", uid: live.uid, blockNumber: live.blockNumber ?? 0n, feeBumps };
    if (record.items === null) return mined;
    const uids: Record<string, string | null> = {};
    for (const item of record.items) if ("ref" in item) uids[item.ref] = item.ref === record.ref ? live.uid : (await deps.replay.find(item.ref))?.uid ?? null;
    return { ...mined, uids };
  }

  return async function sweep() {
    const nowMs = deps.clock.nowMs();
    let settled = 0;
    for (const record of await deps.records.unsettled(nowMs - minAgeMs, batch)) {
      const outcome = await outcomeOf(record);
      if (outcome === undefined) continue;
      if (!(await deps.records.settle(record.id, outcome, deps.clock.nowMs()))) continue;
      settled++;
      await deps.onSettled?.({ submissionId: record.id, outcome });
    }
    return settled;
  };
}
