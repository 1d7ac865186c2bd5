import type { Database } from "bun:sqlite";
import type { RateCounter } from "../../ports/rate_counter.ts";
import { bucketUpdate, freshBucket, refillPerMs } from "../sql/rate_counter.ts";

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
