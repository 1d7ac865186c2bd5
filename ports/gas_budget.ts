/**
 * The public relay's gas budget (decisions §12): gas charged per time window, shared by every instance
 * using the same database.
 */
export interface GasBudget {
  /** Gas charged in the window starting at `windowStartMs`. */
  readonly used: (windowStartMs: number) => Promise<bigint>;
  /** Atomically adds `gas` to the window unless that would pass `limit`; false (nothing added) then. */
  readonly charge: (windowStartMs: number, gas: bigint, limit: bigint) => Promise<boolean>;
}
