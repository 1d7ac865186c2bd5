import { withKnownBody } from "./http_cache.ts";
import { SIGNER_RETRY_AFTER_SECONDS } from "../ports/signer.ts";

/** The one error body of the service (decisions §2). */
export type ErrorBody = { error: string; code: string; details?: string };

const STATUS: Readonly<Record<string, number>> = {
  INVALID_JSON: 400,
  INVALID_INPUT: 400,
  INVALID_DID: 400,
  INVALID_SIGNATURE: 400,
  SIGNATURE_EXPIRED: 400,
  ATTESTER_MISMATCH: 400,
  UNSUPPORTED_CHAIN: 400,
  UNSUPPORTED_SUBJECT_TYPE: 400,
  INVALID_CHALLENGE: 400,
  CHALLENGE_EXPIRED: 400,
  UNAUTHENTICATED: 401,
  CLIENT_NOT_ALLOWED: 403,
  ORIGIN_NOT_ALLOWED: 403,
  SCHEMA_NOT_SUBSIDIZED: 403,
  PUBLIC_RELAY_DISABLED: 403,
  SPONSORED_WRITE_LIMIT_EXCEEDED: 403,
  PREMIUM_READ_LIMIT_EXCEEDED: 403,
  SCHEMA_NOT_ELIGIBLE: 403,
  SIGNING_KEY_LIMIT_EXCEEDED: 403,
  SUBJECT_LIMIT_EXCEEDED: 403,
  WEBHOOK_LIMIT_EXCEEDED: 403,
  WEBHOOK_NOT_FOUND: 404,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  DUPLICATE: 409,
  ACCOUNT_ALREADY_EXISTS: 409,
  SUBJECT_ALREADY_EXISTS: 409,
  // A webhook.test asked of a disabled endpoint (it would wait, and go out with the others once enabled).
  WEBHOOK_DISABLED: 409,
  // The first request with this Idempotency-Key is still running (decisions §23); `Retry-After` says when to ask again.
  IDEMPOTENCY_KEY_IN_USE: 409,
  SUBJECT_NOT_FOUND: 404,
  SUBJECT_OWNERSHIP_VERIFICATION_FAILED: 403,
  SUBJECT_OWNERSHIP_REQUIRED: 403,
  // The body did not arrive within BODY_TIMEOUT_MS (http/instrument.ts); the connection is closed.
  REQUEST_TIMEOUT: 408,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  EVIDENCE_NOT_FOUND: 422,
  // The Idempotency-Key was used for a different request (decisions §23).
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  NO_DELEGATE_KEY: 500,
  RPC_ERROR: 500,
  SUBMISSION_FAILED: 500,
  SCHEMA_NOT_DEPLOYED: 500,
  SERVER_ERROR: 500,
  INTERNAL_ERROR: 500,
  MAINNET_NOT_SUPPORTED: 501,
  NETWORK_ERROR: 502,
  // The transaction may have reached the chain; `details` carries its hash (decisions §15).
  OUTCOME_UNKNOWN: 503,
  // The instance is draining (SIGTERM): the request was not started; another instance, or this one restarted, takes it.
  SHUTTING_DOWN: 503,
  // No poll of the chain completed for INDEX_STALL_SECONDS: never an old answer presented as current (decisions §21).
  INDEX_STALE: 503,
  // The service's signer (decisions §27) could not be reached, timed out or refused; nothing was spent.
  SIGNER_UNAVAILABLE: 503,
};

/** Seconds a client is told to wait before asking again after a 503 INDEX_STALE. */
export const INDEX_STALE_RETRY_AFTER_SECONDS = 5;

/** Headers an error answer carries for its code: `Retry-After` on INDEX_STALE. */
export function headersOf(code: string): Record<string, string> {
  if (code === "SIGNER_UNAVAILABLE") return { "retry-after": String(SIGNER_RETRY_AFTER_SECONDS) };
  return code === "INDEX_STALE" ? { "retry-after": String(INDEX_STALE_RETRY_AFTER_SECONDS) } : {};
}

/** The HTTP status of an error code; unknown codes are bugs, so 500. */
export function statusOf(code: string): number {
  return STATUS[code] ?? 500;
}

/** Builds an error body, leaving `details` out when there is none. */
export function errorBody(code: string, error: string, details?: string): ErrorBody {
  return details === undefined ? { error, code } : { error, code, details };
}

/** A JSON response with the service's serialization (big integers as base-10 strings). */
export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const text = stringify(body);
  const response = new Response(text, {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...headers },
  });
  // A 200 may be a cacheable read: its ETag is worked out from the text (http/http_cache.ts).
  return status === 200 ? withKnownBody(response, text) : response;
}

/** JSON.stringify with bigint as base-10 strings. */
export function stringify(body: unknown): string {
  return JSON.stringify(body, (_key, value) => (typeof value === "bigint" ? value.toString() : value));
}

/** Milliseconds from `startedAt` to `nowMs` (the same clock, `performance.now` by default) as the `elapsed` text of the EAS routes. */
export function elapsedSince(startedAt: number, nowMs: number = performance.now()): string {
  return `${Math.max(0, Math.round(nowMs - startedAt))}ms`;
}
