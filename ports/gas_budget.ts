/**
 * The public relay's gas budget (decisions §12): gas charged per time window, shared by every instance
 * using the same database.
 */
export interface GasBudget {
  /** Gas charged in the window starting at `windowStartMs`. */
  readonly used: (windowStartMs: number) => Promise<bigint>;
  /** Gas charged to `key`'s share of the window (a client address's, an attester's; issue 43). */
  readonly usedBy: (windowStartMs: number, key: string) => Promise<bigint>;
  /**
   * Atomically adds `gas` to the window unless that would pass `limit`, and to each of `shares` unless that would pass
   * the share's limit: all or nothing; false (nothing added) when any would pass.
   */
  readonly charge: (windowStartMs: number, gas: bigint, limit: bigint, shares?: readonly GasShare[] | undefined) => Promise<boolean>;
}

/** One key's part of a window's budget (issue 43): the most gas charged to `key` in one window. */
export type GasShare = { readonly key: string; readonly limit: bigint };
