/**
 * DIDs: normalization, hashing, DID addresses and the per-method helpers every feature shares.
 *
 * Rules follow the newest reference SDK (reference §1.2) with the product decisions of decisions §3.
 * Every function here returns expected failures as values and never throws for any string input.
 */
import type { Address, Hex } from "viem";
import { getAddress, keccak256, stringToBytes } from "viem/utils";
import { fail, ok, type Result } from "./result.ts";

/** The failure every DID function reports. */
export type InvalidDid = Result<never, "INVALID_DID">;

/** The parts of a did:pkh. */
export type DidPkhParts = { readonly namespace: string; readonly chainId: string; readonly address: string };

/** A parsed did:artifact. */
export type ArtifactDid = {
  /** The DID exactly as given; a valid did:artifact is its own canonical form. */
  readonly did: string;
  /** The method-specific identifier: `b` + base32-lower CIDv1. */
  readonly identifier: string;
  /** The SHA-256 digest of the artifact, lowercase hex. */
  readonly digest: Hex;
};

/** Options of {@link jwkToDidJwk}. */
export type JwkToDidJwkOptions = {
  /** Keep only the key material members (`kty`, `crv`, `x`, `y`, `n`, `e`); default keeps every member given. */
  readonly publicOnly?: boolean | undefined;
};

const invalid = (message: string): InvalidDid => fail("INVALID_DID", message);

const DID_FORMAT = /^did:[a-z0-9]+:.+$/i;
const DID_METHOD = /^did:([a-z0-9]+):/;
const HASH_FORMAT = /^0x[0-9a-fA-F]{64}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const CAIP10 = /^(?<namespace>[a-z0-9-]+):(?<reference>[a-zA-Z0-9-]+):(?<address>.+)$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Normalizes a DID (or a bare domain, which becomes a did:web) to the form that is hashed. */
export function normalizeDid(input: string): Result<string, "INVALID_DID"> {
  if (typeof input !== "string" || input.trim() === "") return invalid("Input must be a non-empty string");
  const trimmed = input.trim();
  const hash = trimmed.indexOf("#");
  // A DID URL fragment names a part of the DID document, never a different subject.
  const did = hash === -1 ? trimmed : trimmed.slice(0, hash);
  if (!did.startsWith("did:")) return normalizeDidWeb(did);
  if (!DID_FORMAT.test(did)) return invalid("Invalid DID format");
  const method = DID_METHOD.exec(did)?.[1];
  switch (method) {
    case "web":
      return normalizeDidWeb(did);
    case "pkh":
      return normalizeDidPkh(did);
    case "handle":
      return normalizeDidHandle(did);
    case "jwk": {
      const checked = decodeDidJwk(did);
      return checked.ok ? ok(did) : checked;
    }
    default:
      // did:key (multibase is case-sensitive), did:ethr, did:artifact and unknown methods stay as written.
      return ok(did);
  }
}

/** The longest subject a caller may name (a did:jwk of an RSA-4096 key is about 950 characters). */
export const MAX_SUBJECT_DID_LENGTH = 2_048;
/** Whitespace (Unicode's included) and control characters: no DID holds one (DID Core's characters are ASCII). */
const SPACE_OR_CONTROL = /[\s\p{Cc}]/u;

/**
 * The one rule for a subject a caller names (issue 43), used by every route, MCP tool and client helper that takes one
 * (the attestation list and count, key status, controller authorization and discovery, reviews, the witness, subjects
 * and ownership proofs, webhook subjects): the subject in the form that is hashed ({@link normalizeDid}), or
 * `INVALID_DID` when
 * - it is empty or longer than {@link MAX_SUBJECT_DID_LENGTH};
 * - it holds whitespace or a control character (`did:web:not a did`, `did:web:exa<TAB>mple.com`: no attestation can
 *   name it, and `not a did` would otherwise become `did:web:not a did`); whitespace around it is trimmed, as
 *   {@link normalizeDid} always did (a pasted `  example.com `);
 * - {@link normalizeDid} refuses it;
 * - it is a did:web (a bare domain becomes one) naming no domain ({@link didWebLocation}): `did:web:a..b`, an IP host.
 *
 * A bare domain (`example.com`) stays a did:web subject where a route accepted one before; a route that takes DIDs
 * only (key status, webhooks) checks the `did:` prefix itself.
 */
export function normalizeSubjectDid(input: unknown): Result<string, "INVALID_DID"> {
  if (typeof input !== "string" || input.trim() === "") return invalid("The subject must be a non-empty DID or domain");
  if (input.length > MAX_SUBJECT_DID_LENGTH) return invalid(`The subject must be at most ${MAX_SUBJECT_DID_LENGTH} characters`);
  if (SPACE_OR_CONTROL.test(input.trim())) return invalid("The subject must not hold whitespace or control characters");
  const normalized = normalizeDid(input);
  if (!normalized.ok) return normalized;
  if (normalized.value.startsWith("did:web:") && didWebLocation(normalized.value) === undefined) {
    return invalid("did:web host is not a domain name");
  }
  return normalized;
}

function normalizeDidWeb(value: string): Result<string, "INVALID_DID"> {
  let rest: string;
  if (value.startsWith("did:web:")) rest = value.slice("did:web:".length);
  else if (/^did:/i.test(value)) return invalid("Expected did:web DID");
  else rest = value;
  const slash = rest.indexOf("/");
  const host = normalizeDomain(slash === -1 ? rest : rest.slice(0, slash));
  if (host === "") return invalid("Invalid did:web identifier");
  return ok(`did:web:${host}${slash === -1 ? "" : rest.slice(slash)}`);
}

/** Lowercases a host and drops one trailing dot and one leading `www.`. */
export function normalizeDomain(host: string): string {
  let domain = host.trim().toLowerCase();
  if (domain.endsWith(".")) domain = domain.slice(0, -1);
  if (domain.startsWith("www.")) domain = domain.slice(4);
  return domain;
}

function normalizeDidPkh(did: string): Result<string, "INVALID_DID"> {
  const parts = did.split(":");
  if (parts.length !== 5) return invalid("Invalid did:pkh format");
  const [, , namespace = "", chainId = "", address = ""] = parts;
  if (namespace === "" || chainId === "" || address === "") return invalid("Invalid did:pkh components");
  return ok(`did:pkh:${namespace.toLowerCase()}:${chainId}:${address.toLowerCase()}`);
}

function normalizeDidHandle(did: string): Result<string, "INVALID_DID"> {
  const parts = did.split(":");
  if (parts.length !== 4) return invalid("Invalid did:handle format");
  const [, , platform = "", username = ""] = parts;
  if (platform === "" || username === "") return invalid("Invalid did:handle components");
  return ok(`did:handle:${platform.toLowerCase()}:${username}`);
}

/** Hashes a DID: keccak256 of the UTF-8 of its normalized form, lowercase hex. */
export function computeDidHash(did: string): Result<Hex, "INVALID_DID"> {
  const normalized = normalizeDid(did);
  if (!normalized.ok) return normalized;
  return ok(keccak256(stringToBytes(normalized.value)));
}

/** Derives the DID address (EAS recipient) from a DID hash: its low 160 bits, lowercase, never checksummed. */
export function didAddressFromHash(hash: string): Result<Address, "INVALID_DID"> {
  if (typeof hash !== "string" || !HASH_FORMAT.test(hash)) return invalid("didHash must be 32-byte hex");
  return ok(`0x${hash.slice(-40).toLowerCase()}` as Address);
}

/** Derives the DID address (EAS recipient) of a DID. */
export function didToAddress(did: string): Result<Address, "INVALID_DID"> {
  const hash = computeDidHash(did);
  return hash.ok ? didAddressFromHash(hash.value) : hash;
}

/** Tells whether an address is the DID address of a DID; false on any error. */
export function validateDidAddress(did: string, address: string): boolean {
  const derived = didToAddress(did);
  return derived.ok && typeof address === "string" && derived.value === address.toLowerCase();
}

/** Returns the domain of a did:web: the normalized text after `did:web:` up to the first `/`. */
export function getDomainFromDidWeb(did: string): Result<string, "INVALID_DID"> {
  const normalized = normalizeDid(did);
  if (!normalized.ok) return normalized;
  if (!normalized.value.startsWith("did:web:")) return invalid("Expected did:web DID");
  const rest = normalized.value.slice("did:web:".length);
  const slash = rest.indexOf("/");
  return ok(slash === -1 ? rest : rest.slice(0, slash));
}

/** Builds a did:pkh from a CAIP-10 account id (`<namespace>:<reference>:<address>`). */
export function buildDidPkhFromCaip10(caip10: string): Result<string, "INVALID_DID"> {
  if (typeof caip10 !== "string") return invalid("Invalid CAIP-10 account id");
  const groups = CAIP10.exec(caip10.trim())?.groups;
  if (groups === undefined) return invalid("Invalid CAIP-10 account id");
  return normalizeDidPkh(`did:pkh:${groups.namespace}:${groups.reference}:${groups.address}`);
}

/** Builds a normalized did:pkh from its parts. */
export function buildDidPkh(namespace: string, chainId: string | number, address: string): Result<string, "INVALID_DID"> {
  return normalizeDidPkh(`did:pkh:${String(namespace)}:${String(chainId)}:${String(address)}`);
}

/** Splits a did:pkh into namespace, chain id and address, all as normalized. */
export function parseDidPkh(did: string): Result<DidPkhParts, "INVALID_DID"> {
  const normalized = normalizeDid(did);
  if (!normalized.ok) return normalized;
  if (!normalized.value.startsWith("did:pkh:")) return invalid("Expected did:pkh DID");
  const [, , namespace = "", chainId = "", address = ""] = normalized.value.split(":");
  return ok({ namespace, chainId, address });
}

/** Converts a did:pkh to its CAIP-10 account id. */
export function didPkhToCaip10(did: string): Result<string, "INVALID_DID"> {
  const parts = parseDidPkh(did);
  if (!parts.ok) return parts;
  return ok(`${parts.value.namespace}:${parts.value.chainId}:${parts.value.address}`);
}

/** Returns the EIP-55 form of an EVM address, or undefined when it is not one or its mixed case is a bad checksum. */
export function checksumEvmAddress(value: string): Address | undefined {
  if (typeof value !== "string" || !EVM_ADDRESS.test(value)) return undefined;
  const checksummed = getAddress(value.toLowerCase());
  const hex = value.slice(2);
  // As in EIP-55 (and ethers): single-case hex carries no checksum; mixed case must match it.
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase() || value === checksummed) return checksummed;
  return undefined;
}

/** Extracts the EIP-55 address of an eip155 did:pkh, a did:ethr or a bare EVM address. */
export function extractAddressFromDid(did: string): Result<Address, "INVALID_DID"> {
  if (typeof did !== "string") return invalid("Unsupported identifier format");
  const value = did.trim();
  let candidate: string | undefined;
  if (EVM_ADDRESS.test(value)) candidate = value;
  else if (value.startsWith("did:pkh:")) {
    const parts = parseDidPkh(value);
    if (!parts.ok) return parts;
    if (parts.value.namespace !== "eip155") return invalid("Unsupported identifier format");
    candidate = parts.value.address;
  } else if (value.startsWith("did:ethr:")) {
    const parts = value.split("#")[0]?.split(":") ?? [];
    if (parts.length === 3 || parts.length === 4) candidate = parts[parts.length - 1];
  }
  const address = candidate === undefined ? undefined : checksumEvmAddress(candidate);
  return address === undefined ? invalid("Unsupported identifier format") : ok(address);
}

// ---------------------------------------------------------------------------------------------------------------
// did:jwk

const JWK_KTY = ["EC", "OKP", "RSA"] as const;
const JWK_REQUIRED: Readonly<Record<string, readonly string[]>> = { EC: ["crv", "x", "y"], OKP: ["crv", "x"], RSA: ["n", "e"] };
const JWK_PRIVATE = ["d", "p", "q", "dp", "dq", "qi", "oth"] as const;
const JWK_PUBLIC_MEMBERS = ["kty", "crv", "x", "y", "n", "e"] as const;
const JWK_IGNORED_IN_EQUALITY = new Set(["kid", "use", "key_ops", "alg", "ext"]);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Checks that a JWK is a public EC, OKP or RSA key. */
export function validatePublicJwk(jwk: unknown): Result<Record<string, unknown>, "INVALID_DID"> {
  if (!isRecord(jwk)) return invalid("Decoded JWK must be a JSON object");
  const kty = jwk.kty;
  if (typeof kty !== "string" || !(JWK_KTY as readonly string[]).includes(kty)) {
    return invalid("Invalid or missing kty field (must be one of: EC, OKP, RSA)");
  }
  for (const member of JWK_PRIVATE) {
    if (Object.hasOwn(jwk, member)) {
      return invalid(`DID must reference a public key — private key component (${member}) is not allowed`);
    }
  }
  for (const member of JWK_REQUIRED[kty] ?? []) {
    const value = jwk[member];
    if (typeof value !== "string" || value === "") return invalid(`Missing required ${kty} JWK field: ${member}`);
  }
  return ok(jwk);
}

function decodeDidJwk(did: string): Result<Record<string, unknown>, "INVALID_DID"> {
  const parts = did.split(":");
  if (parts.length !== 3) return invalid(`did:jwk must have exactly 3 colon-separated parts, got ${parts.length}`);
  const identifier = parts[2] ?? "";
  if (!BASE64URL.test(identifier)) return invalid("Identifier contains invalid base64url characters");
  const bytes = base64UrlDecode(identifier);
  if (bytes === undefined) return invalid("Identifier is not valid base64url");
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    return invalid("Decoded identifier is not valid JSON");
  }
  return validatePublicJwk(json);
}

/** Encodes a public JWK as a did:jwk: sorted keys, plain JSON, base64url without padding. */
export function jwkToDidJwk(jwk: Record<string, unknown>, options: JwkToDidJwkOptions = {}): Result<string, "INVALID_DID"> {
  const checked = validatePublicJwk(jwk);
  if (!checked.ok) return checked;
  const keys = Object.keys(jwk)
    .filter((k) => !options.publicOnly || (JWK_PUBLIC_MEMBERS as readonly string[]).includes(k))
    .sort();
  const sorted: Record<string, unknown> = {};
  for (const key of keys) sorted[key] = jwk[key];
  let json: string;
  try {
    json = JSON.stringify(sorted);
  } catch {
    return invalid("JWK is not serializable as JSON");
  }
  return ok(`did:jwk:${base64UrlEncode(stringToBytes(json))}`);
}

/** Decodes a did:jwk (a fragment is ignored) to its validated public JWK. */
export function didJwkToJwk(did: string): Result<Record<string, unknown>, "INVALID_DID"> {
  const normalized = normalizeDid(did);
  if (!normalized.ok) return normalized;
  if (!normalized.value.startsWith("did:jwk:")) return invalid("Expected did:jwk DID");
  return decodeDidJwk(normalized.value);
}

/** Tells whether two JWKs are the same public key, ignoring kid, use, key_ops, alg and ext. */
export function publicJwkEquals(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  if (!validatePublicJwk(a).ok || !validatePublicJwk(b).ok) return false;
  const material = (jwk: Record<string, unknown>) =>
    Object.keys(jwk)
      .filter((k) => !JWK_IGNORED_IN_EQUALITY.has(k) && jwk[k] !== undefined)
      .sort();
  const keysA = material(a);
  const keysB = material(b);
  if (keysA.length !== keysB.length) return false;
  return keysA.every((key, i) => key === keysB[i] && canonicalJson(a[key]) === canonicalJson(b[key]));
}

function canonicalJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_key, v: unknown) =>
      isRecord(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v,
    );
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Controller ids

/**
 * The identity of a controller id: equal for two ids exactly when {@link isSameControllerId} says they name one
 * controller (same normalized DID, the same eip155 address on any chain, or the same did:jwk public key), so a set
 * of controller ids is deduplicated with a `Set` or `Map` in linear time instead of comparing every pair.
 * Undefined when the id is not a valid DID.
 */
export function controllerIdentity(id: string): string | undefined {
  const normalized = normalizeDid(id);
  if (!normalized.ok) return undefined;
  const did = normalized.value;
  if (did.startsWith("did:pkh:")) {
    const [, , namespace, , address] = did.split(":");
    // Prefixes that no normalized DID starts with (they all start with `did:`).
    return namespace === "eip155" ? `eip155-address:${address}` : did;
  }
  if (did.startsWith("did:jwk:")) {
    const jwk = decodeDidJwk(did);
    if (!jwk.ok) return did;
    const material: Record<string, unknown> = {};
    for (const key of Object.keys(jwk.value).sort()) {
      if (!JWK_IGNORED_IN_EQUALITY.has(key) && jwk.value[key] !== undefined) material[key] = jwk.value[key];
    }
    const canonical = canonicalJson(material);
    return canonical === undefined ? did : `jwk-key:${canonical}`;
  }
  return did;
}

/** Tells whether two controller ids name one controller: same normalized DID, eip155 address or did:jwk key. */
export function isSameControllerId(a: string, b: string): boolean {
  const left = controllerIdentity(a);
  return left !== undefined && left === controllerIdentity(b);
}

// ---------------------------------------------------------------------------------------------------------------
// did:artifact

const ARTIFACT_PREFIX = "did:artifact:";
const CID_VERSION = 0x01;
const CODEC_RAW = 0x55;
const MULTIHASH_SHA2_256 = 0x12;
const SHA256_LENGTH = 32;
const hexByte = (n: number) => `0x${n.toString(16).padStart(2, "0")}`;

/** Parses a did:artifact: `b` + base32-lower of a CIDv1 with the raw codec and a sha2-256 multihash. */
export function parseArtifactDid(did: string): Result<ArtifactDid, "INVALID_DID"> {
  if (typeof did !== "string" || !did.startsWith(ARTIFACT_PREFIX)) return invalid("Expected a did:artifact DID");
  const identifier = did.slice(ARTIFACT_PREFIX.length);
  if (identifier === "") return invalid("Missing method-specific identifier");
  const prefix = String.fromCodePoint(identifier.codePointAt(0) ?? 0);
  if (prefix !== "b") return invalid(`Invalid multibase prefix "${prefix}", expected "b" (base32lower)`);
  const bytes = base32LowerDecode(identifier.slice(1));
  if (bytes === undefined) return invalid("Failed to decode base32 CID: not canonical base32lower");
  const reader = varintReader(bytes);
  const version = reader.next();
  if (version !== CID_VERSION) return invalid(`CID version must be 1, got ${describe(version)}`);
  const codec = reader.next();
  if (codec !== CODEC_RAW) return invalid(`Multicodec must be raw (0x55), got ${describeHex(codec)}`);
  const hashFunction = reader.next();
  if (hashFunction !== MULTIHASH_SHA2_256) {
    return invalid(`Multihash function must be sha2-256 (0x12), got ${describeHex(hashFunction)}`);
  }
  const length = reader.next();
  const digest = bytes.subarray(reader.offset());
  if (length !== SHA256_LENGTH || digest.length !== SHA256_LENGTH) {
    return invalid(`SHA-256 digest must be 32 bytes, got ${length === SHA256_LENGTH ? digest.length : describe(length)}`);
  }
  return ok({ did, identifier, digest: toHex(digest) });
}

/** Builds the did:artifact of a SHA-256 digest; throws a TypeError when the digest is not 32 bytes of hex (a bug). */
export function artifactDidFromDigest(digest: Hex): string {
  if (!HASH_FORMAT.test(digest)) throw new TypeError("Digest must be 32-byte hex");
  const bytes = new Uint8Array(4 + SHA256_LENGTH);
  bytes.set([CID_VERSION, CODEC_RAW, MULTIHASH_SHA2_256, SHA256_LENGTH]);
  for (let i = 0; i < SHA256_LENGTH; i++) bytes[4 + i] = Number.parseInt(digest.slice(2 + i * 2, 4 + i * 2), 16);
  return `${ARTIFACT_PREFIX}b${base32LowerEncode(bytes)}`;
}

const describe = (n: number | undefined) => (n === undefined ? "nothing" : String(n));
const describeHex = (n: number | undefined) => (n === undefined ? "nothing" : hexByte(n));

/** Reads unsigned LEB128 varints (multiformats) from `bytes` one after the other. */
export function varintReader(bytes: Uint8Array) {
  let offset = 0;
  return {
    offset: () => offset,
    /** Reads an unsigned LEB128 varint; undefined when truncated or longer than 7 bytes. */
    next(): number | undefined {
      let value = 0;
      for (let shift = 0; shift < 49; shift += 7) {
        const byte = bytes[offset];
        if (byte === undefined) return undefined;
        offset++;
        value += (byte & 0x7f) * 2 ** shift;
        if ((byte & 0x80) === 0) return value;
      }
      return undefined;
    },
  };
}

function toHex(bytes: Uint8Array): Hex {
  let hex = "0x";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex as Hex;
}

// ---------------------------------------------------------------------------------------------------------------
// Base encodings (RFC 4648), written out so the domain needs no codec dependency.

const BASE32_LOWER = "abcdefghijklmnopqrstuvwxyz234567";
const BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** Encodes bytes as RFC 4648 base32, lowercase, without padding. */
export function base32LowerEncode(bytes: Uint8Array): string {
  return encodeBits(bytes, BASE32_LOWER, 5);
}

/** Decodes unpadded lowercase base32; undefined unless it is the canonical encoding of some bytes. */
export function base32LowerDecode(text: string): Uint8Array | undefined {
  return decodeBits(text, BASE32_LOWER, 5, true);
}

/** Encodes bytes as base64url without padding. */
export function base64UrlEncode(bytes: Uint8Array): string {
  return encodeBits(bytes, BASE64URL_ALPHABET, 6);
}

/** Decodes unpadded base64url; undefined on a bad character or an impossible length. */
export function base64UrlDecode(text: string): Uint8Array | undefined {
  // Like common base64 decoders, leftover bits are not checked: did:jwk identity rests on the decoded key.
  return decodeBits(text, BASE64URL_ALPHABET, 6, false);
}

function encodeBits(bytes: Uint8Array, alphabet: string, width: number): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  const mask = (1 << width) - 1;
  for (const byte of bytes) {
    buffer = ((buffer << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= width) {
      bits -= width;
      out += alphabet[(buffer >> bits) & mask];
    }
  }
  if (bits > 0) out += alphabet[(buffer << (width - bits)) & mask];
  return out;
}

function decodeBits(text: string, alphabet: string, width: number, strict: boolean): Uint8Array | undefined {
  const totalBits = text.length * width;
  // A trailing group too short to hold a whole byte means the text was cut.
  if (totalBits % 8 >= width) return undefined;
  const out = new Uint8Array(Math.floor(totalBits / 8));
  let buffer = 0;
  let bits = 0;
  let index = 0;
  for (const char of text) {
    const value = alphabet.indexOf(char);
    if (value === -1 || char.length !== 1) return undefined;
    buffer = ((buffer << width) | value) & 0xffff;
    bits += width;
    if (bits >= 8) {
      bits -= 8;
      out[index++] = (buffer >> bits) & 0xff;
    }
  }
  if (strict && bits > 0 && (buffer & ((1 << bits) - 1)) !== 0) return undefined;
  return out;
}

/**
 * The one host rule of every route that looks a did:web up (controller discovery and confirm, subject ownership,
 * subjects, the witness, key status, x402 did:web keys): the host must be a domain name, never an IP address. As
 * the WHATWG URL parser decides ("ends in a number"), a host whose last label (after one trailing dot) is decimal
 * digits or `0x` hex is an IPv4 address in some spelling: `127.0.0.1`, `0`, `1.2.3`, `2130706433`, `0x7f.1`; no
 * top-level domain is numeric, so no name is lost. IPv6 (`[::1]`, `%5B%3A%3A1%5D`) never passes the host
 * characters of {@link didWebLocation}. Such a did:web is bad input (400 `INVALID_DID`), not a lookup that failed.
 */
export function isDomainNameHost(host: string): boolean {
  const labels = host.toLowerCase().split(".");
  if (labels.length > 1 && labels[labels.length - 1] === "") labels.pop();
  const last = labels[labels.length - 1] ?? "";
  return last !== "" && !/^[0-9]+$/.test(last) && !/^0x[0-9a-f]*$/.test(last);
}

/**
 * The host, optional port and path of a normalized did:web (`did:web:example.com%3A8443:user:alice`); undefined
 * when it names no domain ({@link isDomainNameHost}).
 */
export function didWebLocation(did: string): { host: string; port: string | undefined; path: string[] } | undefined {
  if (!did.startsWith("did:web:")) return undefined;
  const rest = did.slice("did:web:".length);
  const [authority = "", ...slashPath] = rest.split("/");
  const [hostPart = "", ...colonPath] = authority.split(":");
  let decoded: string;
  try {
    decoded = decodeURIComponent(hostPart);
  } catch {
    return undefined;
  }
  const portMatch = /^(.*):([0-9]{1,5})$/.exec(decoded);
  const host = portMatch ? portMatch[1]! : decoded;
  if (host === "" || !/^[a-z0-9.-]+$/.test(host) || host.startsWith(".") || host.includes("..") || !isDomainNameHost(host)) return undefined;
  const path = [...colonPath, ...slashPath].filter((p) => p !== "");
  return { host, port: portMatch?.[2], path };
}
