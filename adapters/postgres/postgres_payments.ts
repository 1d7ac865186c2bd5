import type { SQL } from "bun";
import type { PaidPeriod, PaymentLedger, PaymentOwner, PaymentReservation, PaymentState } from "../../ports/payments.ts";
import { FAILED_SETTLEMENTS_SQL, PLAN_PERIODS_SELECT, placePlanPeriod, type PlanPeriodRow, settledPaidTime, storedValidBefore, toPaymentRecord, toPlanPeriodRow, withinBalance } from "../sql/payments.ts";

/** Advisory lock space (two-key form) of paid-plan periods: one lock per account while a period is granted. */
const PLAN_PERIOD_LOCK = 7_240_018;
/** Advisory lock space of payers: one lock per payer, token and network while a payment is held against its balance. */
const PAYER_BALANCE_LOCK = 7_240_023;

/** Payments in PostgreSQL, shared by every instance: the replay key is the primary key (tables made by the migrations). */
export function createPostgresPayments(sql: SQL): PaymentLedger {
  const periodsOf = async (q: SQL, accountId: string): Promise<PlanPeriodRow[]> =>
    (await q.unsafe(PLAN_PERIODS_SELECT, [accountId]) as Record<string, unknown>[]).map(toPlanPeriodRow);
  // Only while the row names the owner's record (`PaymentOwner`; `IS NOT DISTINCT FROM`: null matches a row that names none).
  const update = async (key: string, state: PaymentState, fields: { ref?: string | null; tx?: string; reason?: string }, nowMs: number, owner?: PaymentOwner) => {
    await sql`UPDATE x402_payments SET state = ${state}, work_ref = COALESCE(${fields.ref ?? null}, work_ref),
      settlement_tx = COALESCE(${fields.tx ?? null}, settlement_tx), failure_reason = COALESCE(${fields.reason ?? null}, failure_reason),
      updated_at_ms = ${nowMs} WHERE key = ${key}
      AND (${owner !== undefined}::boolean = false OR idempotency_ref IS NOT DISTINCT FROM ${owner?.idempotencyRef ?? null}::text)`;
  };
  const insert = async (q: SQL, r: PaymentReservation): Promise<boolean> => {
    const rows = await q`INSERT INTO x402_payments (key, purpose, network, asset, payer, pay_to, amount, account_id, state, created_at_ms, updated_at_ms, valid_before, idempotency_ref)
      VALUES (${r.key}, ${r.purpose}, ${r.network}, ${r.asset.toLowerCase()}, ${r.payer.toLowerCase()}, ${r.payTo.toLowerCase()}, ${r.amount},
              ${r.accountId}, 'reserved', ${r.createdAtMs}, ${r.createdAtMs}, ${storedValidBefore(r.validBefore)}, ${r.idempotencyRef ?? null})
      ON CONFLICT (key) DO NOTHING RETURNING key`;
    return rows.length === 1;
  };
  return {
    reserve: (r) => insert(sql, r),
    // The payer's lock orders every instance's reservations for it: the open payments read and the insert are one step.
    reserveWithin: (r, ceiling) =>
      sql.begin(async (tx) => {
        const [payer, asset] = [r.payer.toLowerCase(), r.asset.toLowerCase()];
        await tx`SELECT pg_advisory_xact_lock(${PAYER_BALANCE_LOCK}, hashtext(${`${r.network}:${asset}:${payer}`}))`;
        if ((await tx`SELECT key FROM x402_payments WHERE key = ${r.key}`).length > 0) return "known" as const;
        const open = await tx`SELECT amount FROM x402_payments WHERE payer = ${payer} AND asset = ${asset} AND network = ${r.network} AND (
          (state IN ('reserved', 'worked') AND valid_before IS NOT NULL AND valid_before > ${Math.floor(r.createdAtMs / 1000)})
          OR (state = 'settled' AND updated_at_ms >= ${ceiling.readAtMs}))` as { amount: string }[];
        if (!withinBalance(open.map((o) => o.amount), r.amount, ceiling.balance)) return "over_balance" as const;
        return (await insert(tx as unknown as SQL, r)) ? "reserved" as const : "known" as const;
      }),
    async release(key, owner) {
      await sql`DELETE FROM x402_payments WHERE key = ${key} AND state IN ('reserved', 'work_unknown')
        AND (${owner !== undefined}::boolean = false OR idempotency_ref IS NOT DISTINCT FROM ${owner?.idempotencyRef ?? null}::text)`;
    },
    worked: (key, ref, nowMs, owner) => update(key, "worked", { ref }, nowMs, owner),
    workUnknown: (key, ref, nowMs, owner) => update(key, "work_unknown", { ref }, nowMs, owner),
    settled: (key, tx, nowMs, owner) => update(key, "settled", { tx }, nowMs, owner),
    settleFailed: (key, reason, nowMs, owner) => update(key, "settle_failed", { reason }, nowMs, owner),
    grantPeriod: (key, accountId, durationMs, nowMs) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${PLAN_PERIOD_LOCK}, hashtext(${accountId}))`;
        const period = placePlanPeriod(await periodsOf(tx as unknown as SQL, accountId), durationMs, nowMs);
        if (period === "settling") return period;
        await tx`UPDATE x402_payments SET state = 'worked', account_id = ${accountId}, period_start_ms = ${period.startMs},
          period_end_ms = ${period.endMs}, work_ref = ${new Date(period.endMs).toISOString()}, updated_at_ms = ${nowMs}
          WHERE key = ${key} AND state = 'reserved'`;
        return period;
      }),
    paidPeriod: async (accountId, nowMs) => settledPaidTime(await periodsOf(sql, accountId), nowMs),
    async find(key) {
      const rows = await sql`SELECT * FROM x402_payments WHERE key = ${key}` as Record<string, unknown>[];
      return rows[0] === undefined ? undefined : toPaymentRecord(rows[0]);
    },
    async failedSettlements(payer) {
      const rows = await sql.unsafe(FAILED_SETTLEMENTS_SQL, [payer.toLowerCase()]) as { failure_reason: string | null }[];
      return rows.map((r) => r.failure_reason ?? "");
    },
    async list(options = {}) {
      const rows = (options.state === undefined
        ? await sql`SELECT * FROM x402_payments ORDER BY created_at_ms DESC, key`
        : await sql`SELECT * FROM x402_payments WHERE state = ${options.state} ORDER BY created_at_ms DESC, key`) as Record<string, unknown>[];
      return rows.map(toPaymentRecord);
    },
  };
}
