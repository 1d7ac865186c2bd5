/**
 * A paid write whose request died (a crash) under its `Idempotency-Key` (decisions §23 with §13), for the retry that
 * took the key over: the same request, so the same payment. The retry answers what the dead request's write came to,
 * as a retry of an unpaid write does, and the payment follows the domain's resume (domain/payments `createPaidResume`):
 * work that succeeded is settled now, through the facilitator's verification and settlement as a first request's is,
 * which an authorization that ran out while the request was dead does not pass (the write stands, `PAYMENT-RESPONSE`
 * says `success: false` with the reason, recorded for the operator); work settled before the crash answers with its
 * settlement, never settled twice; a write that failed gives the payment back.
 *
 * Before, the retry met its own payment's replay key (409 `PAYMENT_ALREADY_USED`), or, past the authorization's
 * validity, 402: the payer was told the write was refused while it stood on chain, and paid again for a second one.
 */
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { HTTPRequestContext } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { paymentReplayKey, plainPaymentTerm, readExactAuthorization, type Settlement } from "../domain/payments/mod.ts";
import type { PaymentPurpose } from "../ports/payments.ts";
import { decodedPayment, inUseByAnotherKey, replayed } from "./_x402_answers.ts";
import { adapterOf, type Gate, type GateWork, paidWorkOf, reasonOf, refusedPayment, settleWork, workAnswer } from "./_x402_core.ts";

/** The payment a request's `PAYMENT-SIGNATURE` names: its replay key, payer and network; undefined when it names none. */
function paymentOf(header: string): { readonly key: string; readonly payer: string; readonly network: string } | undefined {
  const payload = decodedPayment(header);
  if (payload === undefined) return undefined;
  const authorization = readExactAuthorization(payload.payload);
  const accepted = payload.accepted as { network?: unknown; asset?: unknown } | undefined;
  if (authorization === undefined || typeof accepted?.network !== "string" || typeof accepted.asset !== "string") return undefined;
  if (!plainPaymentTerm(accepted.network) || !plainPaymentTerm(accepted.asset)) return undefined;
  const key = paymentReplayKey({ network: accepted.network, asset: accepted.asset, nonce: authorization.nonce });
  return { key, payer: authorization.from.toLowerCase(), network: accepted.network };
}

/**
 * A resumed payment refused at its verification: a used nonce may be this payment, settled before the crash (its
 * answer lost) or submitted by someone else, and then it is settled with that transaction (domain/payments
 * `createSettledOnChain`); other refusals stand.
 */
async function refusedAtResume(gate: Gate, purpose: PaymentPurpose, header: string, reason: string): Promise<Settlement> {
  const authorization = readExactAuthorization(decodedPayment(header)?.payload);
  const amount = gate.options.prices[purpose];
  if (gate.options.settledOnChain === undefined || authorization === undefined || amount === undefined) return { ok: false, reason };
  const { network, asset, payTo } = gate.options;
  return await gate.options.settledOnChain(refusedPayment({ network, asset, payTo, amount }, authorization), { ok: false, reason });
}

/**
 * The retry's answer from the dead request's write (`work` reads it; undefined: nothing was written), or undefined
 * when the request is to run afresh: no payment of this payer and purpose under the replay key, or nothing written (its
 * payment given back first, when the work had not begun).
 *
 * A payment another `Idempotency-Key` record reserved (not `keyRef`, the record this retry took over: the same
 * authorization sent under another key) is answered by its state, nothing of it read or touched. Still open
 * (`reserved`, `worked`, `work_unknown`): 409 `PAYMENT_IN_PROGRESS`, which is not kept, so the key's record is given
 * back (http/idempotency.ts) and a later retry runs as a new request: written and settled if the other request gave
 * the payment back (its write failed), else meeting it used. Settled or failed to settle: the authorization is used,
 * 409 `PAYMENT_ALREADY_USED`, kept under the key. Before, the retry ran afresh holding the key, met the payment in use
 * and kept that 409 under the key for 24 hours, though the other request might give the payment back, after which
 * the same payment under a fresh key went through (found in review; decisions §23: a 409 naming no outcome is not kept).
 */
export async function resumePayment(
  gate: Gate,
  request: Request,
  purpose: PaymentPurpose,
  work: () => Promise<GateWork | undefined>,
  keyRef?: string,
): Promise<Response | undefined> {
  const resume = gate.options.paidResume;
  const header = request.headers.get("payment-signature") ?? undefined;
  const payment = header === undefined ? undefined : paymentOf(header);
  if (resume === undefined || payment === undefined) return undefined;
  const url = new URL(request.url);
  const context: HTTPRequestContext = { adapter: adapterOf(request, url), path: url.pathname, method: "POST", paymentHeader: header };
  let answer: GateWork | undefined;
  let settledHeaders: Record<string, string> = {};
  const outcome = await resume({ key: payment.key, payer: payment.payer, purpose, idempotencyRef: keyRef }, async () => {
    answer = await work();
    return answer === undefined ? undefined : paidWorkOf(answer);
  }, async () => {
    // Not while the receipt cannot be signed (decisions §27), as a first request's payment is not taken then.
    if (gate.options.signerReady !== undefined && !(await gate.options.signerReady())) return { ok: false, reason: "signer_unavailable" };
    // Verified again first: the authorization may have run out while the request was dead.
    await gate.initialize();
    const processed = await gate.httpServer.processHTTPRequest(context);
    if (processed.type === "no-payment-required") return { ok: false, reason: "invalid_payment" };
    if (processed.type === "payment-error") return await refusedAtResume(gate, purpose, header!, reasonOf(processed.response));
    return await settleWork(gate, processed, answer!, context, (headers) => (settledHeaders = headers));
  });
  if (outcome.kind === "run") return undefined;
  gate.log.info("x402_payment_resumed", { purpose, outcome: outcome.kind });
  if (outcome.kind === "other-key") return outcome.state === "settled" || outcome.state === "settle_failed" ? replayed() : inUseByAnotherKey();
  if (outcome.kind === "not-done") return outcome.value.response;
  if (outcome.kind === "settled" && Object.keys(settledHeaders).length === 0) {
    // Settled before the crash: its settlement says so again (the receipt went with the answer that was lost).
    const network = payment.network as Network;
    settledHeaders = { "payment-response": encodePaymentResponseHeader({ success: true, transaction: outcome.transaction, network, payer: payment.payer }) };
  }
  return workAnswer(gate, outcome, { purpose, network: payment.network, payer: payment.payer, settledHeaders });
}
