/**
 * Token buckets kept in the storage, so that a limit guarding money or storage is counted once for the deployment
 * (decisions §21): every instance on one PostgreSQL takes from the same bucket. One bucket per scope (which limit)
 * and key (whose: a client address, an attester, an account, a domain, an MCP session).
 */

/** Which limit a bucket belongs to, and its shape. */
export type RateBucket = {
  /** The limit's name, e.g. `public_relay_client`; part of the bucket's identity. */
  readonly scope: string;
  /** Tokens a fresh key starts with: the largest burst. */
  readonly capacity: number;
  /** Tokens added back per minute (fractions allowed). */
  readonly perMinute: number;
};

/** What one take did: `tokens` is what the bucket holds afterwards (after the take, or, refused, without it). */
export type RateTake = { readonly allowed: boolean; readonly tokens: number };

/** The buckets, in SQLite for one instance or PostgreSQL shared by all. */
export interface RateCounter {
  /**
   * Refills `key`'s bucket up to `nowMs` and takes `count` tokens when it holds that many, as one atomic step
   * (concurrent takes from any instance never spend a token twice).
   */
  readonly take: (bucket: RateBucket, key: string, options: { readonly count: number; readonly nowMs: number }) => Promise<RateTake>;
  /** Forgets the buckets that are full again by `nowMs` (a forgotten key starts full anyway); how many went. */
  readonly prune: (nowMs: number) => Promise<number>;
}
