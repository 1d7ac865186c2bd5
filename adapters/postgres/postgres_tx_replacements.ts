import type { SQL } from "bun";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { toReplacement } from "../sql/tx_replacements.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const TX_REPLACEMENTS_TABLE = `CREATE TABLE IF NOT EXISTS tx_replacements (
  book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL, wallet TEXT NOT NULL,
  tx_nonce BIGINT NOT NULL, created_at_ms BIGINT NOT NULL, PRIMARY KEY (book, id, tx_hash))`;

/** Fee-bump replacements in PostgreSQL, seen by every instance's reconciler. */
export function createPostgresTxReplacements(sql: SQL): TxReplacementStore {
  return {
    async add(book, id, { tx, createdAtMs }) {
      await sql`INSERT INTO tx_replacements (book, id, tx_hash, raw_tx, wallet, tx_nonce, created_at_ms)
        VALUES (${book}, ${id}, ${tx.txHash}, ${tx.raw}, ${tx.wallet.toLowerCase()}, ${tx.nonce}, ${createdAtMs})
        ON CONFLICT DO NOTHING`;
    },
    async list(book, id) {
      const rows = await sql`SELECT tx_hash, raw_tx, wallet, tx_nonce, created_at_ms FROM tx_replacements
        WHERE book = ${book} AND id = ${id} ORDER BY created_at_ms, tx_hash` as Record<string, unknown>[];
      return rows.map(toReplacement);
    },
    async prune(beforeMs) {
      const rows = await sql`DELETE FROM tx_replacements WHERE created_at_ms < ${beforeMs} RETURNING id`;
      return rows.length;
    },
  };
}
