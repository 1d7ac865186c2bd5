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
 *   public base URL plus the request path, else the request URL without its query.
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
  readDeclaration,
  RECEIPT_INFO_SCHEMA,
  type SignedOffer,
  type SignedReceipt,
} from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import type { OfferReceiptIssuer } from "./signers.ts";

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
/** The `extensions["offer-receipt"]` of a settlement response. */
export type ReceiptExtension = { info: { receipt: SignedReceipt }; schema: typeof RECEIPT_INFO_SCHEMA };

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
  input: { resourceUrl: string; payer: string | undefined; network: string; transaction?: string | undefined; payTo?: string | undefined },
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

/** The settlement-response entry for a receipt. */
export function receiptExtension(receipt: SignedReceipt): ReceiptExtension {
  return { info: { receipt }, schema: RECEIPT_INFO_SCHEMA };
}

// Library errors never reach logs verbatim: they may carry key material or RPC URLs.
const errorName = (error: unknown) => (error instanceof Error ? error.name : typeof error);

type RequestState = { readonly declaration: OfferReceiptDeclaration; readonly resourceUrl: string | undefined };

const requestOf = (transportContext: unknown): HTTPRequestContext | undefined =>
  (transportContext as { request?: HTTPRequestContext } | undefined)?.request;

const urlOf = (request: HTTPRequestContext | undefined): string | undefined => {
  try {
    return request?.adapter.getUrl();
  } catch {
    return undefined;
  }
};

/** The `@x402/core` resource-server extension; register it once with `registerExtension`. */
export function createOfferReceiptExtension(signing: OfferReceiptSigning): ResourceServerExtension {
  const states = new WeakMap<object, RequestState>();
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
      const offers = resourceUrl === undefined ? [] : await signOffers(signing, resourceUrl, context.requirements, config);
      const out = offersExtension(offers);
      states.set(out, { declaration: config, resourceUrl });
      return out;
    },
    async enrichSettlementResponse(declaration: unknown, context: SettleResultContext) {
      if (!context.result.success) return undefined;
      const prior = stateOf(declaration);
      const config = prior?.declaration ?? readDeclaration(declaration);
      const resourceUrl = prior?.resourceUrl ??
        resolveResourceUrl({ requestUrl: urlOf(requestOf(context.transportContext)), publicBaseUrl: signing.publicBaseUrl });
      if (resourceUrl === undefined) return undefined;
      const receipt = await signReceipt(
        signing,
        {
          resourceUrl,
          payer: context.result.payer,
          network: context.result.network,
          transaction: context.result.transaction,
          payTo: context.requirements.payTo,
        },
        config,
      );
      return receipt === undefined ? undefined : receiptExtension(receipt);
    },
  };
}
