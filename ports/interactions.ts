/** One transaction as its receipt tells it (decisions §29: proof of interaction). */
export type TxReceiptFacts = {
  readonly from: string;
  /** Null for a contract creation. */
  readonly to: string | null;
  readonly status: "success" | "reverted";
  readonly blockNumber: number;
  /**
   * Deep enough under the chain's head (its confirmations) that a reorganisation will not take it back: such a
   * receipt is read once and kept. Absent or false: as the node answers now, asked again next time.
   */
  readonly settled?: boolean | undefined;
};

/** Reads the receipts of one chain the deployment reads; null for a transaction that is not mined there. */
export interface TxReceiptReader {
  readonly chainId: number;
  readonly receipt: (txHash: string) => Promise<{ ok: true; value: TxReceiptFacts | null } | { ok: false; reason: "rpc-error" }>;
  /** The Unix time (seconds) of a block; null when the chain has no such block. */
  /** `settled`: whether the block is settled, where the caller's receipt was just judged (sparing a second head read). */
  readonly blockTime: (blockNumber: number, settled?: boolean) => Promise<{ ok: true; value: number | null } | { ok: false; reason: "rpc-error" }>;
  /** The chain's head block number (absent: the reader cannot tell, so no receipt is ever settled by depth). */
  readonly head?: (() => Promise<{ ok: true; value: number } | { ok: false; reason: "rpc-error" }>) | undefined;
}

/** A candidate transaction an explorer lists for a wallet (its word only, confirmed on chain before it counts). */
export type ExplorerTx = {
  readonly hash: string;
  readonly from: string;
  readonly to: string;
  /** The explorer says it failed. */
  readonly failed: boolean;
  readonly blockNumber: number;
};

/** Where an explorer API comes from: the operator (trusted as configured) or an embed (under the SSRF policy). */
export type ExplorerSource = "operator" | "embed";

/**
 * An Etherscan-compatible explorer API (`module=account&action=txlist`, as Etherscan and Blockscout serve it). `client`
 * is the key of the client the lookup is made for (its address as the routes count it): an embed's explorer is asked
 * within that client's share of the explorer domain's budget; absent, within the domain's budget alone. `limited`: not
 * asked, the budget (or this client's share of it) is spent.
 */
export interface ExplorerTxList {
  readonly txlist: (
    apiUrl: string,
    address: string,
    source: ExplorerSource,
    client?: string | undefined,
  ) => Promise<{ ok: true; value: readonly ExplorerTx[] } | { ok: false; reason: "unavailable" | "blocked" | "invalid" | "limited" }>;
}
