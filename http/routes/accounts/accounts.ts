import { Elysia } from "elysia";
import { bootstrapSubject, type PrimarySubjectView, readDisplayName, subscriptionView, walletDid } from "../../../domain/accounts/mod.ts";
import { type PlanPolicy, quotaYear } from "../../../domain/accounts/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Account, AccountStore, SponsoredWriteLedger } from "../../../ports/accounts.ts";
import type { Clock } from "../../../ports/clock.ts";
import type { PremiumReadLedger } from "../../../ports/premium_reads.ts";
import type { PaidPeriod } from "../../../ports/payments.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, AccountMeModel, type RouteDoc } from "../../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "../request.ts";
import { authenticateRequest, type BearerAccess, sessionOnly, unauthenticated } from "../../credentials.ts";
import { CACHE } from "../../http_cache.ts";
import { err, SESSION_ONLY_CHANGE, TOO_LARGE } from "../../route_responses.ts";

/** What the account routes need. */
export type AccountRoutesDeps = {
  readonly sessions: Sessions;
  readonly accounts: AccountStore;
  readonly ledger: SponsoredWriteLedger;
  readonly plans: PlanPolicy;
  readonly clock: Clock;
  readonly chainId: number;
  /** The account's default subject; absent: the wallet's own did:pkh. */
  readonly primarySubject?: ((account: Account) => Promise<PrimarySubjectView>) | undefined;
  /** The paid period an account bought with x402 (decisions §13); absent: none. */
  readonly paidPeriod?: ((accountId: string, nowMs: number) => Promise<PaidPeriod | undefined>) | undefined;
  /** Premium reads and their limits per plan; absent: the subscription shows them as null. */
  readonly premiumReads?: { readonly ledger: PremiumReadLedger; readonly limits: Readonly<Record<Account["plan"], number>> } | undefined;
  /** OAuth access tokens with `account:read` for the reads (decisions §19); absent: sessions only. */
  readonly bearer?: BearerAccess | undefined;
};

/** The primary subject's fields of decisions §12. */
const pick = (s: PrimarySubjectView) => ({ id: s.id, canonicalDid: s.canonicalDid, subjectDidHash: s.subjectDidHash, displayName: s.displayName });

const patchBody = compileRequestCheck(REQUEST_MODELS.accountPatch.body, {
  explain: (body) => {
    const read = readDisplayName(body);
    return read.ok ? undefined : read.message;
  },
});

/**
 * The `subscription` of `GET /api/private/subscriptions/current` for an account: its plan, this year's sponsored
 * writes and premium reads against their limits. Also the MCP tool `get_account_usage` (decisions §20).
 */
export function subscriptionReader(deps: Pick<AccountRoutesDeps, "clock" | "paidPeriod" | "plans" | "ledger" | "premiumReads">) {
  return async function subscription(account: Account) {
    const now = deps.clock.nowMs();
    const paid = await deps.paidPeriod?.(account.id, now);
    const view = subscriptionView(account, deps.plans, await deps.ledger.usage(account.id, quotaYear(now), { nowMs: now }), now, paid);
    const premium = deps.premiumReads;
    if (premium === undefined) return view;
    return {
      ...view,
      annualPremiumReadLimit: premium.limits[account.plan],
      premiumReadsUsedCurrentYear: await premium.ledger.used(account.id, quotaYear(now)),
    };
  };
}

/**
 * `GET|PATCH /api/private/accounts/me` and `GET /api/private/subscriptions/current` (decisions §12), for the
 * signed-in account (401 without a session). The primary subject is the wallet's own did:pkh until subjects
 * are managed (issue 17); the subscription's premium-read fields are null until premium reads are metered.
 */
export function accountRoutes(deps: AccountRoutesDeps) {
  const subscription = subscriptionReader(deps);
  const me = async (account: Account) => ({
    account: { id: account.id, displayName: account.displayName ?? null },
    subscription: await subscription(account),
    primarySubject: pick(deps.primarySubject ? await deps.primarySubject(account) : bootstrapSubject(account, deps.chainId)),
    wallets: [{ did: walletDid(account, deps.chainId), address: account.address }],
  });

  return new Elysia({ name: "account-routes" })
    .get("/api/private/accounts/me", async ({ request }) => {
      const auth = await authenticateRequest(request, deps, "account:read");
      if (!auth.ok) return auth.response();
      return json(await me(auth.caller.account));
    })
    .patch("/api/private/accounts/me", async ({ request, body }) => {
      // The body first, as on every route: a malformed request is 400 whoever sends it.
      const parsed = patchBody.readJson(body);
      if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
      const name = readDisplayName(parsed.value);
      if (!name.ok) return json(errorBody("INVALID_INPUT", name.message), 400);
      // A person's own setting: no access token scope grants it (403), and no session is 401 with the challenge.
      const auth = await sessionOnly(request, deps);
      if (!auth.ok) return auth.response;
      const updated = await deps.accounts.setDisplayName(auth.caller.account.id, name.value, deps.clock.nowMs());
      if (updated === undefined) return unauthenticated(deps.bearer?.resource, "Account not found");
      return json({ account: { id: updated.id, displayName: updated.displayName ?? null } });
    }, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.accountPatch) })
    .get("/api/private/subscriptions/current", async ({ request }) => {
      const auth = await authenticateRequest(request, deps, "account:read");
      if (!auth.ok) return auth.response();
      return json({ subscription: await subscription(auth.caller.account) });
    });
}

/** The signed-in account (decisions §12): route declarations, gathered by http/route_docs.ts. */
export const ACCOUNT_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/private/accounts/me"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    summary: "The signed-in account: display name, subscription with limits and this year's usage, primary subject, wallets",
    responses: { 200: { description: "Account", schema: AccountMeModel }, 401: err("UNAUTHENTICATED") },
  },
  {
    method: "patch",
    paths: ["/api/private/accounts/me"],
    auth: "session",
    cache: CACHE.private,
    summary: "Sets or clears the account's display name",
    request: REQUEST_MODELS.accountPatch,
    responses: {
      200: { description: "{account: {id, displayName}}" },
      400: err("INVALID_JSON, INVALID_INPUT (displayName)"),
      401: err("UNAUTHENTICATED"),
      403: SESSION_ONLY_CHANGE,
      413: TOO_LARGE,
      415: err("UNSUPPORTED_MEDIA_TYPE"),
    },
  },
];
