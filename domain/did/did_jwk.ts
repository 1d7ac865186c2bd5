/** did:jwk and public JWKs: validity, encoding a key as a did:jwk and back, equality of two keys. */
import { stringToBytes } from "viem/utils";
import { ok, type Result } from "../result.ts";
import { canonicalJson, invalid, isRecord, JWK_IGNORED_IN_EQUALITY } from "./_private.ts";
import { base64UrlDecode, base64UrlEncode } from "./codecs.ts";

/** Options of {@link jwkToDidJwk}. */
export type JwkToDidJwkOptions = {
  /** Keep only the key material members (`kty`, `crv`, `x`, `y`, `n`, `e`); default keeps every member given. */
  readonly publicOnly?: boolean | undefined;
};

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const JWK_KTY = ["EC", "OKP", "RSA"] as const;
const JWK_REQUIRED: Readonly<Record<string, readonly string[]>> = { EC: ["crv", "x", "y"], OKP: ["crv", "x"], RSA: ["n", "e"] };
const JWK_PRIVATE = ["d", "p", "q", "dp", "dq", "qi", "oth"] as const;
const JWK_PUBLIC_MEMBERS = ["kty", "crv", "x", "y", "n", "e"] as const;

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

/** The validated public JWK of a did:jwk as written (no fragment); folder-private: callers use `didJwkToJwk`. */
export function decodeDidJwk(did: string): Result<Record<string, unknown>, "INVALID_DID"> {
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
