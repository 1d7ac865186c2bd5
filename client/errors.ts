/** Codes the client helpers raise; other helpers may add their own. */
export type AtsClientErrorCode = "INVALID_INPUT" | "INVALID_RESPONSE" | "NETWORK_ERROR" | "UNSUPPORTED_CHAIN" | (string & {});

/** Options of {@link AtsClientError}. */
export type AtsClientErrorOptions = {
  /** HTTP status of the answer that caused the error, when there was one. */
  readonly status?: number | undefined;
  /** Parsed body (or text) of that answer. */
  readonly body?: unknown;
  readonly cause?: unknown;
  /** The answer's `Retry-After` in seconds (a 429 `RATE_LIMITED`, a 503), when it carried one. */
  readonly retryAfterSeconds?: number | undefined;
};

/** The one error the client helpers throw: a stable code, a sentence-case message, and what the server said. */
export class AtsClientError extends Error {
  override readonly name = "AtsClientError";
  readonly code: AtsClientErrorCode;
  readonly status?: number | undefined;
  readonly body?: unknown;
  /** When to try again, from the answer's `Retry-After` (seconds). */
  readonly retryAfterSeconds?: number | undefined;

  constructor(code: AtsClientErrorCode, message: string, options: AtsClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    if (options.status !== undefined) this.status = options.status;
    if (options.body !== undefined) this.body = options.body;
    if (options.retryAfterSeconds !== undefined) this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Tells whether a value is an {@link AtsClientError}, optionally with a given code. */
export function isAtsClientError(value: unknown, code?: AtsClientErrorCode): value is AtsClientError {
  return value instanceof AtsClientError && (code === undefined || value.code === code);
}
