/**
 * Signing the service's own EIP-1559 transactions without hex round trips (issue 28). viem's `signTransaction`
 * serializes the transaction to hex twice (unsigned, to hash; signed, to send), converts the ~1 KB of calldata from
 * hex to bytes for every hash, and the caller hashes the hex again for the transaction hash: about 1 ms of CPU per
 * delegated attestation on the benchmark machine. Here the transaction is RLP-encoded once into bytes (the calldata
 * decoded once, natively), hashed with keccak256 on bytes (in WebAssembly when the service passes adapters/crypto's),
 * signed with RFC 6979 deterministic nonces and low s (by
 * libsecp256k1 when the service found it, else by the @noble/curves viem uses: adapters/crypto), and the signed
 * bytes hashed for the transaction hash. The output is byte-for-byte viem's (eip1559_test.ts compares them).
 */
import { keccak256 } from "viem/utils";
import type { HexString } from "../../ports/eas.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { EcdsaSignature, Secp256k1 } from "../../ports/secp256k1.ts";
import type { TransactionFields } from "../../ports/signer.ts";
import { nobleSecp256k1 } from "../crypto/mod.ts";

/** The fields of a type-2 transaction the service sends (no access list, no value beyond zero): the signer port's. */
export type Eip1559Fields = TransactionFields;

/** A signed transaction: its raw bytes as hex and its hash. */
export type SignedEip1559 = { readonly raw: HexString; readonly txHash: HexString };

/** The 32-byte private key of `privateKey` (0x-prefixed hex), for {@link signEip1559}. */
export function privateKeyBytes(privateKey: HexString): Uint8Array {
  if (!/^0x[0-9a-fA-F]{64}$/.test(privateKey)) throw new Error("A private key is 32 bytes of hex");
  return hexBytes(privateKey);
}

/** Signs `tx` with `privateKey` (32 bytes): the same raw bytes and hash as viem's `signTransaction` and `keccak256`. */
export function signEip1559(
  tx: Eip1559Fields,
  privateKey: Uint8Array,
  sign: Secp256k1["sign"] = nobleSecp256k1.sign,
  keccak: Keccak256["bytes"] = viemKeccak,
): SignedEip1559 {
  const fields = txFields(tx);
  return signedWith(fields, sign(keccak(unsignedBytes(fields)), privateKey), keccak);
}

/**
 * Signs `tx` through a signer that signs digests and may live elsewhere (an HSM, a KMS: adapters/signers): the same
 * bytes as {@link signEip1559} for the same signature; `signDigest` answers with low s and the recovery id.
 */
export async function signEip1559Digest(
  tx: Eip1559Fields,
  signDigest: (digest: Uint8Array) => Promise<EcdsaSignature>,
  keccak: Keccak256["bytes"] = viemKeccak,
): Promise<SignedEip1559 & { readonly digest: Uint8Array }> {
  const fields = txFields(tx);
  const digest = keccak(unsignedBytes(fields));
  return { ...signedWith(fields, await signDigest(digest), keccak), digest };
}

/** The unsigned transaction's bytes, whose keccak256 is the digest signed. */
function unsignedBytes(fields: readonly Uint8Array[]): Uint8Array {
  return typed(rlpList([...fields.map(rlpString), EMPTY_LIST]));
}

/** The signed transaction's raw bytes as hex, and its hash. */
function signedWith(fields: readonly Uint8Array[], signature: EcdsaSignature, keccak: Keccak256["bytes"]): SignedEip1559 {
  const signed = typed(
    rlpList([...fields.map(rlpString), EMPTY_LIST, rlpString(uint(BigInt(signature.recovery))), rlpString(uint(signature.r)), rlpString(uint(signature.s))]),
  );
  const hash = keccak(signed);
  return {
    raw: `0x${Buffer.from(signed.buffer, signed.byteOffset, signed.byteLength).toString("hex")}`,
    txHash: `0x${Buffer.from(hash.buffer, hash.byteOffset, hash.byteLength).toString("hex")}`,
  };
}

function txFields(tx: Eip1559Fields): Uint8Array[] {
  return [
    uint(BigInt(tx.chainId)),
    uint(BigInt(tx.nonce)),
    uint(tx.maxPriorityFeePerGas),
    uint(tx.maxFeePerGas),
    uint(tx.gas),
    hexBytes(tx.to),
    uint(tx.value),
    hexBytes(tx.data),
  ];
}

const EMPTY_LIST = Uint8Array.of(0xc0);
const viemKeccak = (data: Uint8Array): Uint8Array => keccak256(data, "bytes");

function hexBytes(hex: string): Uint8Array {
  if (!/^0x([0-9a-fA-F]{2})*$/.test(hex)) throw new Error("not hex bytes");
  return new Uint8Array(Buffer.from(hex.slice(2), "hex"));
}

/** An unsigned integer as RLP wants it: big-endian, no leading zero bytes (zero is empty). */
function uint(value: bigint): Uint8Array {
  if (value < 0n) throw new Error("negative");
  if (value === 0n) return new Uint8Array(0);
  const hex = value.toString(16);
  return new Uint8Array(Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, "hex"));
}

/** The RLP length prefix for a payload of `length` bytes: short form below 56, else the length's own bytes. */
function prefix(short: number, length: number): Uint8Array {
  if (length < 56) return Uint8Array.of(short + length);
  const lengthBytes = uint(BigInt(length));
  return Uint8Array.of(short + 55 + lengthBytes.length, ...lengthBytes);
}

function rlpString(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 1 && bytes[0]! < 0x80) return bytes;
  return concat([prefix(0x80, bytes.length), bytes]);
}

function rlpList(items: readonly Uint8Array[]): Uint8Array {
  const payload = concat(items);
  return concat([prefix(0xc0, payload.length), payload]);
}

/** The EIP-2718 envelope of a type-2 transaction. */
const typed = (rlp: Uint8Array) => concat([Uint8Array.of(0x02), rlp]);

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
