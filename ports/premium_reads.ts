/** Premium reads of an account in a year (decisions §12): reserved atomically like sponsored writes. */
export interface PremiumReadLedger {
  readonly used: (accountId: string, year: number) => Promise<number>;
  /** Adds `count` unless `used + count` would pass `limit`; false (nothing added) then. */
  readonly reserve: (accountId: string, year: number, count: number, limit: number) => Promise<boolean>;
  /** Gives back reads that were reserved but not served (the node could not be reached). */
  readonly release: (accountId: string, year: number, count: number) => Promise<void>;
}

/** One JSON-RPC call as forwarded. */
export type RpcCall = { readonly jsonrpc: "2.0"; readonly id: string | number | null; readonly method: string; readonly params: readonly unknown[] };

/** The node's answer to one call: a result or an error object, as it sent them. */
export type RpcAnswer = { readonly id: string | number | null; readonly result?: unknown; readonly error?: { code: number; message: string; data?: unknown } };

/** Sends JSON-RPC calls to the chain as they are; undefined when the node could not be reached. */
export interface RawRpc {
  readonly forward: (calls: readonly RpcCall[]) => Promise<readonly RpcAnswer[] | undefined>;
}
