/** Proof of interaction (decisions §29): a wallet's transaction to an app's contract, confirmed on chain. */
export {
  budgetedExplorers,
  createFindInteraction,
  createTxProofs,
  type FindInteractionDeps,
  type InteractionQuery,
  type InteractionStatus,
  keptReceipts,
  type ProofReadAdmit,
  type ProofReadLimited,
  readChainId,
  readInteractionQuery,
  type TxProof,
  type TxProofResult,
} from "./interactions.ts";
export { createChainProofs, singleProofChain } from "./proof_chains.ts";
