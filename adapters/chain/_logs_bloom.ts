/**
 * A block's `logsBloom` (the yellow paper's M3:2048): whether the EAS contract may have logged an `Attested` or
 * `Revoked` in the block. A bloom has no false negatives, so "no" is certain; "maybe" is checked against the logs.
 */
import { hexToBytes, keccak256 } from "viem";
import type { HexString } from "../../ports/eas.ts";

/** The three bit indexes a value sets: the low 11 bits of each of the first three byte pairs of its keccak-256. */
function bitsOf(value: HexString): number[] {
  const hash = hexToBytes(keccak256(value));
  return [0, 2, 4].map((i) => ((hash[i]! << 8) | hash[i + 1]!) & 2047);
}

/** Whether every bit `value` sets is set in `bloom` (256 bytes, bit 0 the last byte's lowest). */
function holds(bloom: Uint8Array, bits: readonly number[]): boolean {
  return bits.every((bit) => (bloom[255 - (bit >> 3)]! & (1 << (bit & 7))) !== 0);
}

/**
 * A test of blooms for logs of `address` with one of `topics0`: true when a bloom may hold one, false when it cannot,
 * undefined when the bloom is missing or malformed (nothing can be told).
 */
export function bloomTest(address: HexString, topics0: readonly HexString[]): (bloom: unknown) => boolean | undefined {
  const addressBits = bitsOf(address.toLowerCase() as HexString);
  const topicBits = topics0.map((t) => bitsOf(t.toLowerCase() as HexString));
  return (bloom) => {
    if (typeof bloom !== "string" || !/^0x[0-9a-fA-F]{512}$/.test(bloom)) return undefined;
    const bytes = hexToBytes(bloom as HexString);
    return holds(bytes, addressBits) && topicBits.some((bits) => holds(bytes, bits));
  };
}
