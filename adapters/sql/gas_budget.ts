/** What SQLite and PostgreSQL share for the gas budget store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
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
