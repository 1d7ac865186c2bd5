/** One proof of a review checked as of the review: an x402 receipt or offer, or a transaction on the chain it names. */
import { getAddress, type Hex, type PublicClient } from "viem";
import { isSameControllerId } from "../domain/did/mod.ts";
import { type ChainTransaction, didPkhAddressOn, isTxProofType, readTxProofObject, sameService, txProofChainReason, txProofReasons } from "../domain/reviews/mod.ts";
import { type ReceiptPayload, receiptOfferBinding, type ReceiptOfferBindingStatus, resourceUrlToDidWeb, type SignedOffer } from "../domain/payments/mod.ts";
import { AtsClientError } from "./errors.ts";
import { serviceUrl } from "./http.ts";
import type { FetchLike } from "./trust_anchors.ts";
import { checkControllerTrust, type KeyTrust, readEndpointControllerIds, type SignerTrustOptions, verifyOffer, verifyReceipt, type X402VerifyClientOptions } from "./x402.ts";

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
   * An x402 proof: whether it proves a payment by the reviewer. Only a valid receipt does; an offer never does, valid
   * or not: the service hands one to anyone who asks for the resource, so it shows the reviewer was quoted a price, not
   * that it paid. Weigh a review on an offer alone accordingly.
   */
  readonly provesPayment?: boolean | undefined;
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

export const uncheckedTxProof = (proofType: string): ReviewProofCheck => ({
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
  const url = serviceUrl(options.baseUrl, `/v1/tx-proofs?chain=${chainId}&txHash=${txHash}`);
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
  // Judged at the review's time; a receipt is evidence of a purchase whenever it was made: no age limit, said
  // explicitly (whatever the caller's options or a helper's default say).
  const reviewedAt = Number(review.time);
  const x402 = { ...options.x402, nowSeconds: reviewedAt, maxAgeSeconds: Number.POSITIVE_INFINITY };
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
    provesPayment: proofType === "x402-receipt" && reasons.length === 0,
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
