import type { Database } from "bun:sqlite";
import type { WalletRefusalStore } from "../../ports/wallet_refusals.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";
import { toWalletRefusal, walletRefusalsTable } from "../sql/wallet_refusals.ts";

/** Contract wallets the relays no longer send for, in the SQLite file. */
export function createSqliteWalletRefusals(db: Database): WalletRefusalStore {
  db.exec(walletRefusalsTable(SQLITE_WORDS));
  const insert = db.query("INSERT INTO wallet_refusals (chain_id, wallet, tx_hash, created_at_ms) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING");
  const find = db.query<Record<string, unknown>, [number, string]>("SELECT * FROM wallet_refusals WHERE chain_id = ? AND wallet = ?");
  return {
    refuse(refusal) {
      insert.run(refusal.chainId, refusal.wallet.toLowerCase(), refusal.txHash, refusal.createdAtMs);
      return Promise.resolve();
    },
    find(chainId, wallet) {
      const row = find.get(chainId, wallet.toLowerCase());
      return Promise.resolve(row === null ? undefined : toWalletRefusal(row));
    },
  };
}
