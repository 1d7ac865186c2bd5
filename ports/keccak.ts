import type { HexString } from "./eas.ts";

/**
 * keccak-256, the hash of Ethereum's digests, transaction hashes and addresses (issue 28). The adapter
 * (adapters/crypto) computes it in WebAssembly: the JavaScript every other library uses costs about 70 µs a kilobyte
 * on this runtime, and a delegated attestation hashes about three kilobytes.
 */
export type Keccak256 = {
  /** Which implementation answers, for the startup log. */
  readonly implementation: string;
  /** The 32-byte hash of `data`. */
  readonly bytes: (data: Uint8Array) => Uint8Array;
  /** The hash of the bytes `data` spells (0x-prefixed hex, an even number of digits) as 0x-prefixed lowercase hex. */
  readonly hex: (data: HexString) => HexString;
};
