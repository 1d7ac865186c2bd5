import { secp256k1 } from "@noble/curves/secp256k1";
import { keccak256 } from "viem/utils";
import type { HexString } from "../../ports/eas.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import { checkSigningInput, parseRecoverable } from "./_signature.ts";

/** secp256k1 in JavaScript with @noble/curves, the library viem itself uses: the fallback without libsecp256k1. */
export const nobleSecp256k1: Secp256k1 = {
  implementation: "@noble/curves",
  recoverAddress(hash, signature) {
    const parsed = parseRecoverable(hash, signature);
    if (parsed === undefined) return undefined;
    try {
      const point = new secp256k1.Signature(parsed.r, parsed.s).addRecoveryBit(parsed.recovery).recoverPublicKey(parsed.hash);
      return addressOf(point.toRawBytes(false));
    } catch {
      return undefined;
    }
  },
  sign(hash, privateKey) {
    checkSigningInput(hash, privateKey);
    const signature = secp256k1.sign(hash, privateKey, { lowS: true });
    return { r: signature.r, s: signature.s, recovery: signature.recovery as 0 | 1 };
  },
};

/**
 * The address of an uncompressed public key (65 bytes, 0x04 first): the last 20 bytes of keccak256 of x‖y, hashed by
 * `hash` when given (viem's otherwise).
 */
export function addressOf(uncompressed: Uint8Array, hash?: (data: Uint8Array) => Uint8Array): HexString {
  if (hash === undefined) return `0x${keccak256(uncompressed.subarray(1), "hex").slice(26)}`;
  const digest = hash(uncompressed.subarray(1));
  return `0x${Buffer.from(digest.buffer, digest.byteOffset + 12, 20).toString("hex")}`;
}
