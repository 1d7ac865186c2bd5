import type { SQL } from "bun";
import type { GasBudget } from "../../ports/gas_budget.ts";
import type { GasBudgetTable } from "../sqlite/mod.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const RELAY_GAS_TABLE = "CREATE TABLE IF NOT EXISTS relay_gas (window_start_ms BIGINT PRIMARY KEY, gas_used NUMERIC NOT NULL)";
/** The private relay's budget (issue 23): the same shape in its own table. */
export const PRIVATE_RELAY_GAS_TABLE =
  "CREATE TABLE IF NOT EXISTS private_relay_gas (window_start_ms BIGINT PRIMARY KEY, gas_used NUMERIC NOT NULL)";

/**
 * A relay's gas budget in PostgreSQL, shared by every instance: one conditional upsert per charge. The public
 * relay's is in `relay_gas`, the private relay's in `private_relay_gas`. The table name is one of those two
 * literals (never input), so it is spliced into the text; the values are parameters.
 */
export function createPostgresGasBudget(sql: SQL, table: GasBudgetTable = "relay_gas"): GasBudget {
  const usedQuery = `SELECT gas_used::TEXT AS gas_used FROM ${table} WHERE window_start_ms = $1`;
  // The row's lock serializes concurrent charges of one window; the WHERE keeps the sum within the limit.
  const chargeQuery = `
    INSERT INTO ${table} (window_start_ms, gas_used) VALUES ($1, $2::NUMERIC)
    ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = ${table}.gas_used + EXCLUDED.gas_used
      WHERE ${table}.gas_used + EXCLUDED.gas_used <= $3::NUMERIC
    RETURNING window_start_ms`;
  return {
    async used(windowStartMs) {
      const rows = await sql.unsafe(usedQuery, [windowStartMs]) as { gas_used: string }[];
      return BigInt(rows[0]?.gas_used ?? "0");
    },
    async charge(windowStartMs, gas, limit) {
      if (gas > limit) return false;
      const rows = await sql.unsafe(chargeQuery, [windowStartMs, gas.toString(), limit.toString()]) as unknown[];
      return rows.length === 1;
    },
  };
}
