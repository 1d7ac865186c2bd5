/**
 * The x402 `offer-receipt` extension's wire model (x402_offer_receipt.md §1.2, §3): offer and receipt
 * payloads, their EIP-712 typed data, the `extensions` entries they travel in, and building them. Their JWS
 * (JCS) bytes are `x402_jws.ts`, networks and the resourceUrl → did:web mapping `x402_networks.ts`, reading
 * them back and the receipt as a user-review proof `x402_receipts.ts`. Byte-compatible with
 * `@x402/extensions` 2.27; x402_vectors.json pins it. Pure: time comes in as arguments.
 */
import type { Hex } from "viem";
import { hashTypedData, sha256 } from "viem/utils";
import { isRecord } from "./x402_jws.ts";
import { toCaip2Network } from "./x402_networks.ts";

/** The extension key in `extensions` (PaymentRequired, SettleResponse). */
export const OFFER_RECEIPT = "offer-receipt";
/** The payload `version` this code writes and accepts. */
export const OFFER_RECEIPT_VERSION = 1;
/** Offer validity when neither the route nor the accept entry says otherwise. */
export const DEFAULT_OFFER_VALIDITY_SECONDS = 300;

/** The two signature formats. */
export type SignatureFormat = "eip712" | "jws";

/** The signed terms of one `accepts[]` entry. */
export type OfferPayload = {
  version: number;
  resourceUrl: string;
  scheme: string;
  network: string;
  asset: string;
  payTo: string;
  amount: string;
  validUntil: number;
};

/**
 * The signed statement that a payer paid for a resource. `transaction` only when the route includes it;
 * `offerHash` (JWS receipts only, decisions §18) names the offer it settles: {@link offerHashOf} of that offer.
 */
export type ReceiptPayload = {
  version: number;
  network: string;
  resourceUrl: string;
  payer: string;
  issuedAt: number;
  transaction?: string | undefined;
  offerHash?: Hex | undefined;
};

/** An offer as sent: eip712 carries its payload, jws carries it inside the compact JWS. */
export type SignedOffer =
  | { format: "eip712"; acceptIndex?: number | undefined; payload: OfferPayload; signature: Hex }
  | { format: "jws"; acceptIndex?: number | undefined; signature: string };

/** A receipt as sent. */
export type SignedReceipt =
  | { format: "eip712"; payload: ReceiptPayload & { transaction: string }; signature: Hex }
  | { format: "jws"; signature: string };

/** The per-route declaration (interface "Configuration per route"). */
export type OfferReceiptDeclaration = {
  /** Put the settlement transaction hash in receipts; default false (privacy). */
  includeTxHash?: boolean | undefined;
  /** Offer lifetime; default each accept entry's `maxTimeoutSeconds`, then 300. */
  offerValiditySeconds?: number | undefined;
};

/** EIP-712 domains: fixed, chainId 1 whatever the payment network (§3.4). */
export const OFFER_DOMAIN = { name: "x402 offer", version: "1", chainId: 1 } as const;
export const RECEIPT_DOMAIN = { name: "x402 receipt", version: "1", chainId: 1 } as const;

export const OFFER_TYPES = {
  Offer: [
    { name: "version", type: "uint256" },
    { name: "resourceUrl", type: "string" },
    { name: "scheme", type: "string" },
    { name: "network", type: "string" },
    { name: "asset", type: "string" },
    { name: "payTo", type: "string" },
    { name: "amount", type: "string" },
    { name: "validUntil", type: "uint256" },
  ],
} as const;

export const RECEIPT_TYPES = {
  Receipt: [
    { name: "version", type: "uint256" },
    { name: "network", type: "string" },
    { name: "resourceUrl", type: "string" },
    { name: "payer", type: "string" },
    { name: "issuedAt", type: "uint256" },
    { name: "transaction", type: "string" },
  ],
} as const;

/** The JSON Schemas published next to `info` (same shape as the official extension's). */
export const OFFER_INFO_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    offers: {
      type: "array",
      items: {
        type: "object",
        properties: {
          format: { type: "string" },
          acceptIndex: { type: "integer" },
          payload: {
            type: "object",
            properties: {
              version: { type: "integer" },
              resourceUrl: { type: "string" },
              scheme: { type: "string" },
              network: { type: "string" },
              asset: { type: "string" },
              payTo: { type: "string" },
              amount: { type: "string" },
              validUntil: { type: "integer" },
            },
            required: ["version", "resourceUrl", "scheme", "network", "asset", "payTo", "amount"],
          },
          signature: { type: "string" },
        },
        required: ["format", "signature"],
      },
    },
  },
  required: ["offers"],
} as const;

export const RECEIPT_INFO_SCHEMA = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  properties: {
    receipt: {
      type: "object",
      properties: {
        format: { type: "string" },
        payload: {
          type: "object",
          properties: {
            version: { type: "integer" },
            network: { type: "string" },
            resourceUrl: { type: "string" },
            payer: { type: "string" },
            issuedAt: { type: "integer" },
            transaction: { type: "string" },
          },
          required: ["version", "network", "resourceUrl", "payer", "issuedAt"],
        },
        signature: { type: "string" },
      },
      required: ["format", "signature"],
    },
    // The offer a JWS receipt's offerHash names, as it was sent (decisions §18): the client keeps both.
    offer: {
      type: "object",
      properties: { format: { type: "string" }, acceptIndex: { type: "integer" }, signature: { type: "string" } },
      required: ["format", "signature"],
    },
  },
  required: ["receipt"],
} as const;

/** The typed data of an offer, numbers as uint256. */
export function offerTypedData(payload: OfferPayload) {
  return {
    domain: OFFER_DOMAIN,
    types: OFFER_TYPES,
    primaryType: "Offer" as const,
    message: {
      version: BigInt(payload.version),
      resourceUrl: payload.resourceUrl,
      scheme: payload.scheme,
      network: payload.network,
      asset: payload.asset,
      payTo: payload.payTo,
      amount: payload.amount,
      validUntil: BigInt(payload.validUntil ?? 0),
    },
  };
}

/** The typed data of a receipt; an absent transaction is the empty string. */
export function receiptTypedData(payload: ReceiptPayload) {
  return {
    domain: RECEIPT_DOMAIN,
    types: RECEIPT_TYPES,
    primaryType: "Receipt" as const,
    message: {
      version: BigInt(payload.version),
      network: payload.network,
      resourceUrl: payload.resourceUrl,
      payer: payload.payer,
      issuedAt: BigInt(payload.issuedAt),
      transaction: payload.transaction ?? "",
    },
  };
}

/** The EIP-712 digest of an offer. */
export function hashOffer(payload: OfferPayload): Hex {
  return hashTypedData(offerTypedData(payload));
}

/** The EIP-712 digest of a receipt. */
export function hashReceipt(payload: ReceiptPayload): Hex {
  return hashTypedData(receiptTypedData(payload));
}

const utf8 = new TextEncoder();

/**
 * The `offerHash` of a receipt (decisions §18, x402 issue 3006): SHA-256 of the offer's compact JWS string
 * exactly as sent, `0x`-prefixed lowercase hex. Only JWS offers have one.
 */
export function offerHashOf(offer: SignedOffer): Hex | undefined {
  return offer.format === "jws" && typeof offer.signature === "string" ? sha256(utf8.encode(offer.signature), "hex") : undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Building payloads

/** One `accepts[]` entry as the offer needs it (v2 field names). */
export type AcceptTerms = {
  readonly scheme: string;
  readonly network: string;
  readonly asset: string;
  readonly payTo: string;
  readonly amount: string;
  readonly maxTimeoutSeconds?: number | undefined;
};

/** The offer validity of one accept entry: the route's value, else the entry's `maxTimeoutSeconds`, else 300. */
export function offerValiditySeconds(declaration: OfferReceiptDeclaration, accept: AcceptTerms): number {
  const candidates = [declaration.offerValiditySeconds, accept.maxTimeoutSeconds];
  for (const value of candidates) if (isPositiveInteger(value)) return value;
  return DEFAULT_OFFER_VALIDITY_SECONDS;
}

const isPositiveInteger = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v > 0;

/** The offer payload of one accept entry; a v1 network name becomes CAIP-2. */
export function buildOfferPayload(
  resourceUrl: string,
  accept: AcceptTerms,
  options: { nowSeconds: number; declaration: OfferReceiptDeclaration },
): OfferPayload {
  return {
    version: OFFER_RECEIPT_VERSION,
    resourceUrl,
    scheme: accept.scheme,
    network: toCaip2Network(accept.network),
    asset: accept.asset,
    payTo: accept.payTo,
    amount: accept.amount,
    validUntil: options.nowSeconds + offerValiditySeconds(options.declaration, accept),
  };
}

/** The receipt payload; the transaction only when the route includes it and there is one; the offer's hash when given. */
export function buildReceiptPayload(input: {
  resourceUrl: string;
  payer: string;
  network: string;
  transaction?: string | undefined;
  includeTxHash: boolean;
  nowSeconds: number;
  offerHash?: Hex | undefined;
}): ReceiptPayload {
  const payload: ReceiptPayload = {
    version: OFFER_RECEIPT_VERSION,
    network: toCaip2Network(input.network),
    resourceUrl: input.resourceUrl,
    payer: input.payer,
    issuedAt: input.nowSeconds,
  };
  if (input.includeTxHash && input.transaction) payload.transaction = input.transaction;
  if (input.offerHash !== undefined) payload.offerHash = input.offerHash;
  return payload;
}

/** Reads a declaration leniently: unknown members ignored, wrong types treated as absent. */
export function readDeclaration(value: unknown): OfferReceiptDeclaration {
  if (!isRecord(value)) return {};
  const out: OfferReceiptDeclaration = {};
  if (typeof value.includeTxHash === "boolean") out.includeTxHash = value.includeTxHash;
  if (isPositiveInteger(value.offerValiditySeconds)) out.offerValiditySeconds = value.offerValiditySeconds;
  return out;
}
