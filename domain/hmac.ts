/**
 * HMAC-SHA256 (RFC 2104) over viem's SHA-256: pure maths, so the domain keys its checks itself (webhook signatures,
 * decisions §22; query cursors, issue 43) with the secret its caller hands in, and no port is needed.
 */
import { sha256 } from "viem/utils";

const BLOCK = 64;

/** HMAC-SHA256 of `message` under `key` (RFC 2104). */
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  let k = key.length > BLOCK ? sha256(key, "bytes") : key;
  const padded = new Uint8Array(BLOCK);
  padded.set(k);
  k = padded;
  const inner = new Uint8Array(BLOCK + message.length);
  const outer = new Uint8Array(BLOCK + 32);
  for (let i = 0; i < BLOCK; i++) {
    inner[i] = k[i]! ^ 0x36;
    outer[i] = k[i]! ^ 0x5c;
  }
  inner.set(message, BLOCK);
  outer.set(sha256(inner, "bytes"), BLOCK);
  return sha256(outer, "bytes");
}

