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
 * relay's is in `relay_gas`, the private relay's in `private_relay_gas` (the same queries on the other table).
 */
export function createPostgresGasBudget(sql: SQL, table: GasBudgetTable = "relay_gas"): GasBudget {
  if (table === "private_relay_gas") return privateBudget(sql);
  return {
    async used(windowStartMs) {
      const rows = await sql`SELECT gas_used::TEXT AS gas_used FROM relay_gas WHERE window_start_ms = ${windowStartMs}` as { gas_used: string }[];
      return BigInt(rows[0]?.gas_used ?? "0");
    },
    async charge(windowStartMs, gas, limit) {
      if (gas > limit) return false;
      // The row's lock serializes concurrent charges of one window; the WHERE keeps the sum within the limit.
      const rows = await sql`
        INSERT INTO relay_gas (window_start_ms, gas_used) VALUES (${windowStartMs}, ${gas.toString()}::NUMERIC)
        ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = relay_gas.gas_used + EXCLUDED.gas_used
          WHERE relay_gas.gas_used + EXCLUDED.gas_used <= ${limit.toString()}::NUMERIC
        RETURNING window_start_ms`;
      return rows.length === 1;
    },
  };
}

/** The private relay's budget: the queries above on `private_relay_gas` (tagged templates take no table name). */
function privateBudget(sql: SQL): GasBudget {
  return {
    async used(windowStartMs) {
      const rows = await sql`SELECT gas_used::TEXT AS gas_used FROM private_relay_gas WHERE window_start_ms = ${windowStartMs}` as { gas_used: string }[];
      return BigInt(rows[0]?.gas_used ?? "0");
    },
    async charge(windowStartMs, gas, limit) {
      if (gas > limit) return false;
      const rows = await sql`
        INSERT INTO private_relay_gas (window_start_ms, gas_used) VALUES (${windowStartMs}, ${gas.toString()}::NUMERIC)
        ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = private_relay_gas.gas_used + EXCLUDED.gas_used
          WHERE private_relay_gas.gas_used + EXCLUDED.gas_used <= ${limit.toString()}::NUMERIC
        RETURNING window_start_ms`;
      return rows.length === 1;
    },
  };
}
