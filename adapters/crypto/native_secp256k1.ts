/**
 * secp256k1 through the native libsecp256k1 (Bitcoin Core's library, Debian's `libsecp256k1-1`), called with
 * bun:ffi (issue 28). Recovering a signer costs about 0.07 ms here against about 1 ms for @noble/curves on the
 * benchmark machine, and signing 0.04 ms against 0.3 ms: recovery is the one step every delegated attestation needs.
 *
 * Safety at the boundary: every input is checked in JavaScript first (lengths, ranges: `parseRecoverable`, 32-byte
 * keys and digests), then copied into buffers this module owns and of the sizes the library reads, so the native side
 * never reads or writes past a buffer whatever a client sends. Loading runs a known-answer check against @noble/curves
 * (a signature, its recovery, a refusal); a library that disagrees is not used.
 */
import { dlopen, FFIType } from "bun:ffi";
import { secp256k1 as noble } from "@noble/curves/secp256k1";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { Secp256k1 } from "../../ports/secp256k1.ts";
import { checkSigningInput, parseRecoverable } from "./_signature.ts";
import { addressOf, nobleSecp256k1 } from "./noble_secp256k1.ts";

/** The names the library goes by (Debian 13 and 12, a plain build, macOS). */
export const LIBRARY_NAMES = ["libsecp256k1.so.2", "libsecp256k1.so.1", "libsecp256k1.so", "libsecp256k1.dylib"] as const;

/** SECP256K1_CONTEXT_SIGN | SECP256K1_CONTEXT_VERIFY: accepted by every release (ignored as such from 0.2). */
const CONTEXT_FLAGS = 0x301;
/** SECP256K1_EC_UNCOMPRESSED. */
const UNCOMPRESSED = 2;

const SYMBOLS = {
  secp256k1_context_create: { args: [FFIType.u32], returns: FFIType.ptr },
  secp256k1_context_randomize: { args: [FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  secp256k1_ecdsa_recoverable_signature_parse_compact: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  secp256k1_ecdsa_recover: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  secp256k1_ec_pubkey_serialize: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  secp256k1_ecdsa_sign_recoverable: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
  secp256k1_ecdsa_recoverable_signature_serialize_compact: { args: [FFIType.ptr, FFIType.ptr, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
} as const;

/**
 * Opens libsecp256k1 from `library` (a path or a name the dynamic loader finds), or the first of
 * {@link LIBRARY_NAMES} that opens; undefined when none does or the one found fails the known-answer check. Addresses
 * are hashed with `keccak` (viem's when absent).
 */
export function openNativeSecp256k1(library?: string, keccak?: Keccak256): Secp256k1 | undefined {
  for (const name of library === undefined ? LIBRARY_NAMES : [library]) {
    let opened: ReturnType<typeof dlopen<typeof SYMBOLS>>;
    try {
      opened = dlopen(name, SYMBOLS);
    } catch {
      continue;
    }
    const native = bind(opened.symbols, keccak?.bytes);
    if (native !== undefined && agreesWithNoble(native)) return native;
    opened.close();
    return undefined;
  }
  return undefined;
}

type Symbols = ReturnType<typeof dlopen<typeof SYMBOLS>>["symbols"];

function bind(lib: Symbols, keccak: ((data: Uint8Array) => Uint8Array) | undefined): Secp256k1 | undefined {
  const context = lib.secp256k1_context_create(CONTEXT_FLAGS);
  if (context === null) return undefined;
  // Blinding of the signing context against side channels, as the library recommends.
  if (lib.secp256k1_context_randomize(context, crypto.getRandomValues(new Uint8Array(32))) !== 1) return undefined;

  // Buffers of the sizes the library reads and writes, owned here (one caller at a time: JavaScript runs on one thread).
  const hashBuffer = new Uint8Array(32);
  const compact = new Uint8Array(64);
  const keyBuffer = new Uint8Array(32);
  const recoverable = new Uint8Array(65); // secp256k1_ecdsa_recoverable_signature
  const publicKey = new Uint8Array(64); // secp256k1_pubkey
  const serialized = new Uint8Array(65);
  const serializedLength = new BigUint64Array(1); // size_t
  const recoveryId = new Int32Array(1);
  // Passed as typed arrays, not as addresses taken once with `ptr`: the engine may move a small array's storage
  // (seen: an address taken at start kept pointing at the old bytes).
  const p = { hash: hashBuffer, compact, key: keyBuffer, recoverable, publicKey, serialized, serializedLength, recoveryId };

  return {
    implementation: "libsecp256k1",
    recoverAddress(hash, signature) {
      const parsed = parseRecoverable(hash, signature);
      if (parsed === undefined) return undefined;
      hashBuffer.set(parsed.hash);
      compact.set(parsed.rs);
      if (lib.secp256k1_ecdsa_recoverable_signature_parse_compact(context, p.recoverable, p.compact, parsed.recovery) !== 1) return undefined;
      if (lib.secp256k1_ecdsa_recover(context, p.publicKey, p.recoverable, p.hash) !== 1) return undefined;
      serializedLength[0] = 65n;
      if (lib.secp256k1_ec_pubkey_serialize(context, p.serialized, p.serializedLength, p.publicKey, UNCOMPRESSED) !== 1) return undefined;
      return addressOf(serialized, keccak);
    },
    sign(hash, privateKey) {
      checkSigningInput(hash, privateKey);
      hashBuffer.set(hash);
      keyBuffer.set(privateKey);
      try {
        // No nonce function given: the library's default, RFC 6979 (the signatures viem and @noble/curves make).
        if (lib.secp256k1_ecdsa_sign_recoverable(context, p.recoverable, p.hash, p.key, null, null) !== 1) {
          throw new Error("libsecp256k1 refused to sign (an invalid private key)");
        }
      } finally {
        keyBuffer.fill(0);
      }
      lib.secp256k1_ecdsa_recoverable_signature_serialize_compact(context, p.compact, p.recoveryId, p.recoverable);
      const hex = Buffer.from(compact.buffer, compact.byteOffset, 64).toString("hex");
      return { r: BigInt(`0x${hex.slice(0, 64)}`), s: BigInt(`0x${hex.slice(64)}`), recovery: recoveryId[0] === 1 ? 1 : 0 };
    },
  };
}

/** A signature, its recovery and a refused input, compared with @noble/curves: a library that disagrees is not used. */
function agreesWithNoble(native: Secp256k1): boolean {
  try {
    const key = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
    const hash = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
    const mine = native.sign(hash, key);
    const theirs = nobleSecp256k1.sign(hash, key);
    if (mine.r !== theirs.r || mine.s !== theirs.s || mine.recovery !== theirs.recovery) return false;
    const hashHex = `0x${Buffer.from(hash).toString("hex")}` as const;
    const word = (n: bigint) => n.toString(16).padStart(64, "0");
    const signature = `0x${word(mine.r)}${word(mine.s)}${(27 + mine.recovery).toString(16)}` as const;
    const expected = addressOf(noble.getPublicKey(key, false));
    if (native.recoverAddress(hashHex, signature) !== expected) return false;
    // r with no point on the curve (x = 5 is not an x-coordinate of secp256k1): no signer.
    return native.recoverAddress(hashHex, `0x${word(5n)}${word(mine.s)}1b`) === nobleSecp256k1.recoverAddress(hashHex, `0x${word(5n)}${word(mine.s)}1b`);
  } catch {
    return false;
  }
}
