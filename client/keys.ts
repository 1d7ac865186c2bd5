/**
 * Signing keys and key status (decisions §17), browser-ready: register and list the signed-in account's keys, and ask
 * anyone's key status ("is this key authorised for this service, how strongly, and was it at `at`"). A non-2xx answer
 * throws an {@link AtsClientError} with the service's `code` (`INVALID_DID`, `NETWORK_ERROR`, …).
 */
import { parseChainParam } from "../domain/chains/mod.ts";
import { type KeyStatusRecord, type ListedSigningKey, readKeyDid, readSubjectDid, type SigningKeyView, type TrustLevel } from "../domain/keys/mod.ts";
import { type ChainNamed, type ChainParam, withChain } from "./chain.ts";
import { AtsClientError } from "./errors.ts";
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
 * service would refuse throws `INVALID_DID` before any request (issue 43). The answer must be the record asked for:
 * one not well formed, or about another subject, key or time, is `INVALID_RESPONSE`, and one about another chain than
 * `chain` is `CHAIN_MISMATCH` (a cache or a server in between answering something else, never a verdict).
 */
export async function fetchKeyStatus(
  input: { readonly subjectDid: string; readonly keyDid: string; readonly at?: number | undefined },
  options: KeyServiceOptions = {},
): Promise<KeyStatusRecord & ChainNamed> {
  requireSubject(input.subjectDid, "subjectDid");
  const params = new URLSearchParams({ subjectDid: input.subjectDid, keyDid: input.keyDid });
  const at = input.at === undefined ? undefined : Math.floor(input.at);
  if (at !== undefined) params.set("at", String(at));
  withChain(params, options.chain);
  const { body } = await requestJson<unknown>(`/v1/key-status?${params}`, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "GET",
  });
  return checkKeyStatusAnswer(body, { ...input, at }, options.chain);
}

const STATUSES: ReadonlySet<unknown> = new Set(["registered", "active", "revoked", "expired"]);
const LEVELS: ReadonlySet<unknown> = new Set(["none", "basic", "intermediate", "advanced"]);
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isSeconds = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const hasUid = (v: unknown) => v === null || (isRecord(v) && typeof v.uid === "string");

/**
 * The key-status answer when it is the record asked for, as `checkArtifactTrust` judges its answers: well formed
 * (a `null`, `{}` or empty body threw a TypeError in the callers), its subject and key the ones asked (normalized as
 * the service reads them), its `at` the one sent, and its chain the one named.
 */
function checkKeyStatusAnswer(
  body: unknown,
  asked: { readonly subjectDid: string; readonly keyDid: string; readonly at: number | undefined },
  chain: ChainParam | undefined,
): KeyStatusRecord & ChainNamed {
  const invalid = (why: string) => new AtsClientError("INVALID_RESPONSE", `The key-status answer ${why}: is baseUrl the service?`, { body });
  if (!isRecord(body)) throw invalid("is not a key-status record");
  if (!STATUSES.has(body.status) || !LEVELS.has(body.trustLevel) || !isSeconds(body.at)) throw invalid("is not a key-status record");
  const evidence = body.endpointEvidence;
  if (!isRecord(evidence) || typeof evidence.found !== "boolean" || !hasUid(body.controllerWitness) || !hasUid(body.keyBinding)) {
    throw invalid("is not a key-status record");
  }
  const sameSubject = readSubjectDid(body.subjectDid);
  const askedSubject = readSubjectDid(asked.subjectDid);
  if (!sameSubject.ok || !askedSubject.ok || sameSubject.value !== askedSubject.value) throw invalid("is about another subject");
  const sameKey = readKeyDid(body.keyDid);
  const askedKey = readKeyDid(asked.keyDid);
  if (!sameKey.ok || !askedKey.ok || sameKey.value !== askedKey.value) throw invalid("is about another key");
  if (asked.at !== undefined && body.at !== asked.at) throw invalid("is about another time");
  if (body.chain !== undefined && !(isRecord(body.chain) && typeof body.chain.chainId === "number")) throw invalid("names no chain it is about");
  const chainId = chain === undefined ? undefined : parseChainParam(String(chain));
  if (chainId !== undefined && (body.chain as { chainId?: number } | undefined)?.chainId !== chainId) {
    throw new AtsClientError("CHAIN_MISMATCH", `The key-status answer is not about chain ${String(chain)}`, { body });
  }
  return body as KeyStatusRecord & ChainNamed;
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
