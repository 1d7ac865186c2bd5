/**
 * Paying with x402 instead of a session (decisions §13), for the routes that take it: the controller witness,
 * the private relay's delegated attestation and the paid-plan purchase. Built on the official `@x402/core` HTTP
 * resource server with the `exact` EVM scheme of `@x402/evm` and our own offer-receipt extension:
 *
 * - no `PAYMENT-SIGNATURE`: 402 with `PAYMENT-REQUIRED` as core produces it (accepts + our signed offer) and the
 *   body `{error, code: "PAYMENT_REQUIRED"}`;
 * - a payment: verified with the facilitator (refused: 402 `PAYMENT_INVALID`, `details` the protocol reason, and a
 *   fresh `PAYMENT-REQUIRED`), then the request's `Idempotency-Key` taken, the payer now verified
 *   (`PaidCallOptions.begin`: a key held answers instead, the payment unused), then the paid call of
 *   domain/payments/x402_payments.ts: replay key reserved (taken: 409
 *   `PAYMENT_ALREADY_USED`; held against the payer's balance with its other unsettled payments, over it: 409
 *   `PAYMENT_IN_PROGRESS`, the authorization not used), the work, settlement only after it succeeded, `PAYMENT-RESPONSE` with the signed
 *   receipt. A settlement that fails after the work: the work's answer stands, `PAYMENT-RESPONSE` says
 *   `success: false` with the reason, no receipt (a plan purchase is not granted: 402 `PAYMENT_FAILED`); one refused
 *   because the nonce is used, when the chain shows the payment itself landed it (a front-run), is settled;
 * - a payment of another x402 version than the one offered: 402 `PAYMENT_INVALID` before the facilitator is asked;
 * - the facilitator unreachable (or answering nonsense) before the work: 502 `FACILITATOR_UNAVAILABLE`, nothing done.
 *
 * Facilitator and library texts never reach a client: reasons are protocol codes or `invalid_payment`.
 */
import { FacilitatorResponseError, type HTTPRequestContext, type RouteConfig, x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { expiresTooSoon, paymentReplayKey, plainPaymentTerm, readExactAuthorization } from "../domain/payments/mod.ts";
import type { PaymentPurpose } from "../ports/payments.ts";
import { initializeOnce } from "../x402/elysia_adapter.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension } from "../x402/extension.ts";
import { errorBody, json } from "./errors.ts";
import { decodedPayment, inProgress, paidIdempotentWrite, paymentRequired, replayed, unavailable } from "./_x402_answers.ts";
import { adapterOf, type Gate, type GateWork, guardedFacilitator, headerOf, type PaidRequest, type PaymentGateOptions, paidWorkOf, reasonOf, settleWork, workAnswer } from "./_x402_core.ts";
import { resumePayment } from "./_x402_resume.ts";
import type { KeyBegin } from "./idempotency.ts";
import { SIGNER_RETRY_AFTER_SECONDS } from "../ports/signer.ts";

export type { GateWork, PaidRequest, PaymentGateOptions } from "./_x402_core.ts";
export { reasonCode } from "./_x402_core.ts";

/** The x402 version the terms are offered in; a payment of another is refused before the facilitator is asked. */
const X402_VERSION = 2;

/** What a paid call is run with besides its request. */
export type PaidCallOptions = {
  /** The signed-in account it is paid for (a plan purchase). */
  readonly accountId?: string | undefined;
  /**
   * Takes the request's `Idempotency-Key` once the payment is verified, before the payment is reserved or any work
   * done (http/idempotency.ts `IdempotentRun.begin`): a key held answers instead (its kept answer, 422, 409), the
   * payment unused. Until then the payer is only what the header says: a refusal before it is nobody's to keep.
   */
  readonly begin?: KeyBegin | undefined;
  /**
   * The request's `Idempotency-Key` record (http/idempotency.ts `IdempotentRun.keyRef`), recorded on the payment it
   * reserves: a dead request's retry resumes only a payment its own record reserved (http/_x402_resume.ts).
   */
  readonly keyRef?: string | undefined;
};

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

/** Takes x402 payments on the paid routes. */
export type PaymentGate = {
  /** Whether a purpose is for sale (its price is set). */
  readonly offers: (purpose: PaymentPurpose) => boolean;
  /** Answers 402, or verifies the request's payment, runs `work` and settles. */
  readonly handle: (
    request: Request,
    purpose: PaymentPurpose,
    work: (paid: PaidRequest) => Promise<GateWork>,
    options?: PaidCallOptions,
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
   * another request under that key (422), never its answer. The header's word is only verified by the facilitator, so
   * the key is taken then (`verifiedInRun`, `PaidCallOptions.begin`): such a header takes no key of the payer it names,
   * and no answer of its (409 `PAYMENT_ALREADY_USED` with a spent nonce) is kept there.
   */
  readonly idempotentWrite: (request: Request, body: unknown, fallbackScope: string) => { readonly scope: string; readonly body: string };
  /**
   * The answer of a paid write whose request died (a crash) with its `Idempotency-Key`, for the retry that took the key
   * over: `work` reads what the dead request's write came to (undefined: nothing was written). Undefined when the
   * request is to run afresh (see http/_x402_resume.ts). `keyRef`: the key's record the retry took over
   * (`IdempotentRun.keyRef`); only a payment that record reserved is resumed.
   */
  readonly resume: (request: Request, purpose: PaymentPurpose, work: () => Promise<GateWork | undefined>, keyRef?: string) => Promise<Response | undefined>;
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

/** A payment refused before the facilitator is asked: 402 `PAYMENT_INVALID` with `details` and the terms again. */
async function refusedWithTerms(gate: Gate, context: HTTPRequestContext, message: string, reason: string): Promise<Response> {
  const unpaid = await gate.httpServer.processHTTPRequest({ ...context, adapter: { ...context.adapter, getHeader: () => undefined }, paymentHeader: undefined });
  if (unpaid.type !== "payment-error") return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
  return paymentRequired(unpaid.response, "PAYMENT_INVALID", message, reason);
}

/** One paid request: the payment checked, the work done, the payment settled after it (see the module's comment). */
async function handlePayment(
  gate: Gate,
  request: Request,
  purpose: PaymentPurpose,
  work: (paid: PaidRequest) => Promise<GateWork>,
  extra: PaidCallOptions,
): Promise<Response> {
  const url = new URL(request.url);
  const header = request.headers.get("payment-signature") ?? undefined;
  const context: HTTPRequestContext = { adapter: adapterOf(request, url), path: url.pathname, method: "POST", paymentHeader: header };
  const payload = header === undefined ? undefined : decodedPayment(header);
  const authorization = payload === undefined ? undefined : readExactAuthorization(payload.payload);
  // A facilitator that cannot say what it supports is down: 502, nothing asked of the payer (it was a 500).
  if (!(await gate.initialize().then(() => true, () => false))) {
    gate.log.warn("x402_facilitator_unavailable", { purpose });
    return unavailable();
  }
  try {
    if (payload !== undefined && payload.x402Version !== X402_VERSION) {
      // Core matches a v1 payload on scheme and network alone and passes it on: the devnet's facilitator (v2 only)
      // answered 500, and the payer got 502 FACILITATOR_UNAVAILABLE from a healthy facilitator. Only the version offered.
      gate.log.info("x402_payment_refused", { purpose, reason: "invalid_x402_version" });
      return await refusedWithTerms(gate, context, `The payment is not of x402 version ${X402_VERSION}, the one offered`, "invalid_x402_version");
    }
    if (header !== undefined && authorization === undefined) {
      // Not an EIP-3009 `exact` payment: the terms again, with the reason.
      return await refusedWithTerms(gate, context, "The payment is not an EIP-3009 authorization of the exact scheme", "invalid_payload");
    }
    if (authorization !== undefined && expiresTooSoon(authorization, (gate.options.nowMs ?? Date.now)(), gate.options.maxTimeoutSeconds ?? 300)) {
      // Refused before the facilitator is asked, and before any work (the terms again, with the reason).
      gate.log.info("x402_payment_refused", { purpose, reason: "authorization_expires_too_soon" });
      return await refusedWithTerms(gate, context, "The payment authorization expires before the work and its settlement could finish: sign it valid for the terms' maxTimeoutSeconds", "authorization_expires_too_soon");
    }
    if (payload !== undefined && authorization !== undefined) {
      const accepted = payload.accepted as { network?: unknown; asset?: unknown } | undefined;
      if (typeof accepted?.network === "string" && typeof accepted.asset === "string" && plainPaymentTerm(accepted.network) && plainPaymentTerm(accepted.asset) &&
        await gate.options.known(paymentReplayKey({ network: accepted.network, asset: accepted.asset, nonce: authorization.nonce }))) {
        // Before the facilitator verified anything: a spent nonce (public on chain) under any `from` answers here, so
        // no Idempotency-Key of that payer is taken yet (`PaidCallOptions.begin`), and this 409 is kept for none. The
        // same bytes sent twice at once, the second past the key's read before the first took it and here after the
        // first reserved the nonce: the key answers (409 `IDEMPOTENCY_KEY_IN_USE`, or its kept answer), as it does a
        // retry. It said `PAYMENT_ALREADY_USED`, which a client may take as final (found by review).
        return (await extra.begin?.held?.()) ?? replayed();
      }
    }
    if (authorization !== undefined && gate.options.owes !== undefined && await gate.options.owes(authorization.from)) {
      // Its earlier payment settled nothing after its write stood: no more paid work for this payer (the terms again).
      gate.log.info("x402_payment_refused", { purpose, reason: "unsettled_payment" });
      return await refusedWithTerms(gate, context, "An earlier payment of this payer settled nothing after its work was done; it cannot pay for more", "unsettled_payment");
    }
    // A payment is not taken while its receipt cannot be signed (decisions §27): nothing verified, settled or done.
    // Asked only of a payment that passed the checks above (it decodes, is an exact authorization, is not about to
    // expire, was not used): the signer's probe was the first step of any request with the header, so garbage in it
    // made the service sign (a KMS Sign billed, an HSM's queue taken) once per request.
    if (header !== undefined && gate.options.signerReady !== undefined && !(await gate.options.signerReady())) {
      gate.log.warn("x402_signer_unavailable", { purpose });
      return json(errorBody("SIGNER_UNAVAILABLE", "The service's signer is unavailable; nothing was charged, and the same payment may be sent again"), 503, {
        "retry-after": String(SIGNER_RETRY_AFTER_SECONDS),
      });
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
    // The payer is the one the header names now that the facilitator verified its signature: its key is taken here.
    const held = extra.begin === undefined ? undefined : await extra.begin();
    if (held !== undefined) {
      await cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: held.status }).catch(() => undefined);
      return held;
    }
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
        idempotencyRef: extra.keyRef ?? null,
      },
      async () => {
        answer = await work({ payer, key });
        return paidWorkOf(answer);
      },
      () => settleWork(gate, processed, answer!, context, (headers) => (settledHeaders = headers)),
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
    return workAnswer(gate, outcome, { purpose, network: paymentRequirements.network, payer, settledHeaders });
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
  const resourceServer = new x402ResourceServer(guardedFacilitator(options.facilitator, options.settledOnChain))
    .register(network, new ExactEvmScheme())
    .registerExtension(createOfferReceiptExtension(options.signing));
  const httpServer = new x402HTTPResourceServer(resourceServer, paidRoutes(options, network));
  const gate: Gate = { options, log: options.log, httpServer, initialize: initializeOnce(httpServer) };
  return {
    offers: (purpose) => options.prices[purpose] !== undefined,
    terms: (request, purpose) => gateTerms(gate, request, purpose),
    handle: (request, purpose, work, extra = {}) => handlePayment(gate, request, purpose, work, extra),
    idempotentWrite: (request, body, fallbackScope) => paidIdempotentWrite(request, body, fallbackScope),
    resume: (request, purpose, work, keyRef) => resumePayment(gate, request, purpose, work, keyRef),
  };
}
