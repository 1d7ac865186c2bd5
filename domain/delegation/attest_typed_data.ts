import { keccak256, stringToHex } from "viem/utils";
import type { HexString } from "../../ports/eas.ts";

/** The EIP-712 domain name and version of EAS 1.4.0. */
export const EAS_DOMAIN_NAME = "EAS";
export const EAS_DOMAIN_VERSION = "1.4.0";

export { ZERO_ADDRESS, ZERO_UID } from "../eas_abi.ts";

/** The EIP-712 `Attest` type of EAS, fields in contract order. */
export const ATTEST_TYPES = {
  Attest: [
    { name: "attester", type: "address" },
    { name: "schema", type: "bytes32" },
    { name: "recipient", type: "address" },
    { name: "expirationTime", type: "uint64" },
    { name: "revocable", type: "bool" },
    { name: "refUID", type: "bytes32" },
    { name: "data", type: "bytes" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint64" },
  ],
} as const;

/** The `Attest` message with big integers as bigint. */
export type AttestMessage = {
  readonly attester: HexString;
  readonly schema: HexString;
  readonly recipient: HexString;
  readonly expirationTime: bigint;
  readonly revocable: boolean;
  readonly refUID: HexString;
  readonly data: HexString;
  readonly value: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
};

/** The chain a delegated signature is bound to. */
export type EasDomainInput = { readonly chainId: number; readonly easAddress: HexString };

/** Builds the EIP-712 typed data EAS verifies for a delegated attestation. */
export function buildAttestTypedData(domain: EasDomainInput, message: AttestMessage) {
  return {
    domain: {
      name: EAS_DOMAIN_NAME,
      version: EAS_DOMAIN_VERSION,
      chainId: domain.chainId,
      verifyingContract: domain.easAddress,
    },
    types: ATTEST_TYPES,
    primaryType: "Attest" as const,
    message,
  };
}

/** `keccak256` of the `Attest` type string (EIP-712 `typeHash`), fields as in {@link ATTEST_TYPES}. */
const ATTEST_TYPE_HASH = keccak256(
  stringToHex(
    "Attest(address attester,bytes32 schema,address recipient,uint64 expirationTime,bool revocable,bytes32 refUID,bytes data,uint256 value,uint256 nonce,uint64 deadline)",
  ),
);
/** `keccak256` of the domain type viem and wallets derive from a domain with these four fields, in this order. */
const DOMAIN_TYPE_HASH = keccak256(stringToHex("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"));

const word = (hex: string) => hex.padStart(64, "0");
const addressWord = (address: string) => {
  if (!/^0x[0-9a-fA-F]{40}$/.test(address)) throw new Error("not an address");
  return word(address.slice(2).toLowerCase());
};
const bytes32Word = (value: string) => {
  if (!/^0x[0-9a-fA-F]{64}$/.test(value)) throw new Error("not 32 bytes");
  return value.slice(2).toLowerCase();
};
const uintWord = (value: bigint, bits: number) => {
  if (value < 0n || value >= 1n << BigInt(bits)) throw new Error(`not a uint${bits}`);
  return word(value.toString(16));
};

/** Domain separators by chain and EAS address: the same for every request of a deployment. */
const domainSeparators = new Map<string, string>();

function domainSeparator(domain: EasDomainInput): string {
  const key = `${domain.chainId}:${domain.easAddress.toLowerCase()}`;
  let separator = domainSeparators.get(key);
  if (separator === undefined) {
    separator = keccak256(
      `0x${DOMAIN_TYPE_HASH.slice(2)}${keccak256(stringToHex(EAS_DOMAIN_NAME)).slice(2)}${keccak256(stringToHex(EAS_DOMAIN_VERSION)).slice(2)}${
        uintWord(BigInt(domain.chainId), 256)
      }${addressWord(domain.easAddress)}`,
    ).slice(2);
    // Bounded: one entry per deployment is the normal case; a caller feeding many domains only refills it.
    if (domainSeparators.size >= 64) domainSeparators.clear();
    domainSeparators.set(key, separator);
  }
  return separator;
}

/**
 * The EIP-712 digest EAS checks a delegated signature against (issue 28): the same bytes as viem's
 * `hashTypedData(buildAttestTypedData(domain, message))` (a test compares them), computed for this one fixed type
 * without rebuilding and re-validating the typed data on every request: the domain separator is computed once
 * per deployment, the struct hash is three keccak256 (the data, the struct, the digest), by `hash` (the service passes
 * the WebAssembly keccak of adapters/crypto: issue 28; viem's by default). The message must be what
 * `parseDelegatedRequest` gives (addresses, 32-byte values and ranges checked; anything else throws).
 */
export function attestDigest(domain: EasDomainInput, message: AttestMessage, hash: (data: HexString) => HexString = keccak256): HexString {
  const structHash = hash(
    `0x${ATTEST_TYPE_HASH.slice(2)}${addressWord(message.attester)}${bytes32Word(message.schema)}${addressWord(message.recipient)}${
      uintWord(message.expirationTime, 64)
    }${word(message.revocable ? "1" : "0")}${bytes32Word(message.refUID)}${hash(message.data).slice(2)}${uintWord(message.value, 256)}${
      uintWord(message.nonce, 256)
    }${uintWord(message.deadline, 64)}`,
  );
  return hash(`0x1901${domainSeparator(domain)}${structHash.slice(2)}`);
}
