import type { IndexRead } from "./attestation_index.ts";
import type { HexString } from "./eas.ts";

/** A mined transaction as the ownership proofs read it. */
export type OwnershipTransaction = {
  readonly from: HexString;
  /** The contract the transaction created, if it was a creation. */
  readonly contractAddress: HexString | null;
  /** The block it was mined in, where the source says. */
  readonly blockNumber?: bigint | undefined;
  readonly logs: readonly { readonly address: HexString; readonly topics: readonly HexString[] }[];
};

/** The chain reads of subject-ownership proofs (decisions §12), at the head of the active chain. */
export interface OwnershipChain {
  readonly chainId: number;
  /** Whether an account holds code (is a contract). */
  readonly hasCode: (address: HexString) => Promise<IndexRead<boolean>>;
  /**
   * The contract's `owner()`, or null when it has none (the call reverts or returns no address): at the head, or as of
   * `blockNumber` (the state after that block; a node without that state fails the read).
   */
  readonly owner: (contract: HexString, blockNumber?: bigint) => Promise<IndexRead<HexString | null>>;
  /** A mined transaction and its receipt; null when the chain has no such transaction. */
  readonly transaction: (hash: HexString) => Promise<IndexRead<OwnershipTransaction | null>>;
}
