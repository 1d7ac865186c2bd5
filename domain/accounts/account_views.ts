/**
 * What the accounts API shows of an account (decisions §12), with the field names of the reference backend's
 * client: the account, its subscription (plan, limits and this period's usage), its primary subject and its
 * wallets. Pure: the callers read the account, the usage and the clock.
 */
import type { Account, Session, WriteUsage } from "../../ports/accounts.ts";
import { buildDidPkh, computeDidHash } from "../did/mod.ts";
import type { PlanPolicy } from "./plans.ts";
import type { PaidPeriod } from "../../ports/payments.ts";
import { displayTextProblem } from "../display_text.ts";

/** The client every session is issued to: this service's own web sign-in (there is no client registry yet). */
export const DEFAULT_CLIENT_ID = "ats-web";

/** The longest display name an account may set. */
export const MAX_DISPLAY_NAME = 100;

/** The account's subscription as the accounts API and `subscriptions/current` answer it. */
export type SubscriptionView = {
  readonly plan: string;
  readonly status: "active";
  readonly annualSponsoredWriteLimit: number;
  readonly sponsoredWritesUsedCurrentYear: number;
  /** Filled by the routes from the premium-read ledger; null where it is not wired. */
  readonly annualPremiumReadLimit: number | null;
  readonly premiumReadsUsedCurrentYear: number | null;
  readonly entitlementPeriodStart: string;
  readonly entitlementPeriodEnd: string;
  /**
   * The schemas the plan's sponsored writes may write, as configured (names or UIDs; `*` every schema): a client can
   * tell before a wallet signs (the console asked for the signature, then the relay refused SCHEMA_NOT_ELIGIBLE).
   */
  readonly eligibleSchemas: readonly string[];
};

/** A subject as the account answers show it. */
export type PrimarySubjectView = { readonly id: string; readonly canonicalDid: string; readonly subjectDidHash: string; readonly displayName: string | null };

/** The wallet's own did:pkh on the active chain. */
export function walletDid(account: Pick<Account, "address">, chainId: number): string {
  const did = buildDidPkh("eip155", chainId, account.address);
  return did.ok ? did.value : `did:pkh:eip155:${chainId}:${account.address.toLowerCase()}`;
}

/**
 * The account's primary subject. Until the account adds one, that is its wallet's did:pkh (the bootstrap
 * subject every account starts with), identified as `wallet:<address>`.
 */
export function bootstrapSubject(account: Account, chainId: number): PrimarySubjectView {
  const did = walletDid(account, chainId);
  const hash = computeDidHash(did);
  return { id: `wallet:${account.address.toLowerCase()}`, canonicalDid: did, subjectDidHash: hash.ok ? hash.value : "", displayName: null };
}

/**
 * The subscription of an account in the UTC year of `nowMs` (the period sponsored writes are counted in); with
 * `paid`, a paid period bought with x402 that covers `nowMs` (decisions §13), the plan is `paid` and the entitlement
 * period is that period.
 */
export function subscriptionView(account: Account, plans: PlanPolicy, usage: WriteUsage, nowMs: number, paid?: PaidPeriod | undefined): SubscriptionView {
  const year = new Date(nowMs).getUTCFullYear();
  if (paid !== undefined && paid.startMs <= nowMs && nowMs < paid.endMs) {
    return {
      ...subscriptionView({ ...account, plan: "paid" }, plans, usage, nowMs),
      entitlementPeriodStart: new Date(paid.startMs).toISOString(),
      entitlementPeriodEnd: new Date(paid.endMs).toISOString(),
    };
  }
  return {
    plan: account.plan,
    status: "active",
    annualSponsoredWriteLimit: plans[account.plan].annualWrites,
    sponsoredWritesUsedCurrentYear: usage.used,
    annualPremiumReadLimit: null,
    premiumReadsUsedCurrentYear: null,
    entitlementPeriodStart: new Date(Date.UTC(year, 0, 1)).toISOString(),
    entitlementPeriodEnd: new Date(Date.UTC(year + 1, 0, 1)).toISOString(),
    eligibleSchemas: [...plans[account.plan].schemas],
  };
}

/** The session's public id: a prefix of the token's hash (the token itself is never shown). */
export function sessionId(session: Pick<Session, "tokenHash">): string {
  return session.tokenHash.slice(0, 32);
}

/** Reads a display name from a PATCH body: a string of at most 100 characters (trimmed; empty clears it) or null. */
export function readDisplayName(body: unknown): { ok: true; value: string | null } | { ok: false; message: string } {
  if (typeof body !== "object" || body === null || Array.isArray(body) || !("displayName" in body)) {
    return { ok: false, message: "displayName is required (a string or null)" };
  }
  const value = (body as { displayName: unknown }).displayName;
  if (value === null) return { ok: true, value: null };
  if (typeof value !== "string") return { ok: false, message: "displayName must be a string or null" };
  const trimmed = value.trim();
  if (trimmed.length > MAX_DISPLAY_NAME) return { ok: false, message: `displayName must be at most ${MAX_DISPLAY_NAME} characters` };
  const problem = displayTextProblem("displayName", trimmed);
  if (problem !== undefined) return { ok: false, message: problem };
  return { ok: true, value: trimmed === "" ? null : trimmed };
}
