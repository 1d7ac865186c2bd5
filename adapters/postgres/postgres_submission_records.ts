import type { SQL } from "bun";
import type { SubmissionRecordStore } from "../../ports/submission_records.ts";
import {
  outcomeValues,
  SUBMISSION_RECORDS_ADDED_COLUMNS,
  SUBMISSION_RECORDS_AFTER_COLUMNS,
  SUBMISSION_RECORDS_CHAIN_BACKFILL,
  SUBMISSION_RECORDS_TABLES as SHARED_TABLES,
  toSubmissionRecord,
} from "../sql/submission_records.ts";

/** The table of tracked submissions, as SQLite has it, with the columns added since (a batch's requests and uids). */
export const SUBMISSION_RECORDS_TABLES: readonly string[] = [
  ...SHARED_TABLES,
  ...SUBMISSION_RECORDS_ADDED_COLUMNS.map(([table, column, type]) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type}`),
  ...SUBMISSION_RECORDS_AFTER_COLUMNS,
  // Rows from before `chain_id` (a migration runs once per version; rows already named are left as they are).
  SUBMISSION_RECORDS_CHAIN_BACKFILL,
];

type Row = Record<string, unknown>;

/** Tracked submissions in PostgreSQL, beside the replay records; any instance answers for any id (decisions §23). */
export function createPostgresSubmissionRecords(sql: SQL): SubmissionRecordStore {
  return {
    async create({ id, scope, chainId, ref, createdAtMs, items }) {
      const layout = items === undefined ? null : JSON.stringify(items);
      await sql`INSERT INTO submission_records (id, scope, chain_id, ref, items, state, created_at_ms, updated_at_ms)
                VALUES (${id}, ${scope}, ${chainId}, ${ref}, ${layout}, 'open', ${createdAtMs}, ${createdAtMs})`;
    },
    async find(id) {
      const [row] = await sql`SELECT * FROM submission_records WHERE id = ${id}` as Row[];
      return row === undefined ? undefined : toSubmissionRecord(row);
    },
    async list(scope, page) {
      const rows = page.after === undefined
        ? await sql`SELECT * FROM submission_records WHERE scope = ${scope} ORDER BY created_at_ms DESC, id DESC LIMIT ${page.limit}` as Row[]
        : await sql`SELECT * FROM submission_records WHERE scope = ${scope}
                      AND (created_at_ms < ${page.after.createdAtMs} OR (created_at_ms = ${page.after.createdAtMs} AND id < ${page.after.id}))
                    ORDER BY created_at_ms DESC, id DESC LIMIT ${page.limit}` as Row[];
      return rows.map(toSubmissionRecord);
    },
    async settle(id, outcome, nowMs, options) {
      const [state, txHash, uid, blockNumber, error, feeBumps, itemUids] = outcomeValues(outcome);
      const untold = options?.untold === false ? null : 1;
      const rows = await sql`UPDATE submission_records SET state = ${state}, tx_hash = ${txHash}, uid = ${uid}, block_number = ${blockNumber},
                  error = ${error}, fee_bumps = ${feeBumps}, item_uids = ${itemUids}, untold = ${untold}, updated_at_ms = ${nowMs}
                WHERE id = ${id} AND state = 'open' RETURNING id`;
      return rows.length === 1;
    },
    async settleRef(chainId, ref, outcome, nowMs) {
      const [state, txHash, uid, blockNumber, error, feeBumps, itemUids] = outcomeValues(outcome);
      const rows = await sql`UPDATE submission_records SET state = ${state}, tx_hash = ${txHash}, uid = ${uid}, block_number = ${blockNumber},
                  error = ${error}, fee_bumps = ${feeBumps}, item_uids = ${itemUids}, untold = 1, updated_at_ms = ${nowMs},
                  chain_id = COALESCE(chain_id, ${chainId})
                WHERE ref = ${ref} AND (chain_id = ${chainId} OR chain_id IS NULL) AND state = 'open' RETURNING id` as { id: string }[];
      return rows.map((row) => String(row.id));
    },
    async untold(beforeMs, limit) {
      const rows = await sql`SELECT * FROM (SELECT * FROM submission_records WHERE state = 'open' AND created_at_ms < ${beforeMs}
                               UNION SELECT * FROM submission_records WHERE untold = 1 AND created_at_ms < ${beforeMs}) AS s
                             ORDER BY created_at_ms, id LIMIT ${limit}` as Row[];
      return rows.map(toSubmissionRecord);
    },
    async told(id) {
      await sql`UPDATE submission_records SET untold = NULL WHERE id = ${id} AND state <> 'open'`;
    },
    async prune(beforeMs) {
      return (await sql`DELETE FROM submission_records WHERE created_at_ms < ${beforeMs} AND state <> 'open' RETURNING id`).length;
    },
  };
}
