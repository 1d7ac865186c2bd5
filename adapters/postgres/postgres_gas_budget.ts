import type { SQL } from "bun";
import type { GasBudget, GasShare } from "../../ports/gas_budget.ts";
import { gasBudgetTables, type GasBudgetTable, neverFits, ShareSpent } from "../sql/gas_budget.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The tables, created with the storage's migrations (under their advisory lock). */
const [relayGas, relayGasShares] = gasBudgetTables("relay_gas", POSTGRES_WORDS);
const [privateRelayGas, privateRelayGasShares] = gasBudgetTables("private_relay_gas", POSTGRES_WORDS);
export const RELAY_GAS_TABLE = relayGas;
/** The private relay's budget (issue 23): the same shape in its own table. */
export const PRIVATE_RELAY_GAS_TABLE = privateRelayGas;
/** Each client address's and attester's part of a window (issue 43), for either relay's table. */
export const RELAY_GAS_SHARE_TABLES = [relayGasShares, privateRelayGasShares];

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
  // The window's total and each share asked about, in one statement.
  const usageQuery = `SELECT (SELECT gas_used::TEXT FROM ${table} WHERE window_start_ms = $1) AS total,
                             ARRAY(SELECT COALESCE((SELECT s.gas_used::TEXT FROM ${table}_shares s WHERE s.window_start_ms = $1 AND s.key = k), '0')
                                     FROM unnest($2::TEXT[]) WITH ORDINALITY AS t(k, i) ORDER BY i) AS by_key`;
  // The window's row first (its lock orders every charge of the window), `inserted` when it is the window's first.
  const chargeTotalQuery = `
    INSERT INTO ${table} (window_start_ms, gas_used) VALUES ($1, $2::NUMERIC)
    ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = ${table}.gas_used + EXCLUDED.gas_used
      WHERE ${table}.gas_used + EXCLUDED.gas_used <= $3::NUMERIC
    RETURNING (xmax = 0) AS inserted`;
  // Every share in one statement: each row added only within its limit; fewer rows back than shares rolls it all back.
  const chargeSharesQuery = `
    INSERT INTO ${table}_shares AS s (window_start_ms, key, gas_used)
      SELECT $1, k, $2::NUMERIC FROM unnest($3::TEXT[]) AS k
    ON CONFLICT (window_start_ms, key) DO UPDATE SET gas_used = s.gas_used + EXCLUDED.gas_used
      WHERE s.gas_used + EXCLUDED.gas_used <= ($4::NUMERIC[])[array_position($3::TEXT[], s.key)]
    RETURNING s.key`;
  return {
    async used(windowStartMs) {
      const rows = await sql.unsafe(usedQuery, [windowStartMs]) as { gas_used: string }[];
      return BigInt(rows[0]?.gas_used ?? "0");
    },
    async usage(windowStartMs, keys) {
      const [row] = await sql.unsafe(usageQuery, [windowStartMs, keys]) as { total: string | null; by_key: string[] }[];
      return { total: BigInt(row?.total ?? "0"), byKey: keys.map((_, i) => BigInt(row?.by_key[i] ?? "0")) };
    },
    async charge(windowStartMs, gas, limit, shares: readonly GasShare[] = []) {
      if (neverFits(gas, limit, shares)) return false;
      if (shares.length === 0) {
        const rows = await sql.unsafe(chargeQuery, [windowStartMs, gas.toString(), limit.toString()]) as unknown[];
        return rows.length === 1;
      }
      try {
        return await sql.begin(async (tx) => {
          const total = await tx.unsafe(chargeTotalQuery, [windowStartMs, gas.toString(), limit.toString()]) as { inserted: boolean }[];
          if (total.length !== 1) throw new ShareSpent();
          const added = await tx.unsafe(chargeSharesQuery, [windowStartMs, gas.toString(), shares.map((share) => share.key), shares.map((share) => share.limit.toString())]) as unknown[];
          if (added.length !== shares.length) throw new ShareSpent();
          // The first charge of a window drops the shares earlier windows left.
          if (total[0]!.inserted) await tx.unsafe(`DELETE FROM ${table}_shares WHERE window_start_ms < $1`, [windowStartMs]);
          return true;
        });
      } catch (error) {
        if (error instanceof ShareSpent) return false;
        throw error;
      }
    },
  };
}
