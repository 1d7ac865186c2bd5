import type { Database, Statement } from "bun:sqlite";
import type { GasBudget, GasShare } from "../../ports/gas_budget.ts";
import { gasBudgetTables, type GasBudgetTable, neverFits, ShareSpent } from "../sql/gas_budget.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** SQLite's largest integer: a limit above it bounds nothing a window could hold (gas is stored as decimal text). */
const MAX_INTEGER = 2n ** 63n - 1n;
const bounded = (limit: bigint) => (limit > MAX_INTEGER ? MAX_INTEGER : limit);

/**
 * A relay's gas budget in the SQLite file (the public relay's in `relay_gas`, the private relay's in
 * `private_relay_gas`): one row per window and one per share, each charged by a conditional upsert that adds only within
 * its limit, the window's and the shares' together under `BEGIN IMMEDIATE` (as the PostgreSQL store does). The amounts
 * are decimal text; the sums are SQLite integers (64 bits, far above any hour's gas).
 */
export function createSqliteGasBudget(db: Database, table: GasBudgetTable = "relay_gas"): GasBudget {
  for (const statement of gasBudgetTables(table, SQLITE_WORDS)) db.exec(statement);
  const read = db.query<{ gas_used: string }, [number]>(`SELECT gas_used FROM ${table} WHERE window_start_ms = ?`);
  // The window's row, added to within the limit; its new amount back (none when refused).
  const chargeTotal = db.query<{ gas_used: string }, [number, bigint, bigint]>(
    `INSERT INTO ${table} (window_start_ms, gas_used) VALUES (?1, ?2)
     ON CONFLICT (window_start_ms) DO UPDATE SET gas_used = CAST(CAST(gas_used AS INTEGER) + ?2 AS TEXT)
       WHERE CAST(gas_used AS INTEGER) + ?2 <= ?3
     RETURNING gas_used`,
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
  // Every share in one statement, each row added to only within its own limit: fewer rows back than shares is a refusal.
  const chargeWith = new Map<number, Statement<{ key: string }, (string | number | bigint)[]>>();
  const sharesCharge = (n: number) => {
    let query = chargeWith.get(n);
    if (query === undefined) {
      const key = (i: number) => `?${3 + 2 * i}`;
      const limit = (i: number) => `?${4 + 2 * i}`;
      const keys = Array.from({ length: n }, (_, i) => i);
      query = db.query<{ key: string }, (string | number | bigint)[]>(
        `INSERT INTO ${table}_shares AS s (window_start_ms, key, gas_used) VALUES ${keys.map((i) => `(?1, ${key(i)}, ?2)`).join(", ")}
         ON CONFLICT (window_start_ms, key) DO UPDATE SET gas_used = CAST(CAST(s.gas_used AS INTEGER) + ?2 AS TEXT)
           WHERE CAST(s.gas_used AS INTEGER) + ?2 <= CASE s.key ${keys.map((i) => `WHEN ${key(i)} THEN ${limit(i)}`).join(" ")} END
         RETURNING key`,
      );
      chargeWith.set(n, query);
    }
    return query;
  };
  const usage = (windowStartMs: number, keys: readonly string[]) => {
    const row = usageQuery(keys.length).get(windowStartMs, ...keys)!;
    return { total: BigInt(row.total ?? "0"), byKey: keys.map((_, i) => BigInt(row[`k${i}`] ?? "0")) };
  };
  const charge = db.transaction((windowStartMs: number, gas: bigint, limit: bigint, shares: readonly GasShare[]) => {
    const total = chargeTotal.get(windowStartMs, gas, bounded(limit));
    if (total === null) throw new ShareSpent();
    if (shares.length > 0) {
      const added = sharesCharge(shares.length).all(windowStartMs, gas, ...shares.flatMap((share) => [share.key, bounded(share.limit)]));
      if (added.length !== shares.length) throw new ShareSpent();
    }
    // The first charge of a window (its amount is this charge's) drops what earlier windows left (a day of totals is
    // kept, shares only this hour's).
    if (total.gas_used === gas.toString()) {
      dropOld.run(windowStartMs - 86_400_000);
      dropOldShares.run(windowStartMs);
    }
  });
  return {
    used: (windowStartMs) => Promise.resolve(BigInt(read.get(windowStartMs)?.gas_used ?? "0")),
    usage: (windowStartMs, keys) => Promise.resolve(usage(windowStartMs, keys)),
    charge(windowStartMs, gas, limit, shares = []) {
      if (neverFits(gas, limit, shares)) return Promise.resolve(false);
      try {
        charge.immediate(windowStartMs, gas, limit, shares);
        return Promise.resolve(true);
      } catch (error) {
        if (error instanceof ShareSpent) return Promise.resolve(false);
        throw error;
      }
    },
  };
}
