/**
 * The calldata of EAS `attestByDelegation`, encoded by hand (issue 28): viem's `encodeFunctionData` walks the ABI
 * and hashes the function's signature for its selector on every call, about 0.15 ms per delegated attestation on
 * the benchmark machine, for a layout that never changes. The bytes are viem's (attest_calldata_test.ts compares
 * them over random calls, hex in lowercase); a value that does not fit its ABI type throws, and so do bytes that are not
 * whole bytes of hex (viem would pad those).
 *
 * Layout: the selector, the offset of the one dynamic argument (0x20), then the `DelegatedAttestationRequest` tuple:
 * seven head words (schema, the offset of `data` = 0xe0, the signature's v, r, s inline as a static tuple, attester,
 * deadline), then `data`'s six head words (recipient, expirationTime, revocable, refUID, the offset of its bytes =
 * 0xc0, value), then the bytes' length and the bytes padded to whole words.
 */
import type { DelegatedAttestCall, HexString } from "../../ports/eas.ts";

/** `attestByDelegation((bytes32,(address,uint64,bool,bytes32,bytes,uint256),(uint8,bytes32,bytes32),address,uint64))`. */
export const ATTEST_BY_DELEGATION_SELECTOR = "0x3c042715";

const word = (hex: string) => hex.padStart(64, "0");

function uint(value: bigint | number, bits: number): string {
  const n = BigInt(value);
  if (n < 0n || n >= 1n << BigInt(bits)) throw new Error(`attestByDelegation: not a uint${bits}`);
  return word(n.toString(16));
}

function fixed(hex: string, bytes: number, name: string): string {
  if (hex.length !== 2 + 2 * bytes || !/^0x[0-9a-fA-F]*$/.test(hex)) throw new Error(`attestByDelegation: ${name} is not ${bytes} bytes`);
  return hex.slice(2).toLowerCase();
}

/** The calldata of `attestByDelegation(call)`. */
export function encodeAttestByDelegation(call: DelegatedAttestCall): HexString {
  const data = call.data;
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(data.data)) throw new Error("attestByDelegation: data is not hex bytes");
  const bytes = data.data.slice(2).toLowerCase();
  const length = bytes.length / 2;
  const padded = bytes.padEnd(Math.ceil(length / 32) * 64, "0");
  return `${ATTEST_BY_DELEGATION_SELECTOR}${word("20")}${fixed(call.schema, 32, "schema")}${word("e0")}${uint(call.signature.v, 8)}${
    fixed(call.signature.r, 32, "r")
  }${fixed(call.signature.s, 32, "s")}${word(fixed(call.attester, 20, "attester"))}${uint(call.deadline, 64)}${
    word(fixed(data.recipient, 20, "recipient"))
  }${uint(data.expirationTime, 64)}${word(data.revocable ? "1" : "0")}${fixed(data.refUID, 32, "refUID")}${word("c0")}${
    uint(data.value, 256)
  }${uint(length, 256)}${padded}`;
}
