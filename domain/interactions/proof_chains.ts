/**
 * Proofs on several chains (decisions §30): proof of interaction and transaction proofs read through one
 * {@link ProofChains}, so a chain the deployment does not read answers "not checked" (`/v1/interactions`) or
 * UNSUPPORTED_CHAIN (`/v1/tx-proofs`), never a 5xx, and a second chain adds no read to the first.
 */
import type { TxReceiptReader } from "../../ports/interactions.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import type { ProofChains } from "../../ports/proof_chains.ts";
import { createFindInteraction, createTxProofs, type FindInteractionDeps } from "./interactions.ts";

/** Today's deployment as a {@link ProofChains}: its one chain, nothing else read. */
export function singleProofChain(receipts: TxReceiptReader, ownership?: OwnershipChain | undefined): ProofChains {
  const chainId = receipts.chainId;
  return {
    chainIds: [chainId],
    receipts: (id) => (id === chainId ? receipts : undefined),
    ownership: (id) => (id === chainId ? ownership : undefined),
  };
}

/** Both proof reads of `/v1/interactions` and `/v1/tx-proofs`, on every chain `chains` reads. */
export function createChainProofs(chains: ProofChains, deps: Omit<FindInteractionDeps, "readerFor">): {
  readonly findInteraction: ReturnType<typeof createFindInteraction>;
  readonly txProof: ReturnType<typeof createTxProofs>;
} {
  const readerFor = (chainId: number) => chains.receipts(chainId);
  // One budget per client address for both routes.
  return { findInteraction: createFindInteraction({ ...deps, readerFor }), txProof: createTxProofs({ readerFor, admit: deps.admit }) };
}
