/**
 * The `offer-receipt` resource-server extension for `@x402/core` 2.27, wire-compatible with
 * `@x402/extensions` and without the defects of x402_offer_receipt.md §2.6:
 *
 * - core aliases the route's `extensions` into the 402 and then overwrites our entry with the offers,
 *   so the declaration the settle hook receives is our own offers object, not `{includeTxHash}`. We
 *   remember the declaration (and the URL the offers signed) against the object we return, so
 *   `includeTxHash` is honoured and the receipt signs the same canonical URL as the offers;
 * - `offers` is a dynamic info field (fresh `validUntil`, randomized ES256), excluded from echo checks;
 * - we always return a fresh `{info, schema}` for the 402, so the declaration never leaks into it,
 *   even when no offer could be signed; a receipt that cannot be signed is simply left out;
 * - the signed URL is one canonical public URL: the route's explicit `resource`, else the configured
 *   public base URL plus the request path, else the request URL without its query;
 * - a JWS receipt names the offer it settles (decisions §18, x402 issue 3006): `offerHash` is the SHA-256 of
 *   that offer's compact JWS. The offer is the one the client echoed back in its payment (what it saw), when
 *   that is ours and states the accepted terms; else the one this request's 402 signed for those terms. The
 *   settlement entry carries that offer beside the receipt (`info.offer`), so the client holds both.
 */
import type { HTTPRequestContext } from "@x402/core/server";
import type { PaymentRequiredContext, ResourceServerExtension, SettleResultContext } from "@x402/core/types";
import {
  type AcceptTerms,
  buildOfferPayload,
  buildReceiptPayload,
  canonicalResourceUrl,
  OFFER_INFO_SCHEMA,
  OFFER_RECEIPT,
  type OfferReceiptDeclaration,
  offerHashOf,
  readDeclaration,
  readOfferPayload,
  RECEIPT_INFO_SCHEMA,
  type SignedOffer,
  type SignedReceipt,
  toCaip2Network,
} from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import { base64UrlDecode } from "../domain/did/mod.ts";
import { type OfferReceiptIssuer, verifyWithPublicJwk } from "./signers.ts";

/** The route-level declare call: spread the result into `RouteConfig.extensions`. */
export function declareOfferReceiptExtension(
  config: OfferReceiptDeclaration = {},
): { [OFFER_RECEIPT]: OfferReceiptDeclaration } {
  if (config.includeTxHash !== undefined && typeof config.includeTxHash !== "boolean") {
    throw new TypeError("includeTxHash must be a boolean");
  }
  const validity = config.offerValiditySeconds;
  if (validity !== undefined && (!Number.isSafeInteger(validity) || validity <= 0)) {
    throw new RangeError("offerValiditySeconds must be a positive integer");
  }
  const declaration: OfferReceiptDeclaration = { includeTxHash: config.includeTxHash ?? false };
  if (validity !== undefined) declaration.offerValiditySeconds = validity;
  return { [OFFER_RECEIPT]: declaration };
}

/** How offers and receipts are signed; shared by the core extension and the v1 path. */
export type OfferReceiptSigning = {
  readonly issuer: OfferReceiptIssuer;
  /** The server's public origin (and optional path prefix), e.g. `https://api.example.com`. */
  readonly publicBaseUrl?: string | undefined;
  /** Unix seconds; default the system clock. */
  readonly nowSeconds?: (() => number) | undefined;
  readonly log?: Logger | undefined;
};

/** The `extensions["offer-receipt"]` of a 402. */
export type OffersExtension = { info: { offers: SignedOffer[] }; schema: typeof OFFER_INFO_SCHEMA };
/** The `extensions["offer-receipt"]` of a settlement response; `offer` is the one a JWS receipt's offerHash names. */
export type ReceiptExtension = { info: { receipt: SignedReceipt; offer?: SignedOffer | undefined }; schema: typeof RECEIPT_INFO_SCHEMA };

const systemNow = () => Math.floor(Date.now() / 1000);

/** The one URL offers and receipts of a request sign. */
export function resolveResourceUrl(input: {
  readonly requestUrl?: string | undefined;
  readonly publicBaseUrl?: string | undefined;
  /** The route's explicit `resource`. */
  readonly override?: string | undefined;
}): string | undefined {
  if (input.override !== undefined && input.override !== "") return input.override;
  if (input.requestUrl === undefined) return undefined;
  if (input.publicBaseUrl === undefined) return canonicalResourceUrl(input.requestUrl);
  try {
    const base = new URL(input.publicBaseUrl);
    const path = new URL(input.requestUrl).pathname;
    return `${base.origin}${base.pathname.replace(/\/+$/, "")}${path}`;
  } catch {
    return undefined;
  }
}

/**
 * Signs one offer per accept entry, in order, each with its `acceptIndex`. An entry that cannot be
 * signed is left out (and logged without the error text); an entry paying the signing key's own
 * address is refused, because the signing key must never be the payTo wallet.
 */
export async function signOffers(
  signing: OfferReceiptSigning,
  resourceUrl: string,
  accepts: readonly AcceptTerms[],
  declaration: OfferReceiptDeclaration,
): Promise<SignedOffer[]> {
  const nowSeconds = (signing.nowSeconds ?? systemNow)();
  const own = signing.issuer.address?.toLowerCase();
  const signed = await Promise.all(accepts.map(async (accept, acceptIndex) => {
    if (own !== undefined && accept.payTo.toLowerCase() === own) {
      signing.log?.warn("x402.offer.refused", { acceptIndex, reason: "signing key is the payTo wallet" });
      return undefined;
    }
    try {
      const payload = buildOfferPayload(resourceUrl, accept, { nowSeconds, declaration });
      const { format, ...rest } = await signing.issuer.signOffer(payload);
      return { format, acceptIndex, ...rest } as SignedOffer;
    } catch (error) {
      signing.log?.error("x402.offer.sign_failed", { acceptIndex, error: errorName(error) });
      return undefined;
    }
  }));
  return signed.filter((o) => o !== undefined);
}

/**
 * Signs the receipt of a settled payment; undefined when it cannot be (no payer, signer failure) or must not
 * be: a payment to the signing key's own address (the key is never the payTo wallet, as for offers).
 */
export async function signReceipt(
  signing: OfferReceiptSigning,
  input: {
    resourceUrl: string;
    payer: string | undefined;
    network: string;
    transaction?: string | undefined;
    payTo?: string | undefined;
    /** The offer settled: a JWS receipt carries its offerHash (an EIP-712 receipt has no field for it). */
    offer?: SignedOffer | undefined;
  },
  declaration: OfferReceiptDeclaration,
): Promise<SignedReceipt | undefined> {
  if (input.payer === undefined || input.payer === "") return undefined;
  const own = signing.issuer.address?.toLowerCase();
  if (own !== undefined && input.payTo?.toLowerCase() === own) {
    signing.log?.warn("x402.receipt.refused", { reason: "signing key is the payTo wallet" });
    return undefined;
  }
  try {
    const payload = buildReceiptPayload({
      resourceUrl: input.resourceUrl,
      payer: input.payer,
      network: input.network,
      transaction: input.transaction,
      includeTxHash: declaration.includeTxHash === true,
      nowSeconds: (signing.nowSeconds ?? systemNow)(),
      offerHash: signing.issuer.format === "jws" && input.offer !== undefined ? offerHashOf(input.offer) : undefined,
    });
    return await signing.issuer.signReceipt(payload);
  } catch (error) {
    signing.log?.error("x402.receipt.sign_failed", { error: errorName(error) });
    return undefined;
  }
}

/** The 402 entry for some offers (possibly none). */
export function offersExtension(offers: SignedOffer[]): OffersExtension {
  return { info: { offers }, schema: OFFER_INFO_SCHEMA };
}

/** The settlement-response entry for a receipt, with the offer its offerHash names when there is one. */
export function receiptExtension(receipt: SignedReceipt, offer?: SignedOffer | undefined): ReceiptExtension {
  return { info: offer === undefined ? { receipt } : { receipt, offer }, schema: RECEIPT_INFO_SCHEMA };
}

/** The offers a client echoed back in its payment's `extensions` (v2 clients keep the `info` they were sent). */
export function echoedOffers(paymentPayload: unknown): unknown[] {
  const extensions = (paymentPayload as { extensions?: Record<string, unknown> } | undefined)?.extensions;
  const entry = extensions?.[OFFER_RECEIPT] as { info?: { offers?: unknown } } | undefined;
  const offers = entry?.info?.offers;
  return Array.isArray(offers) ? offers.slice(0, MAX_ECHOED_OFFERS) : [];
}

/** A payment echoing more offers than this is not looked through further (each one costs a signature check). */
const MAX_ECHOED_OFFERS = 16;

/**
 * The offer a receipt settles (JWS issuers only; undefined otherwise): among the offers the client echoed,
 * the first one that is ours (our kid, our signature), states the accepted terms for this resource and has not
 * expired; else the offer signed for those terms in this request's own 402.
 */
export async function settledOffer(
  signing: OfferReceiptSigning,
  input: { echoed: readonly unknown[]; signed: readonly SignedOffer[]; accepted: AcceptTerms; resourceUrl: string },
): Promise<SignedOffer | undefined> {
  const issuer = signing.issuer;
  if (issuer.format !== "jws") return undefined;
  const now = (signing.nowSeconds ?? systemNow)();
  const states = (offer: unknown) => {
    const payload = readOfferPayload(offer);
    if (!payload.ok) return false;
    const p = payload.value;
    const a = input.accepted;
    // Still valid now: a receipt issued after its offer expired is one its own binding check refuses (an old 402's
    // offer echoed back by a client that kept it).
    if (p.validUntil !== 0 && now > p.validUntil) return false;
    return p.resourceUrl === input.resourceUrl && p.scheme === a.scheme && p.network === toCaip2Network(a.network) &&
      p.asset.toLowerCase() === a.asset.toLowerCase() && p.payTo.toLowerCase() === a.payTo.toLowerCase() && p.amount === a.amount;
  };
  for (const offer of input.echoed) {
    if (!isJwsOffer(offer) || offer.signature.length > MAX_OFFER_JWS_LENGTH || !states(offer)) continue;
    if (await isOwnJws(issuer, offer.signature)) return { format: "jws", acceptIndex: offer.acceptIndex, signature: offer.signature };
  }
  return input.signed.find((offer) => offer.format === "jws" && states(offer));
}

const isJwsOffer = (offer: unknown): offer is { format: "jws"; signature: string; acceptIndex?: number | undefined } =>
  typeof offer === "object" && offer !== null && (offer as { format?: unknown }).format === "jws" &&
  typeof (offer as { signature?: unknown }).signature === "string" &&
  ((offer as { acceptIndex?: unknown }).acceptIndex === undefined || Number.isSafeInteger((offer as { acceptIndex?: unknown }).acceptIndex));

/** Whether a compact JWS was signed by this issuer: its kid, and a signature its public key verifies. */
async function isOwnJws(issuer: OfferReceiptIssuer, jws: string): Promise<boolean> {
  if (issuer.publicJwk === undefined) return false;
  const parts = jws.split(".");
  if (parts.length !== 3) return false;
  const headerBytes = base64UrlDecode(parts[0]!);
  const signature = base64UrlDecode(parts[2]!);
  if (headerBytes === undefined || signature === undefined) return false;
  let header: { kid?: unknown; alg?: unknown };
  try {
    header = JSON.parse(new TextDecoder().decode(headerBytes)) as typeof header;
  } catch {
    return false;
  }
  if (header.kid !== issuer.kid || header.alg !== issuer.publicJwk.alg) return false;
  return await verifyWithPublicJwk(issuer.publicJwk, new TextEncoder().encode(`${parts[0]}.${parts[1]}`), signature);
}

/** Our offers are well under 2 KiB; a longer echoed string is not ours and is not decoded. */
const MAX_OFFER_JWS_LENGTH = 4096;

// Library errors never reach logs verbatim: they may carry key material or RPC URLs.
const errorName = (error: unknown) => (error instanceof Error ? error.name : typeof error);

type RequestState = {
  readonly declaration: OfferReceiptDeclaration;
  readonly resourceUrl: string | undefined;
  /** The offers this request's 402 signed. */
  readonly offers: readonly SignedOffer[];
};

const requestOf = (transportContext: unknown): HTTPRequestContext | undefined =>
  (transportContext as { request?: HTTPRequestContext } | undefined)?.request;

const urlOf = (request: HTTPRequestContext | undefined): string | undefined => {
  try {
    return request?.adapter.getUrl();
  } catch {
    return undefined;
  }
};

/**
 * {@link signOffers}, kept for the Unix second they were signed in: an offer's `issuedAt` and `validUntil` count in
 * seconds, so the offers of one resource and terms signed again within the second say the same. A 402 is answered to
 * anyone, and each one asked the issuer for a signature: with a remote key (a KMS, billed per Sign and sharing its
 * quota with the service's transactions, or an HSM's queue) a flood of unpaid requests was a flood of signatures. Now
 * it is at most one signature per offer a second.
 */
function offersOfTheSecond(signing: OfferReceiptSigning) {
  let second: number | undefined;
  let kept = new Map<string, Promise<SignedOffer[]>>();
  return (resourceUrl: string, accepts: readonly AcceptTerms[], declaration: OfferReceiptDeclaration): Promise<SignedOffer[]> => {
    const now = (signing.nowSeconds ?? systemNow)();
    if (now !== second) {
      second = now;
      kept = new Map();
    }
    const key = JSON.stringify([resourceUrl, accepts, declaration]);
    let offers = kept.get(key);
    if (offers === undefined) kept.set(key, offers = signOffers(signing, resourceUrl, accepts, declaration));
    return offers;
  };
}

/** The `@x402/core` resource-server extension; register it once with `registerExtension`. */
export function createOfferReceiptExtension(signing: OfferReceiptSigning): ResourceServerExtension {
  const states = new WeakMap<object, RequestState>();
  const offersNow = offersOfTheSecond(signing);
  const stateOf = (declaration: unknown) =>
    typeof declaration === "object" && declaration !== null ? states.get(declaration) : undefined;

  return {
    key: OFFER_RECEIPT,
    dynamicInfoFields: ["offers"],
    async enrichPaymentRequiredResponse(declaration: unknown, context: PaymentRequiredContext) {
      // A second 402 on the same request (a refused payment) sees our own earlier output here.
      const prior = stateOf(declaration);
      const config = prior?.declaration ?? readDeclaration(declaration);
      const request = requestOf(context.transportContext);
      const requestUrl = urlOf(request);
      const declared = context.resourceInfo?.url;
      const resourceUrl = prior?.resourceUrl ?? resolveResourceUrl({
        requestUrl,
        publicBaseUrl: signing.publicBaseUrl,
        override: declared !== undefined && declared !== requestUrl ? declared : undefined,
      });
      const offers = resourceUrl === undefined ? [] : await offersNow(resourceUrl, context.requirements, config);
      const out = offersExtension(offers);
      states.set(out, { declaration: config, resourceUrl, offers });
      return out;
    },
    async enrichSettlementResponse(declaration: unknown, context: SettleResultContext) {
      if (!context.result.success) return undefined;
      const prior = stateOf(declaration);
      const config = prior?.declaration ?? readDeclaration(declaration);
      const resourceUrl = prior?.resourceUrl ??
        resolveResourceUrl({ requestUrl: urlOf(requestOf(context.transportContext)), publicBaseUrl: signing.publicBaseUrl });
      if (resourceUrl === undefined) return undefined;
      const offer = await settledOffer(signing, {
        echoed: echoedOffers(context.paymentPayload),
        signed: prior?.offers ?? [],
        accepted: context.requirements,
        resourceUrl,
      });
      const receipt = await signReceipt(
        signing,
        {
          resourceUrl,
          payer: context.result.payer,
          network: context.result.network,
          transaction: context.result.transaction,
          payTo: context.requirements.payTo,
          offer,
        },
        config,
      );
      return receipt === undefined ? undefined : receiptExtension(receipt, offer);
    },
  };
}
