/** did:pkh and EVM addresses: the normal form, building one from its parts or a CAIP-10 account id, EIP-55. */
import type { Address } from "viem";
import { getAddress } from "viem/utils";
import { ok, type Result } from "../result.ts";
import { EVM_ADDRESS, invalid } from "./_private.ts";

/** The parts of a did:pkh. */
export type DidPkhParts = { readonly namespace: string; readonly chainId: string; readonly address: string };

const CAIP10 = /^(?<namespace>[a-z0-9-]+):(?<reference>[a-zA-Z0-9-]+):(?<address>.+)$/;

/** The did:pkh normal form (namespace and address lowercased); folder-private: callers use `normalizeDid`. */
export function normalizeDidPkh(did: string): Result<string, "INVALID_DID"> {
  const parts = did.split(":");
  if (parts.length !== 5) return invalid("Invalid did:pkh format");
  const [, , namespace = "", chainId = "", address = ""] = parts;
  if (namespace === "" || chainId === "" || address === "") return invalid("Invalid did:pkh components");
  return ok(`did:pkh:${namespace.toLowerCase()}:${chainId}:${address.toLowerCase()}`);
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

/** Returns the EIP-55 form of an EVM address, or undefined when it is not one or its mixed case is a bad checksum. */
export function checksumEvmAddress(value: string): Address | undefined {
  if (typeof value !== "string" || !EVM_ADDRESS.test(value)) return undefined;
  const checksummed = getAddress(value.toLowerCase());
  const hex = value.slice(2);
  // As in EIP-55 (and ethers): single-case hex carries no checksum; mixed case must match it.
  if (hex === hex.toLowerCase() || hex === hex.toUpperCase() || value === checksummed) return checksummed;
  return undefined;
}
