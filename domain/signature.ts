import type { HexString } from "../ports/eas.ts";
import { fail, ok, type Result } from "./result.ts";

/** The order of the secp256k1 group. */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = SECP256K1_N / 2n;

/** A signature in the one form EAS accepts: low s, v 27 or 28. */
export type NormalizedSignature = {
  readonly r: HexString;
  readonly s: HexString;
  readonly v: 27 | 28;
  /** `0x` + r + s + v as lowercase hex: the replay key, the same for every encoding of one signature. */
  readonly hex: HexString;
};

const toHex32 = (n: bigint): HexString => `0x${n.toString(16).padStart(64, "0")}`;

/**
 * Normalizes a 65-byte signature: accepts any hex case, `v` as 0/1 or 27/28 and a high-s twin, and
 * returns the canonical low-s form so that every re-encoding of one signature maps to one key.
 */
export function normalizeSignature(input: unknown): Result<NormalizedSignature, "INVALID_SIGNATURE"> {
  if (typeof input !== "string" || !/^0x[0-9a-fA-F]{130}$/.test(input)) {
    return fail("INVALID_SIGNATURE", "Signature must be 65 bytes of 0x-prefixed hex");
  }
  const r = BigInt(`0x${input.slice(2, 66)}`);
  let s = BigInt(`0x${input.slice(66, 130)}`);
  let v = Number.parseInt(input.slice(130, 132), 16);
  if (v === 0 || v === 1) v += 27;
  if (v !== 27 && v !== 28) return fail("INVALID_SIGNATURE", "Signature v must be 27 or 28");
  if (r === 0n || r >= SECP256K1_N || s === 0n || s >= SECP256K1_N) {
    return fail("INVALID_SIGNATURE", "Signature r and s must be in the curve order");
  }
  if (s > HALF_N) {
    s = SECP256K1_N - s;
    v = v === 27 ? 28 : 27;
  }
  const rHex = toHex32(r);
  const sHex = toHex32(s);
  const hex: HexString = `0x${rHex.slice(2)}${sHex.slice(2)}${v.toString(16)}`;
  return ok({ r: rHex, s: sHex, v: v as 27 | 28, hex });
}
