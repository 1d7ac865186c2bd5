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

/** Fee-bump replacements: one row per book, submission and transaction hash. */
export const txReplacementsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS tx_replacements (
  book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL, wallet TEXT NOT NULL,
  tx_nonce ${w.int} NOT NULL, created_at_ms ${w.int} NOT NULL, PRIMARY KEY (book, id, tx_hash))`;
