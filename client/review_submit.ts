/** The reviewer's side: a review built from a receipt, an offer or a transaction, checked, signed and submitted. */
import type { Hex } from "viem";
import { buildReviewData, type ReviewData, type ReviewTransaction, transactionProof } from "../domain/reviews/mod.ts";
import { readOfferPayload, readReceiptPayload, type ReceiptPayload, receiptOfferContradictions, resourceUrlToDidWeb, type SignedOffer, type SignedReceipt } from "../domain/payments/mod.ts";
import { attestDelegated, type AtsClientOptions, type DelegatedAttestResult, type TypedDataSigner } from "./delegated_attest.ts";
import { AtsClientError } from "./errors.ts";

/** What the reviewer says, and the receipt, offer or transaction that backs it. */
export type ServiceReviewInput = {
  /** A receipt the reviewer's payment earned (the attester must be its payer). */
  readonly receipt?: SignedReceipt | undefined;
  /**
   * An offer the service made: alone when there is no receipt, or beside the receipt as the offer it settles
   * (the proof then carries both, and verifiers check the receipt is bound to it, decisions §18).
   */
  readonly offer?: SignedOffer | undefined;
  /** Or a transaction; the subject must then be named. */
  readonly transaction?: ReviewTransaction | undefined;
  /** The reviewed subject (a did:web, or a contract's did:pkh); required with a transaction, else derived. */
  readonly subject?: string | undefined;
  readonly ratingValue: number;
  readonly reviewBody?: string | undefined;
  readonly screenshotUrls?: readonly string[] | undefined;
  readonly version?: string | undefined;
  readonly attester: Hex;
  readonly sign: TypedDataSigner;
  /**
   * The receipt was paid by another wallet of the reviewer's, linked to it by a linked-identifier
   * (verifiers check the link); without it the attester must be the receipt's payer.
   */
  readonly linkedPayer?: boolean | undefined;
};

/**
 * Builds the review data for the service the receipt (or offer) names: subject = the did:web of its
 * `resourceUrl`, the receipt or offer verbatim as an `x402-receipt`/`x402-offer` proof with purpose
 * `commercial-tx`. Throws `INVALID_INPUT` naming the field.
 */
export function buildServiceReview(
  input: Omit<ServiceReviewInput, "attester" | "sign"> & { readonly attester?: string | undefined },
): ReviewData {
  if (input.transaction !== undefined) return buildTransactionReview(input);
  if (input.receipt === undefined && input.offer === undefined) {
    throw new AtsClientError("INVALID_INPUT", "receipt, offer or transaction is required");
  }
  const payload = input.receipt !== undefined ? readReceiptPayload(input.receipt) : readOfferPayload(input.offer);
  if (!payload.ok) throw new AtsClientError("INVALID_INPUT", `${input.receipt !== undefined ? "receipt" : "offer"}: ${payload.message}`);
  if (input.receipt !== undefined && input.attester !== undefined && input.linkedPayer !== true) {
    const payer = (payload.value as { payer: string }).payer;
    if (payer.toLowerCase() !== input.attester.toLowerCase()) {
      throw new AtsClientError("INVALID_INPUT", "attester must be the receipt's payer (or set linkedPayer)");
    }
  }
  const subject = resourceUrlToDidWeb(payload.value.resourceUrl);
  if (!subject.ok) throw new AtsClientError("INVALID_INPUT", `resourceUrl: ${subject.message}`);
  const built = buildReviewData({
    subject: subject.value,
    ratingValue: input.ratingValue,
    reviewBody: input.reviewBody,
    screenshotUrls: input.screenshotUrls,
    version: input.version ?? "1.0.0",
    proofs: [{
      proofType: input.receipt !== undefined ? "x402-receipt" : "x402-offer",
      proofPurpose: "commercial-tx",
      proofObject: input.receipt ?? input.offer,
      // The offer the receipt settles travels beside it, verbatim (the reference's Proof allows more members).
      ...(input.receipt !== undefined && input.offer !== undefined ? { offer: input.offer } : {}),
    }],
  });
  if (!built.ok) throw new AtsClientError(built.code, built.code === "INVALID_DID" ? `resourceUrl ${payload.value.resourceUrl}: ${built.message}` : built.message);
  if (input.receipt !== undefined && input.offer !== undefined) {
    const receipt = payload.value as ReceiptPayload;
    const terms = readOfferPayload(input.offer);
    if (!terms.ok) throw new AtsClientError("INVALID_INPUT", `offer: ${terms.message}`);
    const contradictions = receiptOfferContradictions(receipt, input.offer, terms.value);
    if (contradictions.length > 0) throw new AtsClientError("INVALID_INPUT", `offer: ${contradictions.join("; ")}`);
  }
  return built.value;
}

function buildTransactionReview(input: Omit<ServiceReviewInput, "attester" | "sign">): ReviewData {
  if (input.receipt !== undefined || input.offer !== undefined) {
    throw new AtsClientError("INVALID_INPUT", "transaction cannot be combined with a receipt or offer");
  }
  if (input.subject === undefined) throw new AtsClientError("INVALID_INPUT", "subject is required with a transaction");
  const proof = transactionProof(input.transaction!);
  if (!proof.ok) throw new AtsClientError("INVALID_INPUT", `transaction: ${proof.message}`);
  const built = buildReviewData({
    subject: input.subject,
    ratingValue: input.ratingValue,
    reviewBody: input.reviewBody,
    screenshotUrls: input.screenshotUrls,
    version: input.version ?? "1.0.0",
    proofs: [proof.value],
  });
  if (!built.ok) throw new AtsClientError(built.code, built.message);
  return built.value;
}

/** Checks, signs and submits a review through the service's delegated-attest endpoint, in one call. */
export async function submitServiceReview(
  input: ServiceReviewInput,
  options: AtsClientOptions = {},
): Promise<DelegatedAttestResult & { data: ReviewData }> {
  const data = buildServiceReview(input);
  const result = await attestDelegated({ schemaName: "user-review", data, attester: input.attester, sign: input.sign }, options);
  return { ...result, data };
}
