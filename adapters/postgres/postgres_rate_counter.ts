import type { SQL } from "bun";
import type { RateCounter } from "../../ports/rate_counter.ts";
import { bucketUpdate, freshBucket, refillPerMs } from "../sql/rate_counter.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const RATE_BUCKETS_TABLES: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS rate_buckets (
     scope TEXT NOT NULL, key TEXT NOT NULL, tokens DOUBLE PRECISION NOT NULL, at_ms BIGINT NOT NULL,
     full_at_ms DOUBLE PRECISION NOT NULL, allowed BOOLEAN NOT NULL, PRIMARY KEY (scope, key))`,
  `CREATE INDEX IF NOT EXISTS rate_buckets_full ON rate_buckets (full_at_ms)`,
];

/**
 * Token buckets in PostgreSQL, one bucket per limit and key for every instance (decisions §21): one upsert per take.
 * The row's lock serializes concurrent takes of one key from any instance, and the refill and the take are computed
 * from the row as it is under that lock, so no token is spent twice.
 */
export function createPostgresRateCounter(sql: SQL): RateCounter {
  const e = bucketUpdate(
    { least: "LEAST", greatest: "GREATEST", row: "b." },
    { capacity: "$3::float8", now: "$4::bigint", perMs: "$5::float8", count: "$6::float8" },
  );
  const takeQuery = `
    INSERT INTO rate_buckets AS b (scope, key, tokens, at_ms, full_at_ms, allowed)
    VALUES ($1, $2, $7::float8, $4::bigint, $8::float8, $9::boolean)
    ON CONFLICT (scope, key) DO UPDATE SET tokens = ${e.tokens}, at_ms = ${e.atMs}, full_at_ms = ${e.fullAtMs}, allowed = ${e.allowed}
    RETURNING tokens, allowed`;
  return {
    async take(bucket, key, { count, nowMs }) {
      const fresh = freshBucket(bucket, count, nowMs);
      const rows = await sql.unsafe(takeQuery, [
        bucket.scope, key, bucket.capacity, nowMs, refillPerMs(bucket), count, fresh.tokens, fresh.fullAtMs, fresh.allowed,
      ]) as { tokens: unknown; allowed: boolean }[];
      return { allowed: rows[0]!.allowed === true, tokens: Number(rows[0]!.tokens) };
    },
    async prune(nowMs) {
      const rows = await sql`DELETE FROM rate_buckets WHERE full_at_ms <= ${nowMs} RETURNING scope`;
      return rows.length;
    },
  };
}
