import type { TxReceiptReader } from "./interactions.ts";
import type { OwnershipChain } from "./ownership_chain.ts";

/**
 * The chains a deployment reads transactions on (decisions §30): its attestation chains and its proof chains, one
 * reader each, keyed by chain id. A chain it does not read has no reader: proofs there are "not checked" (never
 * valid, never a 5xx). With nothing else configured, today's chain is the only entry.
 */
export interface ProofChains {
  /** Every chain id read, in configured order. */
  readonly chainIds: readonly number[];
  /** The receipts of a chain read (each mined receipt read once and kept); undefined for any other chain. */
  readonly receipts: (chainId: number) => TxReceiptReader | undefined;
  /** The contract-ownership reads of a chain read (decisions §25); undefined for any other chain. */
  readonly ownership: (chainId: number) => OwnershipChain | undefined;
}
