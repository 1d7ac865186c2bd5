import type { Database } from "bun:sqlite";
import type { BalanceCeiling, BalancedReservation, PaidPeriod, PaymentLedger, PaymentOwner, PaymentReservation, PaymentState } from "../../ports/payments.ts";
import { applyTableGroup } from "./sqlite_database.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";
import { FAILED_SETTLEMENTS_SQL, paymentTables, PLAN_PERIODS_SELECT, placePlanPeriod, type PlanPeriodRow, settledPaidTime, storedValidBefore, toPaymentRecord, toPlanPeriodRow, withinBalance } from "../sql/payments.ts";

/**
 * The amounts that hold a payer's balance (decisions §13, issue 23; PostgreSQL has the same words): `reserved` and
 * `worked` payments whose authorization can still be settled at ?4 (unix seconds), and the payments settled at or
 * after the balance read started at ?5 (the read may not show their transfer yet). Payments without `valid_before`
 * predate the check and are not counted.
 */
const OPEN_AMOUNTS_WHERE = `payer = ?1 AND asset = ?2 AND network = ?3 AND (
  (state IN ('reserved', 'worked') AND valid_before IS NOT NULL AND valid_before > ?4) OR (state = 'settled' AND updated_at_ms >= ?5))`;

/** Payments in the SQLite file; the replay key is the primary key, a period is granted under `BEGIN IMMEDIATE`. */
export function createSqlitePayments(db: Database): PaymentLedger {
  db.transaction(() => applyTableGroup(db, paymentTables(SQLITE_WORDS))).immediate();
  const insert = db.query(
    `INSERT INTO x402_payments (key, purpose, network, asset, payer, pay_to, amount, account_id, state, created_at_ms, updated_at_ms, valid_before, idempotency_ref)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'reserved', ?9, ?9, ?10, ?11) ON CONFLICT (key) DO NOTHING`,
  );
  const insertReservation = (r: PaymentReservation) =>
    insert.run(r.key, r.purpose, r.network, r.asset.toLowerCase(), r.payer.toLowerCase(), r.payTo.toLowerCase(), r.amount, r.accountId, r.createdAtMs,
      storedValidBefore(r.validBefore), r.idempotencyRef ?? null);
  const openAmounts = db.query<{ amount: string }, [string, string, string, number, number]>(`SELECT amount FROM x402_payments WHERE ${OPEN_AMOUNTS_WHERE}`);
  const exists = db.query<{ key: string }, [string]>("SELECT key FROM x402_payments WHERE key = ?");
  const failedOf = db.query<{ failure_reason: string | null }, [string]>(FAILED_SETTLEMENTS_SQL.replace("$1", "?1"));
  // Under BEGIN IMMEDIATE: the open payments read and the insert are one step for every process on the file.
  const reserveWithin = db.transaction((r: PaymentReservation, ceiling: BalanceCeiling): BalancedReservation => {
    if (exists.get(r.key) !== null) return "known";
    const open = openAmounts.all(r.payer.toLowerCase(), r.asset.toLowerCase(), r.network, Math.floor(r.createdAtMs / 1000), ceiling.readAtMs);
    if (!withinBalance(open.map((o) => o.amount), r.amount, ceiling.balance)) return "over_balance";
    return insertReservation(r).changes === 1 ? "reserved" : "known";
  });
  // ?7 = 1: only while the row names the record ?8 (`PaymentOwner`; `IS`: null matches a row that names none).
  const setState = db.query(
    `UPDATE x402_payments SET state = ?2, work_ref = COALESCE(?3, work_ref), settlement_tx = COALESCE(?4, settlement_tx),
       failure_reason = COALESCE(?5, failure_reason), updated_at_ms = ?6 WHERE key = ?1 AND (?7 = 0 OR idempotency_ref IS ?8)`,
  );
  const releaseRow = db.query(
    "DELETE FROM x402_payments WHERE key = ?1 AND state IN ('reserved', 'work_unknown') AND (?2 = 0 OR idempotency_ref IS ?3)",
  );
  const ownerOf = (owner: PaymentOwner | undefined): [number, string | null] => (owner === undefined ? [0, null] : [1, owner.idempotencyRef]);
  const planRows = db.query<Record<string, unknown>, [string]>(PLAN_PERIODS_SELECT.replace("$1", "?1"));
  const periodsOf = (accountId: string): PlanPeriodRow[] => planRows.all(accountId).map(toPlanPeriodRow);
  const grant = db.transaction((key: string, accountId: string, durationMs: number, nowMs: number): PaidPeriod | "settling" => {
    const period = placePlanPeriod(periodsOf(accountId), durationMs, nowMs);
    if (period === "settling") return period;
    db.query(
      `UPDATE x402_payments SET state = 'worked', account_id = ?2, period_start_ms = ?3, period_end_ms = ?4, work_ref = ?5, updated_at_ms = ?6
       WHERE key = ?1 AND state = 'reserved'`,
    ).run(key, accountId, period.startMs, period.endMs, new Date(period.endMs).toISOString(), nowMs);
    return period;
  });
  const update = (key: string, state: PaymentState, fields: { ref?: string | null; tx?: string; reason?: string }, nowMs: number, owner?: PaymentOwner) => {
    setState.run(key, state, fields.ref ?? null, fields.tx ?? null, fields.reason ?? null, nowMs, ...ownerOf(owner));
    return Promise.resolve();
  };
  return {
    reserve(r) {
      return Promise.resolve(insertReservation(r).changes === 1);
    },
    reserveWithin: (r, ceiling) => Promise.resolve(reserveWithin.immediate(r, ceiling)),
    release(key, owner) {
      releaseRow.run(key, ...ownerOf(owner));
      return Promise.resolve();
    },
    worked: (key, ref, nowMs, owner) => update(key, "worked", { ref }, nowMs, owner),
    workUnknown: (key, ref, nowMs, owner) => update(key, "work_unknown", { ref }, nowMs, owner),
    settled: (key, tx, nowMs, owner) => update(key, "settled", { tx }, nowMs, owner),
    settleFailed: (key, reason, nowMs, owner) => update(key, "settle_failed", { reason }, nowMs, owner),
    grantPeriod: (key, accountId, durationMs, nowMs) => Promise.resolve(grant.immediate(key, accountId, durationMs, nowMs)),
    paidPeriod: (accountId, nowMs) => Promise.resolve(settledPaidTime(periodsOf(accountId), nowMs)),
    find(key) {
      const row = db.query<Record<string, unknown>, [string]>("SELECT * FROM x402_payments WHERE key = ?").get(key);
      return Promise.resolve(row === null ? undefined : toPaymentRecord(row));
    },
    failedSettlements(payer) {
      const rows = failedOf.all(payer.toLowerCase());
      return Promise.resolve(rows.map((r) => r.failure_reason ?? ""));
    },
    list(options = {}) {
      const rows = options.state === undefined
        ? db.query<Record<string, unknown>, []>("SELECT * FROM x402_payments ORDER BY created_at_ms DESC, key").all()
        : db.query<Record<string, unknown>, [string]>("SELECT * FROM x402_payments WHERE state = ? ORDER BY created_at_ms DESC, key").all(options.state);
      return Promise.resolve(rows.map(toPaymentRecord));
    },
  };
}
