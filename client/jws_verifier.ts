import { bytesToHex, type Hex, recoverPublicKey, sha256 } from "viem";
import { base64UrlDecode } from "../domain/did/mod.ts";
import type { JwsSignatureCheck, JwsVerifier } from "../ports/jws_verifier.ts";

/** A copy on a plain ArrayBuffer, the only kind WebCrypto's types accept. */
const bytes = (view: Uint8Array): Uint8Array<ArrayBuffer> => new Uint8Array(view);

// The domain's decoder, not Node's Buffer: this file runs in browsers too (decisions §26).
const fromBase64Url = (value: unknown): Uint8Array | undefined =>
  typeof value === "string" && /^[A-Za-z0-9_-]+$/.test(value) ? base64UrlDecode(value) : undefined;

/**
 * Verifies JWS signatures: ES256 and EdDSA (Ed25519) with WebCrypto; ES256K, which WebCrypto lacks,
 * by recovering the secp256k1 public key from the signature with viem and comparing it to the JWK.
 */
export function createWebCryptoJwsVerifier(): JwsVerifier {
  return {
    async verify(check) {
      try {
        if (check.signature.length !== 64) return false;
        if (check.alg === "ES256K") return await verifyEs256k(check);
        const { jwk } = check;
        if (check.alg === "ES256") {
          if (jwk.kty !== "EC" || jwk.crv !== "P-256") return false;
          const key = await crypto.subtle.importKey(
            "jwk",
            { kty: "EC", crv: "P-256", x: String(jwk.x), y: String(jwk.y) },
            { name: "ECDSA", namedCurve: "P-256" },
            false,
            ["verify"],
          );
          // JOSE's r‖s is WebCrypto's ECDSA signature format (IEEE P1363).
          return await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, bytes(check.signature), bytes(check.signingInput));
        }
        if (check.alg === "EdDSA") {
          if (jwk.kty !== "OKP" || jwk.crv !== "Ed25519") return false;
          const key = await crypto.subtle.importKey("jwk", { kty: "OKP", crv: "Ed25519", x: String(jwk.x) }, { name: "Ed25519" }, false, [
            "verify",
          ]);
          return await crypto.subtle.verify({ name: "Ed25519" }, key, bytes(check.signature), bytes(check.signingInput));
        }
        return false;
      } catch {
        // A key WebCrypto refuses (bad point, bad length) is not a valid signer.
        return false;
      }
    },
  };
}

async function verifyEs256k(check: JwsSignatureCheck): Promise<boolean> {
  const { jwk } = check;
  if (jwk.kty !== "EC" || jwk.crv !== "secp256k1") return false;
  const x = fromBase64Url(jwk.x);
  const y = fromBase64Url(jwk.y);
  if (x?.length !== 32 || y?.length !== 32) return false;
  const expected = `0x04${bytesToHex(x).slice(2)}${bytesToHex(y).slice(2)}`.toLowerCase();
  const hash = sha256(check.signingInput);
  const rs = bytesToHex(check.signature).slice(2);
  for (const v of ["1b", "1c"]) {
    try {
      const recovered = await recoverPublicKey({ hash, signature: `0x${rs}${v}` as Hex });
      if (recovered.toLowerCase() === expected) return true;
    } catch {
      // r or s out of range for this parity
    }
  }
  return false;
}
