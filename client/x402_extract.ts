/** Offers and receipts pulled out of x402 responses (a 402's PaymentRequired, a paid answer's settlement), read and matched, not verified. */
import { OFFER_RECEIPT, offerHashOf, readOfferPayload, readReceiptPayload, receiptOfferBinding, type ReceiptOfferBindingStatus, receiptOfferContradictions, type ReceiptPayload, type SignedOffer, type SignedReceipt, toCaip2Network } from "../domain/payments/mod.ts";

import { AtsClientError } from "./errors.ts";

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function decodeBase64Json(value: string | null | undefined): Record<string, unknown> | undefined {
  if (value === null || value === undefined || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0))));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The offers of a PaymentRequired (v2 header content or v1 body); empty when there are none. */
export function extractOffersFromPaymentRequired(paymentRequired: unknown): SignedOffer[] {
  if (!isRecord(paymentRequired) || !isRecord(paymentRequired.extensions)) return [];
  const entry = paymentRequired.extensions[OFFER_RECEIPT];
  const offers = isRecord(entry) && isRecord(entry.info) ? entry.info.offers : undefined;
  return Array.isArray(offers) ? offers.filter((o): o is SignedOffer => isRecord(o) && (o.format === "eip712" || o.format === "jws")) : [];
}

/** The PaymentRequired of a 402: the v2 `PAYMENT-REQUIRED` header, else a v1 JSON body. */
export async function readPaymentRequired(response: Response): Promise<Record<string, unknown> | undefined> {
  const header = decodeBase64Json(response.headers.get("payment-required"));
  if (header !== undefined) return header;
  try {
    const body: unknown = await response.clone().json();
    return isRecord(body) && body.x402Version === 1 ? body : undefined;
  } catch {
    return undefined;
  }
}

/** The offers of a 402 response (v2 header or v1 body). Keep them: they are proof material even unpaid. */
export async function extractOffers(response: Response): Promise<SignedOffer[]> {
  return extractOffersFromPaymentRequired(await readPaymentRequired(response));
}

/** The settlement response of a paid answer: `PAYMENT-RESPONSE` (v2), else `X-PAYMENT-RESPONSE` (v1). */
export function readSettlementResponse(response: Response | Headers): Record<string, unknown> | undefined {
  const headers = response instanceof Headers ? response : response.headers;
  return decodeBase64Json(headers.get("payment-response")) ?? decodeBase64Json(headers.get("x-payment-response"));
}

/** The signed receipt of a paid answer, verbatim, or undefined. */
export function extractReceipt(response: Response | Headers): SignedReceipt | undefined {
  const settlement = readSettlementResponse(response);
  const entry = isRecord(settlement?.extensions) ? settlement.extensions[OFFER_RECEIPT] : undefined;
  const receipt = isRecord(entry) && isRecord(entry.info) ? entry.info.receipt : undefined;
  return isRecord(receipt) && (receipt.format === "eip712" || receipt.format === "jws") ? receipt as SignedReceipt : undefined;
}

/**
 * The offer a paid answer's receipt settles, as the server sent it beside the receipt (`info.offer`, decisions
 * §18): the one a JWS receipt's `offerHash` names. Undefined when the server sent none (EIP-712 receipts).
 */
export function extractReceiptOffer(response: Response | Headers): SignedOffer | undefined {
  const settlement = readSettlementResponse(response);
  const entry = isRecord(settlement?.extensions) ? settlement.extensions[OFFER_RECEIPT] : undefined;
  const offer = isRecord(entry) && isRecord(entry.info) ? entry.info.offer : undefined;
  return isRecord(offer) && (offer.format === "eip712" || offer.format === "jws") ? offer as SignedOffer : undefined;
}

/**
 * A receipt's payload, from the receipt as sent (what {@link extractReceipt} gives) or its payload already read. Before,
 * these helpers read a signed receipt as if it were its payload: a JWS receipt (no `payload` field) was judged
 * `unbound` for every offer, and its `.payload` threw a bare TypeError. Anything else is `INVALID_INPUT`.
 */
function payloadOf(receipt: ReceiptPayload | SignedReceipt): ReceiptPayload {
  const given: unknown = receipt;
  if (isRecord(given) && (given.format === "eip712" || given.format === "jws")) {
    const read = readReceiptPayload(given);
    if (!read.ok) throw new AtsClientError("INVALID_INPUT", `The receipt: ${read.message}`);
    return read.value;
  }
  if (isRecord(given) && typeof given.resourceUrl === "string" && typeof given.network === "string") return given as ReceiptPayload;
  throw new AtsClientError("INVALID_INPUT", "Not a receipt: expected a signed receipt (format eip712 or jws) or a receipt payload");
}

/** Among offers, the one a receipt's `offerHash` names; undefined when it names none of them (or has no hash). */
export function findOfferOfReceipt(receipt: ReceiptPayload | SignedReceipt, offers: readonly SignedOffer[]): SignedOffer | undefined {
  const offerHash = payloadOf(receipt).offerHash;
  if (offerHash === undefined) return undefined;
  return offers.find((offer) => offerHashOf(offer) === offerHash);
}

/**
 * Where a receipt contradicts the offer it claims to settle, one reason a contradiction: the offerHash of a JWS
 * receipt, resource URL, network, issued well after the offer expired. Empty means nothing contradicts it, not that
 * it settles that offer: only a signed `offerHash` binds a receipt to one ({@link receiptBindingToOffer}).
 */
export function receiptContradictsOffer(receipt: ReceiptPayload | SignedReceipt, offer: SignedOffer): string[] {
  const payload = payloadOf(receipt);
  const terms = readOfferPayload(offer);
  if (!terms.ok) return [`the offer: ${terms.message}`];
  return receiptOfferContradictions(payload, offer, terms.value);
}

/**
 * Whether a receipt is bound to an offer (decisions §18): `bound` only when its signed `offerHash` names that offer
 * and nothing contradicts it, `unbound` with the contradictions, and `unknown` for a receipt that names no offer
 * (EIP-712 receipts never do: the upstream struct has no field for it) whose terms match.
 */
export function receiptBindingToOffer(receipt: ReceiptPayload | SignedReceipt, offer: SignedOffer): { status: ReceiptOfferBindingStatus; reasons: string[] } {
  const payload = payloadOf(receipt);
  const terms = readOfferPayload(offer);
  if (!terms.ok) return { status: "unbound", reasons: [`the offer: ${terms.message}`] };
  return receiptOfferBinding(payload, offer, terms.value);
}

/** The `accepts[]` entry an offer signs, matched on its terms (the `acceptIndex` is only a hint). */
export function findAcceptForOffer<T extends Record<string, unknown>>(offer: SignedOffer, accepts: readonly T[]): T | undefined {
  const payload = readOfferPayload(offer);
  if (!payload.ok) return undefined;
  const p = payload.value;
  const matches = (a: T) =>
    a.scheme === p.scheme && a.payTo === p.payTo && a.asset === p.asset &&
    (a.amount ?? a.maxAmountRequired) === p.amount &&
    (a.network === p.network || toCaip2(a.network) === p.network);
  const hinted = typeof offer.acceptIndex === "number" ? accepts[offer.acceptIndex] : undefined;
  return hinted !== undefined && matches(hinted) ? hinted : accepts.find(matches);
}

const toCaip2 = (network: unknown) => (typeof network === "string" ? toCaip2Network(network) : network);

/** Reads a receipt's payload without verifying it. */
export function readReceipt(receipt: unknown): ReceiptPayload | undefined {
  const payload = readReceiptPayload(receipt);
  return payload.ok ? payload.value : undefined;
}
