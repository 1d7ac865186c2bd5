/**
 * Reviews of services, with x402 receipts (bound to their offer or alone), offers or transactions as proofs,
 * and the services' replies:
 *
 * - `submitServiceReview`: the reviewer's one call (build from a receipt or offer, check, sign, submit
 *   through delegated-attest; gas paid by the service's delegate).
 * - `respondToReview`: the reviewed service's one call (a `user-review-response` pointing at the review
 *   through `refUID`, no proofs, sent directly by the service's controller key, which pays gas).
 * - `verifyReview`: a review by uid with its proofs checked, whether it still counts (only the newest
 *   review of an attester about a service does), and its replies, each kept or dropped with the reason.
 *
 * Bad input is refused with the field named before anything is signed or sent. This entry (`@ats/client/reviews`)
 * gathers one file per side: `review_submit.ts`, `review_response.ts`, `review_verify.ts`, with the proofs' checks in
 * `review_proofs.ts` and the chain reads in `review_chain.ts`.
 */
export { MAX_TX_PROOFS_CHECKED, checkReviewProof, type PayerRelation, readChainTransaction, readServiceTransaction, type ReviewProofCheck, type ReviewProofOptions } from "./review_proofs.ts";
export type { ReviewChainOptions } from "./review_chain.ts";
export { respondToReview } from "./review_response.ts";
export { buildServiceReview, type ServiceReviewInput, submitServiceReview } from "./review_submit.ts";
export { type ReviewResponseCheck, type ReviewVerification, verifyReview } from "./review_verify.ts";
/** A transaction that backs a review: the reviewer (or a wallet it linked) interacted with the subject. */
export type { ReviewTransaction } from "../domain/reviews/mod.ts";
