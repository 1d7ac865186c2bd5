import type { SQL } from "bun";
import type { WalletRefusalStore } from "../../ports/wallet_refusals.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";
import { toWalletRefusal, walletRefusalsTable } from "../sql/wallet_refusals.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const WALLET_REFUSALS_TABLE = walletRefusalsTable(POSTGRES_WORDS);

/** Contract wallets the relays no longer send for, in PostgreSQL: every instance refuses them. */
export function createPostgresWalletRefusals(sql: SQL): WalletRefusalStore {
  return {
    async refuse(refusal) {
      await sql`INSERT INTO wallet_refusals (chain_id, wallet, tx_hash, created_at_ms)
                VALUES (${refusal.chainId}, ${refusal.wallet.toLowerCase()}, ${refusal.txHash}, ${refusal.createdAtMs}) ON CONFLICT DO NOTHING`;
    },
    async find(chainId, wallet) {
      const rows = await sql`SELECT * FROM wallet_refusals WHERE chain_id = ${chainId} AND wallet = ${wallet.toLowerCase()}` as Record<string, unknown>[];
      return rows[0] === undefined ? undefined : toWalletRefusal(rows[0]);
    },
  };
}
