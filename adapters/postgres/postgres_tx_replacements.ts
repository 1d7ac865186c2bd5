import type { SQL } from "bun";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { toReplacement, TX_REPLACEMENTS_CHAIN_BACKFILL, txReplacementsAddedColumns, txReplacementsTable } from "../sql/tx_replacements.ts";
import { POSTGRES_WORDS, postgresStatements } from "../sql/schema.ts";

/**
 * The table and its chain column, created with the storage's migrations (under their advisory lock), after the replay
 * table; the rows stored without a chain are named in the same transaction. Those run once per version (the first new
 * instance, `migrate`): rows an old instance stores later in that rolling restart stay unnamed, listed for every chain
 * (as the old version lists them), until a later version's migration names them, if they are not pruned by then.
 */
export const TX_REPLACEMENTS_TABLES: readonly string[] = [
  ...postgresStatements({ create: [txReplacementsTable(POSTGRES_WORDS)], added: txReplacementsAddedColumns(POSTGRES_WORDS), after: [] }),
  TX_REPLACEMENTS_CHAIN_BACKFILL,
];

/** Fee-bump replacements in PostgreSQL, seen by every instance's reconciler. */
export function createPostgresTxReplacements(sql: SQL): TxReplacementStore {
  return {
    async add(book, chainId, id, { tx, createdAtMs }) {
      await sql`INSERT INTO tx_replacements (book, chain_id, id, tx_hash, raw_tx, wallet, tx_nonce, created_at_ms)
        VALUES (${book}, ${chainId}, ${id}, ${tx.txHash}, ${tx.raw}, ${tx.wallet.toLowerCase()}, ${tx.nonce}, ${createdAtMs})
        ON CONFLICT DO NOTHING`;
    },
    async list(book, chainId, id) {
      const rows = (chainId === null
        ? await sql`SELECT tx_hash, raw_tx, wallet, tx_nonce, created_at_ms FROM tx_replacements
            WHERE book = ${book} AND id = ${id} ORDER BY created_at_ms, tx_hash`
        : await sql`SELECT tx_hash, raw_tx, wallet, tx_nonce, created_at_ms FROM tx_replacements
            WHERE book = ${book} AND id = ${id} AND (chain_id = ${chainId} OR chain_id IS NULL) ORDER BY created_at_ms, tx_hash`) as Record<string, unknown>[];
      return rows.map(toReplacement);
    },
    async prune(beforeMs) {
      const rows = await sql`DELETE FROM tx_replacements WHERE created_at_ms < ${beforeMs} RETURNING id`;
      return rows.length;
    },
  };
}
