/** Secrets of the OAuth capability: made from the Random port, stored only as SHA-256 hex. */
import { sha256, stringToBytes } from "viem/utils";
import type { Random } from "../../ports/random.ts";
import { base64UrlEncode } from "../did/mod.ts";

/** SHA-256 of a secret (client secret, code, refresh token), lowercase hex without 0x: the only form stored. */
export function hashSecret(secret: string): string {
  return sha256(stringToBytes(secret)).slice(2);
}

/** `bytes` random bytes as base64url text. */
export function randomToken(random: Random, bytes = 32): string {
  return base64UrlEncode(random.bytes(bytes));
}

/** BASE64URL(SHA-256(ASCII(verifier))): the S256 code challenge of a PKCE verifier (RFC 7636 §4.2). */
export function s256Challenge(verifier: string): string {
  const digest = sha256(stringToBytes(verifier), "bytes");
  return base64UrlEncode(digest);
}

/** Compares two strings without an early exit on the first difference. */
export function sameText(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

/** A client id as any is written: 1 to 200 visible ASCII characters (a U+0000 reached PostgreSQL and answered 500). */
export const CLIENT_ID = /^[\x21-\x7e]{1,200}$/;
