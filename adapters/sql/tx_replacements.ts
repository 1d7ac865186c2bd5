/** What SQLite and PostgreSQL share for the tx replacements store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { HexString } from "../../ports/eas.ts";
import type { TxReplacement } from "../../ports/tx_replacements.ts";
import type { SqlWords } from "./schema.ts";

export type Row = { tx_hash: string; raw_tx: string; wallet: string; tx_nonce: number; created_at_ms: number };

/** A stored row as the port's replacement (SQLite and PostgreSQL share the columns). */
export function toReplacement(row: Row | Record<string, unknown>): TxReplacement {
  return {
    tx: { txHash: String(row.tx_hash) as HexString, raw: String(row.raw_tx) as HexString, wallet: String(row.wallet) as HexString, nonce: Number(row.tx_nonce) },
    createdAtMs: Number(row.created_at_ms),
  };
}

/**
 * Fee-bump replacements: one row per book, submission and transaction hash. A transaction's hash covers its chain id
 * (EIP-155), so the key tells two chains' rows apart as it is; what a list reads by is (book, chain, id).
 */
export const txReplacementsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS tx_replacements (
  book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL, wallet TEXT NOT NULL,
  tx_nonce ${w.int} NOT NULL, created_at_ms ${w.int} NOT NULL, PRIMARY KEY (book, id, tx_hash))`;

/**
 * The chain the replaced transaction is signed for (decisions §30: one signature live on two chains is two records
 * under one id). Null for rows stored before the column (named once, {@link TX_REPLACEMENTS_CHAIN_BACKFILL}) and for
 * rows an earlier version stores during a rolling restart of PostgreSQL: those are listed for every chain, as that
 * version listed them.
 */
export const txReplacementsAddedColumns = (w: SqlWords): readonly (readonly [string, string, string])[] => [["tx_replacements", "chain_id", w.int]];

/**
 * Names the chain of the relays' rows stored without one: the chain of the replay record they replace a transaction
 * of, matched by key, wallet and nonce (a replacement keeps the wallet and nonce of the transaction it replaces). A row
 * two records match (the same signature, wallet and nonce on two chains) is left null, listed for every chain as
 * before, rather than guessed. The sponsored writes' rows stay null: their ids are the ledger's, one chain's each. One
 * join, each table read once (docs/storage.md); SQLite runs it when it adds the column, PostgreSQL with each version's
 * migration. Only the replay records of keys with an unnamed bump are grouped (by the index on `replay (key)`): the
 * statement runs again at every later upgrade inside the migration's transaction, which holds the tables it alters,
 * and then has next to nothing to name; grouping the whole replay table each time would hold them for nothing.
 */
export const TX_REPLACEMENTS_CHAIN_BACKFILL = `UPDATE tx_replacements SET chain_id = r.chain_id
  FROM (SELECT key, wallet, tx_nonce, MIN(chain_id) AS chain_id FROM replay WHERE wallet IS NOT NULL AND tx_nonce IS NOT NULL
          AND key IN (SELECT id FROM tx_replacements WHERE chain_id IS NULL AND book = 'delegated_attestations')
        GROUP BY key, wallet, tx_nonce HAVING COUNT(*) = 1) AS r
  WHERE tx_replacements.chain_id IS NULL AND tx_replacements.book = 'delegated_attestations'
    AND r.key = tx_replacements.id AND r.wallet = tx_replacements.wallet AND r.tx_nonce = tx_replacements.tx_nonce`;
