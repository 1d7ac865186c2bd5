/** A review read back by uid: its proofs checked, whether it still counts, and its replies kept or dropped. */
import type { Hex } from "viem";
import { didToAddress, normalizeDid } from "../domain/did/mod.ts";
import { parseProofWrappers } from "../domain/artifact_trust/mod.ts";
import { didPkhAddress, isTxProofType, type ReviewHead, supersedingReview } from "../domain/reviews/mod.ts";
import { AtsClientError } from "./errors.ts";
import { checkControllerTrust, type KeyTrust } from "./x402.ts";
import { ZERO_UID, chainContext, decode, payerRelation, type ReviewChainOptions } from "./review_chain.ts";
import { MAX_TX_PROOFS_CHECKED, uncheckedTxProof, readServiceTransaction, readChainTransaction, checkReviewProof, type ReviewProofCheck } from "./review_proofs.ts";

/** A reply to a review, kept or dropped. */
export type ReviewResponseCheck = {
  readonly uid: string;
  readonly responder: string;
  readonly responseBody: string | undefined;
  readonly time: bigint;
  readonly kept: boolean;
  readonly reason: string;
  readonly responderTrust?: KeyTrust | undefined;
};

/** A review with everything a reader needs to weigh it. */
export type ReviewVerification = {
  readonly review: {
    readonly uid: string;
    readonly attester: string;
    readonly subject: string;
    readonly version: string;
    readonly ratingValue: number;
    readonly reviewBody: string;
    readonly screenshotUrls: string[];
    readonly time: bigint;
  };
  /**
   * False when a newer review by the same attester about the same service replaced it, or when the review
   * was not addressed to its subject (`recipientMatchesSubject` false).
   */
  readonly counts: boolean;
  readonly supersededBy?: string | undefined;
  /**
   * Whether the attestation's recipient is the DID address of the review's subject (SPEC identity §5.3.4).
   * A review sent to another recipient is outside the subject's review set: it could otherwise escape the
   * newest-review-counts rule (one attester, many recipients), so it never counts.
   */
  readonly recipientMatchesSubject: boolean;
  readonly proofs: ReviewProofCheck[];
  /** Replies found for the review (by the reviewer's did:pkh on this chain), oldest first. */
  readonly responses: ReviewResponseCheck[];
};

/**
 * Reads a review and checks it: proofs, as of the review's time (signature, an offer valid when the
 * review was attested; resource URL mapped to the review's did:web; the payer equal to the attester or
 * linked to it by a verified linked-identifier; the signing key's trust tier for the service), whether
 * a newer review by the same attester about the same service replaced it, and its replies: kept when
 * the responder is an authorized controller of the service (endpoint evidence, controller witness or
 * key binding at the reply's time), dropped otherwise, with the reason.
 * A failed chain read throws `NETWORK_ERROR`; it never passes for "nothing found".
 */
export async function verifyReview(uid: string, options: ReviewChainOptions): Promise<ReviewVerification> {
  if (typeof uid !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(uid)) throw new AtsClientError("INVALID_INPUT", "uid must be 32 bytes of hex");
  const chain = await chainContext(options);
  const reviewSchema = chain.uid("user-review");
  const attestation = await chain.read(uid as Hex);
  if (attestation.uid === ZERO_UID || attestation.schema.toLowerCase() !== reviewSchema) {
    throw new AtsClientError("INVALID_INPUT", "uid is not a user review on this chain");
  }
  const decoded = decode("user-review", attestation.data);
  if (!decoded.ok) throw new AtsClientError("INVALID_INPUT", "The review's data does not decode");
  const data = decoded.value as { subject: string; version: string; ratingValue: string; reviewBody: string; screenshotUrls: string[]; proofs: string[] };
  const subject = normalizeDid(data.subject);
  const subjectDid = subject.ok ? subject.value : data.subject;
  const review = {
    uid: attestation.uid,
    attester: attestation.attester,
    subject: subjectDid,
    version: data.version,
    ratingValue: Number(data.ratingValue),
    reviewBody: data.reviewBody,
    screenshotUrls: data.screenshotUrls,
    time: attestation.time,
  };
  const trustOptions = {
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    chain: { rpc: chain.client, chainId: options.chainId, trustAnchors: chain.anchors, fromBlock: options.fromBlock },
  };

  // A review counts only when addressed to its subject's DID address, and then only the newest review of this
  // attester about this service, among those addressed the same way, counts.
  const subjectAddress = subject.ok ? didToAddress(subject.value) : undefined;
  const recipientMatchesSubject = subjectAddress !== undefined && subjectAddress.ok &&
    subjectAddress.value.toLowerCase() === attestation.recipient.toLowerCase();
  const siblings = recipientMatchesSubject
    ? await chain.find({ recipient: attestation.recipient, schema: reviewSchema, attester: attestation.attester })
    : [];
  const heads: ReviewHead[] = siblings.flatMap((s) => {
    const d = decode("user-review", s.data);
    return d.ok && typeof d.value.subject === "string"
      ? [{ uid: s.uid, attester: s.attester, subject: d.value.subject, time: s.time, position: s.position }]
      : [];
  });
  const self = heads.find((h) => h.uid.toLowerCase() === review.uid.toLowerCase()) ??
    { uid: review.uid, attester: review.attester, subject: review.subject, time: review.time, position: 0n };
  const newer = supersedingReview(self, heads);

  let txProofs = 0;
  const proofs = await Promise.all(
    parseProofWrappers(data.proofs).map((wrapper) =>
      // Each transaction proof costs three RPC reads: a review's first few are checked, the rest reported.
      isTxProofType(wrapper.proofType) && ++txProofs > MAX_TX_PROOFS_CHECKED
        ? Promise.resolve(uncheckedTxProof(String(wrapper.proofType)))
        : checkReviewProof(wrapper, review, {
          x402: options.x402,
          trust: { ...trustOptions, keyStatus: options.keyStatus !== false },
          payerRelation: (payer, attester) => payerRelation(payer, attester, { ...options, chain }),
          transactions: { chainId: options.chainId, read: (hash) => readChainTransaction(chain.client, hash) },
          // A chain the caller gave no RPC for: the service confirms the transaction if it reads that chain (§29).
          otherChains: (chainId, hash) => readServiceTransaction(chainId, hash, { baseUrl: options.baseUrl, fetch: options.fetch }),
        })
    ),
  );

  // Replies: user-review-response attestations to the reviewer's did:pkh whose refUID is this review.
  const reviewerDid = `did:pkh:eip155:${options.chainId}:${review.attester.toLowerCase()}`;
  const replyRecipient = didToAddress(reviewerDid);
  const replies = replyRecipient.ok ? await chain.find({ recipient: replyRecipient.value, schema: chain.uid("user-review-response") }) : [];
  const responses: ReviewResponseCheck[] = [];
  for (const reply of replies.sort((a, b) => (a.position < b.position ? -1 : a.position > b.position ? 1 : 0))) {
    if (reply.refUID.toLowerCase() !== review.uid.toLowerCase()) continue;
    const body = decode("user-review-response", reply.data);
    const base = { uid: reply.uid, responder: reply.attester, responseBody: body.ok ? String(body.value.responseBody) : undefined, time: reply.time };
    if (!body.ok) {
      responses.push({ ...base, kept: false, reason: "the reply's data does not decode" });
      continue;
    }
    if (String(body.value.refUID).toLowerCase() !== review.uid.toLowerCase()) {
      responses.push({ ...base, kept: false, reason: "the reply's refUID field names another review" });
      continue;
    }
    if (reply.revocationTime !== 0n) {
      responses.push({ ...base, kept: false, reason: "the reply was revoked" });
      continue;
    }
    if (!subjectDid.startsWith("did:web:")) {
      // A contract (did:pkh) has no endpoint evidence or witnesses naming controllers: only it can be its own voice.
      const own = didPkhAddress(subjectDid)?.toLowerCase() === reply.attester.toLowerCase();
      responses.push({ ...base, kept: own, reason: own ? `the responder is ${subjectDid} itself` : `the responder is not ${subjectDid}` });
      continue;
    }
    const trust = await checkControllerTrust(
      { subjectDid, signer: { format: "eip712", controllerDid: `did:pkh:eip155:1:${reply.attester.toLowerCase()}`, address: reply.attester }, at: Number(reply.time) },
      trustOptions,
    );
    responses.push(
      trust.tier > 0
        ? { ...base, kept: true, reason: `the responder is an authorized controller of ${subjectDid} (${trust.basis}, tier ${trust.tier})`, responderTrust: trust }
        : { ...base, kept: false, reason: `the responder is neither the service nor an authorized controller of ${subjectDid}`, responderTrust: trust },
    );
  }

  return {
    review,
    counts: recipientMatchesSubject && newer === undefined,
    ...(newer ? { supersededBy: newer.uid } : {}),
    recipientMatchesSubject,
    proofs,
    responses,
  };
}
