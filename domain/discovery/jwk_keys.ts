/**
 * did:jwk controllers as the endpoints publish them (decisions §25): the RFC 7638 thumbprint a DNS TXT record carries
 * as `jkt=S256:<base64url>` (a did:jwk may not fit in a 255-character TXT string; its thumbprint always does), and the
 * keys of a JWK Set (`/.well-known/jwks.json`). Keys are compared by their key type's public members only (`kid`,
 * `alg`, `use` and any other member ignored; property order never matters); a JWK with a private member is refused.
 * Pure: SHA-256 from viem/utils, no I/O.
 */
import { sha256, stringToBytes } from "viem/utils";
import { base64UrlEncode, didJwkToJwk, JWK_IGNORED_IN_EQUALITY, JWK_PUBLIC_MEMBERS, jwkToDidJwk, validatePublicJwk } from "../did/mod.ts";


/** The prefix of a thumbprint value in a TXT record (`jkt=S256:<base64url>`). */
export const JKT_PREFIX = "S256:";

const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/;

/**
 * The RFC 7638 SHA-256 thumbprint (base64url, no padding) of a public EC, OKP or RSA JWK; undefined for anything else
 * (a private member, an unknown key type, a missing member).
 */
export function jwkThumbprint(jwk: unknown): string | undefined {
  const checked = validatePublicJwk(jwk);
  if (!checked.ok) return undefined;
  const members = JWK_PUBLIC_MEMBERS[String(checked.value.kty)];
  if (members === undefined) return undefined;
  // RFC 7638 §3: the required members only, lexicographic order, no whitespace; every value here is a string.
  const json = `{${members.map((m) => `${JSON.stringify(m)}:${JSON.stringify(checked.value[m])}`).join(",")}}`;
  return base64UrlEncode(sha256(stringToBytes(json), "bytes"));
}

/** The thumbprint of a did:jwk's key, or undefined when it is no valid did:jwk. */
export function didJwkThumbprint(did: string): string | undefined {
  const jwk = didJwkToJwk(did);
  return jwk.ok ? jwkThumbprint(jwk.value) : undefined;
}

/**
 * The thumbprint a DNS `jkt=` record is matched against for a did:jwk controller: only for a did:jwk written with its
 * key type's public members and the members equality ignores (`kid`, `alg`, …). A thumbprint names the key whatever
 * else the JWK holds, while a key binding or a witness names the controller as `publicJwkEquals` compares them (the
 * reference's: any other member, `x5t` or `"note"`, makes another controller). So the same key spelled with one more
 * member was found live by its thumbprint but not by its own revoked binding, and was answered authorized.
 */
export function plainDidJwkThumbprint(did: string): string | undefined {
  const jwk = didJwkToJwk(did);
  if (!jwk.ok) return undefined;
  const members = JWK_PUBLIC_MEMBERS[String(jwk.value.kty)] ?? [];
  if (Object.keys(jwk.value).some((k) => !members.includes(k) && !JWK_IGNORED_IN_EQUALITY.has(k))) return undefined;
  return jwkThumbprint(jwk.value);
}

/** A `jkt=` value as published (`S256:<43 base64url characters>`) made canonical, or undefined when it is not one. */
export function readJktValue(value: string): string | undefined {
  const text = value.trim();
  if (!text.toUpperCase().startsWith(JKT_PREFIX)) return undefined;
  const thumbprint = text.slice(JKT_PREFIX.length);
  return THUMBPRINT.test(thumbprint) ? thumbprint : undefined;
}

/**
 * The controller keys of a JWK Set (`{keys: [...]}`), as did:jwk of their public members; keys with a private member,
 * an unknown type or missing members are skipped. A document that is not a JWK Set is undefined. Every key counts, as
 * every `controller=` value does (controller_values.ts): the set's 64 KiB (the did.json fetcher's cap) bounds them,
 * each is read once and deduplicated in a `Set`. Before, only the first 64 were read, and a did:jwk controller the set
 * held 65th was not confirmed by `jwks`.
 */
export function controllerKeysFromJwks(document: unknown): string[] | undefined {
  if (typeof document !== "object" || document === null || Array.isArray(document)) return undefined;
  const keys = (document as Record<string, unknown>).keys;
  if (!Array.isArray(keys)) return undefined;
  const out = new Set<string>();
  for (const key of keys) {
    if (typeof key !== "object" || key === null || Array.isArray(key)) continue;
    const did = jwkToDidJwk(key as Record<string, unknown>, { publicOnly: true });
    if (did.ok) out.add(did.value);
  }
  return [...out];
}
