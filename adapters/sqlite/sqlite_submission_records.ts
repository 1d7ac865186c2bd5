import type { Database } from "bun:sqlite";
import type { SubmissionItem, SubmissionOutcome, SubmissionRecord, SubmissionRecordStore } from "../../ports/submission_records.ts";
import { addMissingColumns } from "./sqlite_database.ts";

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
];

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

/** Tracked submissions in the SQLite file, beside the replay records. */
export function createSqliteSubmissionRecords(db: Database): SubmissionRecordStore {
  db.transaction(() => {
    for (const statement of SUBMISSION_RECORDS_TABLES) db.exec(statement);
    addMissingColumns(db, SUBMISSION_RECORDS_ADDED_COLUMNS);
    for (const statement of SUBMISSION_RECORDS_AFTER_COLUMNS) db.exec(statement);
  }).immediate();
  const insert = db.query(
    "INSERT INTO submission_records (id, scope, ref, items, state, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, 'open', ?, ?)",
  );
  const find = db.query<Record<string, unknown>, [string]>("SELECT * FROM submission_records WHERE id = ?");
  const first = db.query<Record<string, unknown>, [string, number]>(
    "SELECT * FROM submission_records WHERE scope = ? ORDER BY created_at_ms DESC, id DESC LIMIT ?",
  );
  const after = db.query<Record<string, unknown>, [string, number, number, string, number]>(
    `SELECT * FROM submission_records WHERE scope = ? AND (created_at_ms < ? OR (created_at_ms = ? AND id < ?))
     ORDER BY created_at_ms DESC, id DESC LIMIT ?`,
  );
  const settle = db.query<{ id: string }, (string | number | null)[]>(
    "UPDATE submission_records SET state = ?, tx_hash = ?, uid = ?, block_number = ?, error = ?, fee_bumps = ?, item_uids = ?, untold = ?, updated_at_ms = ? WHERE id = ? AND state = 'open' RETURNING id",
  );
  const settleRef = db.query<{ id: string }, (string | number | null)[]>(
    "UPDATE submission_records SET state = ?, tx_hash = ?, uid = ?, block_number = ?, error = ?, fee_bumps = ?, item_uids = ?, untold = 1, updated_at_ms = ? WHERE ref = ? AND state = 'open' RETURNING id",
  );
  const untold = db.query<Record<string, unknown>, [number, number, number]>(
    `SELECT * FROM (SELECT * FROM submission_records WHERE state = 'open' AND created_at_ms < ?
       UNION SELECT * FROM submission_records WHERE untold = 1 AND created_at_ms < ?) ORDER BY created_at_ms, id LIMIT ?`,
  );
  const told = db.query("UPDATE submission_records SET untold = NULL WHERE id = ? AND state <> 'open'");
  const prune = db.query("DELETE FROM submission_records WHERE created_at_ms < ? AND state <> 'open'");
  return {
    create({ id, scope, ref, createdAtMs, items }) {
      insert.run(id, scope, ref, items === undefined ? null : JSON.stringify(items), createdAtMs, createdAtMs);
      return Promise.resolve();
    },
    find(id) {
      const row = find.get(id);
      return Promise.resolve(row === null ? undefined : toSubmissionRecord(row));
    },
    list(scope, page) {
      const rows = page.after === undefined
        ? first.all(scope, page.limit)
        : after.all(scope, page.after.createdAtMs, page.after.createdAtMs, page.after.id, page.limit);
      return Promise.resolve(rows.map(toSubmissionRecord));
    },
    settle: (id, outcome, nowMs, options) =>
      Promise.resolve(settle.all(...outcomeValues(outcome), options?.untold === false ? null : 1, nowMs, id).length === 1),
    settleRef: (ref, outcome, nowMs) => Promise.resolve(settleRef.all(...outcomeValues(outcome), nowMs, ref).map((row) => row.id)),
    untold: (beforeMs, limit) => Promise.resolve(untold.all(beforeMs, beforeMs, limit).map(toSubmissionRecord)),
    told: (id) => Promise.resolve(void told.run(id)),
    prune: (beforeMs) => Promise.resolve(prune.run(beforeMs).changes),
  };
}
