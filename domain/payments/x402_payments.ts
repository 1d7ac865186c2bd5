/**
 * Paying with x402 instead of a session (decisions §13): the order of a paid call, whatever it buys. The payment
 * was verified by the facilitator; its replay key (the EIP-3009 authorization nonce of the token on the network)
 * is reserved durably before any work, so a payment is spent once across instances and concurrent replays do at
 * most one write; the work runs with the same checks as a signed-in call; only work that succeeded is settled. A
 * failed check or a failed write settles nothing and gives the key back (the authorization was never used); a
 * write whose outcome is unknown keeps it and settles nothing. A settlement that fails after the work leaves the
 * work standing and is recorded for the operator (`ops payments list`) and counted.
 *
 * A payer's unsettled payments never exceed what it can pay (issue 23): each payment is verified alone, so before the
 * work it is held against the payer's token balance read from the chain, atomically with the payer's other open
 * payments. One that would take the open sum over the balance does no work and is not recorded (its authorization
 * stays usable): parallel requests get at most what the balance pays for. When the balance cannot be read, the
 * ceiling is the payment itself: one open payment at a time per payer.
 */
import type { Clock } from "../../ports/clock.ts";
import type { Metrics } from "../../ports/metrics.ts";
import type { PaidPeriod, PayerBalances, PaymentLedger, PaymentOwner, PaymentPurpose, PaymentReservation, PaymentState } from "../../ports/payments.ts";
import type { Account } from "../../ports/accounts.ts";

/** The fields of an EIP-3009 `exact` payment the service reads (the facilitator checked the signature over them). */
export type ExactAuthorization = {
  readonly from: string;
  readonly to: string;
  readonly value: string;
  readonly validAfter: string;
  readonly validBefore: string;
  readonly nonce: string;
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const NONCE = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^[0-9]{1,78}$/;

/** The authorization of an `exact` EIP-3009 payload, or undefined when the payload is not one. */
export function readExactAuthorization(payload: unknown): ExactAuthorization | undefined {
  if (typeof payload !== "object" || payload === null) return undefined;
  const a = (payload as { authorization?: unknown }).authorization;
  if (typeof a !== "object" || a === null) return undefined;
  const { from, to, value, validAfter, validBefore, nonce } = a as Record<string, unknown>;
  const text = (v: unknown) => (typeof v === "number" || typeof v === "bigint" ? String(v) : v);
  const fields = { from, to, value: text(value), validAfter: text(validAfter), validBefore: text(validBefore), nonce };
  if (typeof fields.from !== "string" || !ADDRESS.test(fields.from)) return undefined;
  if (typeof fields.to !== "string" || !ADDRESS.test(fields.to)) return undefined;
  if (typeof fields.nonce !== "string" || !NONCE.test(fields.nonce)) return undefined;
  for (const n of [fields.value, fields.validAfter, fields.validBefore]) if (typeof n !== "string" || !UINT.test(n)) return undefined;
  return fields as ExactAuthorization;
}

/** The seconds an authorization may spend on its way, between the payer's signature and its arrival here. */
export const AUTHORIZATION_TRANSIT_SECONDS = 30;

/**
 * Whether an authorization expires too soon to be taken (decisions §13: settled only after the work): it must stay
 * valid for the terms' `maxTimeoutSeconds` (the official client signs it for exactly that), less
 * {@link AUTHORIZATION_TRANSIT_SECONDS}. One that expires sooner can pass the facilitator's verification (it asks for
 * a few seconds) and then expire while the work runs: the work stands and the settlement fails, so the payer was never
 * charged, and could do it again at will.
 */
export function expiresTooSoon(authorization: Pick<ExactAuthorization, "validBefore">, nowMs: number, maxTimeoutSeconds: number): boolean {
  const left = BigInt(authorization.validBefore) - BigInt(Math.floor(nowMs / 1000));
  return left < BigInt(maxTimeoutSeconds - AUTHORIZATION_TRANSIT_SECONDS);
}

/**
 * The replay key of an authorization: `<network>:<token>:<nonce>`, lowercase. EIP-3009 nonces are unique per authorizer
 * and token, so two payers choosing the same nonce would be two payments; the key leaves the payer out on purpose, and
 * the second is refused (409 `PAYMENT_ALREADY_USED`, nothing done or charged). Nonces are 32 random bytes (EIP-3009, and
 * every x402 client), so only a client that counts its nonces can meet this. Keys already stored keep their meaning
 * across upgrades: a key with the payer in it would let a payment reserved before an upgrade run again after it (the
 * replay pre-check and a crashed request's resume look keys up by this form).
 */
/**
 * Whether a payment's client-given network and asset can name a stored payment: visible ASCII, as every network and
 * asset the service offers is. Anything else (U+0000 above all, which PostgreSQL's text refuses: the lookup answered
 * 500 before the payment was verified) names none, and the payment is refused by its verification.
 */
export function plainPaymentTerm(text: string): boolean {
  return /^[\x21-\x7e]{1,200}$/.test(text);
}

export function paymentReplayKey(input: { readonly network: string; readonly asset: string; readonly nonce: string }): string {
  return `${input.network}:${input.asset}:${input.nonce}`.toLowerCase();
}

/**
 * Settlement failures the payer causes between the verification and the settlement: its authorization's nonce used
 * (`cancelAuthorization`, or spent elsewhere; a nonce the payment itself used is settled, see
 * x402_settled_on_chain.ts), its balance moved away, the transfer's simulation or transaction failing on the state it
 * changed. Not a signature refused at settlement (`invalid_exact_evm_signature`): the official facilitator answers it
 * when its own `eth_getCode` read fails, so an honest payer would be shut out by the facilitator's trouble. Anything else (the facilitator unreachable, its own state or receipt wait failing,
 * `settlement_pending`, an authorization that ran out while the service held the work, a reason this code does not
 * know) is not held against the payer: a false refusal shuts a paying client out.
 */
function payersDoing(reason: string): boolean {
  return /nonce_already_used|insufficient_(balance|funds)|transaction_simulation_failed|transaction_failed/.test(reason);
}

/**
 * Whether a payer owes the service for work it got: a payment of its settled nothing after its write stood, for a
 * reason of the payer's (the authorization cancelled, the nonce used elsewhere, the balance moved away between the
 * verification and the settlement). Such a payer is refused further paid work (the gate answers 402 `PAYMENT_INVALID`,
 * `unsettled_payment`), so the same wallet cannot take free writes request after request. It does not bound them per
 * person: the payments a wallet's balance covers can all be in flight at once and all be cancelled, and the tokens
 * then move to a fresh wallet (docs/x402.md, "What settling after the work leaves open"). The operator lists them
 * with `ops payments list --state settle_failed`.
 */
export async function owesForWork(payments: Pick<PaymentLedger, "failedSettlements">, payer: string): Promise<boolean> {
  return (await payments.failedSettlements(payer.toLowerCase())).some(payersDoing);
}

/** What the paid work did: done (with what it produced), or not, and whether that is certain. */
export type PaidWork<T> =
  | { readonly done: true; readonly value: T; readonly ref: string }
  | { readonly done: false; readonly value: T; readonly unknown?: boolean | undefined; readonly ref?: string | undefined };

/** What the facilitator said to the settlement; `reason` is a protocol code, never upstream text. */
export type Settlement = { readonly ok: true; readonly transaction: string } | { readonly ok: false; readonly reason: string };

/** The outcome of a paid call. */
export type PaidCallOutcome<T> =
  /** The key was spent or is in flight: nothing was done. */
  | { readonly kind: "replayed" }
  /** The payer's open payments already hold its balance: nothing was done, nothing recorded (retry once they settle). */
  | { readonly kind: "in-progress" }
  /** The work failed (or its outcome is unknown): nothing was settled. */
  | { readonly kind: "not-done"; readonly value: T }
  | { readonly kind: "settled"; readonly value: T; readonly transaction: string }
  /** The work stands; the payment did not settle (recorded for the operator). */
  | { readonly kind: "unsettled"; readonly value: T; readonly reason: string };

/** What a paid call needs. */
export type PaidCallDeps = {
  readonly payments: PaymentLedger;
  readonly clock: Clock;
  readonly metrics?: Metrics | undefined;
  /** Reads the payer's balance; without it payments are not held against balances (one payer's calls run freely). */
  readonly balances?: PayerBalances | undefined;
};

/** Builds the paid call: `(reservation, work, settle)` → outcome, in the order of decisions §13. */
export function createPaidCall(deps: PaidCallDeps) {
  const count = (purpose: PaymentPurpose, outcome: string) => deps.metrics?.increment("ats_x402_payments_total", { purpose, outcome });
  /** Records the payment, held against the payer's balance when balances are read. */
  const reserve = async (reservation: Omit<PaymentReservation, "createdAtMs">): Promise<"reserved" | "known" | "over_balance"> => {
    const { balances } = deps;
    if (balances === undefined) return (await deps.payments.reserve({ ...reservation, createdAtMs: deps.clock.nowMs() })) ? "reserved" : "known";
    const readAtMs = deps.clock.nowMs();
    const balance = await balances.balanceOf(reservation).catch(() => undefined);
    const ceiling = { balance: balance ?? BigInt(reservation.amount), readAtMs };
    return await deps.payments.reserveWithin({ ...reservation, createdAtMs: deps.clock.nowMs() }, ceiling);
  };
  return async function paidCall<T>(
    reservation: Omit<PaymentReservation, "createdAtMs">,
    work: () => Promise<PaidWork<T>>,
    settle: () => Promise<Settlement>,
  ): Promise<PaidCallOutcome<T>> {
    const { key, purpose } = reservation;
    const taken = await reserve(reservation);
    if (taken === "over_balance") {
      count(purpose, "in_progress");
      return { kind: "in-progress" };
    }
    if (taken === "known") {
      count(purpose, "replayed");
      return { kind: "replayed" };
    }
    // Its release and marks after the work touch this reservation only (`PaymentOwner`), never another key's made since.
    const owner: PaymentOwner = { idempotencyRef: reservation.idempotencyRef ?? null };
    let done: PaidWork<T>;
    try {
      done = await work();
    } catch (error) {
      await deps.payments.release(key, owner);
      throw error;
    }
    return await afterWork(deps, { key, purpose, owner }, done, settle);
  };
}

/**
 * What follows the work of a paid call (or of its resume): work that failed gives the key back, work whose outcome is
 * unknown keeps it and settles nothing, work that succeeded is recorded and then settled.
 */
async function afterWork<T>(
  deps: PaidCallDeps,
  payment: { readonly key: string; readonly purpose: PaymentPurpose; readonly owner: PaymentOwner },
  done: PaidWork<T>,
  settle: () => Promise<Settlement>,
): Promise<Exclude<PaidCallOutcome<T>, { readonly kind: "replayed" | "in-progress" }>> {
  const { key, purpose, owner } = payment;
  const count = (outcome: string) => deps.metrics?.increment("ats_x402_payments_total", { purpose, outcome });
  if (!done.done) {
    if (done.unknown === true) {
      await deps.payments.workUnknown(key, done.ref ?? null, deps.clock.nowMs(), owner);
      count("work_unknown");
    } else {
      await deps.payments.release(key, owner);
      count("work_failed");
    }
    return { kind: "not-done", value: done.value };
  }
  await deps.payments.worked(key, done.ref, deps.clock.nowMs(), owner);
  let settlement: Settlement;
  try {
    settlement = await settle();
  } catch {
    settlement = { ok: false, reason: "facilitator_unavailable" };
  }
  if (!settlement.ok) {
    await deps.payments.settleFailed(key, settlement.reason, deps.clock.nowMs(), owner);
    count("settle_failed");
    deps.metrics?.increment("ats_x402_settlement_failures_total", { purpose });
    return { kind: "unsettled", value: done.value, reason: settlement.reason };
  }
  await deps.payments.settled(key, settlement.transaction, deps.clock.nowMs(), owner);
  count("settled");
  return { kind: "settled", value: done.value, transaction: settlement.transaction };
}

/** The paid call use case. */
export type PaidCall = ReturnType<typeof createPaidCall>;

/**
 * What resuming a paid call found: no payment of this request's (run it afresh), the payment reserved by another
 * `Idempotency-Key` record (`other-key`, with that payment's state; nothing of it read or touched), or the call's outcome.
 */
export type PaidResumeOutcome<T> =
  | { readonly kind: "run" }
  | { readonly kind: "other-key"; readonly state: PaymentState }
  | Exclude<PaidCallOutcome<T>, { readonly kind: "replayed" | "in-progress" }>;

/**
 * Resumes a paid call whose request died (a crash) under its `Idempotency-Key` (decisions §23 with §13), for the retry
 * that took the key over, the same request with the same payment. Before, the retry met its own payment's replay key
 * and was refused (409 `PAYMENT_ALREADY_USED`, or 402 once the authorization had run out) while the dead request's
 * write stood on chain: the payer never learnt of it, and paid again for a second one.
 *
 * The payment recorded under `key` for this payer and purpose is the dead request's. `work` reads what that request's
 * write came to, without writing anything: undefined when it wrote nothing, and then the payment is given back (if the
 * work had not begun) and the request runs afresh. Otherwise the outcome is the write's: one that succeeded is settled
 * now (an authorization that ran out while the request was dead cannot be, and the write stands unsettled, recorded
 * for the operator as any failed settlement is); one already settled or failed to settle before the crash answers
 * as it was, never settled twice; one that failed gives the payment back.
 *
 * The same holds for a request answered 503 `OUTCOME_UNKNOWN` whose answer was kept (its payment `work_unknown`), when
 * its retry takes the key back: a write that failed since (reverted, or given back by the reconciler on a cause that
 * proves nothing of it can land) forgets the payment as a first request's failed write does, so its authorization may
 * be used again (under a new key) or the payer pays afresh. A write whose outcome is still unknown (on its way, or given
 * back on a cause that proves nothing, its silence or a refused resend: it may still land) keeps the payment
 * `work_unknown`. Before, it stayed `work_unknown`
 * for good: nothing settled, its nonce refused as used.
 *
 * The payment is the dead request's only when it names the request's `Idempotency-Key` record (`idempotencyRef`,
 * domain/idempotency `idempotencyRecordRef`): one authorization may be sent under two keys, and once the first request
 * gave its payment back (its write failed, and it died before its answer was kept), the second may have reserved it
 * under its own key. Such a payment is not this request's to resume: nothing is read, released or settled, and the
 * outcome is `other-key` with its state, for the caller to answer: while that payment is open (`reserved`, `worked`,
 * `work_unknown`) its request may yet give it back, and this one is answered without keeping anything under its key
 * (http/_x402_resume.ts); once settled or failed to settle, the payment is used. Before, the retry took it for its own:
 * finding its own write had written nothing, it released the other key's live reservation and ran again, reserving the
 * authorization a second time (two writes for one payment, the second settlement failing: a free write); or it
 * settled the other key's payment for its own write, or marked it `work_unknown` or forgot it. A payment that names no
 * record was reserved by a version before the column, during a rolling restart: it is taken as the dead request's when
 * payer and purpose match, as it was then.
 *
 * Its release and marks name the record the payment named when found (`PaymentOwner`): the read of the work is
 * async, and a payment given back meanwhile and reserved again under another key is left alone (found in review).
 */
export function createPaidResume(deps: PaidCallDeps) {
  return async function paidResume<T>(
    payment: {
      readonly key: string;
      readonly payer: string;
      readonly purpose: PaymentPurpose;
      /** The `Idempotency-Key` record the retry took over (`idempotencyRecordRef`). */
      readonly idempotencyRef?: string | undefined;
    },
    work: () => Promise<PaidWork<T> | undefined>,
    settle: () => Promise<Settlement>,
  ): Promise<PaidResumeOutcome<T>> {
    const record = await deps.payments.find(payment.key);
    if (record === undefined || record.payer !== payment.payer.toLowerCase() || record.purpose !== payment.purpose) return { kind: "run" };
    // Another key's reservation of the same authorization (see above); a row with none recorded is an older version's.
    if (record.idempotencyRef !== null && record.idempotencyRef !== payment.idempotencyRef) return { kind: "other-key", state: record.state };
    const owner: PaymentOwner = { idempotencyRef: record.idempotencyRef };
    const done = await work();
    if (done === undefined) {
      if (record.state === "reserved" || record.state === "work_unknown") await deps.payments.release(payment.key, owner);
      return { kind: "run" };
    }
    // Work not done never answers a settlement: a payment under the key that was worked, settled or failed to settle
    // is another write's (this one's authorization was given back and paid again under another key), left as it is.
    // Before, the retry kept this write's failure with a PAYMENT-RESPONSE naming that other write's settlement.
    if (!done.done && record.state !== "reserved" && record.state !== "work_unknown") return { kind: "not-done", value: done.value };
    if (record.state === "settled") return { kind: "settled", value: done.value, transaction: record.settlementTx ?? "" };
    if (record.state === "settle_failed") return { kind: "unsettled", value: done.value, reason: record.failureReason ?? "invalid_payment" };
    deps.metrics?.increment("ats_x402_payments_total", { purpose: payment.purpose, outcome: "resumed" });
    return await afterWork(deps, { key: payment.key, purpose: payment.purpose, owner }, done, settle);
  };
}

/** The paid call's resume. */
export type PaidResume = ReturnType<typeof createPaidResume>;

/** One year of the paid plan, as `POST /api/private/subscriptions/x402` sells it. */
export const PAID_PLAN_YEAR_MS = 365 * 86_400_000;

/**
 * The account as its plan stands now: `paid` while a bought period covers `nowMs` (or an operator set it), else as
 * stored. A lapsed period falls back to the stored plan, never to nothing (decisions §12).
 */
export function withPaidPeriod(account: Account, period: PaidPeriod | undefined, nowMs: number): Account {
  if (period === undefined || nowMs < period.startMs || nowMs >= period.endMs || account.plan === "paid") return account;
  return { ...account, plan: "paid" };
}

/**
 * Accounts looked up as their plan stands now, for the bearer check (OAuth access tokens and API clients): a token
 * acts as its account "with its plan and quota" (decisions §19), so an x402-bought period counts there as it does
 * for a session ({@link withPaidPlans}).
 */
export function withPaidAccounts<A extends { readonly findAccount: (idOrAddress: string) => Promise<Account | undefined> }>(
  accounts: A,
  deps: { readonly payments: PaymentLedger; readonly clock: Clock },
): A {
  return {
    ...accounts,
    async findAccount(idOrAddress: string) {
      const account = await accounts.findAccount(idOrAddress);
      if (account === undefined || account.plan === "paid") return account;
      const nowMs = deps.clock.nowMs();
      return withPaidPeriod(account, await deps.payments.paidPeriod(account.id, nowMs), nowMs);
    },
  };
}

/** A paying agent without a session: its wallet address, from the verified authorization. */
export type PayingAgent = { readonly kind: "x402"; readonly address: string };

/** The quota key of paid writes: they are counted in the sponsored-write ledger (for the reconciler), never against a plan. */
export function payerLedgerId(payer: string): string {
  return `x402:${payer.toLowerCase()}`;
}

/** Anything that authenticates a session to an account (the sign-in use cases). */
type Authenticating = {
  readonly authenticate: (token: string | undefined) => Promise<
    { readonly ok: true; readonly value: { readonly account: Account } } | { readonly ok: false; readonly code: "UNAUTHENTICATED"; readonly message: string }
  >;
};

/** Sessions whose accounts carry the plan they have now: `paid` while an x402-bought period covers the clock. */
export function withPaidPlans<S extends Authenticating>(sessions: S, deps: { readonly payments: PaymentLedger; readonly clock: Clock }): S {
  return {
    ...sessions,
    async authenticate(token: string | undefined) {
      const auth = await sessions.authenticate(token);
      if (!auth.ok || auth.value.account.plan === "paid") return auth;
      const nowMs = deps.clock.nowMs();
      const period = await deps.payments.paidPeriod(auth.value.account.id, nowMs);
      if (period === undefined) return auth;
      return { ...auth, value: { ...auth.value, account: withPaidPeriod(auth.value.account, period, nowMs) } };
    },
  };
}
