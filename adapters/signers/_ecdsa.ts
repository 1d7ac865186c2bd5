/**
 * ECDSA signatures as HSMs and KMSs give them (DER or raw r‖s, s possibly high), checked against the key and
 * brought to the form Ethereum accepts: low s and the recovery id (yParity) found by recovering the public key.
 */
import { invert } from "@noble/curves/abstract/modular";
import { p256 } from "@noble/curves/p256";
import { secp256k1 } from "@noble/curves/secp256k1";
import type { HexString } from "../../ports/eas.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import { type SignerCurve, SignerError } from "./_digest_signer.ts";

/** r and s of an ECDSA signature, as read from a backend. */
export type RawSignature = { readonly r: bigint; readonly s: bigint };
/** A signature checked against its key: low s, with the recovery id. */
export type NormalizedSignature = { readonly r: bigint; readonly s: bigint; readonly yParity: 0 | 1 };

/** Optional speed-up of {@link normalizeSignature} for secp256k1 keys. */
export type NormalizeOptions = {
  /**
   * The service's secp256k1 (adapters/crypto: libsecp256k1 when the machine has it): the recovery id is then found
   * by native recovery, about 0.1 ms, instead of one @noble/curves double multiplication, about 2 ms.
   */
  readonly secp256k1?: Secp256k1 | undefined;
  /** The key's address, lowercase, as `secp256k1.recoverAddress` answers it (required with `secp256k1`). */
  readonly address?: HexString | undefined;
};

const CURVES = { secp256k1, "P-256": p256 } as const;

/** The order of the group of `curve`. */
export function curveOrder(curve: SignerCurve): bigint {
  return CURVES[curve].CURVE.n;
}

/** Reads a DER `SEQUENCE { INTEGER r, INTEGER s }` strictly (definite short lengths, minimal integers, nothing after). */
export function parseDerSignature(bytes: Uint8Array): RawSignature {
  const bad = (why: string) => new SignerError("refused", `The signer returned a malformed DER signature (${why})`);
  if (bytes.length < 8 || bytes.length > 72) throw bad("length");
  if (bytes[0] !== 0x30) throw bad("not a sequence");
  if (bytes[1] !== bytes.length - 2 || bytes[1]! >= 0x80) throw bad("sequence length");
  let at = 2;
  const integer = (): bigint => {
    if (bytes[at] !== 0x02) throw bad("not an integer");
    const length = bytes[at + 1]!;
    if (length === 0 || length > 33 || at + 2 + length > bytes.length) throw bad("integer length");
    const body = bytes.subarray(at + 2, at + 2 + length);
    if (body[0]! & 0x80) throw bad("negative integer");
    if (length > 1 && body[0] === 0 && !(body[1]! & 0x80)) throw bad("integer not minimal");
    at += 2 + length;
    return bytesToBigInt(body);
  };
  const r = integer();
  const s = integer();
  if (at !== bytes.length) throw bad("trailing bytes");
  return { r, s };
}

/** Reads a raw signature: r‖s, two big-endian halves of equal length (64 bytes for both curves here). */
export function parseRawSignature(bytes: Uint8Array): RawSignature {
  if (bytes.length === 0 || bytes.length % 2 !== 0 || bytes.length > 132) {
    throw new SignerError("refused", `The signer returned a raw signature of ${bytes.length} bytes`);
  }
  const half = bytes.length / 2;
  return { r: bytesToBigInt(bytes.subarray(0, half)), s: bytesToBigInt(bytes.subarray(half)) };
}

/**
 * Checks `signature` over the 32-byte `digest` against the uncompressed `publicKey`, and returns it with low s
 * (s > n/2 becomes n − s) and its recovery id (the parity of the signature's point R). Throws SignerError "refused"
 * when the signature is not a valid one of this key over this digest.
 */
export function normalizeSignature(
  curve: SignerCurve,
  publicKey: Uint8Array,
  digest: Uint8Array,
  signature: RawSignature,
  options: NormalizeOptions = {},
): NormalizedSignature {
  const ecdsa = CURVES[curve];
  const n = ecdsa.CURVE.n;
  const refused = (why: string) => new SignerError("refused", `The signer's signature does not verify (${why})`);
  if (digest.length !== 32) throw refused("the digest is not 32 bytes");
  if (publicKey.length !== 65 || publicKey[0] !== 0x04) throw refused("the public key is not an uncompressed point");
  const { r } = signature;
  if (r <= 0n || r >= n || signature.s <= 0n || signature.s >= n) throw refused("r or s out of range");
  const s = signature.s > n >> 1n ? n - signature.s : signature.s;

  if (curve === "secp256k1" && options.secp256k1 !== undefined && options.address !== undefined) {
    // Native recovery under each parity: the one that gives the key's address is the signature's.
    const hash = `0x${Buffer.from(digest.buffer, digest.byteOffset, 32).toString("hex")}` as const;
    const rs = `${r.toString(16).padStart(64, "0")}${s.toString(16).padStart(64, "0")}`;
    for (const yParity of [0, 1] as const) {
      const address = options.secp256k1.recoverAddress(hash, `0x${rs}${yParity === 0 ? "1b" : "1c"}`);
      if (address !== undefined && address === options.address.toLowerCase()) return { r, s, yParity };
    }
    throw refused("it was made by another key or over another digest");
  }

  // ECDSA verification, keeping the point: R = (z/s)·G + (r/s)·Q must have x ≡ r; its y's parity is the recovery id.
  let key: ReturnType<typeof ecdsa.ProjectivePoint.fromHex>;
  try {
    key = ecdsa.ProjectivePoint.fromHex(publicKey);
  } catch {
    throw refused("the public key is not on the curve");
  }
  const z = bytesToBigInt(digest) % n;
  const w = invert(s, n);
  const point = ecdsa.ProjectivePoint.BASE.multiplyAndAddUnsafe(key, (z * w) % n, (r * w) % n);
  if (point === undefined) throw refused("it was made by another key or over another digest");
  const { x, y } = point.toAffine();
  // x ≥ n (recovery ids 2 and 3) cannot be carried by an Ethereum signature and does not happen in practice.
  if (x !== r) throw refused("it was made by another key or over another digest");
  return { r, s, yParity: (y & 1n) === 1n ? 1 : 0 };
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("hex")}`);
}
