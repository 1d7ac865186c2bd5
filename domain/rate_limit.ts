import type { Clock } from "../ports/clock.ts";
import type { RateCounter } from "../ports/rate_counter.ts";

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
  /**
   * Takes `count` tokens (default one) for `key` if there are that many; a negative count gives them back (a request
   * answered without the work the token paid for): never past the capacity once the bucket is refilled, at every take.
   */
  readonly take: (key: string, count?: number) => RateDecision;
};

/**
 * A limit as the use cases take it: counted in the storage for the whole deployment ({@link createSharedRateLimiter},
 * the limits that guard money or storage, decisions §21), or in this process ({@link createRateLimiter}: pure reads,
 * and tests).
 */
export type RateLimit = {
  /**
   * Takes `count` tokens (default one) for `key` if there are that many; a negative count gives them back (a request
   * the service did not send after all): a bucket is refilled up to its capacity, never past it, at every take.
   */
  readonly take: (key: string, count?: number) => RateDecision | Promise<RateDecision>;
};

/**
 * The limits counted in the storage, once for the deployment (decisions §21), by their names there. Sign-in challenges
 * and OAuth registrations are counted in their own tables (the rows they store); key status's rate per address is a
 * pure read limit, kept per instance ({@link createRateLimiter}).
 */
export const SHARED_LIMITS = {
  /** `PUBLIC_RELAY_IP_RATE_PER_MINUTE`: public relay writes per client address. */
  publicRelayClient: "public_relay_client",
  /** `PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR`: public relay writes per attester. */
  publicRelayAttester: "public_relay_attester",
  /** `WITNESS_USER_RATE_PER_MINUTE`: witness requests per account (or paying agent). */
  witnessUser: "witness_user",
  /** `WITNESS_DOMAIN_RATE_PER_MINUTE`: witness requests per registrable domain. */
  witnessDomain: "witness_domain",
  /** `MCP_SESSION_RATE_PER_MINUTE`: new MCP sessions per client address. */
  mcpSessionsPerAddress: "mcp_sessions_per_address",
  /** `MCP_SESSION_MESSAGES_PER_MINUTE`: JSON-RPC messages per MCP session. */
  mcpSessionMessages: "mcp_session_messages",
  /** `webhook.test` events per webhook endpoint (decisions §22: each is an outbound POST and a stored delivery). */
  webhookTests: "webhook_tests",
} as const;

/** Options of {@link createSharedRateLimiter}: the bucket's shape and the name its counts are kept under. */
export type SharedRateLimiterOptions = RateLimiterOptions & {
  /** The limit's name in the storage (`public_relay_client`, `witness_user`, …). */
  readonly scope: string;
};

/** When `count` tokens will be there in a bucket holding `tokens` that gains `perMinute` a minute: whole seconds, at least 1. */
function retryAfterSeconds(tokens: number, count: number, perMinute: number): number {
  const waitMs = perMinute > 0 ? (count - tokens) / (perMinute / 60_000) : Number.POSITIVE_INFINITY;
  return Number.isFinite(waitMs) ? Math.max(1, Math.ceil(waitMs / 1000)) : 3600;
}

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
    take(key, count = 1) {
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
      if (bucket.tokens >= count) {
        bucket.tokens -= count;
        return { allowed: true };
      }
      return { allowed: false, retryAfterSeconds: retryAfterSeconds(bucket.tokens, count, options.perMinute) };
    },
  };
}

/**
 * Token buckets kept in the storage (`RateCounter`: SQLite for one instance, PostgreSQL shared by every instance), with
 * the answers of {@link createRateLimiter}: the same burst, refill and `Retry-After`, counted once for the deployment.
 */
export function createSharedRateLimiter(counter: RateCounter, clock: Clock, options: SharedRateLimiterOptions): RateLimit {
  const bucket = { scope: options.scope, capacity: options.capacity, perMinute: options.perMinute };
  return {
    async take(key, count = 1) {
      const taken = await counter.take(bucket, key, { count, nowMs: clock.nowMs() });
      return taken.allowed ? { allowed: true } : { allowed: false, retryAfterSeconds: retryAfterSeconds(taken.tokens, count, options.perMinute) };
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
