/**
 * x402 v1 (`X-PAYMENT`, core emits v2 only): the v1 402 body, and a v1 payment verified and settled with the
 * facilitator directly, its receipt signed by the same issuer over the same canonical URL.
 */
import { encodePaymentResponseHeader } from "@x402/core/http";
import { type HTTPRequestContext, withPrivateCacheControl } from "@x402/core/server";
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import { OFFER_RECEIPT, readDeclaration, toCaip2Network, toV1Network } from "../domain/payments/mod.ts";
import { receiptExtension, resolveResourceUrl, settledOffer, signReceipt } from "./extension.ts";
import { extractSignedOffers, failure, JSON_HEADERS, type PayState, paymentRequiredOf, reasonCode, render, type V1Options } from "./_shared.ts";

export type V1Requirements = {
  scheme: string;
  network: string;
  maxAmountRequired: string;
  resource: string;
  description: string;
  mimeType: string;
  payTo: string;
  maxTimeoutSeconds: number;
  asset: string;
  extra: Record<string, unknown>;
};

export function toV1Requirements(accept: PaymentRequirements, paymentRequired: PaymentRequired): V1Requirements {
  return {
    scheme: accept.scheme,
    network: toV1Network(accept.network),
    maxAmountRequired: accept.amount,
    resource: paymentRequired.resource.url,
    description: paymentRequired.resource.description ?? "",
    mimeType: paymentRequired.resource.mimeType ?? "",
    payTo: accept.payTo,
    maxTimeoutSeconds: accept.maxTimeoutSeconds,
    asset: accept.asset,
    extra: accept.extra ?? {},
  };
}

export function v1Body(paymentRequired: PaymentRequired, error: string | undefined) {
  return {
    x402Version: 1,
    error: error ?? "Payment required",
    accepts: paymentRequired.accepts.map((a) => toV1Requirements(a, paymentRequired)),
    ...(paymentRequired.extensions === undefined ? {} : { extensions: paymentRequired.extensions }),
  };
}

export function v1PaymentRequired(paymentRequired: PaymentRequired, error: string): Response {
  return new Response(JSON.stringify(v1Body(paymentRequired, error)), {
    status: 402,
    headers: { ...JSON_HEADERS, "cache-control": "no-store" },
  });
}

export function v1SettleResponse(settled: SettleResponse): SettleResponse {
  const out: SettleResponse = { success: settled.success, transaction: settled.transaction ?? "", network: settled.network };
  if (settled.payer !== undefined) out.payer = settled.payer;
  if (!settled.success) out.errorReason = reasonCode(settled.errorReason);
  return out;
}

export type V1Payment = { x402Version: 1; scheme: string; network: string; payload: Record<string, unknown> };

export function decodeV1Payment(header: string): V1Payment | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(header)) return undefined;
  try {
    const bytes = Uint8Array.from(atob(header), (c) => c.charCodeAt(0));
    const parsed = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, unknown>;
    if (parsed.x402Version !== 1 || typeof parsed.scheme !== "string" || typeof parsed.network !== "string") return undefined;
    if (typeof parsed.payload !== "object" || parsed.payload === null) return undefined;
    return parsed as V1Payment;
  } catch {
    return undefined;
  }
}

/**
 * The terms a v1 payment commits to, where its scheme carries them: an EIP-3009 style `authorization`
 * (`to`, `value`, and `asset` when the scheme names it). A payload without them matches on scheme and
 * network alone.
 */
export function v1PaymentTerms(payment: V1Payment): { payTo?: string | undefined; amount?: string | undefined; asset?: string | undefined } {
  const authorization = payment.payload.authorization;
  if (typeof authorization !== "object" || authorization === null) return {};
  const field = (name: string) => {
    const value = (authorization as Record<string, unknown>)[name];
    return typeof value === "string" ? value : typeof value === "number" || typeof value === "bigint" ? String(value) : undefined;
  };
  return { payTo: field("to"), amount: field("value"), asset: field("asset") };
}

/** The v1 path: the v2 402 of this request tells the terms and offers; the facilitator is called directly. */
export async function payV1(
  state: PayState,
  request: Request,
  url: URL,
  context: HTTPRequestContext,
  header: string,
  v1: V1Options,
): Promise<Response> {
  const unpaid = await state.httpServer.processHTTPRequest({ ...context, paymentHeader: undefined });
  if (unpaid.type === "no-payment-required") return await state.handle(request);
  if (unpaid.type !== "payment-error") return failure(500, "Internal server error", "SERVER_ERROR");
  const paymentRequired = paymentRequiredOf(unpaid.response);
  if (paymentRequired === undefined) return render(unpaid.response);
  const payload = decodeV1Payment(header);
  if (payload === undefined) return v1PaymentRequired(paymentRequired, "invalid_payment");
  // Several accepts may share scheme and network: the payment's own terms say which one it pays.
  const terms = v1PaymentTerms(payload);
  const same = (a: string, b: string | undefined) => b === undefined || a.toLowerCase() === b.toLowerCase();
  const match = paymentRequired.accepts.find((a) =>
    a.scheme === payload.scheme && toCaip2Network(a.network) === toCaip2Network(payload.network) &&
    same(a.payTo, terms.payTo) && (terms.amount === undefined || a.amount === terms.amount) && same(a.asset, terms.asset)
  );
  if (match === undefined) return v1PaymentRequired(paymentRequired, "No matching payment requirements");
  const requirements = toV1Requirements(match, paymentRequired);
  // FacilitatorClient is typed for v2; the wire carries x402Version from the payload, as the v1 protocol wants.
  const verified = await v1.facilitator.verify(payload as unknown as PaymentPayload, requirements as unknown as PaymentRequirements);
  if (!verified.isValid) return v1PaymentRequired(paymentRequired, reasonCode(verified.invalidReason));
  const response = await state.handle(request);
  if (response.status < 200 || response.status >= 300) return response;
  const body = new Uint8Array(await response.arrayBuffer());
  const settled = await v1.facilitator.settle(payload as unknown as PaymentPayload, requirements as unknown as PaymentRequirements);
  if (!settled.success) {
    const failed = v1PaymentRequired(paymentRequired, reasonCode(settled.errorReason));
    failed.headers.set("x-payment-response", encodePaymentResponseHeader(v1SettleResponse(settled)));
    return failed;
  }
  const route = state.routeOf.get(context.adapter);
  const declaration = readDeclaration(route?.extensions?.[OFFER_RECEIPT]);
  const out = v1SettleResponse(settled);
  if (route?.extensions?.[OFFER_RECEIPT] !== undefined) {
    const resourceUrl = resolveResourceUrl({ requestUrl: url.href, publicBaseUrl: v1.signing.publicBaseUrl, override: route.resource });
    // A v1 payment echoes nothing: the offer settled is the one this request's 402 signed for the matched terms.
    const offer = resourceUrl === undefined ? undefined : await settledOffer(v1.signing, {
      echoed: [],
      signed: extractSignedOffers(paymentRequired),
      accepted: match,
      resourceUrl,
    });
    const receipt = resourceUrl === undefined ? undefined : await signReceipt(
      v1.signing,
      { resourceUrl, payer: settled.payer, network: settled.network, transaction: settled.transaction, payTo: requirements.payTo, offer },
      declaration,
    );
    if (receipt !== undefined) out.extensions = { [OFFER_RECEIPT]: receiptExtension(receipt, offer) };
  }
  const headers = new Headers(response.headers);
  headers.set("x-payment-response", encodePaymentResponseHeader(out));
  headers.set("cache-control", withPrivateCacheControl(response.headers.get("cache-control")));
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}
