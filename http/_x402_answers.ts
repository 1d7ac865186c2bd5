/** The x402 gate's own answers (http/x402_gate.ts): its refusals, and where a paid write's key belongs. */
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentRequiredHeader } from "@x402/core/http";
import type { HTTPResponseInstructions } from "@x402/core/server";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { readExactAuthorization } from "../domain/payments/mod.ts";
import { errorBody, json } from "./errors.ts";

export const replayed = (): Response => json(errorBody("PAYMENT_ALREADY_USED", "This payment authorization was already used"), 409);
export const inProgress = (): Response =>
  json(errorBody("PAYMENT_IN_PROGRESS", "The payer's unsettled payments already hold its token balance; nothing was done or charged, retry once they settle"), 409);
/**
 * A dead request's retry that finds its authorization reserved by another `Idempotency-Key`'s request still open
 * (http/_x402_resume.ts): not kept (`PAYMENT_IN_PROGRESS` is among the refusals that did nothing), since that request
 * may yet give the payment back, and then this key's retry runs.
 */
export const inUseByAnotherKey = (): Response =>
  json(errorBody("PAYMENT_IN_PROGRESS", "This payment authorization is in use by another request (another Idempotency-Key); nothing was done or charged under this key, send it again once that request is answered"), 409);
export const unavailable = (): Response => json(errorBody("FACILITATOR_UNAVAILABLE", "The payment facilitator is unavailable; nothing was charged"), 502);
/** A 402 from core's instructions: its headers (PAYMENT-REQUIRED), our error body. */
export const paymentRequired = (instructions: HTTPResponseInstructions, code: string, message: string, details?: string) => {
  // Names lowercased before they are merged: core sends `Cache-Control` too, and two spellings of one name were
  // both sent (`no-store, no-store`).
  const headers: Record<string, string> = { "cache-control": "no-store" };
  for (const [k, v] of Object.entries(instructions.headers)) if (k.toLowerCase() !== "content-type") headers[k.toLowerCase()] = v;
  if (headers["payment-required"] !== undefined) headers["payment-required"] = withKnownError(headers["payment-required"], details);
  return json(errorBody(code, message, details), instructions.status === 412 ? 402 : instructions.status, headers);
};

/**
 * PAYMENT-REQUIRED with an `error` that is a protocol code: the refusal's `details` (already a code), or core's fixed
 * "Payment required" of an unpaid request. Core puts the text of whatever it caught there, and some of it echoes the
 * client's input (`x402Version: "<probe>"` came back as "Unsupported x402 version: <probe>").
 */
function withKnownError(header: string, details: string | undefined): string {
  let required: PaymentRequired;
  try {
    required = decodePaymentRequiredHeader(header);
  } catch {
    return header;
  }
  const error = details ?? (required.error === "Payment required" ? required.error : undefined);
  if (required.error === error) return header;
  const { error: _dropped, ...rest } = required;
  return encodePaymentRequiredHeader(error === undefined ? rest : { ...rest, error });
}

/**
 * The payment a `PAYMENT-SIGNATURE` header carries, or undefined when it carries none: not base64 JSON, or JSON that is
 * not an object. Core's decoder returns any JSON value, and `bnVsbA==` (`null`) made every paid route answer 500 where
 * `{}` or `"x"` answered 402.
 */
export function decodedPayment(header: string): PaymentPayload | undefined {
  let decoded: unknown;
  try {
    decoded = decodePaymentSignatureHeader(header);
  } catch {
    return undefined;
  }
  return typeof decoded === "object" && decoded !== null && !Array.isArray(decoded) ? decoded as PaymentPayload : undefined;
}

/** Where a paid write's `Idempotency-Key` belongs: see `PaymentGate.idempotentWrite` (http/x402_gate.ts). */
export function paidIdempotentWrite(request: Request, body: unknown, fallbackScope: string): { scope: string; body: string } {
  const header = request.headers.get("payment-signature") ?? "";
  const payment = decodedPayment(header);
  const payer = payment === undefined ? undefined : readExactAuthorization(payment.payload)?.from.toLowerCase();
  return { scope: payer === undefined ? fallbackScope : `x402:${payer}`, body: `${typeof body === "string" ? body : ""}\n${header}` };
}
