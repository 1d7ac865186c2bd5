/** DID hashes and DID addresses: the EAS recipient that stands for a DID. */
import type { Address, Hex } from "viem";
import { keccak256, stringToBytes } from "viem/utils";
import { ok, type Result } from "../result.ts";
import { HASH_FORMAT, invalid } from "./_private.ts";
import { normalizeDid } from "./normalize.ts";

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
