import type { Database } from "bun:sqlite";
import type { GasBudget } from "../../ports/gas_budget.ts";

/** The tables of the two relays' budgets: the public relay's (`relay_gas`) and the private relay's. */
export type GasBudgetTable = "relay_gas" | "private_relay_gas";

/**
 * A relay's gas budget in the SQLite file (the public relay's in `relay_gas`, the private relay's in
 * `private_relay_gas`): one row per window, charged under `BEGIN IMMEDIATE`.
 */
export function createSqliteGasBudget(db: Database, table: GasBudgetTable = "relay_gas"): GasBudget {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (window_start_ms INTEGER PRIMARY KEY, gas_used TEXT NOT NULL)`);
  const read = db.query<{ gas_used: string }, [number]>(`SELECT gas_used FROM ${table} WHERE window_start_ms = ?`);
  const write = db.query(
    `INSERT INTO ${table} (window_start_ms, gas_used) VALUES (?, ?) ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = excluded.gas_used`,
  );
  const dropOld = db.query(`DELETE FROM ${table} WHERE window_start_ms < ?`);
  const used = (windowStartMs: number) => BigInt(read.get(windowStartMs)?.gas_used ?? "0");
  const charge = db.transaction((windowStartMs: number, gas: bigint, limit: bigint) => {
    const next = used(windowStartMs) + gas;
    if (next > limit) return false;
    write.run(windowStartMs, next.toString());
    dropOld.run(windowStartMs - 86_400_000);
    return true;
  });
  return {
    used: (windowStartMs) => Promise.resolve(used(windowStartMs)),
    charge: (windowStartMs, gas, limit) => Promise.resolve(charge.immediate(windowStartMs, gas, limit)),
  };
}
