/**
 * Whether a did:key names a public key at all (the did:key method: base58btc multibase `z`, an unsigned-varint
 * multicodec of a public key type, then the key's bytes). The signing keys a service registers (decisions §17) are
 * checked by it, so `did:key:x` or a truncated `did:key:z6Mk` is refused as a key rather than stored and looked up.
 * The key's point is not checked here (domain/payments/did_key.ts decodes the three curves x402 signs with).
 */
import { base58btcDecode, varintReader } from "./codecs.ts";

/**
 * Public key multicodecs of the did:key method and their key lengths in bytes (compressed points; RSA a DER
 * `RSAPublicKey`, of no fixed length).
 */
const KEY_LENGTHS = new Map<number, number | "der">([
  [0xed, 32], // ed25519-pub
  [0xec, 32], // x25519-pub
  [0xe7, 33], // secp256k1-pub
  [0xea, 48], // bls12_381-g1-pub
  [0xeb, 96], // bls12_381-g2-pub
  [0x1200, 33], // p256-pub
  [0x1201, 49], // p384-pub
  [0x1202, 67], // p521-pub
  [0x1205, "der"], // rsa-pub
]);

/** Longest did:key identifier read (an RSA-4096 key is about 750 characters); this only bounds the work. */
const MAX_IDENTIFIER = 1_024;

/** Why a did:key names no public key, or undefined when it does. */
export function didKeyShapeProblem(did: string): string | undefined {
  const identifier = did.startsWith("did:key:") ? did.slice("did:key:".length).split("#")[0]! : "";
  if (!identifier.startsWith("z") || identifier.length > MAX_IDENTIFIER) return "a did:key is base58btc multibase (z…)";
  const bytes = base58btcDecode(identifier.slice(1));
  if (bytes === undefined) return "a did:key is base58btc multibase (z…)";
  const reader = varintReader(bytes);
  const codec = reader.next();
  const length = codec === undefined ? undefined : KEY_LENGTHS.get(codec);
  if (length === undefined) return "a did:key names a public key type of the did:key method (Ed25519, X25519, secp256k1, BLS12-381, P-256, P-384, P-521 or RSA)";
  const key = bytes.length - reader.offset();
  if (length === "der" ? key < 64 : key !== length) return "a did:key's key has the length its type has";
  return undefined;
}
