import type { HexString } from "../../ports/eas.ts";
import { fail, ok, type Result } from "../result.ts";

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

/** The last 32 bytes of an ERC-6492 signature. */
const ERC6492_SUFFIX = "6492649264926492649264926492649264926492649264926492649264926492";

/** A delegated attestation's signature: the 65 bytes EAS is given, and the factory call of a counterfactual wallet. */
export type AttestSignature = {
  readonly normalized: NormalizedSignature;
  /** Present for an ERC-6492 signature: the wallet is deployed by this call before EAS sees the signature. */
  readonly deployment?: { readonly factory: HexString; readonly factoryCalldata: HexString } | undefined;
};

/**
 * Reads the signature of a delegated attestation: 65 bytes (an EOA's, or a contract wallet's, which EAS also
 * receives as r, s, v), or the ERC-6492 wrapping of such 65 bytes for a wallet not deployed yet:
 * `abi.encode(address factory, bytes factoryCalldata, bytes signature)` followed by the 32-byte magic suffix.
 * The replay key is always the normalized inner 65 bytes, so wrapping a signature cannot submit it twice. The factory
 * call's size is bounded by the use case after the replay lookup (delegated_attest.ts), so a signature on record
 * answers with its outcome however it is wrapped.
 */
export function parseAttestSignature(input: unknown): Result<AttestSignature, "INVALID_SIGNATURE" | "INVALID_INPUT"> {
  if (typeof input !== "string" || !input.toLowerCase().endsWith(ERC6492_SUFFIX) || input.length <= 132) {
    const normalized = normalizeSignature(input);
    return normalized.ok ? ok({ normalized: normalized.value }) : normalized;
  }
  const unwrapped = decodeErc6492(input.slice(2, input.length - ERC6492_SUFFIX.length));
  if (unwrapped === undefined) return fail("INVALID_SIGNATURE", "An ERC-6492 signature must encode (address factory, bytes calldata, bytes signature)");
  const normalized = normalizeSignature(unwrapped.signature);
  if (!normalized.ok) return fail("INVALID_SIGNATURE", "The signature inside an ERC-6492 signature must be 65 bytes (EAS takes r, s, v)");
  return ok({ normalized: normalized.value, deployment: { factory: unwrapped.factory, factoryCalldata: unwrapped.calldata } });
}

/** Decodes `abi.encode(address, bytes, bytes)` from hex without `0x`; undefined when it is not exactly that. */
function decodeErc6492(hex: string): { factory: HexString; calldata: HexString; signature: HexString } | undefined {
  if (!/^[0-9a-fA-F]*$/.test(hex) || hex.length % 64 !== 0 || hex.length < 64 * 5) return undefined;
  const word = (i: number) => hex.slice(i * 64, (i + 1) * 64);
  if (!/^0{24}/.test(word(0))) return undefined;
  const factory = `0x${word(0).slice(24).toLowerCase()}` as HexString;
  const bytesAt = (offsetWord: string): string | undefined => {
    const offset = Number.parseInt(offsetWord, 16);
    if (!Number.isSafeInteger(offset) || offset % 32 !== 0 || offset < 96) return undefined;
    const start = (offset / 32) * 64;
    if (start + 64 > hex.length) return undefined;
    const length = Number.parseInt(hex.slice(start, start + 64), 16);
    if (!Number.isSafeInteger(length) || start + 64 + length * 2 > hex.length) return undefined;
    return hex.slice(start + 64, start + 64 + length * 2);
  };
  const calldata = bytesAt(word(1));
  const signature = bytesAt(word(2));
  if (calldata === undefined || signature === undefined || calldata.length < 8) return undefined;
  return { factory, calldata: `0x${calldata.toLowerCase()}`, signature: `0x${signature}` };
}
