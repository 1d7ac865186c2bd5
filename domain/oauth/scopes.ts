/** The scopes of registered software (decisions §19) and how a requested scope is read. */

/** Every scope the service grants, with what it allows. */
export const SCOPES = {
  "witness:write": "Request controller-witness attestations",
  "relay:write": "Write attestations through the private relay",
  "rpc:read": "Read the chain through premium RPC",
  "account:read": "Read the account, its plan and usage, its subjects and signing keys",
  "subjects:write": "Add, change and remove subjects",
  "keys:write": "Register signing keys",
  "webhooks:write": "Manage webhook endpoints and read their deliveries",
} as const;

/** One scope of {@link SCOPES}. */
export type Scope = keyof typeof SCOPES;

/** Every scope, in the order the consent page lists them. */
export const ALL_SCOPES: readonly Scope[] = Object.keys(SCOPES) as Scope[];

/** Whether a word is a scope the service knows. */
export function isScope(word: string): word is Scope {
  return Object.hasOwn(SCOPES, word);
}

/**
 * Reads a space-separated scope (RFC 6749 §3.3): known scopes only, each once, in the canonical order; absent or
 * empty gives `fallback`. Undefined for an unknown word or a malformed value.
 */
export function parseScope(value: unknown, fallback: readonly Scope[]): Scope[] | undefined {
  if (value === undefined || value === null || value === "") return [...fallback];
  if (typeof value !== "string" || value.length > 1_000 || !/^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/.test(value)) return undefined;
  const words = new Set(value.split(" "));
  for (const word of words) if (!isScope(word)) return undefined;
  return ALL_SCOPES.filter((s) => words.has(s));
}

/** The scope string of a list. */
export function scopeString(scopes: readonly Scope[]): string {
  return ALL_SCOPES.filter((s) => scopes.includes(s)).join(" ");
}

/** The scopes of a stored scope string (unknown words, from an older release, are dropped). */
export function scopesOf(scope: string): Scope[] {
  const words = new Set(scope.split(" "));
  return ALL_SCOPES.filter((s) => words.has(s));
}

/** Whether every scope of `asked` is within `allowed`. */
export function withinScopes(asked: readonly Scope[], allowed: readonly Scope[]): boolean {
  return asked.every((s) => allowed.includes(s));
}
