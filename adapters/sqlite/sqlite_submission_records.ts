import type { Database } from "bun:sqlite";
import type { SubmissionOutcome, SubmissionRecord, SubmissionRecordStore } from "../../ports/submission_records.ts";

/** The table of tracked submissions (decisions §23); the same columns on PostgreSQL. */
export const SUBMISSION_RECORDS_TABLES: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS submission_records (
    id TEXT PRIMARY KEY, scope TEXT NOT NULL, ref TEXT NOT NULL, state TEXT NOT NULL,
    tx_hash TEXT, uid TEXT, block_number TEXT, error TEXT, fee_bumps INTEGER NOT NULL DEFAULT 0,
    created_at_ms BIGINT NOT NULL, updated_at_ms BIGINT NOT NULL)`,
  "CREATE INDEX IF NOT EXISTS submission_records_scope ON submission_records (scope, created_at_ms DESC, id DESC)",
  "CREATE INDEX IF NOT EXISTS submission_records_ref ON submission_records (ref) WHERE state = 'open'",
];

/** A stored row as the port's record (SQLite and PostgreSQL share the columns). */
export function toSubmissionRecord(row: Record<string, unknown>): SubmissionRecord {
  const feeBumps = Number(row.fee_bumps ?? 0);
  const txHash = (row.tx_hash as string | null | undefined) ?? null;
  const outcome: SubmissionOutcome | null = row.state === "mined"
    ? { state: "mined", txHash: txHash ?? "", uid: (row.uid as string | null | undefined) ?? null, blockNumber: BigInt(String(row.block_number ?? "0")), feeBumps }
    : row.state === "failed"
    ? { state: "failed", txHash, error: String(row.error ?? "SUBMISSION_FAILED"), feeBumps }
    : null;
  return {
    id: String(row.id),
    scope: String(row.scope),
    ref: String(row.ref),
    outcome,
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
}

/** The columns an outcome sets: state, tx_hash, uid, block_number, error, fee_bumps. */
export function outcomeValues(outcome: SubmissionOutcome): [string, string | null, string | null, string | null, string | null, number] {
  return outcome.state === "mined"
    ? ["mined", outcome.txHash, outcome.uid, outcome.blockNumber.toString(), null, outcome.feeBumps]
    : ["failed", outcome.txHash, null, null, outcome.error, outcome.feeBumps];
}

/** Tracked submissions in the SQLite file, beside the replay records. */
export function createSqliteSubmissionRecords(db: Database): SubmissionRecordStore {
  for (const statement of SUBMISSION_RECORDS_TABLES) db.exec(statement);
  const insert = db.query(
    "INSERT INTO submission_records (id, scope, ref, state, created_at_ms, updated_at_ms) VALUES (?, ?, ?, 'open', ?, ?)",
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
    "UPDATE submission_records SET state = ?, tx_hash = ?, uid = ?, block_number = ?, error = ?, fee_bumps = ?, updated_at_ms = ? WHERE id = ? AND state = 'open' RETURNING id",
  );
  const settleRef = db.query<{ id: string }, (string | number | null)[]>(
    "UPDATE submission_records SET state = ?, tx_hash = ?, uid = ?, block_number = ?, error = ?, fee_bumps = ?, updated_at_ms = ? WHERE ref = ? AND state = 'open' RETURNING id",
  );
  const prune = db.query("DELETE FROM submission_records WHERE created_at_ms < ? AND state <> 'open'");
  return {
    create({ id, scope, ref, createdAtMs }) {
      insert.run(id, scope, ref, createdAtMs, createdAtMs);
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
    settle: (id, outcome, nowMs) => Promise.resolve(settle.all(...outcomeValues(outcome), nowMs, id).length === 1),
    settleRef: (ref, outcome, nowMs) => Promise.resolve(settleRef.all(...outcomeValues(outcome), nowMs, ref).map((row) => row.id)),
    prune: (beforeMs) => Promise.resolve(prune.run(beforeMs).changes),
  };
}
