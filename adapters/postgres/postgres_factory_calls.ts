import type { SQL } from "bun";
import type { FactoryCallStore } from "../../ports/factory_calls.ts";
import { toFactoryCall } from "../sql/factory_calls.ts";
import { factoryCallsTable } from "../sql/factory_calls.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const FACTORY_CALLS_TABLE = factoryCallsTable(POSTGRES_WORDS);

/** The ERC-6492 factory calls the service sent, in PostgreSQL: every instance sees (and races for) one row per wallet. */
export function createPostgresFactoryCalls(sql: SQL): FactoryCallStore {
  return {
    async begin(attempt) {
      const rows = await sql`INSERT INTO factory_calls (chain_id, wallet, factory, calldata_hash, state, created_at_ms, updated_at_ms)
        VALUES (${attempt.chainId}, ${attempt.wallet.toLowerCase()}, ${attempt.factory.toLowerCase()}, ${attempt.calldataHash.toLowerCase()},
                'sent', ${attempt.createdAtMs}, ${attempt.createdAtMs})
        ON CONFLICT DO NOTHING RETURNING wallet`;
      return rows.length === 1;
    },
    async failed(chainId, wallet, burn, nowMs) {
      await sql`UPDATE factory_calls SET state = 'failed', tx_hash = ${burn.txHash},
                       gas_used = ${burn.gasUsed === null ? null : burn.gasUsed.toString()}::NUMERIC, updated_at_ms = ${nowMs}
                 WHERE chain_id = ${chainId} AND wallet = ${wallet.toLowerCase()}`;
    },
    async forget(chainId, wallet) {
      await sql`DELETE FROM factory_calls WHERE chain_id = ${chainId} AND wallet = ${wallet.toLowerCase()}`;
    },
    async find(chainId, wallet) {
      const rows = await sql`SELECT chain_id, wallet, factory, calldata_hash, state, tx_hash, gas_used::TEXT AS gas_used,
                                    created_at_ms, updated_at_ms
                               FROM factory_calls WHERE chain_id = ${chainId} AND wallet = ${wallet.toLowerCase()}` as Record<string, unknown>[];
      return rows[0] === undefined ? undefined : toFactoryCall(rows[0]);
    },
  };
}
