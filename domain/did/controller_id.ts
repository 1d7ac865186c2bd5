/** Controller ids: when two DIDs name one controller. */
import { canonicalJson, JWK_IGNORED_IN_EQUALITY } from "./_private.ts";
import { decodeDidJwk } from "./did_jwk.ts";
import { normalizeDid } from "./normalize.ts";

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
