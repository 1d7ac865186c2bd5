import type { Database } from "bun:sqlite";
import type { PremiumReadLedger } from "../../ports/premium_reads.ts";
import { premiumReadsTable } from "../sql/premium_reads.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** Premium reads in the SQLite file: one row per account and year, reserved under `BEGIN IMMEDIATE`. */
export function createSqlitePremiumReads(db: Database): PremiumReadLedger {
  db.exec(premiumReadsTable(SQLITE_WORDS));
  const read = db.query<{ used: number }, [string, number]>("SELECT used FROM premium_reads WHERE account_id = ? AND year = ?");
  const add = db.query(
    `INSERT INTO premium_reads (account_id, year, used) VALUES (?1, ?2, ?3)
     ON CONFLICT (account_id, year) DO UPDATE SET used = used + ?3`,
  );
  // Only an existing row is lowered, and never below zero: a release never creates a row.
  const subtract = db.query("UPDATE premium_reads SET used = MAX(0, used - ?3) WHERE account_id = ?1 AND year = ?2");
  const used = (accountId: string, year: number) => read.get(accountId, year)?.used ?? 0;
  // Read and add in one write transaction: another connection to the file cannot reserve in between.
  const reserve = db.transaction((accountId: string, year: number, count: number, limit: number) => {
    if (used(accountId, year) + count > limit) return false;
    add.run(accountId, year, count);
    return true;
  });
  return {
    used: (accountId, year) => Promise.resolve(used(accountId, year)),
    reserve: (accountId, year, count, limit) => Promise.resolve(reserve.immediate(accountId, year, count, limit)),
    release(accountId, year, count) {
      subtract.run(accountId, year, count);
      return Promise.resolve();
    },
  };
}
