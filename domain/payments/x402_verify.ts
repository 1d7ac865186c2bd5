/**
 * Verifying x402 offers and receipts (x402_offer_receipt.md §4.2): the signature, the key that made it (eip712, or a
 * JWS key from did:jwk, did:key or the resource's did.json), the payload's shape and times. How far that key may
 * speak for the resource is `x402_key_trust.ts`: a valid signature alone is not authorization.
 */
import type { Address, Hex } from "viem";
import { isHex, recoverTypedDataAddress } from "viem/utils";
import type { DidDocumentFetcher } from "../../ports/discovery.ts";
import type { JwsVerifier } from "../../ports/jws_verifier.ts";
import { didJwkToJwk, didWebLocation, isSameControllerId, jwkToDidJwk, normalizeDid, validatePublicJwk } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";
import { didKeyToJwk } from "./did_key.ts";
import {
  type OfferPayload,
  offerTypedData,
  type ReceiptPayload,
  receiptTypedData,
  type SignatureFormat,
} from "./x402_payloads.ts";
import { decodeCompactJws, type X402JwsAlgorithm } from "./x402_jws.ts";
import { isCaip2 } from "./x402_networks.ts";
import { readOfferPayload, readReceiptPayload } from "./x402_receipts.ts";

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
  const kid = header.kid;
  if (kid !== undefined && typeof kid !== "string") return fail("UNRESOLVABLE_KEY", "JWS kid is not a DID URL");
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
  } else if (kid !== undefined) {
    // A kid that is no did:web, did:jwk or did:key URL as written (`DID:WEB:…`, a leading space, `did:webb:…`) names
    // nothing we can resolve: refused, never waved through on the embedded jwk and handed back as the signer's kid.
    return fail("UNRESOLVABLE_KEY", "JWS kid is not a did:web, did:jwk or did:key URL");
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
