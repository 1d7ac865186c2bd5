/** Sign-in, accounts, plans and premium reads (decisions §12, §15, issue 23, issue 33): the `accounts` section. */
import { type Static, Type } from "@sinclair/typebox";
import { int, list, readSection, type ReadContext } from "./_declare.ts";

type SiweServer = { readonly host: string; readonly port: number; readonly publicBaseUrl: string };

/**
 * `SIWE_DOMAINS`' default. PUBLIC_BASE_URL's host first: the console signs in with `location.host`, which is that host
 * behind a balancer; a production start that set only PUBLIC_BASE_URL refused its own console's sign-in (403
 * CLIENT_NOT_ALLOWED). With PORT=0, the port bound (app/service.ts, `withBoundPort`).
 */
export function defaultSiweDomains(server: SiweServer): string[] {
  const own = [`${server.host}:${server.port}`, `localhost:${server.port}`];
  const publicHost = new URL(server.publicBaseUrl).host;
  return own.includes(publicHost) ? own : [publicHost, ...own];
}

/** The `accounts` section's variables. */
export const AccountsSection = Type.Object({
  sessionTtlHours: int("SESSION_TTL_HOURS", { default: 24 * 7, minimum: 1, description: "session lifetime" }),
  siweDomains: list("SIWE_DOMAINS", {
    default: ({ sections }) => defaultSiweDomains(sections.server as SiweServer),
    doc: "PUBLIC_BASE_URL's host,HOST:PORT,localhost:PORT",
    description: "domains accepted in sign-in challenges",
  }),
  siweChallengePerMinute: int("SIWE_CHALLENGE_RATE_PER_MINUTE", { default: 10, minimum: 1, maximum: 10_000, description: "sign-in challenges a minute per client address, and per wallet (all addresses together; an address's first for the wallet is always given)" }),
  subjectOwnershipPerMinute: int("SUBJECT_OWNERSHIP_RATE_PER_MINUTE", {
    default: 30,
    minimum: 1,
    maximum: 1_000_000,
    description: "public subject-ownership proofs (each may ask the chain a contract's code and owner()) per client address a minute, per instance",
  }),
  subjectsPerAccount: int("SUBJECTS_PER_ACCOUNT", { default: 20, minimum: 1, maximum: 1_000, description: "subjects one account may hold besides its bootstrap subject" }),
  freePlanAnnualWrites: int("FREE_PLAN_ANNUAL_WRITES", { default: 10, description: "sponsored writes a year, free plan" }),
  paidPlanAnnualWrites: int("PAID_PLAN_ANNUAL_WRITES", { default: 1000, description: "sponsored writes a year, paid plan" }),
  freePlanSchemas: list("FREE_PLAN_SCHEMAS", { default: ["controller-witness"], description: "schemas the free plan may write" }),
  paidPlanSchemas: list("PAID_PLAN_SCHEMAS", { default: ["*"], description: "schemas the paid plan may write (* all)" }),
  premiumReads: Type.Object({
    free: int("FREE_PLAN_ANNUAL_PREMIUM_READS", { default: 100, description: "premium JSON-RPC reads a year, free plan" }),
    paid: int("PAID_PLAN_ANNUAL_PREMIUM_READS", { default: 100_000, description: "premium JSON-RPC reads a year, paid plan" }),
    maxLogRange: int("PREMIUM_RPC_MAX_LOG_RANGE", { default: 50_000, minimum: 1, description: "the widest eth_getLogs range forwarded, in blocks" }),
  }),
  premiumRpc: Type.Object({
    maxCallGas: int("PREMIUM_RPC_MAX_CALL_GAS", { default: 30_000_000, minimum: 21_000, maximum: 1_000_000_000, description: "gas cap of a premium eth_call" }),
    timeoutMs: int("PREMIUM_RPC_TIMEOUT_MS", { default: 10_000, minimum: 100, maximum: 120_000, description: "one premium round trip to the node" }),
    maxInFlightPerAccount: int("PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT", { default: 4, minimum: 1, maximum: 1_000, description: "an account's premium requests at once" }),
    maxInFlight: int("PREMIUM_RPC_MAX_IN_FLIGHT", { default: 16, minimum: 1, maximum: 10_000, description: "all premium requests at once" }),
  }),
}, { title: "accounts" });

/** Sign-in, accounts, plans and premium reads. */
export type AccountsConfig = Static<typeof AccountsSection>;

/** Reads the `accounts` section (the `server` section read before it: the sign-in domains default to its address). */
export function readAccounts(ctx: Omit<ReadContext, "values">): AccountsConfig {
  return readSection(AccountsSection, ctx);
}
