import type { Database, Statement } from "bun:sqlite";
import type { GasBudget, GasShare } from "../../ports/gas_budget.ts";
import { gasBudgetTables, type GasBudgetTable } from "../sql/gas_budget.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/**
 * A relay's gas budget in the SQLite file (the public relay's in `relay_gas`, the private relay's in
 * `private_relay_gas`): one row per window, charged under `BEGIN IMMEDIATE`.
 */
export function createSqliteGasBudget(db: Database, table: GasBudgetTable = "relay_gas"): GasBudget {
  for (const statement of gasBudgetTables(table, SQLITE_WORDS)) db.exec(statement);
  const read = db.query<{ gas_used: string }, [number]>(`SELECT gas_used FROM ${table} WHERE window_start_ms = ?`);
  const write = db.query(
    `INSERT INTO ${table} (window_start_ms, gas_used) VALUES (?, ?) ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = excluded.gas_used`,
  );
  const dropOld = db.query(`DELETE FROM ${table} WHERE window_start_ms < ?`);
  const dropOldShares = db.query(`DELETE FROM ${table}_shares WHERE window_start_ms < ?`);
  // The window's total and up to two shares in one statement (a client's and an attester's: the guard's), more by turns.
  const readWith = new Map<number, Statement<Record<string, string | null>, (string | number)[]>>();
  const usageQuery = (n: number) => {
    let query = readWith.get(n);
    if (query === undefined) {
      const shares = Array.from({ length: n }, (_, i) => `(SELECT gas_used FROM ${table}_shares WHERE window_start_ms = ?1 AND key = ?${i + 2}) AS k${i}`);
      query = db.query<Record<string, string | null>, (string | number)[]>(
        `SELECT (SELECT gas_used FROM ${table} WHERE window_start_ms = ?1) AS total${shares.map((s) => `, ${s}`).join("")}`,
      );
      readWith.set(n, query);
    }
    return query;
  };
  const writeShares = new Map<number, Statement>();
  const sharesWrite = (n: number) => {
    let query = writeShares.get(n);
    if (query === undefined) {
      query = db.query(
        `INSERT INTO ${table}_shares (window_start_ms, key, gas_used) VALUES ${Array.from({ length: n }, () => "(?, ?, ?)").join(", ")}
         ON CONFLICT (window_start_ms, key) DO UPDATE SET gas_used = excluded.gas_used`,
      );
      writeShares.set(n, query);
    }
    return query;
  };
  const usage = (windowStartMs: number, keys: readonly string[]) => {
    const row = usageQuery(keys.length).get(windowStartMs, ...keys)!;
    return { total: BigInt(row.total ?? "0"), byKey: keys.map((_, i) => BigInt(row[`k${i}`] ?? "0")), fresh: row.total === null };
  };
  const charge = db.transaction((windowStartMs: number, gas: bigint, limit: bigint, shares: readonly GasShare[]) => {
    const now = usage(windowStartMs, shares.map((share) => share.key));
    if (now.total + gas > limit) return false;
    if (shares.some((share, i) => now.byKey[i]! + gas > share.limit)) return false;
    write.run(windowStartMs, (now.total + gas).toString());
    if (shares.length > 0) sharesWrite(shares.length).run(...shares.flatMap((share, i) => [windowStartMs, share.key, (now.byKey[i]! + gas).toString()]));
    // The first charge of a window drops what earlier windows left (a day of totals is kept, shares only this hour's).
    if (now.fresh) {
      dropOld.run(windowStartMs - 86_400_000);
      dropOldShares.run(windowStartMs);
    }
    return true;
  });
  return {
    used: (windowStartMs) => Promise.resolve(BigInt(read.get(windowStartMs)?.gas_used ?? "0")),
    usage(windowStartMs, keys) {
      const { total, byKey } = usage(windowStartMs, keys);
      return Promise.resolve({ total, byKey });
    },
    charge: (windowStartMs, gas, limit, shares = []) => Promise.resolve(charge.immediate(windowStartMs, gas, limit, shares)),
  };
}
