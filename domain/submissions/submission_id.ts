import type { Random } from "../../ports/random.ts";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * A new submission id (decisions §23): 128 random bits as base64url (22 characters), never derived from a hash or a
 * uid, so holding one is the capability to read its submission.
 */
export function newSubmissionId(random: Random): string {
  return base64url(random.bytes(16));
}

/** Whether a string has the shape of a submission id (checked before any lookup). */
export function isSubmissionId(value: string): boolean {
  return /^[A-Za-z0-9_-]{22}$/.test(value);
}

function base64url(bytes: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out += ALPHABET[(value >> bits) & 63];
    }
  }
  if (bits > 0) out += ALPHABET[(value << (6 - bits)) & 63];
  return out;
}
