/** What SQLite and PostgreSQL share for the submission records store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { SubmissionItem, SubmissionOutcome, SubmissionRecord } from "../../ports/submission_records.ts";

/** The table of tracked submissions (decisions §23); the same columns on PostgreSQL. */
export const SUBMISSION_RECORDS_TABLES: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS submission_records (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, ref TEXT NOT NULL, state TEXT NOT NULL,
    tx_hash TEXT, uid TEXT, block_number TEXT, error TEXT, fee_bumps INTEGER NOT NULL DEFAULT 0,
    created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS submission_records_scope ON submission_records (scope, created_at_ms DESC, id DESC)",
  "CREATE INDEX IF NOT EXISTS submission_records_ref ON submission_records (ref) WHERE state = 'open'",
  "CREATE INDEX IF NOT EXISTS submission_records_open ON submission_records (created_at_ms) WHERE state = 'open'",
];

/**
 * Columns added after the table was first created: a batch's requests (JSON `SubmissionItem[]`) and, once mined, their
 * uids by replay key (JSON). PostgreSQL adds them with `ADD COLUMN IF NOT EXISTS`.
 */
export const SUBMISSION_RECORDS_ADDED_COLUMNS: readonly (readonly [string, string, string])[] = [
  ["submission_records", "items", "TEXT"],
  ["submission_records", "item_uids", "TEXT"],
  // 1 from its settlement until its `submission.settled` was queued; rows settled before the column existed stay null.
  ["submission_records", "untold", "INTEGER"],
  // The chain of its replay record (decisions §30: a record's identity is (chain, signature)); rows from before are
  // given their replay record's chain once ({@link SUBMISSION_RECORDS_CHAIN_BACKFILL}).
  ["submission_records", "chain_id", "BIGINT"],
];

/**
 * Names the chain of each row from before the column: its replay record's (every replay row names its chain; the keys
 * were the signature alone then, so one record at most). A row whose record is gone stays null, and is read as a
 * previous version read it: its replay record found by key alone (`ReplayStore.findAnyChain`). SQLite runs it when it
 * adds the column, PostgreSQL with each new version's migration (once per version; rows an old instance opens later in
 * that rolling restart are named by the next version's, and are read by key alone until then).
 * One join, each table read once (a subquery per row found its record by a scan of `replay` each: hours, inside the
 * migration's transaction, on a busy deployment's tables); `UPDATE … FROM` is PostgreSQL's and SQLite's (3.33 on).
 */
export const SUBMISSION_RECORDS_CHAIN_BACKFILL = `UPDATE submission_records SET chain_id = r.chain_id
  FROM (SELECT key, MIN(chain_id) AS chain_id FROM replay GROUP BY key) AS r
  WHERE r.key = submission_records.ref AND submission_records.chain_id IS NULL`;

/** Made once the added columns exist. */
export const SUBMISSION_RECORDS_AFTER_COLUMNS: readonly string[] = [
  "CREATE INDEX IF NOT EXISTS submission_records_untold ON submission_records (created_at_ms) WHERE untold = 1",
];

/** A stored row as the port's record (SQLite and PostgreSQL share the columns). */
export function toSubmissionRecord(row: Record<string, unknown>): SubmissionRecord {
  const feeBumps = Number(row.fee_bumps ?? 0);
  const txHash = (row.tx_hash as string | null | undefined) ?? null;
  const outcome: SubmissionOutcome | null = row.state === "mined"
    ? {
      state: "mined",
      txHash: txHash ?? "",
      uid: (row.uid as string | null | undefined) ?? null,
      blockNumber: BigInt(String(row.block_number ?? "0")),
      feeBumps,
      ...(typeof row.item_uids === "string" ? { uids: JSON.parse(row.item_uids) as Record<string, string | null> } : {}),
    }
    : row.state === "failed"
    ? { state: "failed", txHash, error: String(row.error ?? "SUBMISSION_FAILED"), feeBumps }
    : null;
  return {
    id: String(row.id),
    scope: String(row.scope),
    ref: String(row.ref),
    chainId: row.chain_id === null || row.chain_id === undefined ? null : Number(row.chain_id),
    items: typeof row.items === "string" ? JSON.parse(row.items) as SubmissionItem[] : null,
    outcome,
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
}

/** The columns an outcome sets: state, tx_hash, uid, block_number, error, fee_bumps, item_uids. */
export function outcomeValues(outcome: SubmissionOutcome): [string, string | null, string | null, string | null, string | null, number, string | null] {
  return outcome.state === "mined"
    ? ["mined", outcome.txHash, outcome.uid, outcome.blockNumber.toString(), null, outcome.feeBumps, outcome.uids === undefined ? null : JSON.stringify(outcome.uids)]
    : ["failed", outcome.txHash, null, null, outcome.error, outcome.feeBumps, null];
}
