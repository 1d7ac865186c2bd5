/** Token buckets in memory, with the stores' arithmetic (refill to now, then take `count` if there are that many). */
export function fakeRateCounter() {
  const buckets = new Map<string, { tokens: number; atMs: number; fullAtMs: number }>();
  const counter = {
    buckets,
    takes: 0,
    take(bucket: import("../rate_counter.ts").RateBucket, key: string, { count, nowMs }: { count: number; nowMs: number }) {
      counter.takes++;
      const perMs = Math.max(bucket.perMinute / 60_000, 1e-12);
      const id = `${bucket.scope}|${key}`;
      const row = buckets.get(id);
      const refilled = row === undefined ? bucket.capacity : Math.min(bucket.capacity, row.tokens + Math.max(0, nowMs - row.atMs) * perMs);
      const allowed = refilled >= count;
      const tokens = allowed ? refilled - count : refilled;
      const atMs = Math.max(row?.atMs ?? nowMs, nowMs);
      buckets.set(id, { tokens, atMs, fullAtMs: atMs + (bucket.capacity - tokens) / perMs });
      return Promise.resolve({ allowed, tokens });
    },
    prune(nowMs: number) {
      let gone = 0;
      for (const [id, row] of buckets) if (row.fullAtMs <= nowMs && buckets.delete(id)) gone++;
      return Promise.resolve(gone);
    },
  };
  return counter satisfies import("../rate_counter.ts").RateCounter;
}
