/** Relay submissions tracked by id: their state, their owner's list, and their outcome once known (decisions §23). */
export { isSubmissionId, newSubmissionId } from "./submission_id.ts";
export {
  type ChainHead,
  createSubmissionStatus,
  MAX_SUBMISSION_PAGE,
  RELAY_BOOK,
  type SubmissionPage,
  type SubmissionState,
  type SubmissionStatus,
  type SubmissionItemView,
  type SubmissionStatusDeps,
  type SubmissionView,
} from "./submission_status.ts";
export {
  createSubmissionTracker,
  type RelayResult,
  type SubmissionSettled,
  type SubmissionTracker,
  type SubmissionTrackerDeps,
  tellSettled,
  trackedBook,
} from "./submission_tracker.ts";
export { createSubmissionSweep, type SubmissionSweepDeps } from "./submission_sweep.ts";
export {
  createRelaySubmission,
  type KeyedRequest,
  type OnSubmitting,
  type RelaySend,
  type RelaySubmission,
  type RelaySubmissionDeps,
  type RelayWrite,
  type RelayWriteOutcome,
  type RelayWriteRun,
  type WriteRate,
} from "./relay_submission.ts";
