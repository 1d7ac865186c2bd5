import type { SQL } from "bun";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { toReplacement } from "../sql/tx_replacements.ts";
import { txReplacementsTable } from "../sql/tx_replacements.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const TX_REPLACEMENTS_TABLE = txReplacementsTable(POSTGRES_WORDS);

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
