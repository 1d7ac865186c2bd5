import { sha256, stringToBytes } from "viem/utils";
import { fail, ok, type Result } from "../result.ts";

/** The longest key taken (decisions §23). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * Reads an `Idempotency-Key` header (decisions §23, the IETF httpapi draft): 1–255 printable ASCII characters, sent
 * bare (a UUID, as most clients send it) or as the draft's quoted string, whose quotes are stripped. Undefined when
 * the request carries none; an empty, longer or non-printable key is `INVALID_INPUT`.
 */
export function parseIdempotencyKey(header: string | null | undefined): Result<string | undefined, "INVALID_INPUT"> {
  if (header === null || header === undefined) return ok(undefined);
  const quoted = header.length >= 2 && header.startsWith('"') && header.endsWith('"');
  const key = quoted ? header.slice(1, -1) : header;
  if (key.length === 0) return fail("INVALID_INPUT", "Idempotency-Key is empty");
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) return fail("INVALID_INPUT", `Idempotency-Key is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) return fail("INVALID_INPUT", "Idempotency-Key must be printable ASCII");
  return ok(key);
}

/** What a request is compared by under one key: SHA-256 of its method, path and body. */
export function requestFingerprint(request: { readonly method: string; readonly path: string; readonly body: string }): string {
  return sha256(stringToBytes(`${request.method.toUpperCase()} ${request.path}\n${request.body}`)).slice(2);
}

/**
 * What names one key's record (its scope and key, the store's primary key) outside the idempotency store: SHA-256 of
 * both as hex. An x402 payment records the one its request held when it reserved the payment (decisions §23 with §13),
 * so a dead request's retry takes over only a payment its own key reserved, never another key's with the same
 * authorization (domain/payments `createPaidResume`). A hash, so the payer's key itself is kept in one place only.
 */
export function idempotencyRecordRef(record: { readonly scope: string; readonly key: string }): string {
  return sha256(stringToBytes(`${record.scope}\n${record.key}`)).slice(2);
}
