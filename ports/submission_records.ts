/** How a submission ended, as its record keeps it once known (decisions §23). */
export type SubmissionOutcome =
  | { readonly state: "mined"; readonly txHash: string; readonly uid: string | null; readonly blockNumber: bigint; readonly feeBumps: number }
  | { readonly state: "failed"; readonly txHash: string | null; readonly error: string; readonly feeBumps: number };

/**
 * One relay submission as its caller tracks it (decisions §23): an unguessable id, whose it is, and the replay record
 * (`ref`, the normalized signature) its live state is read from until its outcome is kept here.
 */
export type SubmissionRecord = {
  readonly id: string;
  /** `account:<id>`, or `client:<address>` on the public relay and for x402 payers. */
  readonly scope: string;
  readonly ref: string;
  readonly outcome: SubmissionOutcome | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
};

/** Where a page of an account's submissions starts: after this one (newest first). */
export type SubmissionCursor = { readonly createdAtMs: number; readonly id: string };

/** The submissions callers track, in the same database as the replay records they point at. */
export interface SubmissionRecordStore {
  readonly create: (record: { readonly id: string; readonly scope: string; readonly ref: string; readonly createdAtMs: number }) => Promise<void>;
  readonly find: (id: string) => Promise<SubmissionRecord | undefined>;
  /** A scope's submissions, newest first, from after `after`. */
  readonly list: (scope: string, page: { readonly limit: number; readonly after?: SubmissionCursor | undefined }) => Promise<SubmissionRecord[]>;
  /** Keeps the outcome of a submission still open (a settled one keeps its first); true when this settled it. */
  readonly settle: (id: string, outcome: SubmissionOutcome, nowMs: number) => Promise<boolean>;
  /** Keeps the outcome of every open submission of one replay record (the reconciler settles by record); their ids. */
  readonly settleRef: (ref: string, outcome: SubmissionOutcome, nowMs: number) => Promise<string[]>;
  /** Drops settled submissions created before `beforeMs`; returns how many. */
  readonly prune: (beforeMs: number) => Promise<number>;
}
