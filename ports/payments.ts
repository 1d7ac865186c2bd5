/** What an x402 payment bought: one controller witness, one private-relay write, or a year of the paid plan. */
export type PaymentPurpose = "witness" | "relay" | "plan";

/**
 * Where a payment stands (decisions §13): `reserved` (verified, its replay key taken, the work not done yet) →
 * `worked` (the work succeeded, settlement under way) → `settled` | `settle_failed`; `work_unknown` when the work's
 * outcome is not known (a submission sent whose receipt never came): nothing is settled, the key stays spent. A
 * payment whose work failed has no record: its authorization may be used again.
 */
export type PaymentState = "reserved" | "worked" | "settled" | "settle_failed" | "work_unknown";

/** A verified payment, recorded before any work is done. */
export type PaymentReservation = {
  /** The replay key: `<network>:<token>:<EIP-3009 authorization nonce>`, lowercase. */
  readonly key: string;
  readonly purpose: PaymentPurpose;
  /** CAIP-2, e.g. `eip155:31337`. */
  readonly network: string;
  /** The token's address, lowercase. */
  readonly asset: string;
  /** The payer's address, lowercase. */
  readonly payer: string;
  readonly payTo: string;
  /** Atomic units of the token, as a decimal string. */
  readonly amount: string;
  /** The signed-in account it was made for (plan purchases), else null. */
  readonly accountId: string | null;
  readonly createdAtMs: number;
};

/** A stored payment. */
export type PaymentRecord = PaymentReservation & {
  readonly state: PaymentState;
  /** What the work produced: a transaction hash (witness, relay) or the plan period's end. */
  readonly workRef: string | null;
  /** The settlement transaction. */
  readonly settlementTx: string | null;
  /** A protocol reason code (`invalid_exact_evm_payload_signature`, `facilitator_unavailable`). */
  readonly failureReason: string | null;
  /** Plan purchases: the paid period this payment bought, in ms. */
  readonly periodStartMs: number | null;
  readonly periodEndMs: number | null;
  readonly updatedAtMs: number;
};

/** A paid-plan period. */
export type PaidPeriod = { readonly startMs: number; readonly endMs: number };

/**
 * Durable record of x402 payments the service took: a replay key is reserved once across every instance sharing
 * the database, before the work; and the paid-plan periods the payments bought.
 */
export interface PaymentLedger {
  /** Records a verified payment; false when its key is known (a replay, or one still in flight). */
  readonly reserve: (reservation: PaymentReservation) => Promise<boolean>;
  /** Forgets a `reserved` payment whose work failed (nothing was written, nothing settled); other states stay. */
  readonly release: (key: string) => Promise<void>;
  readonly worked: (key: string, workRef: string, nowMs: number) => Promise<void>;
  readonly workUnknown: (key: string, workRef: string | null, nowMs: number) => Promise<void>;
  readonly settled: (key: string, transaction: string, nowMs: number) => Promise<void>;
  readonly settleFailed: (key: string, reason: string, nowMs: number) => Promise<void>;
  /**
   * Plan purchases: atomically (per account) gives the `reserved` payment `key` the period of `durationMs` that
   * starts when the account's paid time (payments `worked` or `settled`) ends, or now when none is left, and marks
   * it `worked`.
   */
  readonly grantPeriod: (key: string, accountId: string, durationMs: number, nowMs: number) => Promise<PaidPeriod>;
  /** The account's paid time around `nowMs`: from the first to the last contiguous period, when one covers now. */
  readonly paidPeriod: (accountId: string, nowMs: number) => Promise<PaidPeriod | undefined>;
  readonly find: (key: string) => Promise<PaymentRecord | undefined>;
  /** Every payment, newest first (`state`: only those). */
  readonly list: (options?: { readonly state?: PaymentState | undefined }) => Promise<PaymentRecord[]>;
}
