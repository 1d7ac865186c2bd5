/**
 * The public relay's gas budget (decisions §12): gas charged per time window, shared by every instance
 * using the same database.
 */
export interface GasBudget {
  /** Gas charged in the window starting at `windowStartMs`. */
  readonly used: (windowStartMs: number) => Promise<bigint>;
  /**
   * Gas charged in the window and to each of `keys`' shares of it (a client address's, an attester's; issue 43), read
   * together (one statement).
   */
  readonly usage: (windowStartMs: number, keys: readonly string[]) => Promise<GasUsage>;
  /**
   * Atomically adds `gas` to the window unless that would pass `limit`, and to each of `shares` unless that would pass
   * the share's limit: all or nothing; false (nothing added) when any would pass.
   */
  readonly charge: (windowStartMs: number, gas: bigint, limit: bigint, shares?: readonly GasShare[] | undefined) => Promise<boolean>;
}

/** What a window holds: its total, and the shares asked about, in the order asked. */
export type GasUsage = { readonly total: bigint; readonly byKey: readonly bigint[] };

/** One key's part of a window's budget (issue 43): the most gas charged to `key` in one window. */
export type GasShare = { readonly key: string; readonly limit: bigint };
