/** What SQLite and PostgreSQL share for the refused wallets store: its row mapper and table (adapters/sql/, docs/storage.md). */
import type { WalletRefusal } from "../../ports/wallet_refusals.ts";
import type { SqlWords } from "./schema.ts";

/** A stored row as the port's record. */
export function toWalletRefusal(row: Record<string, unknown>): WalletRefusal {
  return { chainId: Number(row.chain_id), wallet: String(row.wallet), txHash: String(row.tx_hash), createdAtMs: Number(row.created_at_ms) };
}

/** Contract wallets the relays no longer send for: one row per chain and wallet. */
export const walletRefusalsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS wallet_refusals (
  chain_id ${w.int} NOT NULL, wallet TEXT NOT NULL, tx_hash TEXT NOT NULL, created_at_ms ${w.int} NOT NULL,
  PRIMARY KEY (chain_id, wallet))`;
