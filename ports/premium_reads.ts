/** Premium reads of an account in a year (decisions §12): reserved atomically like sponsored writes. */
export interface PremiumReadLedger {
  readonly used: (accountId: string, year: number) => Promise<number>;
  /** Adds `count` unless `used + count` would pass `limit`; false (nothing added) then. */
  readonly reserve: (accountId: string, year: number, count: number, limit: number) => Promise<boolean>;
  /** Gives back reads that were reserved but never handed to the node (a call that reached it is spent). */
  readonly release: (accountId: string, year: number, count: number) => Promise<void>;
}

/** One JSON-RPC call as forwarded. */
export type RpcCall = { readonly jsonrpc: "2.0"; readonly id: string | number | null; readonly method: string; readonly params: readonly unknown[] };

/** The node's answer to one call: a result or an error object, as it sent them. */
export type RpcAnswer = { readonly id: string | number | null; readonly result?: unknown; readonly error?: { code: number; message: string; data?: unknown } };

/**
 * What became of calls sent to the node. `not_sent`: the node never took them (it could not be reached, or it
 * refused the whole batch with an HTTP status before running it); `lost`: they were handed to the node and its
 * answer is gone (a timeout, the service stopping, a connection dropped after sending, an unreadable answer), so
 * the node may well have run them (`timedOut`: the per-call time ran out).
 */
export type RpcSendOutcome =
  | { readonly kind: "answered"; readonly answers: readonly RpcAnswer[] }
  | { readonly kind: "not_sent" }
  | { readonly kind: "lost"; readonly timedOut: boolean };

/** Sends JSON-RPC calls to the chain as they are. */
export interface RawRpc {
  /** The node's answers; undefined when they could not be had, whatever the reason. */
  readonly forward: (calls: readonly RpcCall[]) => Promise<readonly RpcAnswer[] | undefined>;
  /** The node's answers, or why there are none: whether the node may have run the calls decides whether they are spent. */
  readonly send: (calls: readonly RpcCall[]) => Promise<RpcSendOutcome>;
}
