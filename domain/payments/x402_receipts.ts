/** Reading offers and receipts without their signatures, binding a receipt to its offer, receipts as review proofs. */
import type { Hex } from "viem";
import { buildReviewData, type ReviewData } from "../reviews/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { decodeCompactJws, isRecord } from "./x402_jws.ts";
import { resourceUrlToDidWeb } from "./x402_networks.ts";
import { OFFER_RECEIPT_VERSION, offerHashOf, type OfferPayload, type ReceiptPayload, type SignedOffer, type SignedReceipt } from "./x402_payloads.ts";

/** The proof wrapper a user review carries for a receipt (reference §3.2, DD client-attestation). */
export type X402ReceiptProof = {
  readonly proofType: "x402-receipt";
  readonly proofPurpose: "commercial-tx";
  /** The signed receipt exactly as received. */
  readonly proofObject: SignedReceipt;
  readonly version?: number | undefined;
  readonly issuedAt?: number | undefined;
};

/** Wraps a receipt as a proof, verbatim. */
export function buildReceiptProof(receipt: SignedReceipt, options: { issuedAt?: number | undefined } = {}): X402ReceiptProof {
  return {
    proofType: "x402-receipt",
    proofPurpose: "commercial-tx",
    proofObject: receipt,
    ...(options.issuedAt === undefined ? {} : { issuedAt: options.issuedAt }),
  };
}

/** Reads the payload of a receipt without checking its signature. */
export function readReceiptPayload(receipt: unknown): Result<ReceiptPayload, "INVALID_INPUT"> {
  if (!isRecord(receipt)) return fail("INVALID_INPUT", "Receipt is not an object");
  const payload = receipt.format === "eip712" ? receipt.payload : receipt.format === "jws" ? decodeCompactJws(receipt.signature)?.payload : undefined;
  if (!isRecord(payload)) return fail("INVALID_INPUT", "Receipt has no readable payload");
  const { version, network, resourceUrl, payer, issuedAt, transaction, offerHash } = payload;
  if (version !== OFFER_RECEIPT_VERSION) return fail("INVALID_INPUT", "Unsupported receipt version");
  if (typeof network !== "string" || typeof resourceUrl !== "string" || typeof payer !== "string") {
    return fail("INVALID_INPUT", "Receipt payload is missing network, resourceUrl or payer");
  }
  if (!isNonNegativeInteger(issuedAt)) return fail("INVALID_INPUT", "Receipt issuedAt is not a timestamp");
  if (transaction !== undefined && typeof transaction !== "string") return fail("INVALID_INPUT", "Receipt transaction is not a string");
  // Only a JWS receipt signs its offerHash: the EIP-712 struct has no such field, so one beside it proves nothing.
  const signedHash = receipt.format === "jws" ? offerHash : undefined;
  if (signedHash !== undefined && (typeof signedHash !== "string" || !OFFER_HASH.test(signedHash))) {
    return fail("INVALID_INPUT", "Receipt offerHash is not 32 bytes of hex");
  }
  const out: ReceiptPayload = { version, network, resourceUrl, payer, issuedAt };
  if (transaction !== undefined) out.transaction = transaction;
  if (signedHash !== undefined) out.offerHash = signedHash.toLowerCase() as Hex;
  return ok(out);
}

/** Reads the payload of an offer without checking its signature. */
export function readOfferPayload(offer: unknown): Result<OfferPayload, "INVALID_INPUT"> {
  if (!isRecord(offer)) return fail("INVALID_INPUT", "Offer is not an object");
  const payload = offer.format === "eip712" ? offer.payload : offer.format === "jws" ? decodeCompactJws(offer.signature)?.payload : undefined;
  if (!isRecord(payload)) return fail("INVALID_INPUT", "Offer has no readable payload");
  const { version, resourceUrl, scheme, network, asset, payTo, amount, validUntil } = payload;
  if (version !== OFFER_RECEIPT_VERSION) return fail("INVALID_INPUT", "Unsupported offer version");
  for (const v of [resourceUrl, scheme, network, asset, payTo, amount]) {
    if (typeof v !== "string") return fail("INVALID_INPUT", "Offer payload is missing a term");
  }
  if (validUntil !== undefined && !isNonNegativeInteger(validUntil)) return fail("INVALID_INPUT", "Offer validUntil is not a timestamp");
  return ok({
    version,
    resourceUrl: resourceUrl as string,
    scheme: scheme as string,
    network: network as string,
    asset: asset as string,
    payTo: payTo as string,
    amount: amount as string,
    validUntil: (validUntil as number | undefined) ?? 0,
  });
}

const isNonNegativeInteger = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const OFFER_HASH = /^0x[0-9a-fA-F]{64}$/;

/** Seconds a receipt may be issued after its offer's `validUntil`: settlement follows the handler, clocks drift. */
export const RECEIPT_AFTER_OFFER_SLACK_SECONDS = 300;

/**
 * Where a receipt contradicts the offer it claims to settle (decisions §18), one sentence a contradiction,
 * empty when none: a receipt with `offerHash` must name this offer's compact JWS; the resource URL and the
 * network must be the offer's; it cannot be issued well after the offer expired. An EIP-712 receipt has no
 * `offerHash` (the upstream struct has no field for it): only its terms are compared.
 */
export function receiptOfferContradictions(receipt: ReceiptPayload, offer: SignedOffer, offerPayload: OfferPayload): string[] {
  const reasons: string[] = [];
  if (receipt.offerHash !== undefined) {
    const hash = offerHashOf(offer);
    if (hash === undefined) reasons.push("the receipt's offerHash names a JWS offer, and this offer is not one");
    else if (hash !== receipt.offerHash.toLowerCase()) reasons.push("the receipt is bound to another offer (offerHash differs)");
  }
  if (receipt.resourceUrl !== offerPayload.resourceUrl) reasons.push("the receipt's resourceUrl is not the offer's");
  if (receipt.network !== offerPayload.network) reasons.push("the receipt's network is not the offer's");
  if (offerPayload.validUntil !== 0 && receipt.issuedAt > offerPayload.validUntil + RECEIPT_AFTER_OFFER_SLACK_SECONDS) {
    reasons.push("the receipt was issued after the offer expired");
  }
  return reasons;
}

/**
 * How far a receipt is tied to one offer (decisions §18): `bound` when its signed `offerHash` names the offer and
 * nothing contradicts it; `unbound` when something does; `unknown` when nothing contradicts it but nothing signed
 * names the offer either (an EIP-712 receipt, whose upstream struct has no `offerHash`, or a JWS receipt without
 * one): its terms match, as those of any other purchase of the same resource on the same network would.
 */
export type ReceiptOfferBindingStatus = "bound" | "unbound" | "unknown";

/** Whether a receipt settles an offer, as far as its signed fields tell; never `bound` without an `offerHash`. */
export function receiptOfferBinding(
  receipt: ReceiptPayload,
  offer: SignedOffer,
  offerPayload: OfferPayload,
): { status: ReceiptOfferBindingStatus; reasons: string[] } {
  const reasons = receiptOfferContradictions(receipt, offer, offerPayload);
  if (reasons.length > 0) return { status: "unbound", reasons };
  return { status: receipt.offerHash === undefined ? "unknown" : "bound", reasons };
}

/** Options of {@link buildUserReviewFromReceipt}. */
export type UserReviewFromReceiptOptions = {
  readonly ratingValue: number;
  readonly reviewBody?: string | undefined;
  readonly screenshotUrls?: readonly string[] | undefined;
  /** The review's `version` field; default `1.0.0`. */
  readonly version?: string | undefined;
  /** The reviewer; when given it must be the receipt's payer (the proof binds payer to attester). */
  readonly reviewer?: string | undefined;
  /** The wrapper's `issuedAt` (when the proof was made). */
  readonly proofIssuedAt?: number | undefined;
};

/** The user-review attestation data for the receipt's service, with the receipt as its proof. */
export type UserReviewData = ReviewData;

/** Builds user-review data: subject = did:web of the receipt's resourceUrl, proofs = [JSON of the receipt proof]. */
export function buildUserReviewFromReceipt(
  receipt: SignedReceipt,
  options: UserReviewFromReceiptOptions,
): Result<UserReviewData, "INVALID_INPUT" | "INVALID_DID"> {
  const payload = readReceiptPayload(receipt);
  if (!payload.ok) return payload;
  const subject = resourceUrlToDidWeb(payload.value.resourceUrl);
  if (!subject.ok) return subject;
  if (options.reviewer !== undefined && options.reviewer.toLowerCase() !== payload.value.payer.toLowerCase()) {
    return fail("INVALID_INPUT", "The reviewer is not the receipt's payer");
  }
  const review = buildReviewData({
    subject: subject.value,
    ratingValue: options.ratingValue,
    reviewBody: options.reviewBody,
    screenshotUrls: options.screenshotUrls,
    version: options.version ?? "1.0.0",
    proofs: [buildReceiptProof(receipt, { issuedAt: options.proofIssuedAt })],
  });
  // The subject rule's code passes through (a receipt of a service with no domain name, a devnet's 127.0.0.1, is
  // INVALID_DID here as in submitServiceReview: it was INVALID_INPUT here only).
  return review.ok ? review : fail(review.code, review.code === "INVALID_DID" ? `resourceUrl ${payload.value.resourceUrl}: ${review.message}` : review.message);
}
