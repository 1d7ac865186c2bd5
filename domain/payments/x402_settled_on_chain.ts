/**
 * A settlement the facilitator refused because the authorization's nonce is already used (decisions §13): the nonce
 * may have been used by the payment itself. Anyone holding the signed authorization can submit it (a third party
 * front-running the facilitator, or the facilitator's own earlier attempt whose answer was lost), and then the money
 * reached payTo although the facilitator answers `invalid_exact_evm_nonce_already_used`. Recorded as a failure of the
 * payer's doing, the service kept a payment it had been paid (no receipt, no plan) and refused the payer's next paid
 * work (402 `unsettled_payment`).
 *
 * So the chain is asked what the nonce did: used by a call that moved at least the price from the payer to payTo (the
 * token's `Transfer` of the same call) means the payment landed: it is settled, with that transaction. Cancelled, or
 * used for another transfer (a second authorization the payer signed with the same nonce), is the payer's doing and
 * keeps the facilitator's reason. A front-run usually shows as the facilitator's own transaction reverting
 * (`…transaction_failed`, mined after the other's), so those refusals are checked too. When the chain cannot be read
 * (a network the service does not read, a node behind, a provider's error) or shows neither, the facilitator's reason
 * stands as it was: a review found a softer answer there ("not held") let a payer whose X402_NETWORK the service does
 * not read cancel after every write and never be refused.
 */
import type { AuthorizationUses } from "../../ports/payments.ts";
import type { Settlement } from "./x402_payments.ts";

/** The payment whose settlement was refused: its terms and its authorization. */
export type RefusedPayment = {
  /** CAIP-2. */
  readonly network: string;
  readonly asset: string;
  readonly payer: string;
  readonly payTo: string;
  /** The price, atomic units as a decimal string. */
  readonly amount: string;
  /** The EIP-3009 authorization nonce. */
  readonly nonce: string;
};

/**
 * Whether a refusal may hide the payment landed by another's transaction: a used nonce (cancelled, or used by anyone),
 * or the facilitator's transfer failing (its transaction mined after a front-run's, or simulated on the state after it).
 */
export function nonceAlreadyUsed(reason: string): boolean {
  return /nonce_already_used|transaction_failed|transaction_simulation_failed/.test(reason);
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/**
 * Builds the check of a refused settlement against the chain: `(payment, failure)` → the settlement as it stands
 * (see the module's comment). Failures for other reasons are returned as they are, without a chain read.
 */
export function createSettledOnChain(deps: { readonly uses: AuthorizationUses }) {
  return async function settledOnChain(payment: RefusedPayment, failure: Extract<Settlement, { ok: false }>): Promise<Settlement> {
    if (!nonceAlreadyUsed(failure.reason)) return failure;
    const use = await deps.uses.useOf({ network: payment.network, asset: payment.asset, authorizer: payment.payer, nonce: payment.nonce })
      .catch(() => undefined);
    if (use === undefined || use.kind === "not_found") return failure;
    if (use.kind === "canceled") return failure;
    const t = use.transfer;
    const paid = t !== undefined && same(t.from, payment.payer) && same(t.to, payment.payTo) && t.value >= BigInt(payment.amount);
    return paid ? { ok: true, transaction: use.transaction } : failure;
  };
}

/** The check of a refused settlement against the chain. */
export type SettledOnChain = ReturnType<typeof createSettledOnChain>;
