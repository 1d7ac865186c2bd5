/** User reviews and review responses: their payloads and limits, as the reference's schemas define them. */
export {
  buildReviewData,
  buildReviewResponseData,
  REVIEW_LIMITS,
  type ReviewData,
  type ReviewHead,
  sameService,
  supersedingReview,
} from "./reviews.ts";
export {
  type ChainTransaction,
  didPkhAddress,
  didPkhAddressOn,
  didPkhChainId,
  isTxProofType,
  readTxProofObject,
  type ReviewTransaction,
  type SenderRelation,
  transactionProof,
  TX_PROOF_TYPES,
  type TxProofObject,
  txProofChainReason,
  txProofReasons,
  type TxProofType,
} from "./tx_proofs.ts";
export { checkTxProofOnChains, type TxProofCheckInput, type TxProofVerdict } from "./tx_proof_check.ts";
