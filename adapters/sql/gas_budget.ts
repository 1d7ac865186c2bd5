/** What SQLite and PostgreSQL share for the gas budget store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
/** The tables of the two relays' budgets: the public relay's (`relay_gas`) and the private relay's. */
export type GasBudgetTable = "relay_gas" | "private_relay_gas";
