/**
 * keccak-256 in WebAssembly with hash-wasm (issue 28): about 6 µs a kilobyte against 70 µs for @noble/hashes on this
 * runtime (Bun's JavaScriptCore runs noble's permutation slowly), 1.2 µs against 9 µs for an address. hash-wasm is
 * compiled into the bundle, so it needs nothing from the machine. Loading checks it against @noble/hashes on inputs
 * that cross the 136-byte block boundary; a disagreement keeps @noble/hashes.
 */
import { createKeccak } from "hash-wasm";
import { keccak256 } from "viem/utils";
import type { HexString } from "../../ports/eas.ts";
import type { Keccak256 } from "../../ports/keccak.ts";

const HEX_BYTES = /^0x(?:[0-9a-fA-F]{2})*$/;

/** keccak-256 as viem computes it (@noble/hashes): the fallback. */
export const nobleKeccak256: Keccak256 = withHex("@noble/hashes", (data) => keccak256(data, "bytes"));

/** keccak-256 in WebAssembly, or @noble/hashes when the WebAssembly module cannot be made or disagrees with it. */
export async function openKeccak256(): Promise<Keccak256> {
  let hasher: Awaited<ReturnType<typeof createKeccak>>;
  try {
    hasher = await createKeccak(256);
  } catch {
    return nobleKeccak256;
  }
  // One hasher, used synchronously from start to digest: JavaScript runs one call at a time, so calls never interleave.
  const wasm = withHex("hash-wasm", (data) => hasher.init().update(data).digest("binary"));
  for (const length of [0, 1, 32, 64, 135, 136, 137, 272, 1_000]) {
    const input = Uint8Array.from({ length }, (_, i) => (i * 131 + length) & 0xff);
    if (Buffer.compare(wasm.bytes(input), nobleKeccak256.bytes(input)) !== 0) return nobleKeccak256;
  }
  return wasm;
}

function withHex(implementation: string, bytes: (data: Uint8Array) => Uint8Array): Keccak256 {
  return {
    implementation,
    bytes,
    hex(data) {
      // Buffer's hex decoding stops quietly at the first bad digit: the input is checked first.
      if (!HEX_BYTES.test(data)) throw new Error("keccak256: not 0x-prefixed hex bytes");
      const digest = bytes(Buffer.from(data.slice(2), "hex"));
      return `0x${Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString("hex")}` as HexString;
    },
  };
}
