/** An answer kept for an idempotency key: what the first request was answered, to be given again to its retries. */
export type StoredAnswer = {
  readonly status: number;
  /** The answer's headers the retry gets again (lower-case names). */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
};

/** One key's record (decisions §23). */
export type IdempotencyRecord = {
  /** Whose key it is: an account (`account:<id>`) or, on the public relay, a client address (`client:<address>`). */
  readonly scope: string;
  readonly key: string;
  /** SHA-256 of the request (method, path and body) as hex: what "the same request" means. */
  readonly fingerprint: string;
  /** `running` while the first request works; `done` once its answer is stored. */
  readonly state: "running" | "done";
  readonly answer: StoredAnswer | null;
  readonly createdAtMs: number;
  /** The record is forgotten after this (24 h after creation). */
  readonly expiresAtMs: number;
  /** A running record whose lease passed belongs to a request that died (a crash): a retry may take it over. */
  readonly leaseUntilMs: number;
  /** The submission the request opened (decisions §23), once it did: what a retry of a dead request answers from. */
  readonly submissionId: string | null;
};

/** What asking to begin a key's request found. */
export type IdempotencyBegin =
  /**
   * The record is written (new, or taken over from an expired one or a dead request's): run the request. A dead
   * request's record keeps the submission it opened (`submissionId`), which the retry answers from.
   */
  | { readonly kind: "started"; readonly submissionId: string | null }
  /** Someone holds the key: its record as it stands. */
  | { readonly kind: "exists"; readonly record: IdempotencyRecord };

/** What {@link IdempotencyStore.reopen} takes back: the kept answer it must still hold, and the new lease. */
export type ReopenedKey = {
  readonly fingerprint: string;
  readonly answer: StoredAnswer;
  readonly nowMs: number;
  readonly leaseUntilMs: number;
};

/**
 * Durable idempotency keys, in the same database as the submission records, so a key's record is exact across
 * instances and survives a crash: it is written before the request's work begins.
 */
export interface IdempotencyStore {
  /**
   * Atomically writes a running record for (scope, key) unless one is held: a record past its expiry is replaced; a
   * running one past its lease with the same fingerprint is taken over (its lease renewed). Otherwise the record held.
   */
  readonly begin: (record: Omit<IdempotencyRecord, "state" | "answer" | "submissionId">) => Promise<IdempotencyBegin>;
  /**
   * The record held for (scope, key) as it stands, expired or not; undefined when there is none. One read by the primary
   * key, writing nothing: what a request past its caller's rate is answered from when its key already has an answer
   * (decisions §23: a retry of a kept answer takes no turn).
   */
  readonly find: (scope: string, key: string) => Promise<IdempotencyRecord | undefined>;
  /** Notes the submission a running request opened, before its transaction is sent. */
  readonly attach: (scope: string, key: string, submissionId: string) => Promise<void>;
  /** Stores the answer of a running record and marks it done. */
  readonly complete: (scope: string, key: string, answer: StoredAnswer) => Promise<void>;
  /**
   * Takes a done record back to running (its answer cleared, its lease until `leaseUntilMs`) while it still holds
   * `answer` for `fingerprint`, names a submission and has not expired at `nowMs`: a kept answer that named no outcome
   * yet (503 `OUTCOME_UNKNOWN`), whose retry answers from that submission as a dead request's retry does (decisions
   * §23), then keeps what it answered (or gives `answer` back with `complete`). One statement: of retries racing, one
   * takes it (true). Absent: such answers are replayed as kept.
   */
  readonly reopen?: ((scope: string, key: string, held: ReopenedKey) => Promise<boolean>) | undefined;
  /** Forgets a running record whose answer is not kept (a 429, a missing credential), so a retry runs afresh. */
  readonly abandon: (scope: string, key: string) => Promise<void>;
  /** Drops the records expired before `nowMs`; returns how many. */
  readonly prune: (nowMs: number) => Promise<number>;
  /**
   * Ends every running record's lease at `nowMs`; returns how many. Called at start on a database no other instance
   * uses (a SQLite file, held by one process: adapters/sqlite/sqlite_instance_lock.ts), where every running record is
   * a request that died with the last process: its retry takes the key over at once (decisions §23), instead of 409
   * for the rest of `IDEMPOTENCY_LEASE_MS`, five minutes, by which time a paid write's payment authorization had run
   * out and the resumed write was never paid for. Absent: leases run out on their own (PostgreSQL, shared).
   */
  readonly endLeases?: ((nowMs: number) => Promise<number>) | undefined;
}
