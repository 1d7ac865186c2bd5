/** What SQLite and PostgreSQL share for the gas budget store: its table definitions and its refusal rules (adapters/sql/, docs/storage.md). */
import type { GasShare } from "../../ports/gas_budget.ts";
import type { SqlWords } from "./schema.ts";

/** The tables of the two relays' budgets: the public relay's (`relay_gas`) and the private relay's. */
export type GasBudgetTable = "relay_gas" | "private_relay_gas";

/** A relay's budget table and its shares (issue 43: each client address's and attester's part of a window). */
export function gasBudgetTables(table: GasBudgetTable, w: SqlWords): readonly [budget: string, shares: string] {
  return [
    `CREATE TABLE IF NOT EXISTS ${table} (window_start_ms ${w.int} PRIMARY KEY, gas_used ${w.decimal} NOT NULL)`,
    `CREATE TABLE IF NOT EXISTS ${table}_shares (window_start_ms ${w.int} NOT NULL, key TEXT NOT NULL, gas_used ${w.decimal} NOT NULL,
       PRIMARY KEY (window_start_ms, key))`,
  ];
}

/** A charge a limit or a share refused inside its transaction: thrown to roll the transaction back. */
export class ShareSpent extends Error {}

/** A charge larger than a limit never fits, whatever the window holds (and must not create a row past it). */
export function neverFits(gas: bigint, limit: bigint, shares: readonly GasShare[]): boolean {
  return gas > limit || shares.some((share) => gas > share.limit);
}
