/** What SQLite and PostgreSQL share for the rate counter store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { RateBucket } from "../../ports/rate_counter.ts";

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
