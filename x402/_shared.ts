/** What the x402 fetch wrapper's v2 and v1 paths share: the request's state and the answers both give. */
import { decodePaymentRequiredHeader } from "@x402/core/http";
import type { FacilitatorClient, HTTPAdapter, HTTPResponseInstructions, RouteConfig, x402HTTPResourceServer } from "@x402/core/server";
import type { PaymentRequired } from "@x402/core/types";
import { OFFER_RECEIPT, type SignedOffer } from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import type { OfferReceiptSigning } from "./extension.ts";

/** x402 v1 (`X-PAYMENT`): the facilitator to verify and settle with, and the receipt signer. */
export type V1Options = { readonly facilitator: FacilitatorClient; readonly signing: OfferReceiptSigning };

/** What a paid request reads: the resource server, the application, the route core matched, the v1 options. */
export type PayState = {
  readonly httpServer: x402HTTPResourceServer;
  readonly handle: (request: Request) => Response | Promise<Response>;
  readonly log?: Logger | undefined;
  /** Core matches routes privately; its protected-request hook is the one place that hands us the match. */
  readonly routeOf: WeakMap<HTTPAdapter, RouteConfig>;
  readonly initialize: () => Promise<void>;
  readonly v1?: V1Options | undefined;
};

export const JSON_HEADERS = { "content-type": "application/json" };

export function render(instructions: HTTPResponseInstructions): Response {
  const headers = new Headers(instructions.headers);
  const body = instructions.isHtml || typeof instructions.body === "string"
    ? String(instructions.body ?? "")
    : JSON.stringify(instructions.body ?? {});
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  return new Response(body, { status: instructions.status, headers });
}

export function paymentRequiredOf(instructions: HTTPResponseInstructions): PaymentRequired | undefined {
  const header = Object.entries(instructions.headers).find(([k]) => k.toLowerCase() === "payment-required")?.[1];
  if (header === undefined) return undefined;
  try {
    return decodePaymentRequiredHeader(header);
  } catch {
    return undefined;
  }
}

/** Facilitator reasons are protocol codes (`insufficient_funds`); anything else is replaced, never echoed. */
export function reasonCode(reason: string | undefined): string {
  return reason !== undefined && /^[a-z0-9_]{1,64}$/.test(reason) ? reason : "invalid_payment";
}

export function failure(status: number, error: string, code: string): Response {
  return new Response(JSON.stringify({ error, code }), { status, headers: JSON_HEADERS });
}

export const errorName = (error: unknown) => (error instanceof Error ? error.name : typeof error);

/** The signed offers of a PaymentRequired this server built. */
export function extractSignedOffers(paymentRequired: { extensions?: Record<string, unknown> | undefined }): SignedOffer[] {
  const entry = paymentRequired.extensions?.[OFFER_RECEIPT] as { info?: { offers?: unknown } } | undefined;
  return Array.isArray(entry?.info?.offers) ? entry.info.offers as SignedOffer[] : [];
}
