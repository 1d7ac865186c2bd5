import { Elysia } from "elysia";
import { subscriptionView } from "../../../domain/accounts/mod.ts";
import { type PlanPolicy, quotaYear } from "../../../domain/accounts/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import { PAID_PLAN_YEAR_MS } from "../../../domain/payments/mod.ts";
import type { SponsoredWriteLedger } from "../../../ports/accounts.ts";
import type { Clock } from "../../../ports/clock.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { PaymentLedger } from "../../../ports/payments.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import type { PaymentGate } from "../../x402_gate.ts";
import { parseJsonBody, readBodyText } from "../request.ts";
import { type BearerAccess, sessionOnly } from "../../credentials.ts";
import type { Idempotency } from "../../../domain/idempotency/mod.ts";
import { idempotent } from "../../idempotency.ts";
import { PlanPurchaseBody, SubscriptionCurrentModel, type RouteDoc } from "../../models.ts";
import { CACHE } from "../../http_cache.ts";
import { err, SESSION_ONLY_CHANGE, TOO_LARGE, X402_REFUSALS } from "../../route_responses.ts";

/** What the plan purchase needs. */
export type SubscriptionRoutesDeps = {
  readonly sessions: Sessions;
  /** The resource bearer tokens are for: named in the 401's challenge (decisions §13 amended). */
  readonly bearer?: BearerAccess | undefined;
  readonly gate: PaymentGate;
  readonly payments: PaymentLedger;
  readonly ledger: SponsoredWriteLedger;
  readonly plans: PlanPolicy;
  readonly clock: Clock;
  readonly log: Logger;
  /** Idempotency keys of the purchase (decisions §23); absent: `Idempotency-Key` is ignored. */
  readonly idempotency?: Idempotency | undefined;
};

/**
 * `POST /api/private/subscriptions/x402` (decisions §13): the signed-in account buys one year of the paid plan with
 * x402 (`X402_PAID_PLAN_PRICE`). The year follows the account's paid time (from now when none is left); the answer
 * is `{subscription}` as `subscriptions/current` shows it. 401 without a session, 404 when the plan is not for sale.
 */
export function subscriptionRoutes(deps: SubscriptionRoutesDeps) {
  return new Elysia({ name: "subscription-routes" })
    .post("/api/private/subscriptions/x402", async ({ request, body }) => {
      // The purchase takes no fields: an empty body is as good as `{}`.
      const parsed = typeof body === "string" && body.trim() === "" ? { ok: true as const } : parseJsonBody(body);
      if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
      if (!deps.gate.offers("plan")) return json(errorBody("NOT_FOUND", "The paid plan is not for sale with x402 here"), 404);
      const auth = await sessionOnly(request, deps);
      if (!auth.ok) return auth.response;
      const account = auth.caller.account;
      try {
        // A purchase retried after a lost answer gets that answer, never a second year (decisions §23).
        // Its payment records the key's record (`keyRef`), as every paid write's does (docs/x402.md).
        return await idempotent(deps.idempotency, request, { scope: `account:${account.id}`, body }, ({ keyRef }) => deps.gate.handle(request, "plan", async ({ key }) => {
          const nowMs = deps.clock.nowMs();
          const period = await deps.payments.grantPeriod(key, account.id, PAID_PLAN_YEAR_MS, nowMs);
          if (period === "settling") {
            // Not done: the gate gives the authorization back, nothing is settled.
            return { response: json(errorBody("PAYMENT_IN_PROGRESS", "Another purchase of the plan for this account is being settled; nothing was done or charged, retry once it is"), 409) };
          }
          // The year counts once its payment settles (this answer is sent only then): shown as it will be.
          const paid = await deps.payments.paidPeriod(account.id, nowMs);
          const after = paid !== undefined && period.startMs <= paid.endMs ? { startMs: paid.startMs, endMs: period.endMs } : period;
          const usage = await deps.ledger.usage(account.id, quotaYear(nowMs), { nowMs });
          const subscription = subscriptionView(account, deps.plans, usage, nowMs, after);
          deps.log.info("x402_plan_purchased", { accountId: account.id, periodEnd: subscription.entitlementPeriodEnd });
          return {
            response: json({ subscription, purchased: { periodStart: new Date(period.startMs).toISOString(), periodEnd: new Date(period.endMs).toISOString() } }),
            ref: new Date(period.endMs).toISOString(),
          };
        }, { accountId: account.id, keyRef }));
      } catch (error) {
        deps.log.error("x402_plan_error", { error: error instanceof Error ? error.message : String(error) });
        return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
      }
    }, { parse: readBodyText });
}

/** The paid plan (decisions §13): route declarations, gathered by http/route_docs.ts. */
export const SUBSCRIPTION_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/api/private/subscriptions/x402"],
    idempotent: true,
    auth: "session-and-x402",
    cache: CACHE.private,
    summary: "Buys one year of the paid plan for the signed-in account with x402 (X402_PAID_PLAN_PRICE): without PAYMENT-SIGNATURE 402 with the terms; with it the year is added after the account's paid time and the payment settled. Body: {} (or empty)",
    body: { schema: PlanPurchaseBody, required: false },
    responses: {
      200: { description: "{subscription, purchased: {periodStart, periodEnd}}; PAYMENT-RESPONSE header with the settlement and a signed receipt" },
      400: err("INVALID_JSON: a body that is not JSON (an empty one is as {})"),
      401: err("UNAUTHENTICATED"),
      402: err(`${X402_REFUSALS}; PAYMENT_FAILED (details: the reason): settlement failed, the plan was not extended`),
      403: SESSION_ONLY_CHANGE,
      404: err("NOT_FOUND: the paid plan is not for sale (no X402_PAID_PLAN_PRICE)"),
      409: err("PAYMENT_ALREADY_USED; PAYMENT_IN_PROGRESS: the payer's unsettled payments hold its balance, or another purchase for the account is settling (nothing done or charged; retry)"),
      413: TOO_LARGE,
      415: err("UNSUPPORTED_MEDIA_TYPE"),
      500: err("INTERNAL_ERROR"),
      502: err("FACILITATOR_UNAVAILABLE"),
      503: err("SIGNER_UNAVAILABLE: the service's signer could not sign the payment's receipt; nothing done or charged (Retry-After)"),
    },
  },
  {
    method: "get",
    paths: ["/api/private/subscriptions/current"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    summary: "The signed-in account's subscription (the same object as in accounts/me)",
    responses: { 200: { description: "Subscription", schema: SubscriptionCurrentModel }, 401: err("UNAUTHENTICATED") },
  },
];
