import type { Clock } from "../ports/clock.ts";

/** Options of {@link createRateLimiter}. */
export type RateLimiterOptions = {
  /** Tokens a fresh key starts with: the largest burst. */
  readonly capacity: number;
  /** Tokens added back per minute. */
  readonly perMinute: number;
  /** Keys kept at most; full buckets, then the least recently used, are forgotten first. Default 10 000. */
  readonly maxKeys?: number | undefined;
};

/** Whether a request may proceed, and if not, when a token will be there. */
export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number };

/** An in-memory token bucket per key. */
export type RateLimiter = {
  /** Takes one token for `key` if there is one. */
  readonly take: (key: string) => RateDecision;
};

type Bucket = { tokens: number; atMs: number };

/** Builds token buckets over the injected clock; one process, no persistence (limits reset on restart). */
export function createRateLimiter(clock: Clock, options: RateLimiterOptions): RateLimiter {
  const maxKeys = options.maxKeys ?? 10_000;
  const perMs = options.perMinute / 60_000;
  const buckets = new Map<string, Bucket>();

  const refill = (bucket: Bucket, now: number) => {
    bucket.tokens = Math.min(options.capacity, bucket.tokens + Math.max(0, now - bucket.atMs) * perMs);
    bucket.atMs = now;
  };
  const evict = (now: number) => {
    for (const [key, bucket] of buckets) {
      refill(bucket, now);
      if (bucket.tokens >= options.capacity) buckets.delete(key);
    }
    // Map order is insertion order and every take re-inserts: the first keys are the least recently used.
    while (buckets.size >= maxKeys) buckets.delete(buckets.keys().next().value!);
  };

  return {
    take(key) {
      const now = clock.nowMs();
      let bucket = buckets.get(key);
      if (bucket === undefined) {
        if (buckets.size >= maxKeys) evict(now);
        bucket = { tokens: options.capacity, atMs: now };
      } else {
        buckets.delete(key);
        refill(bucket, now);
      }
      buckets.set(key, bucket);
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return { allowed: true };
      }
      const waitMs = perMs > 0 ? (1 - bucket.tokens) / perMs : Number.POSITIVE_INFINITY;
      return { allowed: false, retryAfterSeconds: Number.isFinite(waitMs) ? Math.max(1, Math.ceil(waitMs / 1000)) : 3600 };
    },
  };
}

/** Second-level labels under a two-letter country code that act as public suffixes (`co.uk`, `com.au`, `ne.jp`). */
const SHORT_SUFFIX_LABELS = new Set([
  "ac", "co", "com", "edu", "gen", "go", "gob", "gov", "gv", "ltd", "me", "mil", "ne", "net", "nhs", "nic", "nom",
  "or", "org", "plc", "sch",
]);

/**
 * The registrable domain of a host name, the key of per-domain rate limits, so that
 * `a.victim.com` and `b.victim.com` draw on one budget. A deliberate approximation of the Public
 * Suffix List, without shipping the list:
 *
 * - the host is lowercased and one trailing `.` removed; a port is not part of a host;
 * - an IP literal (IPv4 dotted quad, or anything with `:`) is its own key;
 * - otherwise the last two labels (`www.shop.example.com` → `example.com`),
 * - or the last three when the last label is a two-letter country code and the one before it is a
 *   short public-suffix-like label from {@link SHORT_SUFFIX_LABELS} (`a.example.co.uk` →
 *   `example.co.uk`, `x.example.com.au` → `example.com.au`).
 *
 * Hosting platforms with many tenants under one name (`*.github.io`) share a budget; that errs on
 * the side of protecting the platform.
 */
export function registrableDomain(host: string): string {
  const name = host.toLowerCase().replace(/\.$/, "");
  if (name.includes(":") || /^[0-9]+(\.[0-9]+){3}$/.test(name)) return name;
  const labels = name.split(".");
  if (labels.length <= 2) return name;
  const last = labels[labels.length - 1]!;
  const second = labels[labels.length - 2]!;
  const take = /^[a-z]{2}$/.test(last) && SHORT_SUFFIX_LABELS.has(second) ? 3 : 2;
  return labels.slice(-take).join(".");
}
