/** How a submission ended, as its record keeps it once known (decisions §23). */
export type SubmissionOutcome =
  | {
    readonly state: "mined";
    readonly txHash: string;
    readonly uid: string | null;
    readonly blockNumber: bigint;
    readonly feeBumps: number;
    /** A batch's: each sent request's uid under its replay record's key (its `ref`); absent for a single send. */
    readonly uids?: Readonly<Record<string, string | null>> | undefined;
  }
  | { readonly state: "failed"; readonly txHash: string | null; readonly error: string; readonly feeBumps: number };

/**
 * One request of a batch submission (decisions §23), in the batch's order: sent in its transaction under its replay
 * record (`ref`), or refused by its checks before anything was sent (the single route's refusal of it).
 */
export type SubmissionItem =
  | { readonly ref: string }
  | {
    readonly refused: {
      readonly code: string;
      readonly message: string;
      readonly details?: string | undefined;
      /** An answer status other than the code's usual one (e.g. 503 when the service cannot pay). */
      readonly status?: number | undefined;
    };
  };

/**
 * One relay submission as its caller tracks it (decisions §23): an unguessable id, whose it is, and the replay record
 * (`ref`, the normalized signature) its live state is read from until its outcome is kept here.
 */
export type SubmissionRecord = {
  readonly id: string;
  /** `account:<id>`, or `client:<address>` on the public relay and for x402 payers. */
  readonly scope: string;
  readonly ref: string;
  /**
   * The chain of its replay record: `ref` names a record on this chain (a record's identity is (chain, signature),
   * decisions §30). Null when the chain is not known: a record a previous version opened (before the upgrade, its
   * replay record gone by then, or beside this version during a rolling restart of PostgreSQL). Its replay record is
   * then found by key alone (`ReplayStore.findAnyChain`), as that version found it, and `settleRef` names its chain.
   */
  readonly chainId: number | null;
  /** A batch's requests, in order (decisions §23); null for a single send. */
  readonly items: readonly SubmissionItem[] | null;
  readonly outcome: SubmissionOutcome | null;
  readonly createdAtMs: number;
  readonly updatedAtMs: number;
};

/** Where a page of an account's submissions starts: after this one (newest first). */
export type SubmissionCursor = { readonly createdAtMs: number; readonly id: string };

/** The submissions callers track, in the same database as the replay records they point at. */
export interface SubmissionRecordStore {
  readonly create: (
    record: {
      readonly id: string;
      readonly scope: string;
      readonly chainId: number;
      readonly ref: string;
      readonly createdAtMs: number;
      readonly items?: readonly SubmissionItem[] | undefined;
    },
  ) => Promise<void>;
  readonly find: (id: string) => Promise<SubmissionRecord | undefined>;
  /** A scope's submissions, newest first, from after `after`. */
  readonly list: (scope: string, page: { readonly limit: number; readonly after?: SubmissionCursor | undefined }) => Promise<SubmissionRecord[]>;
  /**
   * Keeps the outcome of a submission still open (a settled one keeps its first); true when this settled it. It is left
   * untold (for `told` or the sweep) unless `options.untold` is false: a settlement nobody is to be told of (issue 43).
   */
  readonly settle: (id: string, outcome: SubmissionOutcome, nowMs: number, options?: { readonly untold?: boolean }) => Promise<boolean>;
  /**
   * Keeps the outcome of every open submission of one replay record, `ref` on `chainId` (the reconciler settles by
   * record); their ids. A submission naming no chain is settled too, and from then on names `chainId`.
   */
  readonly settleRef: (chainId: number, ref: string, outcome: SubmissionOutcome, nowMs: number) => Promise<string[]>;
  /**
   * Up to `limit` submissions created before `beforeMs` whose settlement has not been told yet, oldest first: still
   * open, or settled (by `settle`/`settleRef`) without `told` after it. The sweep finishes them: a crash between a
   * replay record's end and its submission's outcome, or between the outcome and `submission.settled`, loses neither.
   */
  readonly untold: (beforeMs: number, limit: number) => Promise<SubmissionRecord[]>;
  /** Marks a settled submission's settlement as told (its `submission.settled` event queued). */
  readonly told: (id: string) => Promise<void>;
  /** Drops settled submissions created before `beforeMs`; returns how many. */
  readonly prune: (beforeMs: number) => Promise<number>;
}
