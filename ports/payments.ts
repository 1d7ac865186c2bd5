/** What an x402 payment bought: one controller witness, one private-relay write, or a year of the paid plan. */
export type PaymentPurpose = "witness" | "relay" | "plan";

/**
 * Where a payment stands (decisions §13): `reserved` (verified, its replay key taken, the work not done yet) →
 * `worked` (the work succeeded, settlement under way) → `settled` | `settle_failed`; `work_unknown` when the work's
 * outcome is not known (a submission sent whose receipt never came): nothing is settled, the key stays spent until a
 * retry under the request's `Idempotency-Key` finds the work failed (or it is never retried). A payment whose work
 * failed has no record: its authorization may be used again.
 */
export type PaymentState = "reserved" | "worked" | "settled" | "settle_failed" | "work_unknown";

/** A verified payment, recorded before any work is done. */
export type PaymentReservation = {
  /** The replay key: `<network>:<token>:<EIP-3009 authorization nonce>`, lowercase (domain/payments `paymentReplayKey`). */
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
  /**
   * The authorization's `validBefore` (unix seconds, capped at 2^53 - 1): after it the payment can no longer be
   * settled, so an open one stops holding the payer's balance. Absent on payments reserved without a balance check.
   */
  readonly validBefore?: number | undefined;
  /**
   * The `Idempotency-Key` record the reserving request held (domain/idempotency `idempotencyRecordRef`), absent or null
   * when it held none: a dead request's retry resumes only a payment its own record reserved (decisions §23 with §13).
   */
  readonly idempotencyRef?: string | null | undefined;
};

/** A stored payment. */
export type PaymentRecord = Omit<PaymentReservation, "validBefore" | "idempotencyRef"> & {
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
  /** The authorization's `validBefore` (unix seconds) when it was reserved against the payer's balance. */
  readonly validBefore: number | null;
  /**
   * The `Idempotency-Key` record its request held when it reserved the payment; null when it held none, or when a
   * version before this column reserved it (the column added later: such a row names no record).
   */
  readonly idempotencyRef: string | null;
};

/**
 * Whose payment a release or a state mark is for: the `Idempotency-Key` record the row named when its request read or
 * reserved it (null: it names none, a keyless request's or an older version's row). The row changes only while it still
 * names that record (decisions §23 with §13): a request that reserved or found a payment and releases or marks it after
 * its async work (a first request, or a dead one's retry) must not forget, settle or mark another key's reservation of
 * the same authorization made in between (the row given back meanwhile and reserved again under another key; found in
 * review). Absent: by replay key alone.
 */
export type PaymentOwner = { readonly idempotencyRef: string | null };

/** The payer's balance the open payments are held against, and when it was read (decisions §13). */
export type BalanceCeiling = {
  /** Atomic units of the token; open payments plus the new one must not exceed it. */
  readonly balance: bigint;
  /**
   * When the balance read started: a payment settled at or after it may be missing from the balance read, so it is
   * still counted as open; one settled before it is already taken off the balance.
   */
  readonly readAtMs: number;
};

/** What a reservation against the payer's balance gave: taken, a known key, or more than the payer can pay. */
export type BalancedReservation = "reserved" | "known" | "over_balance";

/** A payer's token balance on the network its payments settle on. */
export interface PayerBalances {
  /** Atomic units; undefined when it cannot be read (another network, the node down). */
  readonly balanceOf: (input: { readonly network: string; readonly asset: string; readonly payer: string }) => Promise<bigint | undefined>;
}

/** A paid-plan period. */
export type PaidPeriod = { readonly startMs: number; readonly endMs: number };

/**
 * Durable record of x402 payments the service took: a replay key is reserved once across every instance sharing
 * the database, before the work; and the paid-plan periods the payments bought.
 */
export interface PaymentLedger {
  /** Records a verified payment; false when its key is known (a replay, or one still in flight). */
  readonly reserve: (reservation: PaymentReservation) => Promise<boolean>;
  /**
   * Records a verified payment only while the payer's open payments of the same token and network (`reserved` or
   * `worked` with an authorization not expired at `createdAtMs`, and those settled at or after `readAtMs`) plus
   * this one stay within `ceiling.balance`; atomic per payer across every instance sharing the database.
   */
  readonly reserveWithin: (reservation: PaymentReservation, ceiling: BalanceCeiling) => Promise<BalancedReservation>;
  /**
   * Forgets a `reserved` payment whose work failed (nothing was written, nothing settled), or a `work_unknown` one whose
   * work a retry found failed (its transaction reverted or given back); other states stay. `owner`: only while the row
   * still names that `Idempotency-Key` record ({@link PaymentOwner}).
   */
  readonly release: (key: string, owner?: PaymentOwner) => Promise<void>;
  /** The states the work and the settlement give a payment; `owner`: only while the row names it ({@link PaymentOwner}). */
  readonly worked: (key: string, workRef: string, nowMs: number, owner?: PaymentOwner) => Promise<void>;
  readonly workUnknown: (key: string, workRef: string | null, nowMs: number, owner?: PaymentOwner) => Promise<void>;
  readonly settled: (key: string, transaction: string, nowMs: number, owner?: PaymentOwner) => Promise<void>;
  readonly settleFailed: (key: string, reason: string, nowMs: number, owner?: PaymentOwner) => Promise<void>;
  /**
   * Plan purchases: atomically (per account) gives the `reserved` payment `key` the period of `durationMs` that
   * starts when the account's settled paid time ends, or now when none is left, and marks it `worked`. "settling"
   * (nothing changed) while another purchase of the account is `worked` and its authorization can still settle.
   */
  readonly grantPeriod: (key: string, accountId: string, durationMs: number, nowMs: number) => Promise<PaidPeriod | "settling">;
  /**
   * The account's paid time around `nowMs`: from the first to the last contiguous period, when one covers now. Only
   * periods whose payment `settled` count.
   */
  readonly paidPeriod: (accountId: string, nowMs: number) => Promise<PaidPeriod | undefined>;
  readonly find: (key: string) => Promise<PaymentRecord | undefined>;
  /**
   * The failure reasons of the payer's `settle_failed` payments whose work stands (witness and relay; a plan that did not
   * settle was not extended), at most 20; the payer compared lowercase.
   */
  readonly failedSettlements: (payer: string) => Promise<readonly string[]>;
  /** Every payment, newest first (`state`: only those). */
  readonly list: (options?: { readonly state?: PaymentState | undefined }) => Promise<PaymentRecord[]>;
}

/**
 * What the payment network's chain says became of an EIP-3009 authorization (the token's `AuthorizationUsed` /
 * `AuthorizationCanceled` events): used, in which transaction, with the transfer that same call made (the token's
 * `Transfer` log right after `AuthorizationUsed`, as EIP-3009's reference and USDC emit them; absent when there is
 * none); cancelled by its authorizer; or neither found.
 */
export type AuthorizationUse =
  | {
    readonly kind: "used";
    readonly transaction: string;
    readonly transfer?: { readonly from: string; readonly to: string; readonly value: bigint } | undefined;
  }
  | { readonly kind: "canceled"; readonly transaction: string }
  | { readonly kind: "not_found" };

/** Reads what became of an EIP-3009 authorization on the chain of the network its payment settles on. */
export interface AuthorizationUses {
  /** Undefined when the chain cannot be read (another network, the node down). */
  readonly useOf: (input: {
    readonly network: string;
    readonly asset: string;
    readonly authorizer: string;
    readonly nonce: string;
  }) => Promise<AuthorizationUse | undefined>;
}
