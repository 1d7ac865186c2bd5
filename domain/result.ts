/** A value, or an expected failure with a stable string code. */
export type Result<T, C extends string = string> = Ok<T> | Fail<C>;

/** The success side of a {@link Result}. */
export type Ok<T> = { readonly ok: true; readonly value: T };

/** An expected failure: a stable code and a sentence-case message for people. */
export type Fail<C extends string = string> = {
  readonly ok: false;
  readonly code: C;
  readonly message: string;
  readonly details?: string | undefined;
};

/** Wraps a value as a success. */
export function ok<T>(value: T): Ok<T> {
  return { ok: true, value };
}

/** Builds an expected failure. */
export function fail<C extends string>(code: C, message: string, details?: string): Fail<C> {
  return details === undefined ? { ok: false, code, message } : { ok: false, code, message, details };
}
