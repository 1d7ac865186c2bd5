/**
 * User reviews of services and the services' replies (reference §3): the data a reviewer signs, the
 * data of a reply, and which review of an attester about a subject counts. Pure: no chain, no network.
 */
import { normalizeDid, normalizeSubjectDid } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { isTxProofType, readTxProofObject, txProofChainReason } from "./tx_proofs.ts";

/** Limits of the user-review and user-review-response payloads (the reference's JSON schemas). */
export const REVIEW_LIMITS = { reviewBody: 500, screenshotUrls: 10, urlLength: 2_048, responseBody: 500 } as const;

/** Proof types a user review may carry, all with purpose `commercial-tx`. */
export const REVIEW_PROOF_TYPES = ["x402-receipt", "x402-offer", "tx-interaction", "tx-encoded-value"] as const;

/** What a reviewer writes. */
export type ReviewDraft = {
  /** The reviewed service: a did:web (or a bare domain, normalized to one), or a contract's did:pkh. */
  readonly subject: string;
  /** 1 to 5. */
  readonly ratingValue: number;
  readonly reviewBody?: string | undefined;
  readonly screenshotUrls?: readonly string[] | undefined;
  /** The version of the service reviewed; default "1". */
  readonly version?: string | undefined;
  /** Proof wrappers `{proofType, proofPurpose, proofObject}`; stored JSON-stringified. */
  readonly proofs?: readonly Record<string, unknown>[] | undefined;
};

/** The user-review attestation data, ready for ABI encoding. */
export type ReviewData = {
  subject: string;
  version: string;
  ratingValue: number;
  reviewBody: string;
  screenshotUrls: string[];
  proofs: string[];
};

const httpUrl = (value: string) => {
  try {
    const url = new URL(value);
    return url.protocol === "https:" || url.protocol === "http:";
  } catch {
    return false;
  }
};

/** Checks a review and builds its attestation data; the first problem is reported with the field named. */
export function buildReviewData(draft: ReviewDraft): Result<ReviewData, "INVALID_INPUT" | "INVALID_DID"> {
  if (typeof draft.subject !== "string") return fail("INVALID_INPUT", "subject is required");
  // The one subject rule (issue 43): no whitespace or control character, a did:web naming a domain.
  const subject = normalizeSubjectDid(draft.subject);
  // A did:pkh subject is a contract, reviewed with a transaction proof (decisions §18).
  if (!subject.ok || !(subject.value.startsWith("did:web:") || subject.value.startsWith("did:pkh:"))) {
    return fail("INVALID_DID", "subject must be the service's did:web or its contract's did:pkh");
  }
  if (!Number.isInteger(draft.ratingValue) || draft.ratingValue < 1 || draft.ratingValue > 5) {
    return fail("INVALID_INPUT", "ratingValue must be an integer from 1 to 5");
  }
  const reviewBody = draft.reviewBody ?? "";
  if (typeof reviewBody !== "string" || [...reviewBody].length > REVIEW_LIMITS.reviewBody) {
    return fail("INVALID_INPUT", `reviewBody must be text of at most ${REVIEW_LIMITS.reviewBody} characters`);
  }
  const screenshotUrls = [...(draft.screenshotUrls ?? [])];
  if (screenshotUrls.length > REVIEW_LIMITS.screenshotUrls) {
    return fail("INVALID_INPUT", `screenshotUrls must hold at most ${REVIEW_LIMITS.screenshotUrls} URLs`);
  }
  for (const url of screenshotUrls) {
    if (typeof url !== "string" || url.length > REVIEW_LIMITS.urlLength || !httpUrl(url)) {
      return fail("INVALID_INPUT", "screenshotUrls must be http(s) URLs");
    }
  }
  const version = draft.version ?? "1";
  if (typeof version !== "string" || version.length === 0 || version.length > 64) {
    return fail("INVALID_INPUT", "version must be 1 to 64 characters");
  }
  const proofs: string[] = [];
  for (const proof of draft.proofs ?? []) {
    if (!(REVIEW_PROOF_TYPES as readonly unknown[]).includes(proof.proofType)) {
      return fail("INVALID_INPUT", `proofs: proofType must be one of ${REVIEW_PROOF_TYPES.join(", ")}`);
    }
    if (proof.proofPurpose !== "commercial-tx") return fail("INVALID_INPUT", "proofs: proofPurpose must be commercial-tx");
    if (proof.proofObject === undefined || proof.proofObject === null) return fail("INVALID_INPUT", "proofs: proofObject is required");
    if (isTxProofType(proof.proofType)) {
      const tx = readTxProofObject(proof.proofObject);
      if (!tx.ok) return fail("INVALID_INPUT", `proofs: ${tx.message}`);
      // A did:pkh subject is reached on its own chain only: a transaction elsewhere would never count.
      const wrongChain = txProofChainReason(subject.value, tx.value.chainId);
      if (wrongChain !== undefined) return fail("INVALID_INPUT", `proofs: ${wrongChain}`);
    }
    proofs.push(JSON.stringify(proof));
  }
  return ok({ subject: subject.value, version, ratingValue: draft.ratingValue, reviewBody, screenshotUrls, proofs });
}

/** The user-review-response attestation data. */
export type ReviewResponseData = { subject: string; refUID: string; responseBody: string };

/**
 * Checks a reply and builds its data: `subject` is the reviewer's DID (a did:pkh), `refUID` the
 * review's uid (also the attestation's EAS refUID). A reply carries no proofs.
 */
export function buildReviewResponseData(input: {
  reviewerDid: string;
  reviewUid: string;
  responseBody: string;
}): Result<ReviewResponseData, "INVALID_INPUT" | "INVALID_DID"> {
  const reviewer = typeof input.reviewerDid === "string" ? normalizeDid(input.reviewerDid) : undefined;
  if (reviewer === undefined || !reviewer.ok || !reviewer.value.startsWith("did:pkh:")) {
    return fail("INVALID_DID", "reviewerDid must be the reviewer's did:pkh");
  }
  if (typeof input.reviewUid !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(input.reviewUid) || /^0x0{64}$/.test(input.reviewUid)) {
    return fail("INVALID_INPUT", "reviewUid must be the review's attestation uid (32 bytes of hex)");
  }
  if (typeof input.responseBody !== "string" || input.responseBody.trim() === "" || [...input.responseBody].length > REVIEW_LIMITS.responseBody) {
    return fail("INVALID_INPUT", `responseBody must be 1 to ${REVIEW_LIMITS.responseBody} characters`);
  }
  return ok({ subject: reviewer.value, refUID: input.reviewUid.toLowerCase(), responseBody: input.responseBody });
}

/** Two DIDs name the same service when they normalize to the same text. */
export function sameService(a: string, b: string): boolean {
  const x = normalizeDid(a);
  const y = normalizeDid(b);
  return x.ok && y.ok && x.value.toLowerCase() === y.value.toLowerCase();
}

/** A review as the chain holds it, enough to tell which one counts. */
export type ReviewHead = {
  readonly uid: string;
  readonly attester: string;
  readonly subject: string;
  readonly time: bigint;
  /** Chain order within equal times: block number × 2^32 + log index. */
  readonly position: bigint;
};

const newerThan = (a: ReviewHead, b: ReviewHead) =>
  a.time !== b.time ? a.time > b.time : a.position !== b.position ? a.position > b.position : a.uid.toLowerCase() > b.uid.toLowerCase();

/**
 * The review that counts for `review`'s (attester, subject): the newest by attestation time, then by
 * chain order, among `review` and `others`. Undefined when `review` itself counts.
 */
export function supersedingReview(review: ReviewHead, others: readonly ReviewHead[]): ReviewHead | undefined {
  let newest = review;
  for (const other of others) {
    if (other.attester.toLowerCase() !== review.attester.toLowerCase()) continue;
    if (!sameService(other.subject, review.subject)) continue;
    if (other.uid.toLowerCase() !== review.uid.toLowerCase() && newerThan(other, newest)) newest = other;
  }
  return newest === review ? undefined : newest;
}
