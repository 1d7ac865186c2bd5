/**
 * What the x402 gate (http/x402_gate.ts) and its resume of a dead request's paid write (http/_x402_resume.ts) share:
 * the gate's options, the facilitator as core sees it, the request as core's adapter, the settlement of work that was
 * done and the answer of a paid call's outcome.
 */
import { decodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import {
  type FacilitatorClient,
  FacilitatorResponseError,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type x402HTTPResourceServer,
} from "@x402/core/server";
import type { Network, PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from "@x402/core/types";
import { type PaidCall, type PaidResume, type PaidWork, readExactAuthorization, type RefusedPayment, type SettledOnChain, type Settlement } from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import type { PaymentPurpose } from "../ports/payments.ts";
import type { OfferReceiptSigning } from "../x402/extension.ts";
import { errorBody, json } from "./errors.ts";

/** Options of the payment gate (http/x402_gate.ts `createPaymentGate`). */
export type PaymentGateOptions = {
  readonly facilitator: FacilitatorClient;
  /** CAIP-2, e.g. `eip155:8453`. */
  readonly network: string;
  /** The EIP-3009 token and its EIP-712 domain. */
  readonly asset: string;
  readonly assetName: string;
  readonly assetVersion: string;
  readonly payTo: string;
  /** Atomic units per purpose; an absent price is not offered. */
  readonly prices: Readonly<Partial<Record<PaymentPurpose, string>>>;
  /** Signs the offers and receipts. */
  readonly signing: OfferReceiptSigning;
  /**
   * Whether the offer/receipt signer (X402_SIGNER, decisions §27) can sign now; false: a paid request is answered 503
   * SIGNER_UNAVAILABLE before the payment is verified or settled. Absent: always.
   */
  readonly signerReady?: (() => Promise<boolean>) | undefined;
  readonly paidCall: PaidCall;
  /** Resumes a paid write whose request died under its Idempotency-Key (`PaymentGate.resume`); absent: never resumed. */
  readonly paidResume?: PaidResume | undefined;
  /** Whether a replay key is known (spent or in flight): such a payment is refused before the facilitator is asked. */
  readonly known: (key: string) => Promise<boolean>;
  /**
   * Whether the payer owes for work an earlier payment of its did not pay for (domain/payments `owesForWork`): refused
   * before the facilitator is asked and before any work. Absent: not asked.
   */
  readonly owes?: ((payer: string) => Promise<boolean>) | undefined;
  /**
   * Asks the chain what a nonce the facilitator found used at settlement did (domain/payments `createSettledOnChain`):
   * the payment itself, submitted first by someone else, is settled with that transaction. Absent: not asked.
   */
  readonly settledOnChain?: SettledOnChain | undefined;
  readonly log: Logger;
  /**
   * How long an authorization must stay valid (the client sets validBefore from it); default 300 s. One that arrives
   * with less than this less 30 s left is refused before it is verified (domain/payments `expiresTooSoon`).
   */
  readonly maxTimeoutSeconds?: number | undefined;
  /** The time an authorization's validity is judged at; default `Date.now` (tests). */
  readonly nowMs?: (() => number) | undefined;
};

/** What the paid work answered: its response, what it wrote, and whether its outcome is unknown. */
export type GateWork = {
  readonly response: Response;
  /** What the work produced (a transaction hash, a period end), recorded with the payment. */
  readonly ref?: string | undefined;
  /** The work may have happened (OUTCOME_UNKNOWN): the payment is neither released nor settled. */
  readonly unknown?: boolean | undefined;
};

/** The payment a paid call runs under. */
export type PaidRequest = { readonly payer: string; readonly key: string };

/** Facilitator reasons are protocol codes (`insufficient_funds`); anything else is replaced, never echoed. */
export function reasonCode(reason: string | undefined): string {
  return reason !== undefined && /^[a-z0-9_]{1,80}$/.test(reason) ? reason : "invalid_payment";
}

/**
 * The facilitator as core sees it: a network failure or a malformed answer becomes a `FacilitatorResponseError`
 * (which core passes on instead of turning its text into a 402), a refusal answered with an error status becomes
 * the refusal it carries. A settlement refused for a used nonce is checked against the chain (`settledOnChain`): the
 * payment landed by another's transaction is a settlement, so core signs its receipt as for any other.
 */
export function guardedFacilitator(inner: FacilitatorClient, settledOnChain?: SettledOnChain | undefined): FacilitatorClient {
  const unavailable = () => new FacilitatorResponseError("Facilitator unavailable");
  return {
    // A refusal's reason goes into PAYMENT-REQUIRED's `error` as core words it: only a protocol code, never the
    // facilitator's text (a third-party facilitator's node error with its RPC URL and key reached clients there).
    async verify(payload, requirements): Promise<VerifyResponse> {
      const verified = await inner.verify(payload, requirements).catch((error: { invalidReason?: unknown } | undefined) => {
        if (typeof error?.invalidReason === "string") return { isValid: false, invalidReason: error.invalidReason };
        throw unavailable();
      });
      return verified.isValid ? verified : { isValid: false, invalidReason: reasonCode(verified.invalidReason) };
    },
    async settle(payload, requirements): Promise<SettleResponse> {
      const settled = await inner.settle(payload, requirements).catch((error: { errorReason?: unknown } | undefined) => {
        if (typeof error?.errorReason === "string") return { success: false, errorReason: error.errorReason, transaction: "", network: requirements.network };
        throw unavailable();
      });
      if (settled.success) return settled;
      const failure = { success: false, errorReason: reasonCode(settled.errorReason), transaction: "", network: requirements.network };
      const authorization = readExactAuthorization(payload.payload);
      if (settledOnChain === undefined || authorization === undefined) return failure;
      // A used nonce may be this payment, landed by someone else's transaction: settled, with the receipt core signs.
      const onChain = await settledOnChain(refusedPayment(requirements, authorization), { ok: false, reason: failure.errorReason });
      if (!onChain.ok) return { ...failure, errorReason: onChain.reason };
      return { success: true, transaction: onChain.transaction, network: requirements.network, payer: authorization.from };
    },
    async getSupported(): Promise<SupportedResponse> {
      try {
        return await inner.getSupported();
      } catch {
        throw unavailable();
      }
    },
  };
}

/** A payment whose settlement was refused, as the chain check reads it. */
export function refusedPayment(
  terms: { readonly network: string; readonly asset: string; readonly payTo: string; readonly amount: string },
  authorization: { readonly from: string; readonly nonce: string },
): RefusedPayment {
  return { network: terms.network, asset: terms.asset, payTo: terms.payTo, amount: terms.amount, payer: authorization.from, nonce: authorization.nonce };
}

/** A Request as core's HTTPAdapter; always an API client (never the HTML paywall). */
export function adapterOf(request: Request, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => request.headers.get(name) ?? undefined,
    getMethod: () => request.method,
    getPath: () => url.pathname,
    getUrl: () => url.href,
    getAcceptHeader: () => "application/json",
    getUserAgent: () => request.headers.get("user-agent") ?? "",
  };
}

export const headerOf = (instructions: HTTPResponseInstructions, name: string) =>
  Object.entries(instructions.headers).find(([k]) => k.toLowerCase() === name)?.[1];

/** What the gate's functions share: its options, the x402 resource server and its one-time initialisation. */
export type Gate = {
  readonly options: PaymentGateOptions;
  readonly log: Logger;
  readonly httpServer: x402HTTPResourceServer;
  readonly initialize: () => Promise<void>;
};

/** The protocol reason of a refusal, from the PAYMENT-REQUIRED it came with. */
export const reasonOf = (instructions: HTTPResponseInstructions) => {
  const header = headerOf(instructions, "payment-required");
  if (header === undefined) return "invalid_payment";
  try {
    return reasonCode(decodePaymentRequiredHeader(header).error);
  } catch {
    return "invalid_payment";
  }
};


/** The work as the paid call sees it: done when it answered 2xx and its outcome is known (a 202 still on its way is not). */
export function paidWorkOf(answer: GateWork): PaidWork<GateWork> {
  const ok = answer.response.status >= 200 && answer.response.status < 300 && answer.unknown !== true;
  return ok ? { done: true, value: answer, ref: answer.ref ?? "" } : { done: false, value: answer, unknown: answer.unknown, ref: answer.ref };
}

/** A payment the facilitator verified, as core hands it over: what its settlement needs. */
export type VerifiedPayment = {
  readonly paymentPayload: PaymentPayload;
  readonly paymentRequirements: PaymentRequirements;
  readonly declaredExtensions?: Record<string, unknown> | undefined;
};

/**
 * Settles a verified payment for work that was done: the facilitator's answer as a {@link Settlement}, and the headers
 * core made of it (`PAYMENT-RESPONSE` with the signed receipt) given to `onHeaders`.
 */
export async function settleWork(
  gate: Gate,
  verified: VerifiedPayment,
  answer: GateWork,
  context: HTTPRequestContext,
  onHeaders: (headers: Record<string, string>) => void,
): Promise<Settlement> {
  const body = Buffer.from(await answer.response.clone().arrayBuffer());
  const responseHeaders: Record<string, string> = {};
  answer.response.headers.forEach((value, name) => {
    responseHeaders[name] = value;
  });
  const settled = await gate.httpServer.processSettlement(verified.paymentPayload, verified.paymentRequirements, verified.declaredExtensions, {
    request: context,
    responseBody: body,
    responseHeaders,
  });
  if (!settled.success) return { ok: false, reason: reasonCode(settled.errorReason) };
  onHeaders(settled.headers);
  return { ok: true, transaction: settled.transaction };
}

/** The answer of work that was done: settled (with core's headers), or standing unsettled (a plan is not granted). */
export function workAnswer(
  gate: Gate,
  outcome: { readonly kind: "settled"; readonly value: GateWork; readonly transaction: string } | { readonly kind: "unsettled"; readonly value: GateWork; readonly reason: string },
  payment: { readonly purpose: PaymentPurpose; readonly network: string; readonly payer: string; readonly settledHeaders: Record<string, string> },
): Response {
  const { purpose } = payment;
  const response = outcome.value.response;
  const headers = new Headers(response.headers);
  headers.set("cache-control", "private, no-store");
  if (outcome.kind === "settled") {
    for (const [name, value] of Object.entries(payment.settledHeaders)) headers.set(name, value);
    gate.log.info("x402_payment_settled", { purpose, transaction: outcome.transaction });
    return new Response(response.body, { status: response.status, headers });
  }
  gate.log.warn("x402_settlement_failed", { purpose, reason: outcome.reason });
  const failed = encodePaymentResponseHeader({ success: false, errorReason: outcome.reason, transaction: "", network: payment.network as Network, payer: payment.payer });
  if (purpose === "plan") {
    return json(errorBody("PAYMENT_FAILED", "The payment could not be settled; the plan was not extended", outcome.reason), 402, { "payment-response": failed });
  }
  headers.set("payment-response", failed);
  return new Response(response.body, { status: response.status, headers });
}
