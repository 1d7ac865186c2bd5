/** Paying with x402: offer and receipt payloads, their verification, and paid calls (decisions §9, §13). */
export {
  type AcceptTerms,
  buildOfferPayload,
  buildReceiptPayload,
  hashOffer,
  hashReceipt,
  OFFER_DOMAIN,
  OFFER_INFO_SCHEMA,
  OFFER_RECEIPT,
  OFFER_TYPES,
  type OfferPayload,
  type OfferReceiptDeclaration,
  offerHashOf,
  offerTypedData,
  readDeclaration,
  RECEIPT_DOMAIN,
  RECEIPT_INFO_SCHEMA,
  RECEIPT_TYPES,
  type ReceiptPayload,
  receiptTypedData,
  type SignatureFormat,
  type SignedOffer,
  type SignedReceipt,
} from "./x402_payloads.ts";
export { canonicalJson, decodeCompactJws, type HeaderJwk, jwsSigningInput, type X402JwsAlgorithm } from "./x402_jws.ts";
export { canonicalResourceUrl, resourceUrlToDidWeb, toCaip2Network, toV1Network } from "./x402_networks.ts";
export {
  buildReceiptProof,
  buildUserReviewFromReceipt,
  readOfferPayload,
  readReceiptPayload,
  RECEIPT_AFTER_OFFER_SLACK_SECONDS,
  receiptOfferBinding,
  type ReceiptOfferBindingStatus,
  receiptOfferContradictions,
  type UserReviewData,
  type UserReviewFromReceiptOptions,
  type X402ReceiptProof,
} from "./x402_receipts.ts";
export {
  createPaidCall,
  createPaidResume,
  PAID_PLAN_YEAR_MS,
  type PaidCall,
  type PaidResume,
  type PaidWork,
  type Settlement,
  payerLedgerId,
  type PayingAgent,
  AUTHORIZATION_TRANSIT_SECONDS,
  expiresTooSoon,
  owesForWork,
  paymentReplayKey,
  plainPaymentTerm,
  readExactAuthorization,
  withPaidAccounts,
  withPaidPlans,
} from "./x402_payments.ts";
export {
  createSettledOnChain,
  nonceAlreadyUsed,
  type RefusedPayment,
  type SettledOnChain,
} from "./x402_settled_on_chain.ts";
export { didKeyToJwk, jwkToDidKey } from "./did_key.ts";
export { base58btcEncode } from "../did/mod.ts";
export { evaluateKeyTrust, type KeyBindingEvidence, type KeyTrust, type WitnessEvidence } from "./x402_key_trust.ts";
export {
  type VerifiedOffer,
  type VerifiedReceipt,
  type VerifiedSigner,
  verifySignedOffer,
  verifySignedReceipt,
  type X402VerifyError,
} from "./x402_verify.ts";
