/** What SQLite and PostgreSQL share for the payments store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { PaidPeriod, PaymentPurpose, PaymentRecord, PaymentState } from "../../ports/payments.ts";
import type { SqlWords, TableGroup } from "./schema.ts";

/**
 * The payments table (decisions §13), in either engine's words. Its columns added since it was first made: the
 * authorization's `valid_before` (the balance check, issue 23) and `idempotency_ref`, the `Idempotency-Key` record of
 * the request that reserved the payment (decisions §23 with §13: a dead request's retry resumes only its own payment);
 * rows reserved before it name none (NULL).
 */
export function paymentTables(w: SqlWords): TableGroup {
  return {
    create: [
      `CREATE TABLE IF NOT EXISTS x402_payments (
         key TEXT PRIMARY KEY,
         purpose TEXT NOT NULL,
         network TEXT NOT NULL,
         asset TEXT NOT NULL,
         payer TEXT NOT NULL,
         pay_to TEXT NOT NULL,
         amount TEXT NOT NULL,
         account_id TEXT,
         state TEXT NOT NULL,
         work_ref TEXT,
         settlement_tx TEXT,
         failure_reason TEXT,
         period_start_ms ${w.int},
         period_end_ms ${w.int},
         created_at_ms ${w.int} NOT NULL,
         updated_at_ms ${w.int} NOT NULL
       )`,
      `CREATE INDEX IF NOT EXISTS x402_payments_account ON x402_payments (account_id, period_end_ms)`,
      `CREATE INDEX IF NOT EXISTS x402_payments_state ON x402_payments (state, created_at_ms)`,
    ],
    added: [["x402_payments", "valid_before", w.int], ["x402_payments", "idempotency_ref", "TEXT"]],
    // A payer's open payments are read per payer, token and network at every paid request.
    after: [`CREATE INDEX IF NOT EXISTS x402_payments_payer ON x402_payments (payer, asset, network, state)`],
  };
}

/** Whether `amounts` plus `amount` stay within `balance` (atomic units, as decimal strings). */
export function withinBalance(amounts: readonly unknown[], amount: string, balance: bigint): boolean {
  return amounts.reduce<bigint>((sum, a) => sum + BigInt(String(a)), BigInt(amount)) <= balance;
}

/** `validBefore` as stored: whole seconds capped at 2^53 - 1 (EIP-3009 allows any uint256). */
export function storedValidBefore(validBefore: number | undefined): number | null {
  return validBefore === undefined ? null : Math.min(Math.floor(validBefore), Number.MAX_SAFE_INTEGER);
}

/** A stored row as the port's record (SQLite and PostgreSQL). */
export function toPaymentRecord(row: Record<string, unknown>): PaymentRecord {
  const num = (value: unknown) => (value === null || value === undefined ? null : Number(value));
  const str = (value: unknown) => (value === null || value === undefined ? null : String(value));
  return {
    key: String(row.key),
    purpose: String(row.purpose) as PaymentPurpose,
    network: String(row.network),
    asset: String(row.asset),
    payer: String(row.payer),
    payTo: String(row.pay_to),
    amount: String(row.amount),
    accountId: str(row.account_id),
    state: String(row.state) as PaymentState,
    workRef: str(row.work_ref),
    settlementTx: str(row.settlement_tx),
    failureReason: str(row.failure_reason),
    periodStartMs: num(row.period_start_ms),
    periodEndMs: num(row.period_end_ms),
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
    validBefore: num(row.valid_before),
    idempotencyRef: str(row.idempotency_ref),
  };
}

/** The paid time around `nowMs` from an account's counted periods: the run of touching periods that covers it. */
export function contiguousPeriod(periods: readonly PaidPeriod[], nowMs: number): PaidPeriod | undefined {
  const runs: PaidPeriod[] = [];
  for (const p of [...periods].sort((a, b) => a.startMs - b.startMs)) {
    const last = runs[runs.length - 1];
    if (last !== undefined && p.startMs <= last.endMs) runs[runs.length - 1] = { startMs: last.startMs, endMs: Math.max(last.endMs, p.endMs) };
    else runs.push(p);
  }
  return runs.find((r) => r.startMs <= nowMs && nowMs < r.endMs);
}

/** An account's plan periods as grants and the paid time read them: worked (paid for, settling) or settled. */
export type PlanPeriodRow = { readonly state: string; readonly validBefore: number | null; readonly updatedAtMs: number; readonly period: PaidPeriod };

/**
 * How long a granted year may be settling: the settlement follows the work at once, within the terms' timeout (300 s).
 * A row still `worked` after this (the process stopped in between) holds no purchase back, whatever the authorization's
 * `validBefore` (the payer's choice: ten years held the account's purchases for ten years).
 */
export const PLAN_SETTLING_MS = 10 * 60_000;

/**
 * The failure reasons of one payer's payments whose settlement failed after their work stood (`$1` the payer, lowercase):
 * witnesses and relay writes; a plan whose settlement failed was never extended, so nothing stands unpaid.
 */
export const FAILED_SETTLEMENTS_SQL = `SELECT failure_reason FROM x402_payments WHERE payer = $1 AND state = 'settle_failed'
  AND purpose <> 'plan' ORDER BY updated_at_ms DESC LIMIT 20`;

/** The columns and condition of an account's plan periods (the account's id the one parameter). */
export const PLAN_PERIODS_SELECT = `SELECT state, valid_before, updated_at_ms, period_start_ms, period_end_ms FROM x402_payments
  WHERE account_id = $1 AND purpose = 'plan' AND state IN ('worked', 'settled') AND period_end_ms IS NOT NULL`;

/** A stored plan row as {@link PlanPeriodRow}. */
export function toPlanPeriodRow(row: Record<string, unknown>): PlanPeriodRow {
  return {
    state: String(row.state),
    validBefore: row.valid_before === null || row.valid_before === undefined ? null : Number(row.valid_before),
    updatedAtMs: Number(row.updated_at_ms),
    period: { startMs: Number(row.period_start_ms), endMs: Number(row.period_end_ms) },
  };
}

/**
 * Where a new plan period goes (decisions §13): after the account's settled time, or now when none is left; "settling"
 * while another purchase of the account is paid for and not settled yet (its authorization can still settle). Only
 * settled periods count: a year granted behind one whose settlement then failed began a year late, paid for, and the
 * account was on the free plan meanwhile.
 */
export function placePlanPeriod(rows: readonly PlanPeriodRow[], durationMs: number, nowMs: number): PaidPeriod | "settling" {
  const nowSeconds = Math.floor(nowMs / 1000);
  const settling = (r: PlanPeriodRow) => r.state === "worked" && r.validBefore !== null && r.validBefore > nowSeconds && nowMs - r.updatedAtMs < PLAN_SETTLING_MS;
  if (rows.some(settling)) return "settling";
  const startMs = rows.filter((r) => r.state === "settled").reduce((end, r) => Math.max(end, r.period.endMs), nowMs);
  return { startMs, endMs: startMs + durationMs };
}

/**
 * The account's paid time around `nowMs` from its settled periods only: a year granted is the plan's once its payment
 * settled, never while it is settling (a payer who then made the settlement fail had the paid plan's limits meanwhile,
 * and kept what it wrote under them).
 */
export function settledPaidTime(rows: readonly PlanPeriodRow[], nowMs: number): PaidPeriod | undefined {
  return contiguousPeriod(rows.filter((r) => r.state === "settled").map((r) => r.period), nowMs);
}
