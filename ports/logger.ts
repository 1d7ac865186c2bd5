/** Structured log lines; fields must never carry secrets, keys or full signatures. */
export interface Logger {
  readonly debug: (event: string, fields?: Record<string, unknown>) => void;
  readonly info: (event: string, fields?: Record<string, unknown>) => void;
  readonly warn: (event: string, fields?: Record<string, unknown>) => void;
  readonly error: (event: string, fields?: Record<string, unknown>) => void;
}
