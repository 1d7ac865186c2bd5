import type { SQL } from "bun";
import type { PremiumReadLedger } from "../../ports/premium_reads.ts";
import { premiumReadsTable } from "../sql/premium_reads.ts";
import { POSTGRES_WORDS } from "../sql/schema.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const PREMIUM_READS_TABLE = premiumReadsTable(POSTGRES_WORDS);

/** Premium reads in PostgreSQL, shared by every instance: one conditional upsert per reservation. */
export function createPostgresPremiumReads(sql: SQL): PremiumReadLedger {
  return {
    async used(accountId, year) {
      const rows = await sql`SELECT used FROM premium_reads WHERE account_id = ${accountId} AND year = ${year}` as { used: unknown }[];
      return Number(rows[0]?.used ?? 0);
    },
    async reserve(accountId, year, count, limit) {
      if (count > limit) return false;
      const rows = await sql`
        INSERT INTO premium_reads (account_id, year, used) VALUES (${accountId}, ${year}, ${count})
        ON CONFLICT (account_id, year) DO UPDATE SET used = premium_reads.used + EXCLUDED.used
          WHERE premium_reads.used + EXCLUDED.used <= ${limit}
        RETURNING used`;
      return rows.length === 1;
    },
    async release(accountId, year, count) {
      await sql`UPDATE premium_reads SET used = GREATEST(0, used - ${count}) WHERE account_id = ${accountId} AND year = ${year}`;
    },
  };
}
