/**
 * Proof wrappers of linked-identifier and key-binding payloads (reference §3.2): JSON strings in
 * `string[] proofs`, each `{proofType, proofObject, proofPurpose?, version?, issuedAt?, expiresAt?}`.
 * Only the two proof-of-possession types prove a signer; an `evidence-pointer` is recognised by shape only.
 */
import type { Hex } from "viem";
import { isHex, publicKeyToAddress, recoverTypedDataAddress } from "viem/utils";
import type { JwsAlgorithm, JwsVerifier } from "../../ports/jws_verifier.ts";
import { base64UrlDecode, didJwkToJwk, isSameControllerId, jwkToDidJwk } from "../did/mod.ts";

/** A proof whose signature checked out: who signed it, whom it names, and for what purpose. */
export type VerifiedProof = {
  readonly proofType: "pop-eip712" | "pop-jws";
  /** The signer as DIDs: `did:pkh:eip155:<chainId>:<address>` and/or a `did:jwk`. */
  readonly signers: readonly string[];
  /** Whom the signer authorized: EIP-712 `authorizedEntity`, JWS `aud`. */
  readonly audiences: readonly string[];
};

/** What proof checks need. */
export type ProofContext = {
  readonly nowSeconds: bigint;
  /** The required purpose: wrapper `proofPurpose`, EIP-712 `signingPurpose`, JWS `oma3_proof_purpose`. */
  readonly purpose: string;
  /** The active chain, for the did:pkh of a secp256k1 JWS key. */
  readonly chainId: number;
  readonly jws: JwsVerifier;
};

/** The EIP-712 domain name and version of a pop-eip712 proof. */
export const OMA_TRUST_PROOF_DOMAIN = { name: "OMATrustProof", version: "1" } as const;

/** The EIP-712 types of a pop-eip712 proof; the field list is reference §3.2's. */
export const OMA_TRUST_PROOF_TYPES = {
  OmaTrustProof: [
    { name: "signer", type: "address" },
    { name: "authorizedEntity", type: "string" },
    { name: "signingPurpose", type: "string" },
    { name: "creationTimestamp", type: "uint256" },
    { name: "expirationTimestamp", type: "uint256" },
    { name: "randomValue", type: "bytes32" },
    { name: "statement", type: "string" },
  ],
} as const;

/** Seconds a proof's creation time may lie ahead of our clock. */
const CLOCK_SKEW_SECONDS = 300n;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Reads an unsigned integer given as bigint, safe integer or base-10 string. */
export function readUint(value: unknown): bigint | undefined {
  if (typeof value === "bigint") return value >= 0n ? value : undefined;
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? BigInt(value) : undefined;
  if (typeof value === "string" && /^[0-9]+$/.test(value)) return BigInt(value);
  return undefined;
}

/**
 * The most distinct `proofs` entries of one attestation read (the spec is silent; a link needs two). Each pop-eip712
 * costs a signature recovery: an attestation of a thousand proofs cost about 0.9 s of CPU at every lookup of its
 * artifact. The same string twice is one entry: "two distinct entries" means two different proofs.
 */
export const MAX_PROOF_WRAPPERS = 16;

/**
 * Parses the proof wrappers of a payload; entries that are not JSON objects are dropped, as the reference does. With
 * `distinct` (artifact trust's linked identifiers), only the first {@link MAX_PROOF_WRAPPERS} distinct entries; a
 * review's proofs are listed entry by entry (its checks bound how many are read).
 */
export function parseProofWrappers(proofs: unknown, options: { readonly distinct?: boolean } = {}): Record<string, unknown>[] {
  if (!Array.isArray(proofs)) return [];
  const out: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  for (const entry of proofs) {
    if (typeof entry !== "string") continue;
    if (options.distinct === true) {
      if (seen.has(entry)) continue;
      if (seen.size >= MAX_PROOF_WRAPPERS) break;
      seen.add(entry);
    }
    try {
      const parsed: unknown = JSON.parse(entry);
      if (isRecord(parsed)) out.push(parsed);
    } catch {
      // dropped: not JSON
    }
  }
  return out;
}

/** Verifies one proof wrapper; undefined unless it is a valid, current pop-eip712 or pop-jws for the purpose. */
export async function verifyProofWrapper(
  wrapper: Record<string, unknown>,
  context: ProofContext,
): Promise<VerifiedProof | undefined> {
  if (!wrapperCurrent(wrapper, context)) return undefined;
  if (wrapper.proofType === "pop-eip712") return await verifyPopEip712(wrapper.proofObject, context);
  if (wrapper.proofType === "pop-jws") return await verifyPopJws(wrapper.proofObject, context);
  return undefined;
}

/**
 * Whether a wrapper is a well-formed, current `evidence-pointer` (`proofObject` `{url}` with an absolute
 * URL) for the purpose. Nothing is fetched, so it proves no signer: it only points at evidence.
 */
export function isEvidencePointer(wrapper: Record<string, unknown>, context: Pick<ProofContext, "nowSeconds" | "purpose">): boolean {
  if (wrapper.proofType !== "evidence-pointer" || !wrapperCurrent(wrapper, context)) return false;
  const url = objectOf(wrapper.proofObject)?.url;
  return typeof url === "string" && URL.canParse(url);
}

/** The wrapper's own purpose (when given) is the one asked for, and its own expiry (when given) has not passed. */
function wrapperCurrent(wrapper: Record<string, unknown>, context: Pick<ProofContext, "nowSeconds" | "purpose">): boolean {
  if (wrapper.proofPurpose !== undefined && wrapper.proofPurpose !== context.purpose) return false;
  if (wrapper.expiresAt !== undefined) {
    const expiresAt = readUint(wrapper.expiresAt);
    if (expiresAt === undefined || (expiresAt !== 0n && expiresAt <= context.nowSeconds)) return false;
  }
  return true;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  if (isRecord(value)) return value;
  if (typeof value !== "string") return undefined;
  try {
    const parsed: unknown = JSON.parse(value);
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

async function verifyPopEip712(proofObject: unknown, context: ProofContext): Promise<VerifiedProof | undefined> {
  const object = objectOf(proofObject);
  if (object === undefined) return undefined;
  const domain = object.domain;
  const message = object.message;
  const signature = object.signature;
  if (!isRecord(domain) || !isRecord(message) || typeof signature !== "string") return undefined;
  if (domain.name !== OMA_TRUST_PROOF_DOMAIN.name || domain.version !== OMA_TRUST_PROOF_DOMAIN.version) return undefined;
  const chainId = readUint(domain.chainId);
  if (chainId === undefined || chainId === 0n || chainId > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const signer = message.signer;
  const randomValue = message.randomValue;
  const creation = readUint(message.creationTimestamp);
  const expiration = readUint(message.expirationTimestamp);
  if (
    typeof signer !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(signer) ||
    typeof message.authorizedEntity !== "string" || typeof message.signingPurpose !== "string" ||
    typeof message.statement !== "string" || typeof randomValue !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(randomValue) ||
    creation === undefined || expiration === undefined
  ) return undefined;
  if (message.signingPurpose !== context.purpose) return undefined;
  if (creation > context.nowSeconds + CLOCK_SKEW_SECONDS) return undefined;
  if (expiration !== 0n && expiration <= context.nowSeconds) return undefined;
  if (!isHex(signature) || signature.length !== 132) return undefined;
  let recovered: string;
  try {
    recovered = await recoverTypedDataAddress({
      domain: { ...OMA_TRUST_PROOF_DOMAIN, chainId: Number(chainId) },
      types: OMA_TRUST_PROOF_TYPES,
      primaryType: "OmaTrustProof",
      message: {
        signer: signer as Hex,
        authorizedEntity: message.authorizedEntity,
        signingPurpose: message.signingPurpose,
        creationTimestamp: creation,
        expirationTimestamp: expiration,
        randomValue: randomValue as Hex,
        statement: message.statement,
      },
      signature: signature as Hex,
    });
  } catch {
    return undefined;
  }
  if (recovered.toLowerCase() !== signer.toLowerCase()) return undefined;
  return {
    proofType: "pop-eip712",
    signers: [`did:pkh:eip155:${chainId}:${signer.toLowerCase()}`],
    audiences: [message.authorizedEntity],
  };
}

const JWS_KEY_TYPES: Readonly<Record<JwsAlgorithm, { kty: string; crv: string }>> = {
  ES256: { kty: "EC", crv: "P-256" },
  ES256K: { kty: "EC", crv: "secp256k1" },
  EdDSA: { kty: "OKP", crv: "Ed25519" },
};

function decodeJsonPart(part: string): Record<string, unknown> | undefined {
  const bytes = base64UrlDecode(part);
  if (bytes === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    return isRecord(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** The did:jwk a JWS names its key by: header `jwk`, a did:jwk `kid`, or a did:jwk `iss`; all that are given must agree. */
function jwsKeyDid(header: Record<string, unknown>, payload: Record<string, unknown>): string | undefined {
  const candidates: string[] = [];
  if (header.jwk !== undefined) {
    if (!isRecord(header.jwk)) return undefined;
    const did = jwkToDidJwk(header.jwk, { publicOnly: true });
    if (!did.ok) return undefined;
    candidates.push(did.value);
  }
  for (const value of [header.kid, payload.iss]) {
    if (typeof value === "string" && value.startsWith("did:jwk:")) candidates.push(value.split("#")[0]!);
  }
  const first = candidates[0];
  if (first === undefined || !candidates.every((c) => isSameControllerId(c, first))) return undefined;
  return first;
}

async function verifyPopJws(proofObject: unknown, context: ProofContext): Promise<VerifiedProof | undefined> {
  if (typeof proofObject !== "string") return undefined;
  const parts = proofObject.split(".");
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p))) return undefined;
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = decodeJsonPart(headerPart);
  const payload = decodeJsonPart(payloadPart);
  const signature = base64UrlDecode(signaturePart);
  if (header === undefined || payload === undefined || signature === undefined) return undefined;
  // An extension we do not understand must not be ignored (RFC 7515 §4.1.11).
  if (header.crit !== undefined) return undefined;
  const alg = header.alg;
  if (alg !== "ES256" && alg !== "ES256K" && alg !== "EdDSA") return undefined;

  const purpose = payload.oma3_proof_purpose;
  const iat = readUint(payload.iat);
  const exp = readUint(payload.exp);
  const aud = typeof payload.aud === "string" ? [payload.aud] : payload.aud;
  if (typeof purpose !== "string" || typeof payload.iss !== "string" || iat === undefined || exp === undefined) return undefined;
  if (!Array.isArray(aud) || aud.length === 0 || !aud.every((a) => typeof a === "string")) return undefined;
  if (purpose !== context.purpose) return undefined;
  if (iat > context.nowSeconds + CLOCK_SKEW_SECONDS || exp <= context.nowSeconds) return undefined;

  const keyDid = jwsKeyDid(header, payload);
  if (keyDid === undefined) return undefined;
  const jwk = didJwkToJwk(keyDid);
  if (!jwk.ok) return undefined;
  const expected = JWS_KEY_TYPES[alg];
  if (jwk.value.kty !== expected.kty || jwk.value.crv !== expected.crv) return undefined;
  const valid = await context.jws.verify({
    alg,
    jwk: jwk.value,
    signingInput: new TextEncoder().encode(`${headerPart}.${payloadPart}`),
    signature,
  });
  if (!valid) return undefined;
  const signers = [keyDid];
  const address = alg === "ES256K" ? secp256k1Address(jwk.value) : undefined;
  if (address !== undefined) signers.push(`did:pkh:eip155:${context.chainId}:${address}`);
  return { proofType: "pop-jws", signers, audiences: aud as string[] };
}

/** The EVM address of a secp256k1 JWK, so a JWS from a wallet key also speaks for its did:pkh. */
function secp256k1Address(jwk: Record<string, unknown>): string | undefined {
  const x = typeof jwk.x === "string" ? base64UrlDecode(jwk.x) : undefined;
  const y = typeof jwk.y === "string" ? base64UrlDecode(jwk.y) : undefined;
  if (x?.length !== 32 || y?.length !== 32) return undefined;
  let hex = "0x04";
  for (const byte of [...x, ...y]) hex += byte.toString(16).padStart(2, "0");
  try {
    return publicKeyToAddress(hex as Hex).toLowerCase();
  } catch {
    return undefined;
  }
}
