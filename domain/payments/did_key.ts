/**
 * did:key (x402_offer_receipt.md §4.2): base58btc multibase (`z`), an unsigned-varint multicodec, the key; Ed25519,
 * secp256k1 and P-256 keys to and from JWKs.
 */
import { base58btcDecode, base58btcEncode, base64UrlDecode, base64UrlEncode, varintReader } from "../did/mod.ts";
import { fail, ok, type Result } from "../result.ts";

const MULTICODEC = { ed25519: 0xed, secp256k1: 0xe7, p256: 0x1200 } as const;
/** Longest did:key identifier read: a P-256 key takes 49 characters; this only bounds the work. */
const MAX_DID_KEY_IDENTIFIER = 128;

/** Short Weierstrass curves `y² = x³ + ax + b` over p, both with p ≡ 3 (mod 4), so √ is a single power. */
const CURVES = {
  secp256k1: { p: 2n ** 256n - 2n ** 32n - 977n, a: 0n, b: 7n },
  "P-256": {
    p: 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn,
    a: 0xffffffff00000001000000000000000000000000fffffffffffffffffffffffcn,
    b: 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn,
  },
} as const;

function modPow(base: bigint, exponent: bigint, modulus: bigint): bigint {
  let result = 1n;
  let b = base % modulus;
  for (let e = exponent; e > 0n; e >>= 1n) {
    if (e & 1n) result = (result * b) % modulus;
    b = (b * b) % modulus;
  }
  return result;
}

const toBigInt = (bytes: Uint8Array) => bytes.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
const toBytes32 = (value: bigint) => Uint8Array.from({ length: 32 }, (_, i) => Number((value >> BigInt(8 * (31 - i))) & 0xffn));

/**
 * The affine point of a SEC1 public key (33-byte compressed or 65-byte uncompressed) on a curve, checked
 * to lie on it; undefined otherwise.
 */
function sec1Point(bytes: Uint8Array, curve: keyof typeof CURVES): { x: Uint8Array; y: Uint8Array } | undefined {
  const { p, a, b } = CURVES[curve];
  const x = toBigInt(bytes.subarray(1, 33));
  if (x >= p) return undefined;
  const rhs = (((x * x) % p) * x + a * x + b) % p;
  let y: bigint;
  if (bytes.length === 33 && (bytes[0] === 0x02 || bytes[0] === 0x03)) {
    y = modPow(rhs, (p + 1n) / 4n, p);
    if ((y * y) % p !== rhs) return undefined;
    if ((y & 1n) !== BigInt(bytes[0] & 1)) y = p - y;
  } else if (bytes.length === 65 && bytes[0] === 0x04) {
    y = toBigInt(bytes.subarray(33, 65));
    if (y >= p || (y * y) % p !== rhs) return undefined;
  } else {
    return undefined;
  }
  return { x: toBytes32(x), y: toBytes32(y) };
}

/**
 * The public JWK of a `did:key` (a fragment is ignored): multicodec 0xed Ed25519, 0xe7 secp256k1 and
 * 0x1200 P-256, the EC keys compressed (as the did:key spec writes them) or uncompressed.
 */
export function didKeyToJwk(did: string): Result<Record<string, string>, "UNRESOLVABLE_KEY"> {
  const identifier = did.split("#")[0]!.slice("did:key:".length);
  if (!did.startsWith("did:key:") || !identifier.startsWith("z") || identifier.length > MAX_DID_KEY_IDENTIFIER) {
    return fail("UNRESOLVABLE_KEY", "did:key must be base58btc multibase (z...)");
  }
  const bytes = base58btcDecode(identifier.slice(1));
  const reader = bytes === undefined ? undefined : varintReader(bytes);
  const codec = reader?.next();
  if (bytes === undefined || reader === undefined || codec === undefined) {
    return fail("UNRESOLVABLE_KEY", "did:key is not valid base58btc multicodec");
  }
  const key = bytes.subarray(reader.offset());
  if (codec === MULTICODEC.ed25519) {
    if (key.length !== 32) return fail("UNRESOLVABLE_KEY", "did:key Ed25519 key must be 32 bytes");
    return ok({ kty: "OKP", crv: "Ed25519", x: base64UrlEncode(key) });
  }
  const crv = codec === MULTICODEC.secp256k1 ? "secp256k1" : codec === MULTICODEC.p256 ? "P-256" : undefined;
  if (crv === undefined) return fail("UNRESOLVABLE_KEY", "did:key key type is not Ed25519, secp256k1 or P-256");
  const point = sec1Point(key, crv);
  if (point === undefined) return fail("UNRESOLVABLE_KEY", `did:key ${crv} key is not a point on the curve`);
  return ok({ kty: "EC", crv, x: base64UrlEncode(point.x), y: base64UrlEncode(point.y) });
}

/** The `did:key` of a public Ed25519, secp256k1 or P-256 JWK, EC keys compressed as the did:key spec writes them. */
export function jwkToDidKey(jwk: Record<string, unknown>): Result<string, "UNRESOLVABLE_KEY"> {
  const x = typeof jwk.x === "string" ? base64UrlDecode(jwk.x) : undefined;
  const y = typeof jwk.y === "string" ? base64UrlDecode(jwk.y) : undefined;
  let prefix: number[];
  let key: Uint8Array;
  if (jwk.kty === "OKP" && jwk.crv === "Ed25519" && x?.length === 32) {
    prefix = [0xed, 0x01];
    key = x;
  } else if (jwk.kty === "EC" && (jwk.crv === "secp256k1" || jwk.crv === "P-256") && x?.length === 32 && y?.length === 32) {
    prefix = jwk.crv === "secp256k1" ? [0xe7, 0x01] : [0x80, 0x24];
    key = Uint8Array.from([0x02 | (y[31]! & 1), ...x]);
  } else {
    return fail("UNRESOLVABLE_KEY", "JWK is not a public Ed25519, secp256k1 or P-256 key");
  }
  return ok(`did:key:z${base58btcEncode(Uint8Array.from([...prefix, ...key]))}`);
}
