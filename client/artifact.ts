/** did:artifact of a file's bytes, hashed with WebCrypto (browsers and Bun alike). */
import { artifactDidFromDigest } from "../domain/did/mod.ts";

/** The did:artifact of `bytes`: CIDv1, raw codec, SHA-256, base32-lower (decisions §3), as the service reads it. */
export async function artifactDidOfBytes(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  let hex = "0x";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return artifactDidFromDigest(hex as `0x${string}`);
}
