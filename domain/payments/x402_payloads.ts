/**
 * The x402 `offer-receipt` extension's wire model (x402_offer_receipt.md §1.2, §3): offer and receipt
 * payloads, their EIP-712 typed data and JWS (JCS) bytes, the `extensions` entries they travel in, the
 * resourceUrl → did:web mapping, and the receipt as a user-review proof. Byte-compatible with
 * `@x402/extensions` 2.27; x402_vectors.json pins it. Pure: time comes in as arguments.
 */
import type { Hex } from "viem";
import { buildReviewData, type ReviewData } from "../reviews/mod.ts";
import { hashTypedData, sha256 } from "viem/utils";
import { base64UrlDecode, base64UrlEncode, normalizeDomain } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";

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

// ---------------------------------------------------------------------------------------------------------------
// JWS bytes

/**
 * RFC 8785 (JCS) for the JSON these payloads hold: keys sorted by UTF-16 code units, no whitespace,
 * strings and numbers as ECMAScript serializes them. `undefined` members are dropped.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("Non-finite numbers have no JSON form");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v === undefined ? null : v)).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
  }
  throw new TypeError(`Unsupported JSON value of type ${typeof value}`);
}

const utf8 = new TextEncoder();

/** The JWS algorithms offers and receipts may use. */
export type X402JwsAlgorithm = "ES256" | "ES256K" | "EdDSA";

/** A public JWK as carried in a JWS header (`jwk`) and published in did.json. */
export type HeaderJwk = { kty: string; crv: string; x: string; y?: string | undefined; alg?: string | undefined };

/**
 * `b64u(header).b64u(JCS(payload))`. The protected header is `{alg, kid}` in that order, as the official
 * issuers write it, then `jwk` when given (decisions §18, x402 issue 2696): the public key `kid` resolves to,
 * so a verifier can check the signature before it fetches anything; a verifier still resolves `kid` and
 * refuses a `jwk` that is not that key.
 */
export function jwsSigningInput(alg: X402JwsAlgorithm, kid: string, payload: object, jwk?: HeaderJwk | undefined): string {
  const protectedHeader: Record<string, unknown> = { alg, kid };
  if (jwk !== undefined) protectedHeader.jwk = publicJwkMembers(jwk);
  const header = base64UrlEncode(utf8.encode(JSON.stringify(protectedHeader)));
  return `${header}.${base64UrlEncode(utf8.encode(canonicalJson(payload)))}`;
}

/** The public members of a JWK in RFC 7638 order (`crv`, `kty`, `x`, `y`), then `alg`: never `d`. */
function publicJwkMembers(jwk: HeaderJwk): HeaderJwk {
  const out: HeaderJwk = { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  if (jwk.y !== undefined) out.y = jwk.y;
  if (jwk.alg !== undefined) out.alg = jwk.alg;
  return out;
}

/**
 * The `offerHash` of a receipt (decisions §18, x402 issue 3006): SHA-256 of the offer's compact JWS string
 * exactly as sent, `0x`-prefixed lowercase hex. Only JWS offers have one.
 */
export function offerHashOf(offer: SignedOffer): Hex | undefined {
  return offer.format === "jws" && typeof offer.signature === "string" ? sha256(utf8.encode(offer.signature), "hex") : undefined;
}

/** The parts of a compact JWS, decoded; undefined unless it is well formed. */
export type DecodedJws = {
  readonly header: Record<string, unknown>;
  readonly payload: Record<string, unknown>;
  readonly signingInput: Uint8Array;
  readonly signature: Uint8Array;
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Splits and decodes a compact JWS; undefined for anything malformed. */
export function decodeCompactJws(jws: unknown): DecodedJws | undefined {
  if (typeof jws !== "string") return undefined;
  const parts = jws.split(".");
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return undefined;
  const [h, p, s] = parts as [string, string, string];
  const header = decodeJsonPart(h);
  const payload = decodeJsonPart(p);
  const signature = base64UrlDecode(s);
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  return { header, payload, signingInput: utf8.encode(`${h}.${p}`), signature };
}

function decodeJsonPart(part: string): Record<string, unknown> | undefined {
  const bytes = base64UrlDecode(part);
  if (bytes === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
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

// ---------------------------------------------------------------------------------------------------------------
// Networks

/** v1 network names and their CAIP-2 ids (EVM); the names the official package knows. */
const V1_EVM_CHAIN_IDS: Readonly<Record<string, number>> = {
  ethereum: 1,
  sepolia: 11155111,
  abstract: 2741,
  "abstract-testnet": 11124,
  "base-sepolia": 84532,
  base: 8453,
  "avalanche-fuji": 43113,
  avalanche: 43114,
  iotex: 4689,
  sei: 1329,
  "sei-testnet": 1328,
  polygon: 137,
  "polygon-amoy": 80002,
  peaq: 3338,
  story: 1514,
  educhain: 41923,
  "skale-base-sepolia": 324705682,
};
const V1_SOLANA: Readonly<Record<string, string>> = {
  solana: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp",
  "solana-devnet": "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1",
  "solana-testnet": "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z",
};

/** A v1 network name as CAIP-2; a CAIP-2 id or an unknown name is returned unchanged. */
export function toCaip2Network(network: string): string {
  if (network.includes(":")) return network;
  const key = network.toLowerCase();
  const chainId = V1_EVM_CHAIN_IDS[key];
  if (chainId !== undefined) return `eip155:${chainId}`;
  return V1_SOLANA[key] ?? network;
}

/** A CAIP-2 id as its v1 name when there is one, for v1 `accepts[]`; otherwise unchanged. */
export function toV1Network(network: string): string {
  for (const [name, id] of Object.entries(V1_EVM_CHAIN_IDS)) if (`eip155:${id}` === network) return name;
  for (const [name, id] of Object.entries(V1_SOLANA)) if (id === network) return name;
  return network;
}

const CAIP2 = /^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$/;

/** Tells whether a network id is CAIP-2. */
export function isCaip2(network: unknown): network is string {
  return typeof network === "string" && CAIP2.test(network);
}

// ---------------------------------------------------------------------------------------------------------------
// Resource URL → did:web

/**
 * The did:web of the service a resource URL belongs to: the URL's host, lowercased, without a trailing
 * dot or a leading `www.`, IDNA as the URL parser applies it, and a non-default port kept the W3C way
 * (`did:web:localhost%3A4021`), so the subject matches the `did:web` kid and did.json location of the
 * same server. Path, query and fragment never count.
 */
export function resourceUrlToDidWeb(resourceUrl: string): Result<string, "INVALID_INPUT"> {
  let url: URL;
  try {
    url = new URL(resourceUrl);
  } catch {
    return fail("INVALID_INPUT", "resourceUrl is not a URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return fail("INVALID_INPUT", "resourceUrl must be http(s)");
  const host = normalizeDomain(url.hostname);
  if (host === "" || host.startsWith("[")) return fail("INVALID_INPUT", "resourceUrl has no domain name");
  return ok(url.port === "" ? `did:web:${host}` : `did:web:${host}%3A${url.port}`);
}

/** The canonical form of a resource URL that offers and receipts sign: origin plus path, no query or fragment. */
export function canonicalResourceUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Receipts as review proofs

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
): Result<UserReviewData, "INVALID_INPUT"> {
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
  return review.ok ? review : fail("INVALID_INPUT", review.message);
}