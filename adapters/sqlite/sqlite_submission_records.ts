import type { Database } from "bun:sqlite";
import type { SubmissionRecordStore } from "../../ports/submission_records.ts";
import { addMissingColumns } from "./sqlite_database.ts";
import {
  outcomeValues,
  SUBMISSION_RECORDS_ADDED_COLUMNS,
  SUBMISSION_RECORDS_AFTER_COLUMNS,
  SUBMISSION_RECORDS_CHAIN_BACKFILL,
  SUBMISSION_RECORDS_TABLES,
  toSubmissionRecord,
} from "../sql/submission_records.ts";

/** Tracked submissions in the SQLite file, beside the replay records. */
export function createSqliteSubmissionRecords(db: Database): SubmissionRecordStore {
  db.transaction(() => {
    for (const statement of SUBMISSION_RECORDS_TABLES) db.exec(statement);
    const named = db.query<{ name: string }, []>("PRAGMA table_info(submission_records)").all().some((c) => c.name === "chain_id");
    addMissingColumns(db, SUBMISSION_RECORDS_ADDED_COLUMNS);
    if (!named) db.exec(SUBMISSION_RECORDS_CHAIN_BACKFILL);
    for (const statement of SUBMISSION_RECORDS_AFTER_COLUMNS) db.exec(statement);
  }).immediate();
  const insert = db.query(
    "INSERT INTO submission_records (id, scope, chain_id, ref, items, state, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, 'open', ?, ?)",
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
    `UPDATE submission_records SET state = ?, tx_hash = ?, uid = ?, block_number = ?, error = ?, fee_bumps = ?, item_uids = ?, untold = 1,
       updated_at_ms = ?, chain_id = COALESCE(chain_id, ?) WHERE ref = ? AND (chain_id = ? OR chain_id IS NULL) AND state = 'open' RETURNING id`,
  );
  const untold = db.query<Record<string, unknown>, [number, number, number]>(
    `SELECT * FROM (SELECT * FROM submission_records WHERE state = 'open' AND created_at_ms < ?
       UNION SELECT * FROM submission_records WHERE untold = 1 AND created_at_ms < ?) ORDER BY created_at_ms, id LIMIT ?`,
  );
  const told = db.query("UPDATE submission_records SET untold = NULL WHERE id = ? AND state <> 'open'");
  const prune = db.query("DELETE FROM submission_records WHERE created_at_ms < ? AND state <> 'open'");
  return {
    create({ id, scope, chainId, ref, createdAtMs, items }) {
      insert.run(id, scope, chainId, ref, items === undefined ? null : JSON.stringify(items), createdAtMs, createdAtMs);
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
    settleRef: (chainId, ref, outcome, nowMs) => Promise.resolve(settleRef.all(...outcomeValues(outcome), nowMs, chainId, ref, chainId).map((row) => row.id)),
    untold: (beforeMs, limit) => Promise.resolve(untold.all(beforeMs, beforeMs, limit).map(toSubmissionRecord)),
    told: (id) => Promise.resolve(void told.run(id)),
    prune: (beforeMs) => Promise.resolve(prune.run(beforeMs).changes),
  };
}
