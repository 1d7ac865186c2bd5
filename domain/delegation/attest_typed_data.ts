import type { HexString } from "../../ports/eas.ts";

/** The EIP-712 domain name and version of EAS 1.4.0. */
export const EAS_DOMAIN_NAME = "EAS";
export const EAS_DOMAIN_VERSION = "1.4.0";

/** The zero bytes32, meaning "no referenced attestation". */
export const ZERO_UID: HexString = `0x${"0".repeat(64)}`;
/** The zero address. */
export const ZERO_ADDRESS: HexString = `0x${"0".repeat(40)}`;

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
