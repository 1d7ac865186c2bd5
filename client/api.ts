/**
 * The service's read and account routes as plain functions, for the console and for programs: controller
 * discovery, artifact trust, the attestation list, sign-in without a cookie jar, the account, subjects and
 * ownership proofs, the controller witness and the private relay. In a page served by the service pass
 * `baseUrl: ""` (same origin: the browser sends the session cookie and `Origin` itself); elsewhere pass
 * `cookie` and `origin`. A non-2xx answer throws an {@link AtsClientError} with the service's `code`.
 */
import type { ArtifactTrustRecord } from "../domain/artifact_trust/mod.ts";
import type { ControllerConfirmRecord, DiscoveryRecord } from "../domain/discovery/mod.ts";
import { buildReviewData, type ReviewTransaction, transactionProof } from "../domain/reviews/mod.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import type { HexString } from "../ports/eas.ts";
import {
  type DelegatedAttestResult,
  type NonceRecord,
  prepareDelegatedAttestation,
  signableTypedData,
  type TypedDataSigner,
} from "./delegated_attest.ts";
import { type ChainNamed, type ChainOption, chainQueryValue } from "./chain.ts";
import { AtsClientError } from "./errors.ts";
import { DEFAULT_BASE_URL, requestJson, serviceUrl } from "./http.ts";
import { requireSubject } from "./subject.ts";
import { fetchTrustAnchors, getChainAnchors, getSchemaAnchor } from "./trust_anchors.ts";

/** Where the service is and, outside a browser, the session to use. */
export type ServiceOptions = {
  /** Default `http://127.0.0.1:8080`; `""` in a page served by the service. */
  readonly baseUrl?: string | undefined;
  readonly fetch?: typeof fetch | undefined;
  /** `ats_session=…` (outside a browser, from {@link signInWithEthereum}). */
  readonly cookie?: string | undefined;
  /** Sent as `Origin` (a browser sets it itself): state-changing private requests need an allowed one. */
  readonly origin?: string | undefined;
};

/** A public read's options: the service, and the chain to read on (decisions §30; default the service's default chain). */
export type ReadOptions = ServiceOptions & ChainOption;

async function call<T>(method: "GET" | "POST" | "PATCH" | "DELETE", path: string, body: unknown, options: ServiceOptions): Promise<T> {
  const headers: Record<string, string> = {};
  if (options.cookie !== undefined) headers.cookie = options.cookie;
  if (options.origin !== undefined) headers.origin = options.origin;
  const answer = await requestJson<T>(path, {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method,
    body,
    headers,
    credentials: "include",
  });
  return answer.body;
}

const query = (params: Record<string, string | number | undefined>) =>
  Object.entries(params)
    .filter(([, value]) => value !== undefined && value !== "")
    .map(([key, value]) => `${key}=${encodeURIComponent(String(value))}`)
    .join("&");

// ---------------------------------------------------------------------------------------------------------------
// Public reads

/**
 * The controller evidence of a domain or did:web: each TXT name and did.json with its status, records and notes,
 * and the keys found. With `walletDid`, controller-confirm: the wallet and the approved-issuer block too.
 */
export async function discoverControllers(subjectDid: string, options: ReadOptions & { walletDid?: string | undefined } = {}) {
  requireSubject(subjectDid, "subjectDid");
  const chain = chainQueryValue(options.chain);
  return await (options.walletDid === undefined || options.walletDid === ""
    ? call<DiscoveryRecord & ChainNamed>("GET", `/v1/controller-endpoint-confirm?${query({ subjectDid, chain })}`, undefined, options)
    : call<ControllerConfirmRecord & ChainNamed>("GET", `/v1/controller-confirm?${query({ subjectDid, walletDid: options.walletDid, chain })}`, undefined, options));
}

/** The artifact trust record of a did:artifact (throws with the service's code; see `checkArtifactTrust` for the policy). */
export async function fetchArtifactTrust(artifactDid: string, options: ReadOptions = {}): Promise<ArtifactTrustRecord & ChainNamed> {
  const chain = chainQueryValue(options.chain);
  return await call<ArtifactTrustRecord & ChainNamed>("GET", `/v1/artifact-trust?${query({ artifactDid, chain })}`, undefined, options);
}

/** One item of the attestation list. */
export type ListedAttestation = {
  attestation: {
    uid: string;
    schema: string;
    /** The schema's trust-anchor name; null for another schema (its data is then {}). */
    schemaName: string | null;
    attester: string;
    recipient: string;
    time: string;
    expirationTime: string;
    revocationTime: string;
    data: Record<string, unknown>;
  };
  revoked: boolean;
};

/** What an answer of the index stands on (decisions §21). */
export type AsOf = { blockNumber: number; blockHash: string; timestamp: number | null; checkedAt: number };

/** The filters of the attestation queries (decisions §24): at least one of subject, attester, recipient and schema. */
export type AttestationFilters = {
  subject?: string | undefined;
  attester?: string | undefined;
  recipient?: string | undefined;
  /** A trust-anchor name (user-review) or a schema UID. */
  schema?: string | undefined;
  revoked?: boolean | undefined;
  /** Unix seconds, inclusive. */
  since?: number | undefined;
  /** Unix seconds, exclusive. */
  until?: number | undefined;
};

/** The filters as the query sends them; a subject the service would refuse throws `INVALID_DID` first (issue 43). */
const filterQuery = (f: AttestationFilters) => {
  if (f.subject !== undefined) requireSubject(f.subject);
  return filterFields(f);
};
const filterFields = (f: AttestationFilters) => ({
  subject: f.subject,
  attester: f.attester,
  recipient: f.recipient,
  schema: f.schema,
  revoked: f.revoked === undefined ? undefined : String(f.revoked),
  since: f.since,
  until: f.until,
});

/**
 * A page of the attestations matching the filters, newest (default) or oldest first, on `options.chain` (default the
 * service's default chain); pass `nextCursor` back as `cursor` with the same chain (a cursor is bound to its chain). A subject the service would refuse throws `INVALID_DID` before any request.
 */
export async function listAttestations(
  input: AttestationFilters & { order?: "newest" | "oldest" | undefined; limit?: number | undefined; cursor?: string | undefined },
  options: ReadOptions = {},
) {
  const chain = chainQueryValue(options.chain);
  return await call<{ subject?: string; schema?: string; items: ListedAttestation[]; nextCursor: string | null; asOf: AsOf } & ChainNamed>(
    "GET",
    `/v1/attestations?${query({ ...filterQuery(input), order: input.order, limit: input.limit, cursor: input.cursor, chain })}`,
    undefined,
    options,
  );
}

/** How many attestations match the filters (a subject the service would refuse throws `INVALID_DID` first). */
export async function countAttestations(input: AttestationFilters, options: ReadOptions = {}) {
  const chain = chainQueryValue(options.chain);
  return await call<{ count: number; asOf: AsOf } & ChainNamed>("GET", `/v1/attestations/count?${query({ ...filterQuery(input), chain })}`, undefined, options);
}

/** One attestation by uid (throws `NOT_FOUND` when the index holds none). */
export async function getAttestation(uid: string, options: ReadOptions = {}) {
  const chain = query({ chain: chainQueryValue(options.chain) });
  return await call<ListedAttestation & { asOf: AsOf } & ChainNamed>("GET", `/v1/attestations/${encodeURIComponent(uid)}${chain === "" ? "" : `?${chain}`}`, undefined, options);
}

// ---------------------------------------------------------------------------------------------------------------
// Sign-in and the account

/** What sign-in answers. */
export type SignedIn = {
  account: { id: string; displayName: string | null; address: string; plan: string };
  session: { id: string; expiresAt: string };
  /** Outside a browser: the cookie to send on later calls; in a browser the cookie is HttpOnly and this is undefined. */
  cookie?: string | undefined;
};

/**
 * Signs in with Ethereum: a challenge for `walletDid` naming `domain` and `uri` (the page), the wallet's
 * `personal_sign` of the exact message, and the session. Works in a browser (the cookie is set there) and
 * outside one (the cookie is returned).
 */
export async function signInWithEthereum(
  input: { walletDid: string; domain: string; uri: string; signMessage: (message: string) => Promise<string> },
  options: ServiceOptions = {},
): Promise<SignedIn> {
  const challenge = await call<{ challengeId: string; siweMessage: string }>(
    "POST",
    "/v1/session/wallet/challenge",
    { walletDid: input.walletDid, domain: input.domain, uri: input.uri },
    options,
  );
  const signature = await input.signMessage(challenge.siweMessage);
  const headers: Record<string, string> = {};
  if (options.origin !== undefined) headers.origin = options.origin;
  const { body, response } = await requestJson<Omit<SignedIn, "cookie">>("/v1/session/wallet/verify", {
    baseUrl: options.baseUrl ?? DEFAULT_BASE_URL,
    fetch: options.fetch,
    method: "POST",
    body: { challengeId: challenge.challengeId, siweMessage: challenge.siweMessage, signature },
    headers,
    credentials: "include",
  });
  const cookie = response.headers.get("set-cookie")?.split(";")[0];
  return { ...body, cookie: cookie !== undefined && cookie.includes("=") ? cookie : undefined };
}

/** Ends the session. */
export async function signOutSession(options: ServiceOptions = {}): Promise<void> {
  await call("POST", "/v1/session/logout", {}, options);
}

/** `GET /api/private/accounts/me`: the account, its plan and this year's usage. */
export type AccountOverview = {
  account: { id: string; displayName: string | null };
  subscription: {
    plan: string;
    status: string;
    annualSponsoredWriteLimit: number;
    sponsoredWritesUsedCurrentYear: number;
    annualPremiumReadLimit: number;
    premiumReadsUsedCurrentYear: number;
    entitlementPeriodStart: string;
    entitlementPeriodEnd: string;
    /** The schemas the plan's sponsored writes may write (names or UIDs as configured; `*` every schema). */
    eligibleSchemas: string[];
  };
  primarySubject: { id: string; canonicalDid: string; subjectDidHash: string; displayName: string | null } | null;
  wallets: { did: string; address: string }[];
};

/** The signed-in account with its plan and usage (401 `UNAUTHENTICATED` without a session). */
export function fetchAccount(options: ServiceOptions = {}): Promise<AccountOverview> {
  return call<AccountOverview>("GET", "/api/private/accounts/me", undefined, options);
}

/** A subject of the account. */
export type Subject = {
  id: string;
  canonicalDid: string;
  subjectDidHash: string;
  displayName: string | null;
  isDefault: boolean;
  ownership: { method: string; walletDid: string; verifiedAt: string };
  createdAt: string;
};

/** The account's subjects, default first. */
export async function listSubjects(options: ServiceOptions = {}): Promise<Subject[]> {
  return (await call<{ subjects: Subject[] }>("GET", "/api/private/subjects", undefined, options)).subjects;
}

/** Adds a subject once the signed-in wallet is proven to own it (403 `SUBJECT_OWNERSHIP_VERIFICATION_FAILED` otherwise). */
export async function addSubject(
  input: { did: string; displayName?: string | undefined; txHash?: string | undefined },
  options: ServiceOptions = {},
): Promise<Subject> {
  requireSubject(input.did, "did");
  return (await call<{ subject: Subject }>("POST", "/api/private/subjects", input, options)).subject;
}

/** Removes a subject of the account. */
export async function removeSubject(id: string, options: ServiceOptions = {}): Promise<void> {
  await call("DELETE", `/api/private/subjects/${encodeURIComponent(id)}`, undefined, options);
}

/** The answer of an ownership proof. */
export type OwnershipProof = {
  ok: boolean;
  status: "verified" | "failed";
  subjectDid: string;
  connectedWalletDid: string;
  method?: string;
  error?: string;
  details?: string;
  controllingWalletDid?: string;
};

/** Checks whether a wallet owns a subject (no session needed); a lookup that could not be made throws `NETWORK_ERROR`. */
export async function verifySubjectOwnership(
  input: { subjectDid: string; connectedWalletDid: string; txHash?: string | undefined },
  options: ServiceOptions = {},
): Promise<OwnershipProof> {
  requireSubject(input.subjectDid, "subjectDid");
  return await call<OwnershipProof>("POST", "/api/verify/subject-ownership", input, options);
}

/** The answer of a written controller witness. */
export type WitnessResult = { success: true; uid: string | null; txHash: string; blockNumber: number; observedAt: number; method: string };

/** Asks the service to witness that `controllerDid` controls the did:web `subjectDid` (one sponsored write). */
export async function requestWitness(input: { subjectDid: string; controllerDid: string }, options: ServiceOptions = {}): Promise<WitnessResult> {
  requireSubject(input.subjectDid, "subjectDid");
  return await call<WitnessResult>("POST", "/v1/controller-witness", input, options);
}

// ---------------------------------------------------------------------------------------------------------------
// The private relay

/** The attester's EAS nonce through the private relay. */
export function fetchRelayNonce(attester: string, options: ServiceOptions = {}): Promise<Omit<NonceRecord, "elapsed">> {
  return call("GET", `/api/private/relay/eas/nonce?${query({ attester })}`, undefined, options);
}

/** What {@link writeThroughRelay} needs. */
export type RelayWriteInput = {
  /** A schema name of the trust anchors (`user-review`, `linked-identifier`, …). */
  readonly schemaName: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly attester: HexString;
  readonly sign: TypedDataSigner;
  readonly subjectDid?: string | undefined;
  /** Told each step, for a progress line. */
  readonly onProgress?: ((step: "nonce" | "sign" | "submit") => void) | undefined;
};

/** Prepares, signs (through the wallet) and submits a delegated attestation paid from the account's plan. */
export async function writeThroughRelay(input: RelayWriteInput, options: ServiceOptions = {}): Promise<Omit<DelegatedAttestResult, "elapsed">> {
  const definition = findSchemaByName(input.schemaName);
  if (definition === undefined) throw new AtsClientError("INVALID_INPUT", `Unknown schema ${input.schemaName}`);
  input.onProgress?.("nonce");
  const nonce = await fetchRelayNonce(input.attester, options);
  const anchors = await fetchTrustAnchors({ url: serviceUrl(options.baseUrl, "/v1/trust-anchors"), fetch: options.fetch });
  // As attestDelegated: the EAS the nonce names is the one the anchors give its chain.
  if (getChainAnchors(anchors, nonce.chainId).easContract.toLowerCase() !== nonce.easAddress.toLowerCase()) {
    throw new AtsClientError("UNSUPPORTED_CHAIN", "The service's EAS address differs from its trust anchors");
  }
  const prepared = prepareDelegatedAttestation({
    schema: { uid: getSchemaAnchor(anchors, nonce.chainId, input.schemaName) as HexString, schema: definition.schema, revocable: definition.revocable },
    data: input.data,
    attester: input.attester,
    nonce: nonce.nonce,
    chainId: nonce.chainId,
    easAddress: nonce.easAddress,
  });
  input.onProgress?.("sign");
  const signature = await input.sign(signableTypedData(prepared));
  input.onProgress?.("submit");
  return await call(
    "POST",
    "/api/private/relay/eas/delegated-attest",
    { prepared, signature, attester: input.attester, ...(input.subjectDid === undefined ? {} : { subjectDid: input.subjectDid }) },
    options,
  );
}

/**
 * A user review of a service (its did:web), written through the private relay; with `transaction`, backed by it as a
 * `tx-interaction` (or `tx-encoded-value`) proof, which readers check on chain (decisions §18: sent by the reviewer
 * to an address the service names). A transaction that is not one (`txHash` not 32 bytes of hex, a chain that is
 * not eip155) is `INVALID_INPUT` before anything is signed.
 */
export async function writeReview(
  input: Omit<RelayWriteInput, "schemaName" | "data" | "subjectDid"> & {
    readonly subject: string;
    readonly ratingValue: number;
    readonly reviewBody?: string | undefined;
    readonly version?: string | undefined;
    readonly transaction?: ReviewTransaction | undefined;
  },
  options: ServiceOptions = {},
) {
  const proof = input.transaction === undefined ? undefined : transactionProof(input.transaction);
  if (proof !== undefined && !proof.ok) throw new AtsClientError("INVALID_INPUT", `transaction: ${proof.message}`);
  const data = buildReviewData({
    subject: input.subject,
    ratingValue: input.ratingValue,
    reviewBody: input.reviewBody,
    version: input.version ?? "1.0.0",
    proofs: proof === undefined ? [] : [proof.value],
  });
  if (!data.ok) throw new AtsClientError(data.code, data.message);
  const result = await writeThroughRelay({ ...input, schemaName: "user-review", data: data.value }, options);
  return { ...result, data: data.value };
}
