/**
 * Standard Webhooks signing (decisions §22): secrets `whsec_` + base64 of random bytes, and the
 * `webhook-signature` header `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under each live secret. HMAC is pure
 * maths (RFC 2104 over viem's SHA-256, domain/hmac.ts), so it lives in the domain and not behind a port.
 */
import { stringToBytes } from "viem/utils";
import { hmacSha256 } from "../hmac.ts";
import type { Random } from "../../ports/random.ts";

/** The prefix of a secret as Standard Webhooks spells it. */
export const SECRET_PREFIX = "whsec_";
/** How many random bytes a new secret holds (decisions §22: 24 to 64). */
export const SECRET_BYTES = 32;

export { hmacSha256 };

/** Standard base64 (with padding) of bytes. */
export function base64Encode(bytes: Uint8Array): string {
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary);
}

/** The bytes of standard base64; undefined when it is not base64. */
export function base64Decode(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 !== 0) return undefined;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** A new secret: `whsec_` + base64 of {@link SECRET_BYTES} random bytes. */
export function newWebhookSecret(random: Random): string {
  return SECRET_PREFIX + base64Encode(random.bytes(SECRET_BYTES));
}

/** The key bytes of a secret (what the HMAC is keyed with). */
export function secretKey(secret: string): Uint8Array {
  const bytes = base64Decode(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret);
  if (bytes === undefined) throw new Error("Malformed webhook secret");
  return bytes;
}

/** One `v1,<base64>` signature of a message. */
export function signMessage(secret: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${base64Encode(hmacSha256(secretKey(secret), stringToBytes(`${id}.${timestampSeconds}.${body}`)))}`;
}

/**
 * The three Standard Webhooks headers of a delivery; `secrets` are every secret live now (the new one first; the old
 * one too for 24 h after a rotation), signatures space-separated.
 */
export function webhookHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    "content-type": "application/json",
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((s) => signMessage(s, id, timestampSeconds, body)).join(" "),
  };
}
