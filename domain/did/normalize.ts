/**
 * Normalization: the form of any DID that is hashed, and the parts of a method's DID read from any spelling of it
 * (each reader normalizes first).
 *
 * Rules follow the newest reference SDK (reference §1.2) with the product decisions of decisions §3.
 * Every function here returns expected failures as values and never throws for any string input.
 */
import type { Address } from "viem";
import { ok, type Result } from "../result.ts";
import { EVM_ADDRESS, invalid } from "./_private.ts";
import { decodeDidJwk } from "./did_jwk.ts";
import { checksumEvmAddress, type DidPkhParts, normalizeDidPkh } from "./did_pkh.ts";
import { normalizeDidWeb } from "./did_web.ts";

const DID_FORMAT = /^did:[a-z0-9]+:.+$/i;
const DID_METHOD = /^did:([a-z0-9]+):/;

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

function normalizeDidHandle(did: string): Result<string, "INVALID_DID"> {
  const parts = did.split(":");
  if (parts.length !== 4) return invalid("Invalid did:handle format");
  const [, , platform = "", username = ""] = parts;
  if (platform === "" || username === "") return invalid("Invalid did:handle components");
  return ok(`did:handle:${platform.toLowerCase()}:${username}`);
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

/** Decodes a did:jwk (a fragment is ignored) to its validated public JWK. */
export function didJwkToJwk(did: string): Result<Record<string, unknown>, "INVALID_DID"> {
  const normalized = normalizeDid(did);
  if (!normalized.ok) return normalized;
  if (!normalized.value.startsWith("did:jwk:")) return invalid("Expected did:jwk DID");
  return decodeDidJwk(normalized.value);
}
