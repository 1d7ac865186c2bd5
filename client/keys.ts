/**
 * Signing keys and key status (decisions §17), browser-ready: register and list the signed-in account's keys, and ask
 * anyone's key status ("is this key authorised for this service, how strongly, and was it at `at`"). A non-2xx answer
 * throws an {@link AtsClientError} with the service's `code` (`INVALID_DID`, `NETWORK_ERROR`, …).
 */
import type { KeyStatusRecord, ListedSigningKey, SigningKeyView, TrustLevel } from "../domain/keys/mod.ts";
import { type ChainNamed, type ChainParam, withChain } from "./chain.ts";
import { DEFAULT_BASE_URL, requestJson } from "./http.ts";
import { requireSubject } from "./subject.ts";

export type { KeyStatusRecord, KeyStatusValue, ListedSigningKey, TrustLevel } from "../domain/keys/mod.ts";
export { nextStep } from "../domain/keys/mod.ts";

/** Where the service is and, outside a browser, the session to use (as the other helpers take it). */
export type KeyServiceOptions = {
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
  readonly cookie?: string | undefined;
  readonly origin?: string | undefined;
  /** The chain a key status is read on (decisions §30; default the service's default chain); the account's routes ignore it. */
  readonly chain?: ChainParam | undefined;
};

const headersOf = (options: KeyServiceOptions) => ({
  ...(options.cookie === undefined ? {} : { cookie: options.cookie }),
  ...(options.origin === undefined ? {} : { origin: options.origin }),
});

/**
 * The key status of `keyDid` for `subjectDid`, at `at` (Unix seconds; default now). No session needed. A subject the
 * service would refuse throws `INVALID_DID` before any request (issue 43).
 */
export async function fetchKeyStatus(
  input: { readonly subjectDid: string; readonly keyDid: string; readonly at?: number | undefined },
  options: KeyServiceOptions = {},
): Promise<KeyStatusRecord & ChainNamed> {
  requireSubject(input.subjectDid, "subjectDid");
  const params = new URLSearchParams({ subjectDid: input.subjectDid, keyDid: input.keyDid });
  if (input.at !== undefined) params.set("at", String(Math.floor(input.at)));
  withChain(params, options.chain);
  const { body } = await requestJson<KeyStatusRecord & ChainNamed>(`/v1/key-status?${params}`, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "GET",
  });
  return body;
}

const RANK: Readonly<Record<TrustLevel, number>> = { none: 0, basic: 1, intermediate: 2, advanced: 3 };

/**
 * Whether a key was authorised for a subject at `at`, as a verifier decides it: by default an active key binding
 * (trust `advanced`); with `minimumTrust` lower, the trust level, and never a key whose binding was `revoked` or had
 * `expired` by `at` (decisions §25: a revocation ends the window; the service keeps the witness's `intermediate` level
 * on such a record, and before, a leaked key its owner revoked passed here). Answers the record too, to show why.
 */
export async function isKeyAuthorized(
  input: { readonly subjectDid: string; readonly keyDid: string; readonly at?: number | undefined; readonly minimumTrust?: TrustLevel | undefined },
  options: KeyServiceOptions = {},
): Promise<{ readonly authorized: boolean; readonly record: KeyStatusRecord & ChainNamed }> {
  const record = await fetchKeyStatus(input, options);
  const minimum = input.minimumTrust ?? "advanced";
  const ended = record.status === "revoked" || record.status === "expired";
  const authorized = minimum === "advanced"
    ? record.status === "active" && record.trustLevel === "advanced"
    : !ended && (RANK[record.trustLevel] ?? 0) >= RANK[minimum];
  return { authorized, record };
}

/** What {@link registerSigningKey} sends (the reference's body). */
export type SigningKeyInput = {
  readonly keyDid: string;
  readonly keyType: "attestation" | "service-signing";
  readonly displayName: string;
  readonly tags?: readonly string[] | undefined;
  readonly notes?: string | null | undefined;
};

/** Registers a signing key of the signed-in account, or updates it (`created` tells which). */
export async function registerSigningKey(input: SigningKeyInput, options: KeyServiceOptions = {}): Promise<SigningKeyView & { created: boolean }> {
  const { body } = await requestJson<SigningKeyView & { created: boolean }>("/api/private/signing-keys", {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "POST",
    body: input,
    headers: headersOf(options),
    credentials: "include",
  });
  return body;
}

/** The signed-in account's signing keys, newest first, each with its status and trust level per subject. */
export async function listSigningKeys(
  filter: { readonly keyType?: string | undefined; readonly tag?: string | undefined } = {},
  options: KeyServiceOptions = {},
): Promise<ListedSigningKey[]> {
  const params = new URLSearchParams();
  if (filter.keyType) params.set("keyType", filter.keyType);
  if (filter.tag) params.set("tag", filter.tag);
  const query = params.size === 0 ? "" : `?${params}`;
  const { body } = await requestJson<{ keys: ListedSigningKey[] }>(`/api/private/signing-keys${query}`, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "GET",
    headers: headersOf(options),
    credentials: "include",
  });
  return body.keys;
}
