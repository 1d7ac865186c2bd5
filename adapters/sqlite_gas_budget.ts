import type { Database } from "bun:sqlite";
import type { GasBudget } from "../ports/gas_budget.ts";

/** The public relay's gas budget in the SQLite file: one row per window, charged under `BEGIN IMMEDIATE`. */
export function createSqliteGasBudget(db: Database): GasBudget {
  db.exec("CREATE TABLE IF NOT EXISTS relay_gas (window_start_ms INTEGER PRIMARY KEY, gas_used TEXT NOT NULL)");
  const read = db.query<{ gas_used: string }, [number]>("SELECT gas_used FROM relay_gas WHERE window_start_ms = ?");
  const write = db.query(
    "INSERT INTO relay_gas (window_start_ms, gas_used) VALUES (?, ?) ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = excluded.gas_used",
  );
  const dropOld = db.query("DELETE FROM relay_gas WHERE window_start_ms < ?");
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
