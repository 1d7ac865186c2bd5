import type { Plan } from "../../ports/accounts.ts";

/** What a plan allows: sponsored writes per calendar year (UTC) and the schemas they may write. */
export type PlanTerms = {
  readonly annualWrites: number;
  /** Schema names or UIDs (any case); `*` allows every schema. */
  readonly schemas: readonly string[];
};

/** The terms of every plan, from configuration. */
export type PlanPolicy = Readonly<Record<Plan, PlanTerms>>;

/** The plans an operator can set. */
export const PLANS: readonly Plan[] = ["free", "paid"];

/** Tells whether a plan name is known. */
export function isPlan(value: string): value is Plan {
  return (PLANS as readonly string[]).includes(value);
}

/** Whether a plan may write a schema, named or by UID. */
export function planAllowsSchema(terms: PlanTerms, schemaName: string, schemaUid: string): boolean {
  const wanted = [schemaName.toLowerCase(), schemaUid.toLowerCase()];
  return terms.schemas.some((entry) => entry === "*" || wanted.includes(entry.trim().toLowerCase()));
}

/**
 * The quota year a write is charged to: the UTC calendar year. Every account's allowance renews on
 * 1 January (the service has no billing periods).
 */
export function quotaYear(nowMs: number): number {
  return new Date(nowMs).getUTCFullYear();
}
