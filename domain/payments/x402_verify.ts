/**
 * Verifying x402 offers and receipts (x402_offer_receipt.md §4.2) and deciding how far their signing
 * key is authorized to speak for the resource's did:web (§4.3, interface "Trust tiers"):
 * tier 3 a key binding written by a controller witnessed before it, tier 2 a controller witness covering
 * `issuedAt`, tier 1 live endpoint evidence (DNS TXT or did.json, including a did:web kid published by the
 * resource's own did.json), 0 none.
 * A valid signature alone is not authorization.
 */
import type { Address, Hex } from "viem";
import { isHex, recoverTypedDataAddress } from "viem/utils";
import type { DidDocumentFetcher } from "../../ports/discovery.ts";
import type { JwsVerifier } from "../../ports/jws_verifier.ts";
import { base64UrlDecode, base64UrlEncode, didJwkToJwk, didWebLocation, isSameControllerId, jwkToDidJwk, normalizeDid, validatePublicJwk, varintReader } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import {
  decodeCompactJws,
  isCaip2,
  type OfferPayload,
  offerTypedData,
  readOfferPayload,
  readReceiptPayload,
  type ReceiptPayload,
  receiptTypedData,
  type SignatureFormat,
  type X402JwsAlgorithm,
} from "./x402_payloads.ts";

/** Who signed an offer or receipt. */
export type VerifiedSigner = {
  readonly format: SignatureFormat;
  /** The durable controller id: `did:pkh:eip155:1:<address>` for eip712, the key's `did:jwk` for jws. */
  readonly controllerDid: string;
  /** The recovered address (eip712). */
  readonly address?: Address | undefined;
  /** The JWS key id as sent (a mutable reference, never an identity). */
  readonly kid?: string | undefined;
  readonly alg?: X402JwsAlgorithm | undefined;
  /** For a did:web kid: the DID whose document published the key in `assertionMethod`. */
  readonly keyDocumentDid?: string | undefined;
};

/** A verified offer. */
export type VerifiedOffer = { readonly payload: OfferPayload; readonly signer: VerifiedSigner };
/** A verified receipt. */
export type VerifiedReceipt = { readonly payload: ReceiptPayload; readonly signer: VerifiedSigner };

/** Why an offer or receipt was refused. */
export type X402VerifyError = "INVALID_INPUT" | "INVALID_SIGNATURE" | "UNRESOLVABLE_KEY" | "EXPIRED";

/** What verification needs. */
export type X402VerifyDeps = {
  readonly jws: JwsVerifier;
  /** Resolves did:web kids; without it only self-resolving did:jwk and did:key kids and embedded `jwk` headers verify. */
  readonly didDocuments?: DidDocumentFetcher | undefined;
};

/** Options of the verify functions. */
export type X402VerifyOptions = {
  readonly nowSeconds: number;
  /** Receipts only: refuse one older than this. */
  readonly maxAgeSeconds?: number | undefined;
};

/** Seconds a receipt's `issuedAt` may lie ahead of our clock. */
const CLOCK_SKEW_SECONDS = 300;

const JWS_KEY_TYPES: Readonly<Record<X402JwsAlgorithm, { kty: string; crv: string }>> = {
  ES256: { kty: "EC", crv: "P-256" },
  ES256K: { kty: "EC", crv: "secp256k1" },
  EdDSA: { kty: "OKP", crv: "Ed25519" },
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Verifies a signed offer: signature, payload shape, CAIP-2 network, and `validUntil` not passed. */
export async function verifySignedOffer(
  offer: unknown,
  deps: X402VerifyDeps,
  options: X402VerifyOptions,
): Promise<Result<VerifiedOffer, X402VerifyError>> {
  const payload = readOfferPayload(offer);
  if (!payload.ok) return payload;
  if (!isCaip2(payload.value.network)) return fail("INVALID_INPUT", "Offer network is not CAIP-2");
  const signer = await verifySignature(offer as Record<string, unknown>, "offer", deps);
  if (!signer.ok) return signer;
  if (payload.value.validUntil !== 0 && payload.value.validUntil < options.nowSeconds) {
    return fail("EXPIRED", "Offer validUntil has passed");
  }
  return ok({ payload: payload.value, signer: signer.value });
}

/** Verifies a signed receipt: signature, payload shape, CAIP-2 network, `issuedAt` not ahead and not too old. */
export async function verifySignedReceipt(
  receipt: unknown,
  deps: X402VerifyDeps,
  options: X402VerifyOptions,
): Promise<Result<VerifiedReceipt, X402VerifyError>> {
  const payload = readReceiptPayload(receipt);
  if (!payload.ok) return payload;
  if (!isCaip2(payload.value.network)) return fail("INVALID_INPUT", "Receipt network is not CAIP-2");
  const signer = await verifySignature(receipt as Record<string, unknown>, "receipt", deps);
  if (!signer.ok) return signer;
  if (payload.value.issuedAt > options.nowSeconds + CLOCK_SKEW_SECONDS) {
    return fail("INVALID_INPUT", "Receipt issuedAt lies in the future");
  }
  if (options.maxAgeSeconds !== undefined && options.nowSeconds - payload.value.issuedAt > options.maxAgeSeconds) {
    return fail("EXPIRED", "Receipt is older than allowed");
  }
  return ok({ payload: payload.value, signer: signer.value });
}

async function verifySignature(
  artifact: Record<string, unknown>,
  kind: "offer" | "receipt",
  deps: X402VerifyDeps,
): Promise<Result<VerifiedSigner, X402VerifyError>> {
  if (artifact.format === "eip712") return await verifyEip712(artifact, kind);
  if (artifact.format === "jws") return await verifyJws(artifact.signature, deps);
  return fail("INVALID_INPUT", "Unknown signature format");
}

async function verifyEip712(artifact: Record<string, unknown>, kind: "offer" | "receipt"): Promise<Result<VerifiedSigner, X402VerifyError>> {
  const signature = artifact.signature;
  if (typeof signature !== "string" || !isHex(signature) || signature.length !== 132) {
    return fail("INVALID_SIGNATURE", "EIP-712 signature must be 65 bytes of hex");
  }
  // The payload is used exactly as transmitted (§3.4); re-reading it only checks its shape.
  const payload = artifact.payload as Record<string, unknown>;
  let address: Address;
  try {
    address = kind === "offer"
      ? await recoverTypedDataAddress({ ...offerTypedData(payload as OfferPayload), signature: signature as Hex })
      : await recoverTypedDataAddress({
        ...receiptTypedData(payload as ReceiptPayload),
        signature: signature as Hex,
      });
  } catch {
    return fail("INVALID_SIGNATURE", "EIP-712 signature does not recover");
  }
  if (kind === "receipt" && typeof payload.transaction !== "string") {
    return fail("INVALID_INPUT", "EIP-712 receipt must carry transaction (empty when absent)");
  }
  return ok({ format: "eip712", controllerDid: `did:pkh:eip155:1:${address.toLowerCase()}`, address });
}

async function verifyJws(jws: unknown, deps: X402VerifyDeps): Promise<Result<VerifiedSigner, X402VerifyError>> {
  const decoded = decodeCompactJws(jws);
  if (decoded === undefined) return fail("INVALID_INPUT", "Signature is not a compact JWS");
  const { header } = decoded;
  // An extension we do not understand must not be ignored (RFC 7515 §4.1.11).
  if (header.crit !== undefined) return fail("INVALID_SIGNATURE", "JWS crit header is not supported");
  const alg = header.alg === "Ed25519" ? "EdDSA" : header.alg;
  if (alg !== "ES256" && alg !== "ES256K" && alg !== "EdDSA") return fail("INVALID_SIGNATURE", "JWS algorithm is not allowed");
  const kid = typeof header.kid === "string" ? header.kid : undefined;
  const key = await resolveJwsKey(header, kid, deps);
  if (!key.ok) return key;
  const expected = JWS_KEY_TYPES[alg];
  if (key.value.jwk.kty !== expected.kty || key.value.jwk.crv !== expected.crv) {
    return fail("INVALID_SIGNATURE", "JWS key does not fit the algorithm");
  }
  const valid = await deps.jws.verify({ alg, jwk: key.value.jwk, signingInput: decoded.signingInput, signature: decoded.signature });
  if (!valid) return fail("INVALID_SIGNATURE", "JWS signature does not verify");
  const controllerDid = jwkToDidJwk(key.value.jwk, { publicOnly: true });
  if (!controllerDid.ok) return fail("UNRESOLVABLE_KEY", "JWS key is not a public key");
  return ok({
    format: "jws",
    controllerDid: controllerDid.value,
    kid,
    alg,
    ...(key.value.documentDid === undefined ? {} : { keyDocumentDid: key.value.documentDid }),
  });
}

type ResolvedKey = { readonly jwk: Record<string, unknown>; readonly documentDid?: string | undefined };

async function resolveJwsKey(
  header: Record<string, unknown>,
  kid: string | undefined,
  deps: X402VerifyDeps,
): Promise<Result<ResolvedKey, X402VerifyError>> {
  let embedded: Record<string, unknown> | undefined;
  if (header.jwk !== undefined) {
    const checked = validatePublicJwk(header.jwk);
    if (!checked.ok) return fail("UNRESOLVABLE_KEY", "Embedded jwk is not a public key");
    embedded = checked.value;
  }
  let referenced: ResolvedKey | undefined;
  if (kid?.startsWith("did:jwk:")) {
    const jwk = didJwkToJwk(kid);
    if (!jwk.ok) return fail("UNRESOLVABLE_KEY", "kid is not a valid did:jwk");
    referenced = { jwk: jwk.value };
  } else if (kid?.startsWith("did:key:")) {
    // Self-resolving like did:jwk; its fragment (conventionally the key itself) names nothing else.
    const jwk = didKeyToJwk(kid);
    if (!jwk.ok) return jwk;
    referenced = { jwk: jwk.value };
  } else if (kid?.startsWith("did:web:")) {
    const resolved = await resolveDidWebKey(kid, deps.didDocuments);
    if (!resolved.ok) return resolved;
    referenced = resolved.value;
  }
  if (embedded !== undefined) {
    // Both given: the embedded key is used, and a kid naming a different key refuses the artifact.
    if (referenced !== undefined && !isSameControllerId(didOf(embedded), didOf(referenced.jwk))) {
      return fail("UNRESOLVABLE_KEY", "Embedded jwk and kid name different keys");
    }
    return ok({ jwk: embedded, documentDid: referenced?.documentDid });
  }
  if (referenced === undefined) return fail("UNRESOLVABLE_KEY", "JWS kid cannot be resolved");
  return ok(referenced);
}

const didOf = (jwk: Record<string, unknown>) => {
  const did = jwkToDidJwk(jwk, { publicOnly: true });
  return did.ok ? did.value : "";
};

/** The did:web key named by `kid`: document id must be the DID, the method must be in `assertionMethod`. */
async function resolveDidWebKey(
  kid: string,
  fetcher: DidDocumentFetcher | undefined,
): Promise<Result<ResolvedKey, X402VerifyError>> {
  if (fetcher === undefined) return fail("UNRESOLVABLE_KEY", "No did:web resolver configured");
  const hash = kid.indexOf("#");
  if (hash === -1) return fail("UNRESOLVABLE_KEY", "did:web kid must name a key with a fragment");
  const did = kid.slice(0, hash);
  const fragment = kid.slice(hash);
  const normalized = normalizeDid(did);
  if (!normalized.ok) return fail("UNRESOLVABLE_KEY", "kid is not a valid did:web");
  const location = didWebLocation(normalized.value);
  if (location === undefined) return fail("UNRESOLVABLE_KEY", "kid is not a valid did:web");
  const authority = location.port === undefined ? location.host : `${location.host}:${location.port}`;
  const fetched = await fetcher.fetchDidDocument(authority, location.path);
  if (fetched.status !== "ok") return fail("UNRESOLVABLE_KEY", "DID document could not be fetched");
  const doc = fetched.document;
  if (!isRecord(doc) || typeof doc.id !== "string") return fail("UNRESOLVABLE_KEY", "DID document has no id");
  const docId = normalizeDid(doc.id);
  if (!docId.ok || docId.value !== normalized.value) return fail("UNRESOLVABLE_KEY", "DID document id does not match the kid");
  const names = (id: unknown): boolean => {
    if (typeof id !== "string") return false;
    if (id === kid || id === fragment) return true;
    const at = id.indexOf("#");
    if (at === -1 || id.slice(at) !== fragment) return false;
    const base = normalizeDid(id.slice(0, at));
    return base.ok && base.value === normalized.value;
  };
  const methods = Array.isArray(doc.verificationMethod) ? doc.verificationMethod : [];
  const assertion = Array.isArray(doc.assertionMethod) ? doc.assertionMethod : [];
  let method = methods.find((m) => isRecord(m) && names(m.id)) as Record<string, unknown> | undefined;
  const embeddedAssertion = assertion.find((m) => isRecord(m) && names(m.id)) as Record<string, unknown> | undefined;
  const listed = embeddedAssertion !== undefined || assertion.some((entry) => names(entry));
  if (!listed) return fail("UNRESOLVABLE_KEY", "Key is not listed in assertionMethod");
  method ??= embeddedAssertion;
  if (method === undefined || !isRecord(method.publicKeyJwk)) return fail("UNRESOLVABLE_KEY", "Key has no publicKeyJwk");
  const jwk = validatePublicJwk(method.publicKeyJwk);
  if (!jwk.ok) return fail("UNRESOLVABLE_KEY", "publicKeyJwk is not a public key");
  return ok({ jwk: jwk.value, documentDid: normalized.value });
}

// ---------------------------------------------------------------------------------------------------------------
// did:key (x402_offer_receipt.md §4.2): base58btc multibase (`z`), an unsigned-varint multicodec, the key.

const BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const MULTICODEC = { ed25519: 0xed, secp256k1: 0xe7, p256: 0x1200 } as const;
/** Longest did:key identifier read: a P-256 key takes 49 characters; this only bounds the work. */
const MAX_DID_KEY_IDENTIFIER = 128;

/** Short Weierstrass curves `y² = x³ + ax + b` over p, both with p ≡ 3 (mod 4), so √ is a single power. */
const CURVES = {
  secp256k1: { p: 2n ** 256n - 2n ** 32n - 977n, a: 0n, b: 7n },
  "P-256": {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    a: 0xffffffff00000001000000000000000000000000fffffffffffffffffffffffcn,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  },
} as const;

/** Decodes base58btc (Bitcoin alphabet, leading `1`s are zero bytes); undefined on a bad character. */
export function base58btcDecode(text: string): Uint8Array | undefined {
  let value = 0n;
  for (const char of text) {
    const digit = BASE58_ALPHABET.indexOf(char);
    if (digit === -1) return undefined;
    value = value * 58n + BigInt(digit);
  }
  const body: number[] = [];
  for (; value > 0n; value >>= 8n) body.unshift(Number(value & 0xffn));
  let zeros = 0;
  while (zeros < text.length && text[zeros] === "1") zeros++;
  return Uint8Array.from([...new Array<number>(zeros).fill(0), ...body]);
}

/** Encodes bytes as base58btc (Bitcoin alphabet). */
export function base58btcEncode(bytes: Uint8Array): string {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  let out = "";
  for (; value > 0n; value /= 58n) out = BASE58_ALPHABET[Number(value % 58n)] + out;
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) out = `1${out}`;
  return out;
}

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
  }
  return result;
}

const toBigInt = (bytes: Uint8Array) => bytes.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
const toBytes32 = (value: bigint) => Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * (31 - i))) & 0xffn));

/**
 * The affine point of a SEC1 public key (33-byte compressed or 65-byte uncompressed) on a curve, checked
 * to lie on it; undefined otherwise.
 */
function sec1Point(bytes: Uint8Array, curve: keyof typeof CURVES): { x: Uint8Array; y: Uint8Array } | undefined {
  const { p, a, b } = CURVES[curve];
  const x = toBigInt(bytes.subarray(1, 33));
  if (x >= p) return undefined;
  const rhs = (((x * x) % p) * x + a * x + b) % p;
  let y: bigint;
  if (bytes.length === 33 && (bytes[0] === 0x02 || bytes[0] === 0x03)) {
    y = modPow(rhs, (p + 1n) / 4n, p);
    if ((y * y) % p !== rhs) return undefined;
    if ((y & 1n) !== BigInt(bytes[0] & 1)) y = p - y;
  } else if (bytes.length === 65 && bytes[0] === 0x04) {
    y = toBigInt(bytes.subarray(33, 65));
    if (y >= p || (y * y) % p !== rhs) return undefined;
  } else {
    return undefined;
  }
  return { x: toBytes32(x), y: toBytes32(y) };
}

/**
 * The public JWK of a `did:key` (a fragment is ignored): multicodec 0xed Ed25519, 0xe7 secp256k1 and
 * 0x1200 P-256, the EC keys compressed (as the did:key spec writes them) or uncompressed.
 */
export function didKeyToJwk(did: string): Result<Record<string, string>, "UNRESOLVABLE_KEY"> {
  const identifier = did.split("#")[0]!.slice("did:key:".length);
  if (!did.startsWith("did:key:") || !identifier.startsWith("z") || identifier.length > MAX_DID_KEY_IDENTIFIER) {
    return fail("UNRESOLVABLE_KEY", "did:key must be base58btc multibase (z...)");
  }
  const bytes = base58btcDecode(identifier.slice(1));
  const reader = bytes === undefined ? undefined : varintReader(bytes);
  const codec = reader?.next();
  if (bytes === undefined || reader === undefined || codec === undefined) {
    return fail("UNRESOLVABLE_KEY", "did:key is not valid base58btc multicodec");
  }
  const key = bytes.subarray(reader.offset());
  if (codec === MULTICODEC.ed25519) {
    if (key.length !== 32) return fail("UNRESOLVABLE_KEY", "did:key Ed25519 key must be 32 bytes");
    return ok({ kty: "OKP", crv: "Ed25519", x: base64UrlEncode(key) });
  }
  const crv = codec === MULTICODEC.secp256k1 ? "secp256k1" : codec === MULTICODEC.p256 ? "P-256" : undefined;
  if (crv === undefined) return fail("UNRESOLVABLE_KEY", "did:key key type is not Ed25519, secp256k1 or P-256");
  const point = sec1Point(key, crv);
  if (point === undefined) return fail("UNRESOLVABLE_KEY", `did:key ${crv} key is not a point on the curve`);
  return ok({ kty: "EC", crv, x: base64UrlEncode(point.x), y: base64UrlEncode(point.y) });
}

/** The `did:key` of a public Ed25519, secp256k1 or P-256 JWK, EC keys compressed as the did:key spec writes them. */
export function jwkToDidKey(jwk: Record<string, unknown>): Result<string, "UNRESOLVABLE_KEY"> {
  const x = typeof jwk.x === "string" ? base64UrlDecode(jwk.x) : undefined;
  const y = typeof jwk.y === "string" ? base64UrlDecode(jwk.y) : undefined;
  let prefix: number[];
  let key: Uint8Array;
  if (jwk.kty === "OKP" && jwk.crv === "Ed25519" && x?.length === 32) {
    prefix = [0xed, 0x01];
    key = x;
  } else if (jwk.kty === "EC" && (jwk.crv === "secp256k1" || jwk.crv === "P-256") && x?.length === 32 && y?.length === 32) {
    prefix = jwk.crv === "secp256k1" ? [0xe7, 0x01] : [0x80, 0x24];
    key = Uint8Array.from([0x02 | (y[31]! & 1), ...x]);
  } else {
    return fail("UNRESOLVABLE_KEY", "JWK is not a public Ed25519, secp256k1 or P-256 key");
  }
  return ok(`did:key:z${base58btcEncode(Uint8Array.from([...prefix, ...key]))}`);
}

// ---------------------------------------------------------------------------------------------------------------
// Trust tiers

/** A controller witness of the subject as read from the chain. */
export type WitnessEvidence = {
  readonly controller: string;
  /** Unix seconds: when the controller was observed; authorization is proven from here on. */
  readonly observedAt: bigint;
  /** Unix seconds: the attestation's chain time. */
  readonly time: bigint;
  /** The attester is an active approved `controller-witness` issuer at `time`. */
  readonly approvedIssuer: boolean;
  readonly revoked: boolean;
};

/** A key binding of the subject as read from the chain. */
export type KeyBindingEvidence = {
  readonly uid: string;
  readonly keyId: string;
  readonly keyPurpose: readonly string[];
  readonly attester: string;
  readonly time: bigint;
  readonly effectiveAt: bigint;
  /** 0 = none. */
  readonly expiresAt: bigint;
  /** 0 = not revoked. */
  readonly revocationTime: bigint;
};

/** What the trust decision looks at. */
export type KeyTrustEvidence = {
  /** Controller ids published by the subject's endpoints (DNS TXT, did.json); undefined when not looked up or unavailable. */
  readonly endpointKeys?: readonly string[] | undefined;
  readonly witnesses?: readonly WitnessEvidence[] | undefined;
  readonly keyBindings?: readonly KeyBindingEvidence[] | undefined;
  /** The chain id, for the did:pkh of a key binding's attester. */
  readonly chainId?: number | undefined;
};

/** The trust decision. */
export type KeyTrust = {
  readonly tier: 0 | 1 | 2 | 3;
  /** The OMA3 trust table's words. */
  readonly level: "low" | "moderate" | "high" | "highest";
  readonly basis: "none" | "endpoint-evidence" | "did-json-kid" | "controller-witness" | "key-binding";
  /** The key binding or witness that decided, when one did. */
  readonly evidenceUid?: string | undefined;
};

const LEVELS = ["low", "moderate", "high", "highest"] as const;

/** Decides the trust tier of a verified signer for a subject at the artifact's `issuedAt`. */
export function evaluateKeyTrust(input: {
  readonly subjectDid: string;
  readonly signer: VerifiedSigner;
  /** The receipt's `issuedAt` (an offer: when it was seen). */
  readonly at: number;
  readonly evidence: KeyTrustEvidence;
}): KeyTrust {
  const subject = normalizeDid(input.subjectDid);
  const at = BigInt(input.at);
  const ids = [input.signer.controllerDid];
  const matches = (id: string) => ids.some((own) => isSameControllerId(own, asControllerId(id)));
  const witnesses = (input.evidence.witnesses ?? []).filter((w) => w.approvedIssuer && !w.revoked);
  const chainId = input.evidence.chainId ?? 1;

  for (const binding of input.evidence.keyBindings ?? []) {
    if (!matches(binding.keyId.split("#")[0]!)) continue;
    if (binding.keyPurpose.length > 0 && !binding.keyPurpose.includes("assertionMethod")) continue;
    if (binding.effectiveAt > at || binding.time > at) continue;
    if (binding.expiresAt !== 0n && binding.expiresAt <= at) continue;
    if (binding.revocationTime !== 0n && binding.revocationTime <= at) continue;
    // "A key binding requires a prior controller witness" (interface.md): the controller that wrote it
    // must have been witnessed (by an approved witness issuer) for this subject before it did. Being an
    // approved issuer is no substitute: that role is scoped to writing controller-witness attestations.
    const attesterDid = `did:pkh:eip155:${chainId}:${binding.attester.toLowerCase()}`;
    const witnessed = witnesses.some((w) => w.time <= binding.time && isSameControllerId(w.controller, attesterDid));
    if (witnessed) return trust(3, "key-binding", binding.uid);
  }
  for (const w of witnesses) {
    const from = w.observedAt > 0n ? w.observedAt : w.time;
    if (matches(w.controller) && from <= at) return trust(2, "controller-witness");
  }
  if (input.evidence.endpointKeys?.some(matches)) return trust(1, "endpoint-evidence");
  if (subject.ok && input.signer.keyDocumentDid !== undefined && input.signer.keyDocumentDid === subject.value) {
    return trust(1, "did-json-kid");
  }
  return trust(0, "none");
}

/** A did:key evidence id as the did:jwk of its key, so both spellings of one key compare equal. */
function asControllerId(id: string): string {
  if (!id.startsWith("did:key:")) return id;
  const jwk = didKeyToJwk(id);
  const did = jwk.ok ? jwkToDidJwk(jwk.value, { publicOnly: true }) : undefined;
  return did?.ok ? did.value : id;
}

function trust(tier: KeyTrust["tier"], basis: KeyTrust["basis"], evidenceUid?: string): KeyTrust {
  return { tier, level: LEVELS[tier], basis, ...(evidenceUid === undefined ? {} : { evidenceUid }) };
}
