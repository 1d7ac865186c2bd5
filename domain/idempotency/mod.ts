/** Idempotency keys of writes (decisions §23): a retry gets the first answer, never a second write. */
export {
  awaitsOutcome,
  createIdempotency,
  DUPLICATE_ON_ITS_WAY,
  type HeldKey,
  type Idempotency,
  type IdempotencyAnswer,
  type IdempotencyDecision,
  type IdempotencyDeps,
  type IdempotentRequest,
  IDEMPOTENCY_KEEP_MS,
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_RETRY_AFTER_SECONDS,
  keepsAnswer,
  keepsStoredAnswer,
  storedAnswerCode,
} from "./idempotency.ts";
export { idempotencyRecordRef, MAX_IDEMPOTENCY_KEY_LENGTH, parseIdempotencyKey, requestFingerprint } from "./idempotency_key.ts";
