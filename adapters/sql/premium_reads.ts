/** What SQLite and PostgreSQL share for the premium reads store: its table. */
import type { SqlWords } from "./schema.ts";

/** Premium reads used per account and year. */
export const premiumReadsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS premium_reads (
  account_id TEXT NOT NULL, year INTEGER NOT NULL, used ${w.int} NOT NULL, PRIMARY KEY (account_id, year))`;
