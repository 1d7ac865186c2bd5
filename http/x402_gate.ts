/**
 * Paying with x402 instead of a session (decisions §13), for the routes that take it: the controller witness,
 * the private relay's delegated attestation and the paid-plan purchase. Built on the official `@x402/core` HTTP
 * resource server with the `exact` EVM scheme of `@x402/evm` and our own offer-receipt extension:
 *
 * - no `PAYMENT-SIGNATURE`: 402 with `PAYMENT-REQUIRED` as core produces it (accepts + our signed offer) and the
 *   body `{error, code: "PAYMENT_REQUIRED"}`;
 * - a payment: verified with the facilitator (refused: 402 `PAYMENT_INVALID`, `details` the protocol reason, and a
 *   fresh `PAYMENT-REQUIRED`), then the paid call of domain/payments/x402_payments.ts: replay key reserved (taken: 409
 *   `PAYMENT_ALREADY_USED`; held against the payer's balance with its other unsettled payments, over it: 409
 *   `PAYMENT_IN_PROGRESS`, the authorization not used), the work, settlement only after it succeeded, `PAYMENT-RESPONSE` with the signed
 *   receipt. A settlement that fails after the work: the work's answer stands, `PAYMENT-RESPONSE` says
 *   `success: false` with the reason, no receipt (a plan purchase is not granted: 402 `PAYMENT_FAILED`);
 * - the facilitator unreachable (or answering nonsense) before the work: 502 `FACILITATOR_UNAVAILABLE`, nothing done.
 *
 * Facilitator and library texts never reach a client: reasons are protocol codes or `invalid_payment`.
 */
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentResponseHeader } from "@x402/core/http";
import {
  type FacilitatorClient,
  FacilitatorResponseError,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type RouteConfig,
  x402HTTPResourceServer,
  x402ResourceServer,
} from "@x402/core/server";
import type { Network, PaymentPayload, SettleResponse, SupportedResponse, VerifyResponse } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { expiresTooSoon, type PaidCall, paymentReplayKey, readExactAuthorization } from "../domain/payments/mod.ts";
import type { Logger } from "../ports/logger.ts";
import type { PaymentPurpose } from "../ports/payments.ts";
import { initializeOnce } from "../x402/elysia_adapter.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension, type OfferReceiptSigning } from "../x402/extension.ts";
import { errorBody, json } from "./errors.ts";
import { inProgress, paidIdempotentWrite, paymentRequired, replayed, unavailable } from "./_x402_answers.ts";
import { SIGNER_RETRY_AFTER_SECONDS } from "../ports/signer.ts";

/** The paths each purpose is sold on. */
export const PAID_PATHS: Readonly<Record<PaymentPurpose, readonly string[]>> = {
  witness: ["/v1/controller-witness", "/api/private/controller-witness", "/v1/paid/controller-witness"],
  relay: ["/api/private/relay/eas/delegated-attest", "/v1/paid/delegated-attest"],
  plan: ["/api/private/subscriptions/x402"],
};

/**
 * The paid aliases (decisions §13 amended): x402 only, an unpaid request is 402 there, for x402 clients that pay
 * only on a 402. The contract's own paths answer an unpaid request without credentials with 401 and the same
 * terms in `PAYMENT-REQUIRED`.
 */
export const PAID_ALIASES = { witness: "/v1/paid/controller-witness", relay: "/v1/paid/delegated-attest" } as const;

const DESCRIPTIONS: Readonly<Record<PaymentPurpose, string>> = {
  witness: "One controller-witness attestation",
  relay: "One delegated attestation through the private relay",
  plan: "One year of the paid plan",
};

/** Options of {@link createPaymentGate}. */
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
  /** Whether a replay key is known (spent or in flight): such a payment is refused before the facilitator is asked. */
  readonly known: (key: string) => Promise<boolean>;
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

/** Takes x402 payments on the paid routes. */
export type PaymentGate = {
  /** Whether a purpose is for sale (its price is set). */
  readonly offers: (purpose: PaymentPurpose) => boolean;
  /** Answers 402, or verifies the request's payment, runs `work` and settles. */
  readonly handle: (
    request: Request,
    purpose: PaymentPurpose,
    work: (paid: PaidRequest) => Promise<GateWork>,
    options?: { readonly accountId?: string | undefined },
  ) => Promise<Response>;
  /**
   * The `PAYMENT-REQUIRED` header a 402 of this request would carry (the terms and the signed offer), for the 401
   * of a contract path that is answered to a request without credentials (decisions §13 amended); empty when the
   * purpose is not for sale or the terms cannot be built now (the facilitator unreachable): the 401 stands alone.
   */
  readonly terms: (request: Request, purpose: PaymentPurpose) => Promise<Record<string, string>>;
  /**
   * Where a paid write's `Idempotency-Key` belongs (decisions §23): the payer's keys, `x402:<payer>` as its payment
   * header names it, and "the same request" includes that header. Two payers behind one address (a NAT) no longer
   * share keys (the second got the first's answer and receipt), and a header naming a payer it was not signed by is
   * another request under that key (422), never its answer.
   */
  readonly idempotentWrite: (request: Request, body: unknown, fallbackScope: string) => { readonly scope: string; readonly body: string };
};

/** Facilitator reasons are protocol codes (`insufficient_funds`); anything else is replaced, never echoed. */
export function reasonCode(reason: string | undefined): string {
  return reason !== undefined && /^[a-z0-9_]{1,80}$/.test(reason) ? reason : "invalid_payment";
}

/**
 * The facilitator as core sees it: a network failure or a malformed answer becomes a `FacilitatorResponseError`
 * (which core passes on instead of turning its text into a 402), a refusal answered with an error status becomes
 * the refusal it carries.
 */
function guardedFacilitator(inner: FacilitatorClient): FacilitatorClient {
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
      return settled.success ? settled : { success: false, errorReason: reasonCode(settled.errorReason), transaction: "", network: requirements.network };
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

/** A Request as core's HTTPAdapter; always an API client (never the HTML paywall). */
function adapterOf(request: Request, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => request.headers.get(name) ?? undefined,
    getMethod: () => request.method,
    getPath: () => url.pathname,
    getUrl: () => url.href,
    getAcceptHeader: () => "application/json",
    getUserAgent: () => request.headers.get("user-agent") ?? "",
  };
}

const headerOf = (instructions: HTTPResponseInstructions, name: string) =>
  Object.entries(instructions.headers).find(([k]) => k.toLowerCase() === name)?.[1];

/** What the gate's functions share: its options, the x402 resource server and its one-time initialisation. */
type Gate = {
  readonly options: PaymentGateOptions;
  readonly log: Logger;
  readonly httpServer: x402HTTPResourceServer;
  readonly initialize: () => Promise<void>;
};

/** The x402 terms of each paid path whose purpose has a price. */
function paidRoutes(options: PaymentGateOptions, network: Network): Record<string, RouteConfig> {
  const routes: Record<string, RouteConfig> = {};
  for (const [purpose, paths] of Object.entries(PAID_PATHS) as [PaymentPurpose, readonly string[]][]) {
    const amount = options.prices[purpose];
    if (amount === undefined) continue;
    for (const path of paths) {
      routes[`POST ${path}`] = {
        accepts: {
          scheme: "exact",
          network,
          payTo: options.payTo,
          price: { amount, asset: options.asset, extra: { name: options.assetName, version: options.assetVersion } },
          maxTimeoutSeconds: options.maxTimeoutSeconds ?? 300,
        },
        description: DESCRIPTIONS[purpose],
        mimeType: "application/json",
        extensions: declareOfferReceiptExtension({ includeTxHash: true }),
      };
    }
  }
  return routes;
}

/** The protocol reason of a refusal, from the PAYMENT-REQUIRED it came with. */
const reasonOf = (instructions: HTTPResponseInstructions) => {
  const header = headerOf(instructions, "payment-required");
  if (header === undefined) return "invalid_payment";
  try {
    return reasonCode(decodePaymentRequiredHeader(header).error);
  } catch {
    return "invalid_payment";
  }
};

/** The x402 terms a 401 carries beside the other ways in (decisions §13 amended); none when they cannot be read. */
async function gateTerms(gate: Gate, request: Request, purpose: PaymentPurpose): Promise<Record<string, string>> {
  if (gate.options.prices[purpose] === undefined) return {};
  const url = new URL(request.url);
  const adapter = { ...adapterOf(request, url), getHeader: () => undefined };
  try {
    await gate.initialize();
    const unpaid = await gate.httpServer.processHTTPRequest({ adapter, path: url.pathname, method: "POST", paymentHeader: undefined });
    const header = unpaid.type === "payment-error" ? headerOf(unpaid.response, "payment-required") : undefined;
    const terms: Record<string, string> = {};
    if (header !== undefined) terms["payment-required"] = header;
    return terms;
  } catch (error) {
    gate.log.warn("x402_terms_unavailable", { purpose, error: error instanceof Error ? error.name : "unknown" });
    return {};
  }
}

/** One paid request: the payment checked, the work done, the payment settled after it (see the module's comment). */
async function handlePayment(
  gate: Gate,
  request: Request,
  purpose: PaymentPurpose,
  work: (paid: PaidRequest) => Promise<GateWork>,
  extra: { readonly accountId?: string | undefined },
): Promise<Response> {
  const url = new URL(request.url);
  const header = request.headers.get("payment-signature") ?? undefined;
  const context: HTTPRequestContext = { adapter: adapterOf(request, url), path: url.pathname, method: "POST", paymentHeader: header };
  let payload: PaymentPayload | undefined;
  if (header !== undefined) {
    try {
      payload = decodePaymentSignatureHeader(header);
    } catch {
      payload = undefined;
    }
  }
  const authorization = payload === undefined ? undefined : readExactAuthorization(payload.payload);
  // A payment is not taken while its receipt cannot be signed (decisions §27): nothing verified, settled or done.
  if (header !== undefined && gate.options.signerReady !== undefined && !(await gate.options.signerReady())) {
    gate.log.warn("x402_signer_unavailable", { purpose });
    return json(errorBody("SIGNER_UNAVAILABLE", "The service's signer is unavailable; nothing was charged, and the same payment may be sent again"), 503, {
      "retry-after": String(SIGNER_RETRY_AFTER_SECONDS),
    });
  }
  // A facilitator that cannot say what it supports is down: 502, nothing asked of the payer (it was a 500).
  if (!(await gate.initialize().then(() => true, () => false))) {
    gate.log.warn("x402_facilitator_unavailable", { purpose });
    return unavailable();
  }
  try {
    if (header !== undefined && authorization === undefined) {
      // Not an EIP-3009 `exact` payment: the terms again, with the reason.
      const unpaid = await gate.httpServer.processHTTPRequest({ ...context, adapter: { ...context.adapter, getHeader: () => undefined }, paymentHeader: undefined });
      if (unpaid.type !== "payment-error") return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
      return paymentRequired(unpaid.response, "PAYMENT_INVALID", "The payment is not an EIP-3009 authorization of the exact scheme", "invalid_payload");
    }
    if (authorization !== undefined && expiresTooSoon(authorization, (gate.options.nowMs ?? Date.now)(), gate.options.maxTimeoutSeconds ?? 300)) {
      // Refused before the facilitator is asked, and before any work (the terms again, with the reason).
      const unpaid = await gate.httpServer.processHTTPRequest({ ...context, adapter: { ...context.adapter, getHeader: () => undefined }, paymentHeader: undefined });
      if (unpaid.type !== "payment-error") return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
      gate.log.info("x402_payment_refused", { purpose, reason: "authorization_expires_too_soon" });
      return paymentRequired(unpaid.response, "PAYMENT_INVALID", "The payment authorization expires before the work and its settlement could finish: sign it valid for the terms' maxTimeoutSeconds", "authorization_expires_too_soon");
    }
    if (payload !== undefined && authorization !== undefined) {
      const accepted = payload.accepted as { network?: unknown; asset?: unknown } | undefined;
      if (typeof accepted?.network === "string" && typeof accepted.asset === "string" &&
        await gate.options.known(paymentReplayKey({ network: accepted.network, asset: accepted.asset, nonce: authorization.nonce }))) {
        return replayed();
      }
    }
    const processed = await gate.httpServer.processHTTPRequest(context);
    if (processed.type === "no-payment-required") return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    if (processed.type === "payment-error") {
      if (header === undefined) return paymentRequired(processed.response, "PAYMENT_REQUIRED", "Payment required: pay with x402 or sign in");
      const reason = reasonOf(processed.response);
      gate.log.info("x402_payment_refused", { purpose, reason });
      return paymentRequired(processed.response, "PAYMENT_INVALID", "The payment was refused", reason);
    }
    const { paymentPayload, paymentRequirements, declaredExtensions, cancellationDispatcher } = processed;
    const payer = authorization!.from.toLowerCase();
    const key = paymentReplayKey({ network: paymentRequirements.network, asset: paymentRequirements.asset, nonce: authorization!.nonce });
    let answer: GateWork | undefined;
    let settledHeaders: Record<string, string> = {};
    const outcome = await gate.options.paidCall(
      {
        key,
        purpose,
        network: paymentRequirements.network,
        asset: paymentRequirements.asset,
        payer,
        payTo: paymentRequirements.payTo,
        amount: paymentRequirements.amount,
        accountId: extra.accountId ?? null,
        validBefore: Number(authorization!.validBefore),
      },
      async () => {
        answer = await work({ payer, key });
        const ok = answer.response.status >= 200 && answer.response.status < 300;
        return ok
          ? { done: true, value: answer, ref: answer.ref ?? "" }
          : { done: false, value: answer, unknown: answer.unknown, ref: answer.ref };
      },
      async () => {
        const body = Buffer.from(await answer!.response.clone().arrayBuffer());
        const responseHeaders: Record<string, string> = {};
        answer!.response.headers.forEach((value, name) => {
          responseHeaders[name] = value;
        });
        const settled = await gate.httpServer.processSettlement(paymentPayload, paymentRequirements, declaredExtensions, {
          request: context,
          responseBody: body,
          responseHeaders,
        });
        if (!settled.success) return { ok: false, reason: reasonCode(settled.errorReason) };
        settledHeaders = settled.headers;
        return { ok: true, transaction: settled.transaction };
      },
    );
    if (outcome.kind === "replayed") {
      await cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: 409 }).catch(() => undefined);
      return replayed();
    }
    if (outcome.kind === "in-progress") {
      await cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: 409 }).catch(() => undefined);
      gate.log.info("x402_payment_in_progress", { purpose });
      return inProgress();
    }
    if (outcome.kind === "not-done") {
      await cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: outcome.value.response.status }).catch(() => undefined);
      return outcome.value.response;
    }
    const response = outcome.value.response;
    const headers = new Headers(response.headers);
    headers.set("cache-control", "private, no-store");
    if (outcome.kind === "settled") {
      for (const [name, value] of Object.entries(settledHeaders)) headers.set(name, value);
      gate.log.info("x402_payment_settled", { purpose, transaction: outcome.transaction });
      return new Response(response.body, { status: response.status, headers });
    }
    gate.log.warn("x402_settlement_failed", { purpose, reason: outcome.reason });
    const failed = encodePaymentResponseHeader({ success: false, errorReason: outcome.reason, transaction: "", network: paymentRequirements.network as Network, payer });
    if (purpose === "plan") {
      return json(errorBody("PAYMENT_FAILED", "The payment could not be settled; the plan was not extended", outcome.reason), 402, { "payment-response": failed });
    }
    headers.set("payment-response", failed);
    return new Response(response.body, { status: response.status, headers });
  } catch (error) {
    if (error instanceof FacilitatorResponseError || (error as Error)?.name === "RouteConfigurationError") {
      gate.log.warn("x402_facilitator_unavailable", { purpose });
      return unavailable();
    }
    throw error;
  }
}

/** Builds the gate; the facilitator is first asked what it supports at the first paid request (and again after a failure). */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const network = options.network as Network;
  const resourceServer = new x402ResourceServer(guardedFacilitator(options.facilitator))
    .register(network, new ExactEvmScheme())
    .registerExtension(createOfferReceiptExtension(options.signing));
  const httpServer = new x402HTTPResourceServer(resourceServer, paidRoutes(options, network));
  const gate: Gate = { options, log: options.log, httpServer, initialize: initializeOnce(httpServer) };
  return {
    offers: (purpose) => options.prices[purpose] !== undefined,
    terms: (request, purpose) => gateTerms(gate, request, purpose),
    handle: (request, purpose, work, extra = {}) => handlePayment(gate, request, purpose, work, extra),
    idempotentWrite: (request, body, fallbackScope) => paidIdempotentWrite(request, body, fallbackScope),
  };
}
