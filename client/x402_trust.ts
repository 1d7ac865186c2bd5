/** How far an offer's or receipt's signing key is authorised for a did:web: endpoint evidence, a controller witness, a key binding, or the service's key status. */
import { createPublicClient, type Hex, http, parseAbi, parseAbiItem, type PublicClient } from "viem";
import { didToAddress, isSameControllerId, normalizeDid, normalizeSubjectDid } from "../domain/did/mod.ts";
import { plainDidJwkThumbprint } from "../domain/discovery/mod.ts";
import type { Result } from "../domain/result.ts";
import { decodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { evaluateKeyTrust, type KeyBindingEvidence, type KeyTrust, resourceUrlToDidWeb, type VerifiedReceipt, type VerifiedSigner, type WitnessEvidence, type X402VerifyError } from "../domain/payments/mod.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { AtsClientError } from "./errors.ts";
import { fetchKeyStatus, type KeyStatusRecord } from "./keys.ts";
import { fetchTrustAnchors, type FetchLike, getSchemaAnchor, isApprovedIssuer } from "./trust_anchors.ts";
import { type X402VerifyClientOptions, verifyReceipt } from "./x402_verify.ts";
import { serviceUrl } from "./http.ts";

/** Where trust evidence comes from. */
export type SignerTrustOptions = {
  /** The service for endpoint evidence (`/v1/controller-endpoint-confirm`); default the local service. */
  readonly baseUrl?: string | undefined;
  /** Endpoint evidence from elsewhere: the controller ids the subject publishes; `false` skips tier 1 lookups. */
  readonly endpointKeys?: ((subjectDid: string) => Promise<readonly string[] | undefined>) | false | undefined;
  /** Chain evidence (tiers 2 and 3); without it only tier 1 is looked at. */
  /**
   * Ask the service's key status (`GET /v1/key-status` at `at`, decisions §17 and §18) instead of reading the chain
   * here: the key's status and trust level as the on-chain records stood at `at` (endpoint evidence is today's).
   */
  readonly keyStatus?: boolean | undefined;
  readonly chain?: {
    readonly rpc: string | PublicClient;
    readonly chainId: number;
    /** Trust anchors URL (default `<baseUrl>/v1/trust-anchors`) or the anchors. */
    readonly trustAnchors?: string | TrustAnchors | undefined;
    readonly fromBlock?: bigint | undefined;
  } | undefined;
  readonly fetch?: FetchLike | undefined;
};

/** The decision plus what it rested on. */
export type SignerTrust = KeyTrust & {
  readonly subjectDid: string;
  readonly endpointKeys: readonly string[] | undefined;
  readonly witnesses: readonly WitnessEvidence[];
  readonly keyBindings: readonly KeyBindingEvidence[];
  /** The service's key-status record the decision rests on (with `keyStatus: true`). */
  readonly keyStatus?: KeyStatusRecord | undefined;
};

const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

/**
 * Decides the trust tier of a verified signer for the service of a resource URL at time `at` (a
 * receipt's `issuedAt`). Evidence that cannot be read (the service's confirm endpoint unreachable or
 * answering anything but endpoint evidence or a 400 `INVALID_DID`: a 5xx, a 429, a 404 of a wrong
 * `baseUrl`, a proxy's page; a failed chain read) throws {@link AtsClientError} `NETWORK_ERROR`, and a 2xx
 * that is not endpoint evidence `INVALID_RESPONSE`: a failed lookup never passes for "no evidence", which
 * would silently lower the tier. With `keyStatus: true`, a key-status answer that is not the record asked
 * for is `INVALID_RESPONSE` ({@link fetchKeyStatus}).
 */
export async function checkSignerTrust(
  input: { readonly resourceUrl: string; readonly signer: VerifiedSigner; readonly at: number },
  options: SignerTrustOptions = {},
): Promise<SignerTrust> {
  const subject = resourceUrlToDidWeb(input.resourceUrl);
  if (!subject.ok) throw new AtsClientError("INVALID_INPUT", subject.message);
  return await checkControllerTrust({ subjectDid: subject.value, signer: input.signer, at: input.at }, options);
}

/**
 * The same decision for any key and did:web subject: how far `signer` (e.g. the attester of a reply,
 * as `did:pkh:eip155:1:<address>`) is an authorized controller of `subjectDid` at time `at`.
 */
export async function checkControllerTrust(
  input: { readonly subjectDid: string; readonly signer: VerifiedSigner; readonly at: number },
  options: SignerTrustOptions = {},
): Promise<SignerTrust> {
  const normalized = normalizeDid(input.subjectDid);
  if (!normalized.ok || !normalized.value.startsWith("did:web:")) throw new AtsClientError("INVALID_DID", "subjectDid must be a did:web");
  const subjectDid = normalized.value;
  if (options.keyStatus === true) return await keyStatusTrust(subjectDid, input.signer, input.at, options);
  const [endpoint, chain] = await Promise.all([
    loadEndpointEvidence(subjectDid, options),
    options.chain === undefined ? Promise.resolve({ witnesses: [], keyBindings: [] }) : loadChainEvidence(subjectDid, options),
  ]);
  // A did:jwk signer named by its RFC 7638 thumbprint in DNS TXT (`jkt=S256:`, decisions §25) is named by the endpoints
  // (a did:jwk holding members beyond its key's and the ignored ones is another controller: plainDidJwkThumbprint).
  const thumbprint = input.signer.controllerDid.startsWith("did:jwk:") ? plainDidJwkThumbprint(input.signer.controllerDid) : undefined;
  const endpointKeys = endpoint === undefined
    ? undefined
    : thumbprint !== undefined && endpoint.thumbprints.includes(thumbprint) && !endpoint.keys.includes(input.signer.controllerDid)
    ? [...endpoint.keys, input.signer.controllerDid]
    : endpoint.keys;
  // A source unread that might have named the signer: not "no evidence", which would lower the tier (before, a spent
  // lookup budget anyone can spend made a real service's key tier 0).
  if (endpoint?.unavailable === true && !(endpointKeys ?? []).some((key) => isSameControllerId(key, input.signer.controllerDid))) {
    throw new AtsClientError("NETWORK_ERROR", ENDPOINTS_UNREAD);
  }
  const decision = evaluateKeyTrust({
    subjectDid,
    signer: input.signer,
    at: input.at,
    evidence: {
      endpointKeys,
      // Key status's reading (decisions §25): a source unusable for good is unread for the binding rule too.
      endpointUnavailable: endpoint?.unreadForRules === true,
      witnesses: chain.witnesses,
      keyBindings: chain.keyBindings,
      chainId: options.chain?.chainId,
    },
  });
  // A binding whose attester the unread source may name could count (an owner's revocation of the key's binding):
  // key status's rule (decisions §25), never a guess.
  const { endpointsCouldChange, ...decided } = decision;
  if (endpointsCouldChange === true) throw new AtsClientError("NETWORK_ERROR", ENDPOINTS_UNREAD);
  return { ...decided, subjectDid, endpointKeys, witnesses: chain.witnesses, keyBindings: chain.keyBindings };
}

/**
 * The controller ids a did:web subject's endpoints (DNS TXT, did.json) publish now, as the trust options read
 * them; undefined when not looked up or when the service answers 400 `INVALID_DID` (a did:web it does not check).
 * Throws `NETWORK_ERROR` when the evidence cannot be read (any other non-2xx answer, a 404 included), and
 * `INVALID_RESPONSE` for a 2xx that is not endpoint evidence.
 */
export async function readEndpointControllerIds(subjectDid: string, options: SignerTrustOptions = {}): Promise<readonly string[] | undefined> {
  return await loadEndpointKeys(subjectDid, options);
}

/**
 * The trust decision from the service's key status of the signer's controller id at `at` (clamped to now: a receipt
 * may be issued a little ahead of our clock). A revoked or expired key binding at `at` is tier 0 whatever else
 * names the key. Throws the service's code (`NETWORK_ERROR` when it cannot tell): never a guess.
 */
async function keyStatusTrust(subjectDid: string, signer: VerifiedSigner, at: number, options: SignerTrustOptions): Promise<SignerTrust> {
  const record = await fetchKeyStatus(
    { subjectDid, keyDid: signer.controllerDid, at: Math.min(at, Math.floor(Date.now() / 1000)) },
    { baseUrl: options.baseUrl ?? DEFAULT_BASE_URL, fetch: options.fetch as typeof fetch | undefined },
  );
  const ended = record.status === "revoked" || record.status === "expired";
  const level = ended ? "none" : record.trustLevel;
  const decision: KeyTrust = level === "advanced"
    ? { tier: 3, level: "highest", basis: "key-binding", ...(record.keyBinding ? { evidenceUid: record.keyBinding.uid } : {}) }
    : level === "intermediate"
    ? { tier: 2, level: "high", basis: "controller-witness", ...(record.controllerWitness ? { evidenceUid: record.controllerWitness.uid } : {}) }
    : level === "basic"
    ? { tier: 1, level: "moderate", basis: "endpoint-evidence" }
    : { tier: 0, level: "low", basis: "none" };
  return {
    ...decision,
    subjectDid,
    endpointKeys: record.endpointEvidence.found ? [signer.controllerDid] : [],
    witnesses: [],
    keyBindings: [],
    keyStatus: record,
  };
}

/** A receipt verified, and whether its signing key was authorised for the receipt's service at its `issuedAt`. */
export type ReceiptAuthorization = {
  readonly receipt: VerifiedReceipt;
  /** The receipt's service, normalized. */
  readonly subjectDid: string;
  /** The key status at `issuedAt` (decisions §18), and the trust it gives. */
  readonly trust: SignerTrust;
  /** Trust at least `minimumTrust` (default `basic`) and the key not revoked or expired at `issuedAt`. */
  readonly authorized: boolean;
};

const TRUST_RANK = { none: 0, basic: 1, intermediate: 2, advanced: 3 } as const;

/**
 * Verifies a receipt and asks the service whether its signing key was authorised for the receipt's service at the
 * receipt's `issuedAt`, not only today (decisions §18: key status "as of"). A receipt that does not verify is the
 * failure value; a key status that cannot be read throws {@link AtsClientError} (`NETWORK_ERROR`).
 */
export async function verifyReceiptAuthorization(
  receipt: unknown,
  options: X402VerifyClientOptions & { readonly baseUrl?: string | undefined; readonly minimumTrust?: keyof typeof TRUST_RANK | undefined } = {},
): Promise<Result<ReceiptAuthorization, X402VerifyError>> {
  const verified = await verifyReceipt(receipt, options);
  if (!verified.ok) return verified;
  const subject = resourceUrlToDidWeb(verified.value.payload.resourceUrl);
  if (!subject.ok) return { ok: false, code: "INVALID_INPUT", message: subject.message };
  // A service with no domain name (a devnet's 127.0.0.1) has no did:web a key can be authorized for: the failure value,
  // as documented (it threw INVALID_DID from the trust check).
  if (!normalizeSubjectDid(subject.value).ok) return { ok: false, code: "INVALID_INPUT", message: `resourceUrl ${verified.value.payload.resourceUrl} names no did:web a key can be authorized for` };
  const trust = await checkControllerTrust(
    { subjectDid: subject.value, signer: verified.value.signer, at: verified.value.payload.issuedAt },
    { baseUrl: options.baseUrl, fetch: options.fetch, keyStatus: true },
  );
  const level = trust.tier === 0 ? "none" : trust.keyStatus!.trustLevel;
  const authorized = TRUST_RANK[level] >= TRUST_RANK[options.minimumTrust ?? "basic"] && trust.tier > 0;
  return { ok: true, value: { receipt: verified.value, subjectDid: trust.subjectDid, trust, authorized } };
}

async function loadEndpointKeys(subjectDid: string, options: SignerTrustOptions): Promise<readonly string[] | undefined> {
  const endpoint = await loadEndpointEvidence(subjectDid, options);
  // A list with a source unread is not the list: never a guess (a transaction to an address it would name is not "not
  // the subject's").
  if (endpoint?.unavailable === true) throw new AtsClientError("NETWORK_ERROR", ENDPOINTS_UNREAD);
  return endpoint?.keys;
}

/**
 * What the endpoints said: `unavailable`, a source could not be read now (what is listed is not the list);
 * `unreadForRules`, one could not be read at all, now or for good (`lasting`: a did.json that is a WAF page). Key
 * status's binding rule counts both as unread (domain/keys key_rules.ts): a page anyone can provoke must not decide
 * whether an owner's revocation counts.
 */
type EndpointEvidence = {
  readonly keys: readonly string[];
  readonly thumbprints: readonly string[];
  readonly unavailable: boolean;
  readonly unreadForRules: boolean;
};

/** The controller ids the endpoints publish and the `jkt=` thumbprints of their DNS TXT records (decisions §25). */
async function loadEndpointEvidence(
  subjectDid: string,
  options: SignerTrustOptions,
): Promise<EndpointEvidence | undefined> {
  if (options.endpointKeys === false) return undefined;
  if (options.endpointKeys !== undefined) {
    const keys = await options.endpointKeys(subjectDid);
    return keys === undefined ? undefined : { keys, thumbprints: [], unavailable: false, unreadForRules: false };
  }
  const url = serviceUrl(options.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(subjectDid)}`);
  let response: Response;
  let text: string;
  try {
    response = await (options.fetch ?? fetch)(url);
    text = await response.text();
  } catch {
    throw new AtsClientError("NETWORK_ERROR", "Controller endpoint evidence could not be read");
  }
  const body = parseJson(text);
  // Only two answers are the service's: a 2xx endpoint-evidence record, and a 400 INVALID_DID (a did:web it does not
  // check, such as an IP host: no endpoint evidence). Anything else is no answer about the subject, and a failed
  // lookup never passes for "no evidence": a 404 (the service's only one here is "no such route": a wrong path prefix
  // in baseUrl, a proxy not forwarding it), a 400 that is not that JSON (a proxy's page), a 429, a 401 or 403 of a
  // proxy, a 408, a 5xx.
  if (response.status === 400 && isRecord(body) && body.code === "INVALID_DID") return undefined;
  if (!response.ok) {
    const hint = response.status === 404 ? ": no such route, is baseUrl the service?" : "";
    throw new AtsClientError("NETWORK_ERROR", `Controller endpoint evidence could not be read (HTTP ${response.status})${hint}`, {
      status: response.status,
      body: body ?? text,
    });
  }
  if (!isRecord(body) || !Array.isArray(body.controllerKeys) || !Array.isArray(body.evidence)) {
    throw new AtsClientError("INVALID_RESPONSE", `The answer of ${url} is not endpoint evidence: is baseUrl the service?`, { status: response.status });
  }
  // About the subject asked, by the one subject rule (the service answers `subject.canonical`, the normalized DID): a
  // cache or a man in the middle answering another domain's evidence must not name its keys as this subject's.
  const answered = isRecord(body.subject) ? normalizeSubjectDid(String(body.subject.canonical)) : undefined;
  const asked = normalizeSubjectDid(subjectDid);
  if (answered === undefined || !answered.ok || !asked.ok || answered.value !== asked.value) {
    throw new AtsClientError("INVALID_RESPONSE", `The answer of ${url} is endpoint evidence about another subject: is baseUrl the service?`, { status: response.status });
  }
  const keys = body.controllerKeys.map((k: unknown) => (isRecord(k) ? k.canonicalId : undefined)).filter((k): k is string => typeof k === "string");
  const evidence = body.evidence.filter(isRecord);
  const thumbprints = evidence
    .flatMap((e) => (Array.isArray(e.thumbprints) ? e.thumbprints : []))
    .filter((t): t is string => typeof t === "string");
  // A 200 whose sources could not all be read now (a DNS timeout, the domain's lookup budget spent): what it lists is
  // what the others said, and the one unread may name more. A source read and unusable for good (`lasting`: a did.json
  // that is not JSON or not the subject's document) names nothing, now or on the next read.
  return {
    keys,
    thumbprints,
    unavailable: evidence.some((e) => e.status === "unavailable" && e.lasting !== true),
    unreadForRules: evidence.some((e) => e.status === "unavailable"),
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The JSON of a body, undefined when it is none. */
function parseJson(text: string): unknown {
  try {
    return text === "" ? undefined : JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const ENDPOINTS_UNREAD = "A source of the subject's endpoint evidence could not be read now; nothing can be said about this key";

const ATTESTED = parseAbiItem(
  "event Attested(address indexed recipient, address indexed attester, bytes32 uid, bytes32 indexed schemaUID)",
);
const GET_ATTESTATION = parseAbi([
  "struct Attestation { bytes32 uid; bytes32 schema; uint64 time; uint64 expirationTime; uint64 revocationTime; bytes32 refUID; address recipient; address attester; bool revocable; bytes data; }",
  "function getAttestation(bytes32 uid) view returns (Attestation)",
]);

const uintOf = (v: unknown) => (typeof v === "string" && /^[0-9]+$/.test(v) ? BigInt(v) : 0n);

/** Controller witnesses and key bindings of the subject, from its DID address's `Attested` logs. */
async function loadChainEvidence(
  subjectDid: string,
  options: SignerTrustOptions,
): Promise<{ witnesses: WitnessEvidence[]; keyBindings: KeyBindingEvidence[] }> {
  const chain = options.chain!;
  const empty = { witnesses: [], keyBindings: [] };
  const anchors = typeof chain.trustAnchors === "object"
    ? chain.trustAnchors
    : await fetchTrustAnchors({ url: chain.trustAnchors ?? serviceUrl(options.baseUrl, "/v1/trust-anchors"), fetch: options.fetch });
  const chainAnchors = anchors.chains[`eip155:${chain.chainId}`];
  if (chainAnchors === undefined) return empty;
  const uidOf = (name: string) => {
    try {
      return getSchemaAnchor(anchors, chain.chainId, name).toLowerCase() as Hex;
    } catch {
      return undefined;
    }
  };
  const witnessUid = uidOf("controller-witness");
  const bindingUid = uidOf("key-binding");
  const recipient = didToAddress(subjectDid);
  if (!recipient.ok || (witnessUid === undefined && bindingUid === undefined)) return empty;
  const client = typeof chain.rpc === "string" ? createPublicClient({ transport: http(chain.rpc, { batch: true }) }) : chain.rpc;
  const eas = chainAnchors.easContract as Hex;
  let attestations;
  try {
    const logs = await client.getLogs({
      address: eas,
      event: ATTESTED,
      args: { recipient: recipient.value, schemaUID: [witnessUid, bindingUid].filter((u) => u !== undefined) },
      fromBlock: chain.fromBlock ?? 0n,
      toBlock: "latest",
    });
    const uids = [...new Set(logs.map((l) => l.args.uid!))];
    attestations = await Promise.all(
      uids.map((uid) => client.readContract({ address: eas, abi: GET_ATTESTATION, functionName: "getAttestation", args: [uid] })),
    );
  } catch {
    throw new AtsClientError("NETWORK_ERROR", "Controller witnesses and key bindings could not be read from the chain");
  }
  const witnesses: WitnessEvidence[] = [];
  const keyBindings: KeyBindingEvidence[] = [];
  const normalizedSubject = normalizeDid(subjectDid).ok ? (normalizeDid(subjectDid) as { value: string }).value : subjectDid;
  const now = BigInt(Math.floor(Date.now() / 1000));
  for (const a of attestations) {
    const schema = a.schema.toLowerCase();
    const name = schema === witnessUid ? "controller-witness" : schema === bindingUid ? "key-binding" : undefined;
    if (name === undefined) continue;
    // An expired witness says nothing now; an expired key binding still says when its key's window ended (its expiry
    // is the earlier of the payload's and the EAS one's). Before, it was dropped: a retired key's old witness then
    // rated it as it was before the binding retired it (decisions §25: a binding's end is the key's).
    if (name === "controller-witness" && a.expirationTime !== 0n && a.expirationTime <= now) continue;
    const decoded = decodeSchemaData(findSchemaByName(name)!.schema, a.data);
    if (!decoded.ok) continue;
    const data = decoded.value;
    const subject = typeof data.subject === "string" ? normalizeDid(data.subject) : undefined;
    if (!subject?.ok || subject.value !== normalizedSubject) continue;
    const approvedIssuer = isApprovedIssuer(anchors, a.attester, "controller-witness", new Date(Number(a.time) * 1000), chain.chainId);
    if (name === "controller-witness" && typeof data.controller === "string") {
      witnesses.push({
        controller: data.controller,
        observedAt: uintOf(data.observedAt),
        time: a.time,
        approvedIssuer,
        revoked: a.revocationTime !== 0n,
      });
    } else if (name === "key-binding" && typeof data.keyId === "string") {
      const purposes = Array.isArray(data.keyPurpose) ? data.keyPurpose.filter((p): p is string => typeof p === "string") : [];
      keyBindings.push({
        uid: a.uid,
        keyId: data.keyId,
        keyPurpose: purposes,
        attester: a.attester,
        time: a.time,
        effectiveAt: uintOf(data.effectiveAt),
        expiresAt: earliestEnd(uintOf(data.expiresAt), a.expirationTime),
        revocationTime: a.revocationTime,
      });
    }
  }
  return { witnesses, keyBindings };
}

/** The earlier of two ends, 0 standing for none. */
function earliestEnd(a: bigint, b: bigint): bigint {
  if (a === 0n) return b;
  if (b === 0n) return a;
  return a < b ? a : b;
}
