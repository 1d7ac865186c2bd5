import type { Clock } from "../../ports/clock.ts";
import type { Random } from "../../ports/random.ts";
import type { SubmissionItem, SubmissionOutcome, SubmissionRecordStore } from "../../ports/submission_records.ts";
import type { SubmissionBook } from "../../ports/submissions.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { newSubmissionId } from "./submission_id.ts";
import { RELAY_BOOK } from "./submission_status.ts";

/** What a relay answered, as far as its submission is concerned. */
export type RelayResult =
  | {
    readonly ok: true;
    readonly value: {
      readonly txHash: string;
      readonly uid: string | null;
      readonly blockNumber: bigint;
      /** A batch's: each sent request's uid under its replay key (decisions §23). */
      readonly uids?: Readonly<Record<string, string | null>> | undefined;
    };
  }
  | { readonly ok: false; readonly code: string; readonly details?: string | undefined };

/** What the tracker needs. */
export type SubmissionTrackerDeps = {
  readonly records: SubmissionRecordStore;
  readonly random: Random;
  readonly clock: Clock;
  readonly replacements?: TxReplacementStore | undefined;
  /**
   * The soonest the reconciler replaces a transaction, in ms after its replay record was made (`Infinity`: it never
   * does). A relay that settles its own submission within half of it (the other half covers the clocks of other
   * instances) had no replacement made, so its count is not read (issue 43 item 4: a statement a write); absent, it is.
   */
  readonly bumpAfterMs?: number | undefined;
  /**
   * The seam of the `submission.settled` event (decisions §22, §23): called once per submission when its outcome is
   * kept, by the relay or by the reconciler; app/submissions.ts gives it the webhooks' event (domain/webhooks/).
   */
  readonly onSettled?: SubmissionSettled | undefined;
  /**
   * Whether a settlement of a submission of this scope has anyone to tell (`submission.settled` goes to accounts'
   * endpoints only); absent: every one is told. A relay's settlement of a scope nobody is told of is kept already told,
   * without `onSettled` or the `told` mark (issue 43).
   */
  readonly tells?: ((scope: string) => boolean) | undefined;
};

/**
 * A submission whose outcome was just kept: what `submission.settled` will carry. `scope` is the submission's when the
 * teller knows it (the relay that opened it), so the event need not read the record again (issue 43).
 */
export type SubmissionSettled = (event: SettledEvent) => Promise<void>;

/** What a settlement tells. */
export type SettledEvent = { readonly submissionId: string; readonly outcome: SubmissionOutcome; readonly scope?: string | undefined };

const TX_HASH = /^0x[0-9a-fA-F]{64}$/;

/**
 * Tells a settlement (`onSettled`) and then marks it told; a failure leaves it untold, for the sweep to tell again
 * (decisions §22: the event is never lost; its id is derived from the submission, so a second telling is the same event).
 */
export async function tellSettled(
  deps: Pick<SubmissionTrackerDeps, "records" | "onSettled">,
  event: SettledEvent,
): Promise<void> {
  try {
    await deps.onSettled?.(event);
    await deps.records.told(event.submissionId);
  } catch {
    // Untold: the sweep (createSubmissionSweep) tells it again.
  }
}

/**
 * Opens a submission record when a relay hands a transaction to the chain, and keeps its outcome when the relay
 * learns it (decisions §23). An unknown outcome (`OUTCOME_UNKNOWN`) leaves it open for the reconciler.
 */
export function createSubmissionTracker(deps: SubmissionTrackerDeps) {
  const bumps = async (chainId: number, ref: string) => (await deps.replacements?.list(RELAY_BOOK, chainId, ref))?.length ?? 0;
  return {
    /**
     * Records a submission of `scope` for the replay record `ref` on chain `chainId` (a batch's: its first request's,
     * with every request in `items`); returns its new id.
     */
    async open(scope: string, chainId: number, ref: string, items?: readonly SubmissionItem[]): Promise<string> {
      const id = newSubmissionId(deps.random);
      await deps.records.create({ id, scope, chainId, ref, createdAtMs: deps.clock.nowMs(), ...(items === undefined ? {} : { items }) });
      return id;
    },
    /** Now, by the tracker's clock: a relay takes it before it claims its replay record, and settles with it. */
    began: (): number => deps.clock.nowMs(),
    /**
     * Keeps what the relay answered as the submission's outcome, for the replay record `ref` on chain `chainId` (as it
     * was opened: its fee bumps are that chain's); `scope` is the one it was opened with, when known; `beganAtMs`
     * ({@link began}) when the relay began, before its replay record was made.
     */
    async settle(id: string, chainId: number, ref: string, result: RelayResult, scope?: string, beganAtMs?: number): Promise<void> {
      if (!result.ok && result.code === "OUTCOME_UNKNOWN") return;
      const unbumped = beganAtMs !== undefined && deps.bumpAfterMs !== undefined && deps.clock.nowMs() - beganAtMs < deps.bumpAfterMs / 2;
      const feeBumps = unbumped ? 0 : await bumps(chainId, ref);
      const outcome: SubmissionOutcome = result.ok
        ? {
          state: "mined",
          txHash: result.value.txHash,
          uid: result.value.uid,
          blockNumber: result.value.blockNumber,
          feeBumps,
          ...(result.value.uids === undefined ? {} : { uids: result.value.uids }),
        }
        : { state: "failed", txHash: result.details !== undefined && TX_HASH.test(result.details) ? result.details : null, error: result.code, feeBumps };
      if (scope !== undefined && deps.tells !== undefined && !deps.tells(scope)) {
        await deps.records.settle(id, outcome, deps.clock.nowMs(), { untold: false });
        return;
      }
      if (await deps.records.settle(id, outcome, deps.clock.nowMs())) await tellSettled(deps, { submissionId: id, outcome, scope });
    },
  };
}

/** The tracker. */
export type SubmissionTracker = ReturnType<typeof createSubmissionTracker>;

/**
 * The relays' replay book as the reconciler settles it, keeping each outcome on the submissions of the record too:
 * a submission whose request died, or whose outcome was unknown, ends as the reconciler found it.
 */
export function trackedBook(book: SubmissionBook & { readonly chainId: number }, deps: Omit<SubmissionTrackerDeps, "random">): SubmissionBook {
  const keep = async (ref: string, outcome: (feeBumps: number) => SubmissionOutcome) => {
    const feeBumps = (await deps.replacements?.list(book.name, book.chainId, ref))?.length ?? 0;
    const kept = outcome(feeBumps);
    for (const submissionId of await deps.records.settleRef(book.chainId, ref, kept, deps.clock.nowMs())) await tellSettled(deps, { submissionId, outcome: kept });
  };
  return {
    ...book,
    async mined(id, outcome) {
      await book.mined(id, outcome);
      // A batch's items share its transaction, and its record is under its first item's key: when the reconciler
      // settles that item, every item's uid read off the one receipt is kept with it.
      const uids = outcome.uids === undefined ? {} : { uids: Object.fromEntries(outcome.uids) };
      await keep(id, (feeBumps) => ({ state: "mined", txHash: outcome.txHash, uid: outcome.uid, blockNumber: outcome.blockNumber, feeBumps, ...uids }));
    },
    async reverted(id, txHash, blockNumber) {
      await book.reverted(id, txHash, blockNumber);
      await keep(id, (feeBumps) => ({ state: "failed", txHash, error: "SUBMISSION_FAILED", feeBumps }));
    },
    async release(id, cause) {
      await book.release(id, cause);
      await keep(id, (feeBumps) => ({ state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps }));
    },
  };
}
