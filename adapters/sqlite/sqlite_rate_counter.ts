import type { Database } from "bun:sqlite";
import type { RateBucket, RateCounter } from "../../ports/rate_counter.ts";

/** A bucket's refill per millisecond; a limit that never refills gets a rate too small to matter, not a division by zero. */
export function refillPerMs(bucket: RateBucket): number {
  return Math.max(bucket.perMinute / 60_000, 1e-12);
}

/** The row of a key seen for the first time: a full bucket, `count` taken from it when it holds that many. */
export function freshBucket(bucket: RateBucket, count: number, nowMs: number): { tokens: number; fullAtMs: number; allowed: boolean } {
  const allowed = bucket.capacity >= count;
  const tokens = allowed ? bucket.capacity - count : bucket.capacity;
  return { tokens, fullAtMs: nowMs + (bucket.capacity - tokens) / refillPerMs(bucket), allowed };
}

/**
 * The bucket's expressions over the stored row, for both databases: `least`/`greatest` are SQLite's `MIN`/`MAX` or
 * PostgreSQL's `LEAST`/`GREATEST`, `p` names the parameters (capacity, now, refill per ms, count).
 */
export function bucketUpdate(
  sql: { least: string; greatest: string; row: string },
  p: { capacity: string; now: string; perMs: string; count: string },
): { tokens: string; atMs: string; fullAtMs: string; allowed: string } {
  const refilled = `${sql.least}(${p.capacity}, ${sql.row}tokens + ${sql.greatest}(0, ${p.now} - ${sql.row}at_ms) * ${p.perMs})`;
  const tokens = `CASE WHEN ${refilled} >= ${p.count} THEN ${refilled} - ${p.count} ELSE ${refilled} END`;
  const atMs = `${sql.greatest}(${sql.row}at_ms, ${p.now})`;
  return { tokens, atMs, fullAtMs: `${atMs} + (${p.capacity} - (${tokens})) / ${p.perMs}`, allowed: `${refilled} >= ${p.count}` };
}

/**
 * Token buckets in the SQLite file (one instance): one upsert per take, which refills the stored bucket and takes from
 * it in the same statement.
 */
export function createSqliteRateCounter(db: Database): RateCounter {
  db.exec(`CREATE TABLE IF NOT EXISTS rate_buckets (
    scope TEXT NOT NULL, key TEXT NOT NULL, tokens REAL NOT NULL, at_ms INTEGER NOT NULL, full_at_ms REAL NOT NULL,
    allowed INTEGER NOT NULL, PRIMARY KEY (scope, key))`);
  db.exec("CREATE INDEX IF NOT EXISTS rate_buckets_full ON rate_buckets (full_at_ms)");
  const e = bucketUpdate({ least: "MIN", greatest: "MAX", row: "" }, { capacity: "?3", now: "?4", perMs: "?5", count: "?6" });
  const take = db.query<{ tokens: number; allowed: number }, [string, string, number, number, number, number, number, number, number]>(`
    INSERT INTO rate_buckets (scope, key, tokens, at_ms, full_at_ms, allowed) VALUES (?1, ?2, ?7, ?4, ?8, ?9)
    ON CONFLICT (scope, key) DO UPDATE SET tokens = ${e.tokens}, at_ms = ${e.atMs}, full_at_ms = ${e.fullAtMs}, allowed = ${e.allowed}
    RETURNING tokens, allowed`);
  const prune = db.query("DELETE FROM rate_buckets WHERE full_at_ms <= ?");
  return {
    take(bucket, key, { count, nowMs }) {
      const fresh = freshBucket(bucket, count, nowMs);
      const row = take.get(bucket.scope, key, bucket.capacity, nowMs, refillPerMs(bucket), count, fresh.tokens, fresh.fullAtMs, fresh.allowed ? 1 : 0)!;
      return Promise.resolve({ allowed: row.allowed === 1, tokens: row.tokens });
    },
    prune: (nowMs) => Promise.resolve(prune.run(nowMs).changes),
  };
}
