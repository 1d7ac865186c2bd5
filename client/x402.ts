/**
 * Client helpers for x402 offers and receipts (x402_offer_receipt.md §4): pull them out of responses,
 * verify their signatures, decide how far the signing key is authorized for the resource's did:web
 * (tier 1 endpoint evidence through the service's controller discovery, tier 2 a controller witness by
 * an approved issuer, tier 3 a key binding by a controller witnessed before it), and turn a receipt into a user-review proof and review.
 *
 * Offer and receipt verification returns results (never throws); the trust checks and the review helpers throw
 * {@link AtsClientError}, `NETWORK_ERROR` when evidence cannot be read. This entry (`@ats/client/x402`) gathers one
 * file per step: `x402_extract.ts`, `x402_verify.ts`, `x402_trust.ts`, `x402_review.ts`.
 */
export { buildReceiptProof, resourceUrlToDidWeb } from "../domain/payments/mod.ts";
export type {
  KeyTrust,
  OfferPayload,
  ReceiptOfferBindingStatus,
  ReceiptPayload,
  SignedOffer,
  SignedReceipt,
  UserReviewData,
  VerifiedOffer,
  VerifiedReceipt,
  VerifiedSigner,
  X402ReceiptProof,
} from "../domain/payments/mod.ts";
export {
  extractOffers,
  extractOffersFromPaymentRequired,
  extractReceipt,
  extractReceiptOffer,
  findAcceptForOffer,
  findOfferOfReceipt,
  readPaymentRequired,
  readReceipt,
  readSettlementResponse,
  receiptBindingToOffer,
  receiptContradictsOffer,
} from "./x402_extract.ts";
export {
  createFetchDidDocumentFetcher,
  DEFAULT_RECEIPT_MAX_AGE_SECONDS,
  type ReceiptMatchOptions,
  receiptMatchesOffer,
  verifyOffer,
  verifyReceipt,
  type X402VerifyClientOptions,
} from "./x402_verify.ts";
export {
  checkControllerTrust,
  checkSignerTrust,
  readEndpointControllerIds,
  type ReceiptAuthorization,
  type SignerTrust,
  type SignerTrustOptions,
  verifyReceiptAuthorization,
} from "./x402_trust.ts";
export { type AttestReceiptReviewOptions, attestReceiptReview, buildReceiptReview } from "./x402_review.ts";
