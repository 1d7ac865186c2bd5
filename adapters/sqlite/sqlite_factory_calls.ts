import type { Database } from "bun:sqlite";
import type { FactoryCallStore } from "../../ports/factory_calls.ts";
import { type Row, toFactoryCall, factoryCallsTable } from "../sql/factory_calls.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** The ERC-6492 factory calls the service sent, in the SQLite file: one row per chain and wallet. */
export function createSqliteFactoryCalls(db: Database): FactoryCallStore {
  db.exec(factoryCallsTable(SQLITE_WORDS));
  const insert = db.query(
    `INSERT INTO factory_calls (chain_id, wallet, factory, calldata_hash, state, created_at_ms, updated_at_ms)
     VALUES (?, ?, ?, ?, 'sent', ?, ?) ON CONFLICT DO NOTHING`,
  );
  const markFailed = db.query(
    "UPDATE factory_calls SET state = 'failed', tx_hash = ?, gas_used = ?, updated_at_ms = ? WHERE chain_id = ? AND wallet = ?",
  );
  const remove = db.query("DELETE FROM factory_calls WHERE chain_id = ? AND wallet = ?");
  const find = db.query<Row, [number, string]>("SELECT * FROM factory_calls WHERE chain_id = ? AND wallet = ?");
  return {
    begin(attempt) {
      const inserted = insert.run(
        attempt.chainId,
        attempt.wallet.toLowerCase(),
        attempt.factory.toLowerCase(),
        attempt.calldataHash.toLowerCase(),
        attempt.createdAtMs,
        attempt.createdAtMs,
      );
      return Promise.resolve(inserted.changes === 1);
    },
    failed(chainId, wallet, burn, nowMs) {
      markFailed.run(burn.txHash, burn.gasUsed === null ? null : burn.gasUsed.toString(), nowMs, chainId, wallet.toLowerCase());
      return Promise.resolve();
    },
    forget(chainId, wallet) {
      remove.run(chainId, wallet.toLowerCase());
      return Promise.resolve();
    },
    find(chainId, wallet) {
      const row = find.get(chainId, wallet.toLowerCase());
      return Promise.resolve(row === null ? undefined : toFactoryCall(row));
    },
  };
}
