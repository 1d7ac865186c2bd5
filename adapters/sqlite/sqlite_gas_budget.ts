import type { Database } from "bun:sqlite";
import type { GasBudget, GasShare } from "../../ports/gas_budget.ts";

/** The tables of the two relays' budgets: the public relay's (`relay_gas`) and the private relay's. */
export type GasBudgetTable = "relay_gas" | "private_relay_gas";

/**
 * A relay's gas budget in the SQLite file (the public relay's in `relay_gas`, the private relay's in
 * `private_relay_gas`): one row per window, charged under `BEGIN IMMEDIATE`.
 */
export function createSqliteGasBudget(db: Database, table: GasBudgetTable = "relay_gas"): GasBudget {
  db.exec(`CREATE TABLE IF NOT EXISTS ${table} (window_start_ms INTEGER PRIMARY KEY, gas_used TEXT NOT NULL)`);
  // Issue 43: each client address's and attester's part of a window.
  db.exec(`CREATE TABLE IF NOT EXISTS ${table}_shares (window_start_ms INTEGER NOT NULL, key TEXT NOT NULL, gas_used TEXT NOT NULL,
             PRIMARY KEY (window_start_ms, key))`);
  const read = db.query<{ gas_used: string }, [number]>(`SELECT gas_used FROM ${table} WHERE window_start_ms = ?`);
  const write = db.query(
    `INSERT INTO ${table} (window_start_ms, gas_used) VALUES (?, ?) ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = excluded.gas_used`,
  );
  const readShare = db.query<{ gas_used: string }, [number, string]>(`SELECT gas_used FROM ${table}_shares WHERE window_start_ms = ? AND key = ?`);
  const writeShare = db.query(
    `INSERT INTO ${table}_shares (window_start_ms, key, gas_used) VALUES (?, ?, ?)
     ON CONFLICT (window_start_ms, key) DO UPDATE SET gas_used = excluded.gas_used`,
  );
  const dropOld = db.query(`DELETE FROM ${table} WHERE window_start_ms < ?`);
  const dropOldShares = db.query(`DELETE FROM ${table}_shares WHERE window_start_ms < ?`);
  const used = (windowStartMs: number) => BigInt(read.get(windowStartMs)?.gas_used ?? "0");
  const usedBy = (windowStartMs: number, key: string) => BigInt(readShare.get(windowStartMs, key)?.gas_used ?? "0");
  const charge = db.transaction((windowStartMs: number, gas: bigint, limit: bigint, shares: readonly GasShare[]) => {
    const next = used(windowStartMs) + gas;
    if (next > limit) return false;
    const nextShares = shares.map((share) => ({ key: share.key, gas: usedBy(windowStartMs, share.key) + gas, limit: share.limit }));
    if (nextShares.some((share) => share.gas > share.limit)) return false;
    write.run(windowStartMs, next.toString());
    for (const share of nextShares) writeShare.run(windowStartMs, share.key, share.gas.toString());
    dropOld.run(windowStartMs - 86_400_000);
    if (shares.length > 0) dropOldShares.run(windowStartMs);
    return true;
  });
  return {
    used: (windowStartMs) => Promise.resolve(used(windowStartMs)),
    usedBy: (windowStartMs, key) => Promise.resolve(usedBy(windowStartMs, key)),
    charge: (windowStartMs, gas, limit, shares = []) => Promise.resolve(charge.immediate(windowStartMs, gas, limit, shares)),
  };
}
