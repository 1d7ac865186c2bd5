import type { Clock } from "../../ports/clock.ts";
import type { ReplayStore } from "../../ports/replay_store.ts";
import type { SubmissionOutcome, SubmissionRecord, SubmissionRecordStore } from "../../ports/submission_records.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { RELAY_BOOK } from "./submission_status.ts";
import { type SubmissionSettled, tellSettled } from "./submission_tracker.ts";

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
 * Finishes what a crash left undone (decisions §22, §23):
 * - a submission whose replay record ended while nobody kept the outcome on it (the process died between the relay
 *   recording the chain's answer, or the reconciler settling it, and the submission's own record; the reconciler,
 *   which follows open replay records, will never see it again) is settled: a mined or reverted record gives its
 *   outcome (a batch: each sent request's uid from its own record), a record that is gone was given back with nothing
 *   on chain, one still on its way is left to the reconciler;
 * - a settled submission whose `submission.settled` was not queued (a crash, or the queue failing, in between) is
 *   told again (the event's id is the submission's, so the receiver sees one event).
 * The stores settle an open record once, so two sweeps, or a sweep and a relay, settle it once.
 */
export function createSubmissionSweep(deps: SubmissionSweepDeps): (minAgeMs?: number) => Promise<number> {
  // Returns how many submissions it settled or told; `minAgeMs` overrides the default for one sweep (a start on a
  // SQLite file, which no other instance writes, sweeps every row).
  const defaultAgeMs = deps.minAgeMs ?? 60_000;
  const batch = deps.batch ?? 200;

  async function outcomeOf(record: SubmissionRecord): Promise<SubmissionOutcome | undefined> {
    // The replay records of the submission's chain (decisions §30); for a record naming none (a previous version's, see
    // `SubmissionRecord.chainId`), the record of the key on any chain, as that version found it.
    const replayOf = (ref: string) => record.chainId === null ? deps.replay.findAnyChain(ref) : deps.replay.find(record.chainId, ref);
    const live = await replayOf(record.ref);
    const feeBumps = (await deps.replacements?.list(RELAY_BOOK, record.chainId, record.ref))?.length ?? 0;
    if (live === undefined) return { state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps };
    if (live.state === "reverted") return { state: "failed", txHash: live.txHash, error: "SUBMISSION_FAILED", feeBumps };
    if (live.state !== "mined") return undefined;
    const mined = { state: "mined" as const, txHash: live.txHash ?? "", uid: live.uid, blockNumber: live.blockNumber ?? 0n, feeBumps };
    if (record.items === null) return mined;
    const uids: Record<string, string | null> = {};
    for (const item of record.items) {
      if (!("ref" in item)) continue;
      const own = item.ref === record.ref ? live : await replayOf(item.ref);
      // A request of the batch not yet recorded as mined: its uid is on its way (the relay or the reconciler keeps it).
      if (own !== undefined && own.state !== "mined") return undefined;
      uids[item.ref] = own?.uid ?? null;
    }
    return { ...mined, uids };
  }

  return async function sweep(minAgeMs = defaultAgeMs) {
    const nowMs = deps.clock.nowMs();
    let settled = 0;
    for (const record of await deps.records.untold(nowMs - minAgeMs, batch)) {
      if (record.outcome !== null) {
        await tellSettled(deps, { submissionId: record.id, outcome: record.outcome });
        settled++;
        continue;
      }
      const outcome = await outcomeOf(record);
      if (outcome === undefined) continue;
      if (!(await deps.records.settle(record.id, outcome, deps.clock.nowMs()))) continue;
      settled++;
      await tellSettled(deps, { submissionId: record.id, outcome });
    }
    return settled;
  };
}
