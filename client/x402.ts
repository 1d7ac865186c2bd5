/**
 * Client helpers for x402 offers and receipts (x402_offer_receipt.md §4): pull them out of responses,
 * verify their signatures, decide how far the signing key is authorized for the resource's did:web
 * (tier 1 endpoint evidence through the service's controller discovery, tier 2 a controller witness by
 * an approved issuer, tier 3 a key binding by a controller witnessed before it), and turn a receipt into a user-review proof and review.
 *
 * Offer and receipt verification returns results (never throws); the trust checks and the review helpers throw
 * {@link AtsClientError}, `NETWORK_ERROR` when evidence cannot be read.
 */
import { createPublicClient, type Hex, http, parseAbi, parseAbiItem, type PublicClient } from "viem";
import { createWebCryptoJwsVerifier } from "./jws_verifier.ts";
import { didToAddress, normalizeDid } from "../domain/did/mod.ts";
import { didJwkThumbprint } from "../domain/discovery/mod.ts";
import type { Result } from "../domain/result.ts";
import { decodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import {
  buildReceiptProof,
  buildUserReviewFromReceipt,
  evaluateKeyTrust,
  type KeyBindingEvidence,
  type KeyTrust,
  OFFER_RECEIPT,
  offerHashOf,
  type OfferPayload,
  readOfferPayload,
  readReceiptPayload,
  receiptOfferBinding,
  type ReceiptOfferBindingStatus,
  receiptOfferContradictions,
  type ReceiptPayload,
  resourceUrlToDidWeb,
  type SignedOffer,
  type SignedReceipt,
  toCaip2Network,
  type UserReviewData,
  type UserReviewFromReceiptOptions,
  type VerifiedOffer,
  type VerifiedReceipt,
  type VerifiedSigner,
  verifySignedOffer,
  verifySignedReceipt,
  type WitnessEvidence,
  type X402ReceiptProof,
  type X402VerifyError,
} from "../domain/payments/mod.ts";
import type { DidDocumentFetch, DidDocumentFetcher } from "../ports/discovery.ts";
import type { JwsVerifier } from "../ports/jws_verifier.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { type AttestDelegatedOptions, attestDelegated, type AtsClientOptions, type DelegatedAttestResult } from "./delegated_attest.ts";
import { AtsClientError } from "./errors.ts";
import { fetchKeyStatus, type KeyStatusRecord } from "./keys.ts";
import { fetchTrustAnchors, type FetchLike, getSchemaAnchor, isApprovedIssuer } from "./trust_anchors.ts";

export type {
  KeyTrust,
  OfferPayload,
  ReceiptOfferBindingStatus,
  ReceiptPayload,
  SignedOffer,
  SignedReceipt,
  UserReviewData,
  VerifiedOffer,
  VerifiedReceipt,
  VerifiedSigner,
  X402ReceiptProof,
};
export { buildReceiptProof, resourceUrlToDidWeb };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function decodeBase64Json(value: string | null | undefined): Record<string, unknown> | undefined {
  if (value === null || value === undefined || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0))));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Extraction

/** The offers of a PaymentRequired (v2 header content or v1 body); empty when there are none. */
export function extractOffersFromPaymentRequired(paymentRequired: unknown): SignedOffer[] {
  if (!isRecord(paymentRequired) || !isRecord(paymentRequired.extensions)) return [];
  const entry = paymentRequired.extensions[OFFER_RECEIPT];
  const offers = isRecord(entry) && isRecord(entry.info) ? entry.info.offers : undefined;
  return Array.isArray(offers) ? offers.filter((o): o is SignedOffer => isRecord(o) && (o.format === "eip712" || o.format === "jws")) : [];
}

/** The PaymentRequired of a 402: the v2 `PAYMENT-REQUIRED` header, else a v1 JSON body. */
export async function readPaymentRequired(response: Response): Promise<Record<string, unknown> | undefined> {
  const header = decodeBase64Json(response.headers.get("payment-required"));
  if (header !== undefined) return header;
  try {
    const body: unknown = await response.clone().json();
    return isRecord(body) && body.x402Version === 1 ? body : undefined;
  } catch {
    return undefined;
  }
}

/** The offers of a 402 response (v2 header or v1 body). Keep them: they are proof material even unpaid. */
export async function extractOffers(response: Response): Promise<SignedOffer[]> {
  return extractOffersFromPaymentRequired(await readPaymentRequired(response));
}

/** The settlement response of a paid answer: `PAYMENT-RESPONSE` (v2), else `X-PAYMENT-RESPONSE` (v1). */
export function readSettlementResponse(response: Response | Headers): Record<string, unknown> | undefined {
  const headers = response instanceof Headers ? response : response.headers;
  return decodeBase64Json(headers.get("payment-response")) ?? decodeBase64Json(headers.get("x-payment-response"));
}

/** The signed receipt of a paid answer, verbatim, or undefined. */
export function extractReceipt(response: Response | Headers): SignedReceipt | undefined {
  const settlement = readSettlementResponse(response);
  const entry = isRecord(settlement?.extensions) ? settlement.extensions[OFFER_RECEIPT] : undefined;
  const receipt = isRecord(entry) && isRecord(entry.info) ? entry.info.receipt : undefined;
  return isRecord(receipt) && (receipt.format === "eip712" || receipt.format === "jws") ? receipt as SignedReceipt : undefined;
}

/**
 * The offer a paid answer's receipt settles, as the server sent it beside the receipt (`info.offer`, decisions
 * §18): the one a JWS receipt's `offerHash` names. Undefined when the server sent none (EIP-712 receipts).
 */
export function extractReceiptOffer(response: Response | Headers): SignedOffer | undefined {
  const settlement = readSettlementResponse(response);
  const entry = isRecord(settlement?.extensions) ? settlement.extensions[OFFER_RECEIPT] : undefined;
  const offer = isRecord(entry) && isRecord(entry.info) ? entry.info.offer : undefined;
  return isRecord(offer) && (offer.format === "eip712" || offer.format === "jws") ? offer as SignedOffer : undefined;
}

/** Among offers, the one a receipt's `offerHash` names; undefined when it names none of them (or has no hash). */
export function findOfferOfReceipt(receipt: ReceiptPayload, offers: readonly SignedOffer[]): SignedOffer | undefined {
  if (receipt.offerHash === undefined) return undefined;
  return offers.find((offer) => offerHashOf(offer) === receipt.offerHash);
}

/**
 * Where a receipt contradicts the offer it claims to settle, one reason a contradiction: the offerHash of a JWS
 * receipt, resource URL, network, issued well after the offer expired. Empty means nothing contradicts it, not that
 * it settles that offer: only a signed `offerHash` binds a receipt to one ({@link receiptBindingToOffer}).
 */
export function receiptContradictsOffer(receipt: ReceiptPayload, offer: SignedOffer): string[] {
  const terms = readOfferPayload(offer);
  if (!terms.ok) return [`the offer: ${terms.message}`];
  return receiptOfferContradictions(receipt, offer, terms.value);
}

/**
 * Whether a receipt is bound to an offer (decisions §18): `bound` only when its signed `offerHash` names that offer
 * and nothing contradicts it, `unbound` with the contradictions, and `unknown` for a receipt that names no offer
 * (EIP-712 receipts never do: the upstream struct has no field for it) whose terms match.
 */
export function receiptBindingToOffer(receipt: ReceiptPayload, offer: SignedOffer): { status: ReceiptOfferBindingStatus; reasons: string[] } {
  const terms = readOfferPayload(offer);
  if (!terms.ok) return { status: "unbound", reasons: [`the offer: ${terms.message}`] };
  return receiptOfferBinding(receipt, offer, terms.value);
}

/** The `accepts[]` entry an offer signs, matched on its terms (the `acceptIndex` is only a hint). */
export function findAcceptForOffer<T extends Record<string, unknown>>(offer: SignedOffer, accepts: readonly T[]): T | undefined {
  const payload = readOfferPayload(offer);
  if (!payload.ok) return undefined;
  const p = payload.value;
  const matches = (a: T) =>
    a.scheme === p.scheme && a.payTo === p.payTo && a.asset === p.asset &&
    (a.amount ?? a.maxAmountRequired) === p.amount &&
    (a.network === p.network || toCaip2(a.network) === p.network);
  const hinted = typeof offer.acceptIndex === "number" ? accepts[offer.acceptIndex] : undefined;
  return hinted !== undefined && matches(hinted) ? hinted : accepts.find(matches);
}

const toCaip2 = (network: unknown) => (typeof network === "string" ? toCaip2Network(network) : network);

// ---------------------------------------------------------------------------------------------------------------
// Verification

/** Options of the verify helpers. */
export type X402VerifyClientOptions = {
  /** Resolves did:web kids; default plain HTTPS `fetch` of the did.json. */
  readonly didDocuments?: DidDocumentFetcher | undefined;
  readonly jws?: JwsVerifier | undefined;
  /** Unix seconds; default now. */
  readonly nowSeconds?: number | undefined;
  /** Receipts: refuse older ones (the x402 client helper's default is one hour). */
  readonly maxAgeSeconds?: number | undefined;
  readonly fetch?: FetchLike | undefined;
};

const verifyDeps = (options: X402VerifyClientOptions) => ({
  jws: options.jws ?? createWebCryptoJwsVerifier(),
  didDocuments: options.didDocuments ?? createFetchDidDocumentFetcher({ fetch: options.fetch }),
});
const nowOf = (options: X402VerifyClientOptions) => options.nowSeconds ?? Math.floor(Date.now() / 1000);

/** Verifies an offer's signature and terms; who signed it comes back as a controller DID. */
export function verifyOffer(offer: unknown, options: X402VerifyClientOptions = {}): Promise<Result<VerifiedOffer, X402VerifyError>> {
  return verifySignedOffer(offer, verifyDeps(options), { nowSeconds: nowOf(options) });
}

/** Verifies a receipt's signature and payload. */
export function verifyReceipt(receipt: unknown, options: X402VerifyClientOptions = {}): Promise<Result<VerifiedReceipt, X402VerifyError>> {
  return verifySignedReceipt(receipt, verifyDeps(options), { nowSeconds: nowOf(options), maxAgeSeconds: options.maxAgeSeconds });
}

/** Tells whether a receipt answers an offer: same resourceUrl and network, and the payer is one of ours. */
export function receiptMatchesOffer(receipt: ReceiptPayload, offer: OfferPayload, payerAddresses: readonly string[]): boolean {
  return receipt.resourceUrl === offer.resourceUrl && receipt.network === offer.network &&
    payerAddresses.some((a) => a.toLowerCase() === receipt.payer.toLowerCase());
}

/** A did.json fetcher over plain `fetch`: HTTPS (HTTP only for loopback names), no redirects, 64 KiB, 5 s. */
export function createFetchDidDocumentFetcher(options: { fetch?: FetchLike | undefined; timeoutMs?: number | undefined } = {}): DidDocumentFetcher {
  const doFetch = options.fetch ?? fetch;
  return {
    async fetchDidDocument(host, path = []): Promise<DidDocumentFetch> {
      const hostname = host.replace(/:\d+$/, "");
      const scheme = hostname === "localhost" || hostname === "127.0.0.1" ? "http" : "https";
      const url = path.length === 0 ? `${scheme}://${host}/.well-known/did.json` : `${scheme}://${host}/${path.join("/")}/did.json`;
      let response: Response;
      try {
        response = await doFetch(url, {
          headers: { accept: "application/did+json, application/json" },
          redirect: "manual",
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
      } catch {
        return { status: "unavailable", url, reason: "network-error" };
      }
      if (response.status === 404 || response.status === 410) return { status: "not-found", url };
      if (response.status >= 300 && response.status < 400) return { status: "unavailable", url, reason: "redirect" };
      if (!response.ok) return { status: "unavailable", url, reason: "http-status", httpStatus: response.status };
      const text = await response.text();
      if (text.length > 65536) return { status: "unavailable", url, reason: "too-large" };
      try {
        return { status: "ok", url, document: JSON.parse(text) as unknown };
      } catch {
        return { status: "unavailable", url, reason: "invalid-json" };
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Trust tiers

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
 * answering 5xx, a failed chain read) throws {@link AtsClientError} `NETWORK_ERROR`: a failed lookup
 * never passes for "no evidence", which would silently lower the tier.
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
  // A did:jwk signer named by its RFC 7638 thumbprint in DNS TXT (`jkt=S256:`, decisions §25) is named by the endpoints.
  const thumbprint = input.signer.controllerDid.startsWith("did:jwk:") ? didJwkThumbprint(input.signer.controllerDid) : undefined;
  const endpointKeys = endpoint === undefined
    ? undefined
    : thumbprint !== undefined && endpoint.thumbprints.includes(thumbprint) && !endpoint.keys.includes(input.signer.controllerDid)
    ? [...endpoint.keys, input.signer.controllerDid]
    : endpoint.keys;
  const decision = evaluateKeyTrust({
    subjectDid,
    signer: input.signer,
    at: input.at,
    evidence: { endpointKeys, witnesses: chain.witnesses, keyBindings: chain.keyBindings, chainId: options.chain?.chainId },
  });
  return { ...decision, subjectDid, endpointKeys, witnesses: chain.witnesses, keyBindings: chain.keyBindings };
}

/**
 * The controller ids a did:web subject's endpoints (DNS TXT, did.json) publish now, as the trust options read
 * them; undefined when not looked up. Throws `NETWORK_ERROR` when the evidence cannot be read.
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
  const trust = await checkControllerTrust(
    { subjectDid: subject.value, signer: verified.value.signer, at: verified.value.payload.issuedAt },
    { baseUrl: options.baseUrl, fetch: options.fetch, keyStatus: true },
  );
  const level = trust.tier === 0 ? "none" : trust.keyStatus!.trustLevel;
  const authorized = TRUST_RANK[level] >= TRUST_RANK[options.minimumTrust ?? "basic"] && trust.tier > 0;
  return { ok: true, value: { receipt: verified.value, subjectDid: trust.subjectDid, trust, authorized } };
}

async function loadEndpointKeys(subjectDid: string, options: SignerTrustOptions): Promise<readonly string[] | undefined> {
  return (await loadEndpointEvidence(subjectDid, options))?.keys;
}

/** The controller ids the endpoints publish and the `jkt=` thumbprints of their DNS TXT records (decisions §25). */
async function loadEndpointEvidence(
  subjectDid: string,
  options: SignerTrustOptions,
): Promise<{ readonly keys: readonly string[]; readonly thumbprints: readonly string[] } | undefined> {
  if (options.endpointKeys === false) return undefined;
  if (options.endpointKeys !== undefined) {
    const keys = await options.endpointKeys(subjectDid);
    return keys === undefined ? undefined : { keys, thumbprints: [] };
  }
  const url = `${options.baseUrl ?? DEFAULT_BASE_URL}/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(subjectDid)}`;
  let response: Response;
  let body: { controllerKeys?: { canonicalId?: unknown }[]; evidence?: { thumbprints?: unknown }[] } | undefined;
  try {
    response = await (options.fetch ?? fetch)(url);
    body = response.ok ? await response.json() as typeof body : undefined;
  } catch {
    throw new AtsClientError("NETWORK_ERROR", "Controller endpoint evidence could not be read");
  }
  // A 4xx is the service's answer about this subject (e.g. not a did:web it can check): no endpoint evidence.
  if (response.status >= 500) throw new AtsClientError("NETWORK_ERROR", `Controller endpoint evidence could not be read (HTTP ${response.status})`);
  if (body === undefined) return undefined;
  const keys = (body.controllerKeys ?? []).map((k) => k.canonicalId).filter((k): k is string => typeof k === "string");
  const thumbprints = (Array.isArray(body.evidence) ? body.evidence : [])
    .flatMap((e) => (Array.isArray(e?.thumbprints) ? e.thumbprints : []))
    .filter((t): t is string => typeof t === "string");
  return { keys, thumbprints };
}

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
    : await fetchTrustAnchors({ url: chain.trustAnchors ?? `${options.baseUrl ?? DEFAULT_BASE_URL}/v1/trust-anchors`, fetch: options.fetch });
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
    if (a.expirationTime !== 0n && a.expirationTime <= now) continue;
    const decoded = decodeSchemaData(findSchemaByName(name)!.schema, a.data);
    if (!decoded.ok) continue;
    const data = decoded.value;
    const subject = typeof data.subject === "string" ? normalizeDid(data.subject) : undefined;
    if (!subject?.ok || subject.value !== normalizedSubject) continue;
    const approvedIssuer = isApprovedIssuer(anchors, a.attester, "controller-witness", new Date(Number(a.time) * 1000));
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
        expiresAt: uintOf(data.expiresAt),
        revocationTime: a.revocationTime,
      });
    }
  }
  return { witnesses, keyBindings };
}

// ---------------------------------------------------------------------------------------------------------------
// Reviews

/** The user-review data for the receipt's service, with the receipt (verbatim) as its `x402-receipt` proof. */
export function buildReceiptReview(receipt: SignedReceipt, options: UserReviewFromReceiptOptions): UserReviewData {
  const data = buildUserReviewFromReceipt(receipt, options);
  if (!data.ok) throw new AtsClientError(data.code, data.message);
  return data.value;
}

/** Options of {@link attestReceiptReview}. */
export type AttestReceiptReviewOptions = UserReviewFromReceiptOptions & Pick<AttestDelegatedOptions, "attester" | "sign">;

/**
 * Builds the review of a receipt and submits it through the service's delegated-attest endpoint; the
 * attester must be the receipt's payer. The receipt is read, not verified: verify it first.
 */
export async function attestReceiptReview(
  receipt: SignedReceipt,
  input: AttestReceiptReviewOptions,
  options: AtsClientOptions = {},
): Promise<DelegatedAttestResult & { data: UserReviewData }> {
  const data = buildReceiptReview(receipt, { ...input, reviewer: input.reviewer ?? input.attester });
  const result = await attestDelegated({ schemaName: "user-review", data, attester: input.attester, sign: input.sign }, options);
  return { ...result, data };
}

/** Reads a receipt's payload without verifying it. */
export function readReceipt(receipt: unknown): ReceiptPayload | undefined {
  const payload = readReceiptPayload(receipt);
  return payload.ok ? payload.value : undefined;
}
