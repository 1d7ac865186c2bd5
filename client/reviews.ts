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
 * Bad input is refused with the field named before anything is signed or sent.
 */
import { createPublicClient, createWalletClient, defineChain, getAddress, type Hex, http, type LocalAccount, parseEventLogs, type PublicClient } from "viem";
import { EAS_ABI, type EasAttestation } from "../domain/eas_abi.ts";
import { didToAddress, isSameControllerId, normalizeDid } from "../domain/did/mod.ts";
import { parseProofWrappers, readUint, verifyProofWrapper } from "../domain/artifact_trust/mod.ts";
import {
  buildReviewData,
  buildReviewResponseData,
  type ChainTransaction,
  didPkhAddress,
  didPkhAddressOn,
  isTxProofType,
  readTxProofObject,
  type ReviewData,
  type ReviewHead,
  type ReviewTransaction,
  sameService,
  supersedingReview,
  transactionProof,
  txProofChainReason,
  txProofReasons,
} from "../domain/reviews/mod.ts";
import { decodeSchemaData, encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import {
  readOfferPayload,
  readReceiptPayload,
  type ReceiptPayload,
  receiptOfferBinding,
  type ReceiptOfferBindingStatus,
  receiptOfferContradictions,
  resourceUrlToDidWeb,
  type SignedOffer,
  type SignedReceipt,
} from "../domain/payments/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";
import { attestDelegated, type AtsClientOptions, type DelegatedAttestResult, type TypedDataSigner } from "./delegated_attest.ts";
import { AtsClientError } from "./errors.ts";
import { DEFAULT_BASE_URL } from "./http.ts";
import { fetchTrustAnchors, type FetchLike, getChainAnchors, getSchemaAnchor } from "./trust_anchors.ts";
import {
  checkControllerTrust,
  type KeyTrust,
  readEndpointControllerIds,
  type SignerTrustOptions,
  verifyOffer,
  verifyReceipt,
  type X402VerifyClientOptions,
} from "./x402.ts";

const ZERO_UID = `0x${"0".repeat(64)}` as Hex;

/** What the chain-reading helpers need: the service (anchors, endpoint evidence) and an RPC of its chain. */
export type ReviewChainOptions = {
  /** The ATS service; default `http://127.0.0.1:8080`. */
  readonly baseUrl?: string | undefined;
  /** JSON-RPC URL of the chain. */
  readonly rpc: string;
  readonly chainId: number;
  /** First block scanned for reviews, replies and evidence; default 0. */
  readonly fromBlock?: bigint | undefined;
  readonly fetch?: FetchLike | undefined;
  /** How offers and receipts are verified (did.json fetching, clock). */
  readonly x402?: X402VerifyClientOptions | undefined;
  /**
   * Judge an offer's or receipt's signing key by the service's key status at the receipt's `issuedAt` (the offer:
   * the review's time), decisions §18; default true. False: read witnesses and bindings from the chain here.
   */
  readonly keyStatus?: boolean | undefined;
};

// ---------------------------------------------------------------------------------------------------------------
// The reviewer

/** A transaction that backs a review: the reviewer (or a wallet it linked) interacted with the subject. */
export type { ReviewTransaction };

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
  if (!built.ok) throw new AtsClientError(built.code, built.message);
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

// ---------------------------------------------------------------------------------------------------------------
// The service's reply

type Attestation = EasAttestation;

/** The chain's EAS contract and schema UIDs, from the service's trust anchors. */
async function chainContext(options: ReviewChainOptions) {
  const anchors: TrustAnchors = await fetchTrustAnchors({ url: `${options.baseUrl ?? DEFAULT_BASE_URL}/v1/trust-anchors`, fetch: options.fetch });
  const easAddress = getChainAnchors(anchors, options.chainId).easContract as Hex;
  const uid = (name: string) => getSchemaAnchor(anchors, options.chainId, name).toLowerCase() as Hex;
  const client: PublicClient = createPublicClient({ transport: http(options.rpc, { batch: true }) });
  const read = async (attestationUid: Hex): Promise<Attestation> => {
    try {
      return await client.readContract({ address: easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [attestationUid] }) as Attestation;
    } catch (cause) {
      throw new AtsClientError("NETWORK_ERROR", "Could not read the attestation from the chain", { cause });
    }
  };
  /** Attestations logged for a recipient (and attester) under a schema, read back from EAS, in chain order. */
  const find = async (filter: { recipient: Hex; schema: Hex; attester?: Hex | undefined }): Promise<(Attestation & { position: bigint })[]> => {
    let logs;
    try {
      logs = await client.getLogs({
        address: easAddress,
        event: EAS_ABI.find((item) => item.type === "event" && item.name === "Attested") as never,
        args: { recipient: filter.recipient, schemaUID: filter.schema, ...(filter.attester ? { attester: filter.attester } : {}) } as never,
        fromBlock: options.fromBlock ?? 0n,
        toBlock: "latest",
      });
    } catch (cause) {
      throw new AtsClientError("NETWORK_ERROR", "Could not read attestation logs from the chain", { cause });
    }
    const positions = new Map<string, bigint>();
    for (const log of logs as unknown as { args: { uid: Hex }; blockNumber: bigint; logIndex: number }[]) {
      if (!positions.has(log.args.uid)) positions.set(log.args.uid, (log.blockNumber << 32n) + BigInt(log.logIndex));
    }
    return await Promise.all([...positions].map(async ([uid, position]) => ({ ...(await read(uid as Hex)), position })));
  };
  return { anchors, easAddress, uid, client, read, find };
}

const decode = (name: string, data: Hex) => decodeSchemaData(findSchemaByName(name)!.schema, data);

/**
 * The reviewed service replies to a review: a non-revocable `user-review-response` (subject = the
 * reviewer's did:pkh on this chain, refUID = the review) with no proofs, sent by `account` (a
 * controller key of the service), which pays gas. Throws `INVALID_INPUT` naming the field before anything
 * is signed.
 */
export async function respondToReview(
  input: { readonly reviewUid: string; readonly responseBody: string; readonly account: LocalAccount },
  options: ReviewChainOptions,
): Promise<{ uid: Hex; txHash: Hex; blockNumber: bigint }> {
  const shape = buildReviewResponseData({
    reviewerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001",
    reviewUid: input.reviewUid,
    responseBody: input.responseBody,
  });
  if (!shape.ok) throw new AtsClientError(shape.code, shape.message);
  const chain = await chainContext(options);
  const review = await chain.read(input.reviewUid as Hex);
  if (review.uid === ZERO_UID || review.schema.toLowerCase() !== chain.uid("user-review")) {
    throw new AtsClientError("INVALID_INPUT", "reviewUid is not a user review on this chain");
  }
  const data = buildReviewResponseData({
    reviewerDid: `did:pkh:eip155:${options.chainId}:${review.attester}`,
    reviewUid: input.reviewUid,
    responseBody: input.responseBody,
  });
  if (!data.ok) throw new AtsClientError(data.code, data.message);
  const encoded = encodeSchemaData(findSchemaByName("user-review-response")!.schema, data.value);
  if (!encoded.ok) throw new AtsClientError("INVALID_INPUT", encoded.message);
  const recipient = didToAddress(data.value.subject);
  if (!recipient.ok) throw new AtsClientError("INVALID_DID", recipient.message);
  const wallet = createWalletClient({
    account: input.account,
    transport: http(options.rpc),
    chain: defineChain({
      id: options.chainId,
      name: `eip155:${options.chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [options.rpc] } },
    }),
  });
  let txHash: Hex;
  try {
    txHash = await wallet.writeContract({
      address: chain.easAddress,
      abi: EAS_ABI,
      functionName: "attest",
      args: [{
        schema: chain.uid("user-review-response"),
        data: { recipient: recipient.value, expirationTime: 0n, revocable: false, refUID: input.reviewUid as Hex, data: encoded.value, value: 0n },
      }],
    });
  } catch (cause) {
    throw new AtsClientError("SUBMISSION_FAILED", "The reply could not be sent", { cause });
  }
  const receipt = await chain.client.waitForTransactionReceipt({ hash: txHash, pollingInterval: 50 });
  if (receipt.status !== "success") throw new AtsClientError("SUBMISSION_FAILED", "The reply transaction reverted");
  const [attested] = parseEventLogs({ abi: EAS_ABI, logs: receipt.logs, eventName: "Attested" });
  return { uid: (attested as unknown as { args: { uid: Hex } }).args.uid, txHash, blockNumber: receipt.blockNumber };
}

// ---------------------------------------------------------------------------------------------------------------
// Verification

/** How the payer of a receipt relates to the reviewer. */
export type PayerRelation = "attester" | "linked" | "unrelated";

/** One proof of a review, checked. */
export type ReviewProofCheck = {
  readonly proofType: string;
  /** Signature valid, resource is the reviewed service, payer is the reviewer (receipts), key bound to the service. */
  readonly valid: boolean;
  /** Why not, one entry per failed check; empty when valid. */
  readonly reasons: string[];
  readonly signatureValid: boolean;
  readonly resourceMatchesSubject?: boolean | undefined;
  readonly payer?: { readonly address: string; readonly relation: PayerRelation } | undefined;
  /** How far the signing key is bound to the reviewed service (tier 0: not at all). */
  readonly signerTrust?: KeyTrust | undefined;
  /**
   * A receipt carried with the offer it settles (decisions §18): `status` `bound` when the receipt's signed
   * `offerHash` names the offer, `unbound` when something contradicts it (see `reasons`), `unknown` when nothing
   * does but nothing signed names the offer (an EIP-712 receipt carries no `offerHash`). `bound` is true only
   * for `status: "bound"`.
   */
  readonly offerBinding?: {
    readonly bound: boolean;
    readonly status: ReceiptOfferBindingStatus;
    readonly offerHash?: string | undefined;
  } | undefined;
  /** A transaction proof: the transaction as the chain holds it (undefined when it is not there). */
  readonly transaction?: {
    readonly chainId: number;
    readonly txHash: string;
    readonly from?: string | undefined;
    readonly to?: string | undefined;
    readonly senderRelation?: PayerRelation | undefined;
  } | undefined;
};

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

/** What checking one proof of a review needs. */
export type ReviewProofOptions = {
  /** How offers and receipts are verified (did.json fetching); their clock is the review's, never now. */
  readonly x402?: X402VerifyClientOptions | undefined;
  /** Where the signing key's trust evidence comes from. */
  readonly trust?: SignerTrustOptions | undefined;
  /** How a receipt's payer (or a transaction's sender) relates to the reviewer; default: the reviewer itself, else unrelated. */
  readonly payerRelation?: ((payer: string, attester: string) => Promise<PayerRelation>) | undefined;
  /**
   * Reads transactions of one chain (transaction proofs): undefined for a transaction that is not there; throws
   * `NETWORK_ERROR` when the chain cannot be read. A proof naming another chain is reported, not checked.
   */
  readonly transactions?: { readonly chainId: number; readonly read: (txHash: Hex) => Promise<ChainTransaction | undefined> } | undefined;
  /**
   * Reads a transaction of a chain `transactions` does not read (decisions §29): the service's `GET /v1/tx-proofs`
   * ({@link readServiceTransaction}); `"unsupported"` when it does not read that chain either (then reported, not checked).
   */
  readonly otherChains?: ((chainId: number, txHash: Hex) => Promise<ChainTransaction | undefined | "unsupported">) | undefined;
  /**
   * The EVM addresses a did:web subject's endpoint evidence names on chain `chainId` (the transaction's); default read
   * through `trust` (the service's confirm endpoint), keeping the did:pkh of that chain only (decisions §18).
   */
  readonly subjectAddresses?: ((subjectDid: string, chainId: number) => Promise<readonly string[]>) | undefined;
};

/** Transaction proofs of one review checked on the chain; more are reported unchecked. */
export const MAX_TX_PROOFS_CHECKED = 10;

const uncheckedTxProof = (proofType: string): ReviewProofCheck => ({
  proofType,
  valid: false,
  reasons: [`more than ${MAX_TX_PROOFS_CHECKED} transaction proofs in one review: this one was not checked`],
  signatureValid: false,
});

/**
 * A transaction as the service confirms it on a chain it reads (`GET /v1/tx-proofs`, decisions §29): undefined when
 * it is not mined there, `"unsupported"` when the service does not read that chain; any other failure throws
 * `NETWORK_ERROR` (never "nothing found").
 */
export async function readServiceTransaction(
  chainId: number,
  txHash: Hex,
  options: { readonly baseUrl?: string | undefined; readonly fetch?: FetchLike | undefined } = {},
): Promise<ChainTransaction | undefined | "unsupported"> {
  const url = `${options.baseUrl ?? DEFAULT_BASE_URL}/v1/tx-proofs?chain=${chainId}&txHash=${txHash}`;
  let response: Response;
  let body: Record<string, unknown>;
  try {
    response = await (options.fetch ?? fetch)(url, { headers: { accept: "application/json" } });
    body = await response.json() as Record<string, unknown>;
  } catch (cause) {
    throw new AtsClientError("NETWORK_ERROR", "Could not ask the service about the transaction", { cause });
  }
  if (response.status === 404) return undefined;
  if (response.status === 400 && body.code === "UNSUPPORTED_CHAIN") return "unsupported";
  const ok = response.ok && typeof body.from === "string" && /^0x[0-9a-fA-F]{40}$/.test(body.from) &&
    (body.to === null || (typeof body.to === "string" && /^0x[0-9a-fA-F]{40}$/.test(body.to))) &&
    (body.status === "success" || body.status === "reverted") && typeof body.blockTime === "number";
  if (!ok) throw new AtsClientError("NETWORK_ERROR", `The service could not confirm the transaction (HTTP ${response.status})`, { status: response.status, body });
  return {
    from: getAddress(body.from as string),
    to: body.to === null ? undefined : getAddress(body.to as string),
    success: body.status === "success",
    blockTime: BigInt(body.blockTime as number),
  };
}

/** A transaction with its receipt and block time; undefined when the chain does not have it (or not mined). */
export async function readChainTransaction(client: PublicClient, hash: Hex): Promise<ChainTransaction | undefined> {
  try {
    const [tx, receipt] = await Promise.all([client.getTransaction({ hash }), client.getTransactionReceipt({ hash })]);
    const block = await client.getBlock({ blockNumber: receipt.blockNumber });
    return { from: getAddress(tx.from), to: tx.to ? getAddress(tx.to) : undefined, success: receipt.status === "success", blockTime: block.timestamp };
  } catch (cause) {
    const name = (cause as { name?: unknown }).name;
    if (name === "TransactionNotFoundError" || name === "TransactionReceiptNotFoundError") return undefined;
    throw new AtsClientError("NETWORK_ERROR", "Could not read the transaction from the chain", { cause });
  }
}

/**
 * Checks one proof wrapper of a review as of the review, not as of now: an `x402-offer` must have been
 * valid when the review was attested (its `validUntil` not before the review's chain time) and a receipt
 * must not postdate the review; neither expires afterwards, since a review outlives the offer it rests on.
 */
export async function checkReviewProof(
  wrapper: Record<string, unknown>,
  review: { readonly attester: string; readonly subject: string; readonly time: bigint },
  options: ReviewProofOptions = {},
): Promise<ReviewProofCheck> {
  const proofType = typeof wrapper.proofType === "string" ? wrapper.proofType : "unknown";
  const reasons: string[] = [];
  if (isTxProofType(proofType)) return await checkTxProof(wrapper, review, options);
  if (proofType !== "x402-receipt" && proofType !== "x402-offer") {
    return { proofType, valid: false, reasons: [`${proofType} proofs are not checked by this helper`], signatureValid: false };
  }
  if (wrapper.proofPurpose !== "commercial-tx") reasons.push("proofPurpose is not commercial-tx");
  // Judged at the review's time; a receipt is evidence of a purchase whenever it was made: no age limit.
  const reviewedAt = Number(review.time);
  const x402 = { ...options.x402, nowSeconds: reviewedAt, maxAgeSeconds: undefined };
  const verified = proofType === "x402-receipt" ? await verifyReceipt(wrapper.proofObject, x402) : await verifyOffer(wrapper.proofObject, x402);
  if (!verified.ok) {
    // EXPIRED is only reported for a good signature (the signature is checked first).
    const signatureValid = verified.code === "EXPIRED";
    const reason = signatureValid ? "the offer had expired when the review was attested" : `signature: ${verified.message}`;
    return { proofType, valid: false, reasons: [...reasons, reason], signatureValid };
  }
  const payload = verified.value.payload;
  const service = resourceUrlToDidWeb(payload.resourceUrl);
  const resourceMatchesSubject = service.ok && sameService(service.value, review.subject);
  if (!resourceMatchesSubject) reasons.push("the resource URL is not the reviewed service");
  let payer: ReviewProofCheck["payer"];
  if ("payer" in payload) {
    const relation = options.payerRelation !== undefined
      ? await options.payerRelation(payload.payer, review.attester)
      : payload.payer.toLowerCase() === review.attester.toLowerCase() ? "attester" : "unrelated";
    payer = { address: payload.payer, relation };
    if (relation === "unrelated") reasons.push("the payer is neither the reviewer nor linked to it");
  }
  let offerBinding: ReviewProofCheck["offerBinding"];
  if (proofType === "x402-receipt" && wrapper.offer !== undefined) {
    const receipt = payload as ReceiptPayload;
    const before = reasons.length;
    // The offer's signature is what counts here; it may well have expired since the payment it priced.
    const offer = await verifyOffer(wrapper.offer, { ...options.x402, nowSeconds: 0 });
    let status: ReceiptOfferBindingStatus = "unbound";
    if (!offer.ok) {
      reasons.push(`the offer it settles: ${offer.message}`);
    } else {
      const binding = receiptOfferBinding(receipt, wrapper.offer as SignedOffer, offer.value.payload);
      reasons.push(...binding.reasons);
      if (!isSameControllerId(offer.value.signer.controllerDid, verified.value.signer.controllerDid)) {
        reasons.push("the offer and the receipt are signed by different keys");
      }
      // An EIP-712 receipt names no offer: matching terms are no binding, so it stays unknown, never bound.
      status = reasons.length === before ? binding.status : "unbound";
    }
    offerBinding = { bound: status === "bound", status, ...(receipt.offerHash === undefined ? {} : { offerHash: receipt.offerHash }) };
  }
  // A receipt speaks for its issue time; an offer for the review's (it was valid then). Only a did:web has a trust tier.
  const at = "issuedAt" in payload ? payload.issuedAt : reviewedAt;
  const signerTrust = review.subject.startsWith("did:web:")
    ? await checkControllerTrust({ subjectDid: review.subject, signer: verified.value.signer, at }, options.trust)
    : undefined;
  if (signerTrust === undefined || signerTrust.tier === 0) reasons.push("the signing key is not bound to the reviewed service");
  return {
    proofType,
    valid: reasons.length === 0,
    reasons,
    signatureValid: true,
    resourceMatchesSubject,
    payer,
    signerTrust,
    ...(offerBinding === undefined ? {} : { offerBinding }),
  };
}

/**
 * A `tx-interaction` or `tx-encoded-value` proof, checked on the chain it names (decisions §18): the
 * transaction exists and succeeded no later than the review, its sender is the reviewer or a wallet it linked,
 * and it went to the subject's contract (a did:pkh subject) or to an address the subject's endpoint evidence
 * names (a did:web subject). `tx-encoded-value`'s encoded amount is a shared-control challenge; for a review
 * (`commercial-tx`) the transaction itself is the evidence.
 */
async function checkTxProof(
  wrapper: Record<string, unknown>,
  review: { readonly attester: string; readonly subject: string; readonly time: bigint },
  options: ReviewProofOptions,
): Promise<ReviewProofCheck> {
  const proofType = String(wrapper.proofType);
  const reasons: string[] = [];
  if (wrapper.proofPurpose !== "commercial-tx") reasons.push("proofPurpose is not commercial-tx");
  const proof = readTxProofObject(wrapper.proofObject);
  if (!proof.ok) return { proofType, valid: false, reasons: [...reasons, proof.message], signatureValid: false };
  const { chainId, txHash } = proof.value;
  // The chain rule first: a transaction on another chain than the subject's proves nothing, whatever it holds.
  const wrongChain = txProofChainReason(review.subject, chainId);
  if (wrongChain !== undefined) {
    return { proofType, valid: false, reasons: [...reasons, wrongChain], signatureValid: false, transaction: { chainId, txHash } };
  }
  const own = options.transactions !== undefined && options.transactions.chainId === chainId ? options.transactions : undefined;
  const read = own !== undefined ? await own.read(txHash) : options.otherChains !== undefined ? await options.otherChains(chainId, txHash) : "unsupported";
  if (read === "unsupported") {
    return { proofType, valid: false, reasons: [...reasons, `eip155:${chainId} is not the chain this verifier reads`], signatureValid: false, transaction: { chainId, txHash } };
  }
  const transaction = read;
  const senderRelation = transaction === undefined
    ? "unrelated"
    : options.payerRelation !== undefined
    ? await options.payerRelation(transaction.from, review.attester)
    : transaction.from.toLowerCase() === review.attester.toLowerCase() ? "attester" : "unrelated";
  const targets = transaction === undefined ? [] : await subjectTargets(review.subject, chainId, options);
  reasons.push(...txProofReasons({ proof: proof.value, transaction, senderRelation, targets, reviewTime: review.time }));
  return {
    proofType,
    valid: reasons.length === 0,
    reasons,
    // The chain's own signature: the transaction is there and was sent by its `from`.
    signatureValid: transaction !== undefined,
    transaction: { chainId, txHash, from: transaction?.from, to: transaction?.to, senderRelation: transaction === undefined ? undefined : senderRelation },
  };
}

/**
 * Where a transaction on `chainId` to the subject may go: a did:pkh's own address, a did:web's endpoint-published
 * EVM controllers of that chain (the same chain rule as the subject's own, `txProofChainReason`).
 */
async function subjectTargets(subject: string, chainId: number, options: ReviewProofOptions): Promise<readonly string[]> {
  const own = didPkhAddressOn(subject, chainId);
  if (own !== undefined) return [own];
  if (!subject.startsWith("did:web:")) return [];
  if (options.subjectAddresses !== undefined) return await options.subjectAddresses(subject, chainId);
  const ids = await readEndpointControllerIds(subject, options.trust ?? {});
  return (ids ?? []).flatMap((id) => {
    const address = didPkhAddressOn(id, chainId);
    return address === undefined ? [] : [address];
  });
}

/**
 * The payer is the reviewer, or linked to it: a live linked-identifier by the reviewer about its own
 * did:pkh naming the payer, with a proof signed by the payer (purpose `shared-control`).
 */
async function payerRelation(
  payer: string,
  attester: string,
  context: ReviewChainOptions & { chain: Awaited<ReturnType<typeof chainContext>> },
): Promise<PayerRelation> {
  if (payer.toLowerCase() === attester.toLowerCase()) return "attester";
  if (!/^0x[0-9a-fA-F]{40}$/.test(payer)) return "unrelated";
  let linkedSchema: Hex;
  try {
    linkedSchema = context.chain.uid("linked-identifier");
  } catch {
    return "unrelated";
  }
  const reviewerDid = `did:pkh:eip155:${context.chainId}:${attester.toLowerCase()}`;
  const recipient = didToAddress(reviewerDid);
  if (!recipient.ok) return "unrelated";
  const links = await context.chain.find({ recipient: recipient.value, schema: linkedSchema, attester: attester as Hex });
  const now = BigInt(Math.floor(Date.now() / 1000));
  const payerDid = `did:pkh:eip155:1:${payer.toLowerCase()}`;
  const jws = createWebCryptoJwsVerifier();
  for (const link of links) {
    if (link.revocationTime !== 0n || (link.expirationTime !== 0n && link.expirationTime <= now)) continue;
    const data = decode("linked-identifier", link.data);
    if (!data.ok || typeof data.value.linkedId !== "string") continue;
    if (!isSameControllerId(data.value.linkedId, payerDid)) continue;
    const expiresAt = readUint(data.value.expiresAt) ?? 0n;
    const effectiveAt = readUint(data.value.effectiveAt) ?? 0n;
    if ((expiresAt !== 0n && expiresAt <= now) || effectiveAt > now) continue;
    for (const wrapper of parseProofWrappers(data.value.proofs)) {
      const proof = await verifyProofWrapper(wrapper, { nowSeconds: now, purpose: "shared-control", chainId: context.chainId, jws });
      if (proof?.signers.some((s) => isSameControllerId(s, payerDid))) return "linked";
    }
  }
  return "unrelated";
}
