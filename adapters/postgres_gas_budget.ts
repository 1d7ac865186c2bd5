import type { SQL } from "bun";
import type { GasBudget } from "../ports/gas_budget.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const RELAY_GAS_TABLE = "CREATE TABLE IF NOT EXISTS relay_gas (window_start_ms BIGINT PRIMARY KEY, gas_used NUMERIC NOT NULL)";

/** The public relay's gas budget in PostgreSQL, shared by every instance: one conditional upsert per charge. */
export function createPostgresGasBudget(sql: SQL): GasBudget {
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
