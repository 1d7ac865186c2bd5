/**
 * JWS signers over a digest signer (decisions §27): ES256 for a P-256 key, ES256K for a secp256k1 key. The signing
 * input is hashed with SHA-256 here, the digest signed where the key lives, and the signature checked against the key
 * and given as JWS wants it: r‖s, 32 bytes each (low s, which every verifier takes).
 */
import { createHash } from "node:crypto";
import type { JwsSigner, PublicEcJwk, RawReason, SignerRole } from "../../ports/signer.ts";
import { createAudit, type SignerAuditDeps, toHex } from "./_audit.ts";
import { type DigestSigner, SignerError } from "./_digest_signer.ts";
import { normalizeSignature } from "./_ecdsa.ts";

/** The public JWK of an uncompressed EC public key. */
export function publicJwkOf(curve: DigestSigner["curve"], publicKey: Uint8Array): PublicEcJwk {
  if (publicKey.length !== 65 || publicKey[0] !== 0x04) throw new SignerError("config", "The key is not an uncompressed EC public key");
  const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64url");
  return { kty: "EC", crv: curve, x: b64(publicKey.subarray(1, 33)), y: b64(publicKey.subarray(33)) };
}

/** The RFC 9278 prefix naming a key by its SHA-256 JWK thumbprint. */
export const JWK_THUMBPRINT_URI = "urn:ietf:params:oauth:jwk-thumbprint:sha-256:";

/** The RFC 7638 thumbprint of an EC public JWK: base64url(SHA-256 of its required members in lexicographic order). */
export function jwkThumbprint(jwk: PublicEcJwk): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return createHash("sha256").update(canonical).digest("base64url");
}

/** A JWS signer over `signer`: ES256 (P-256) or ES256K (secp256k1). */
export function digestJwsSigner(signer: DigestSigner, options: { readonly role: SignerRole; readonly audit: SignerAuditDeps; readonly rawReason: RawReason | undefined }): JwsSigner {
  const publicJwk = publicJwkOf(signer.curve, signer.publicKey);
  const thumbprint = jwkThumbprint(publicJwk);
  // In the audit trail the key is named by its thumbprint URI (RFC 9278), a public name the log keeps.
  const audit = createAudit({ role: options.role, backend: signer.backend, key: `${JWK_THUMBPRINT_URI}${thumbprint}` }, options.audit);
  const close = signer.close;
  return {
    role: options.role,
    backend: signer.backend,
    alg: signer.curve === "P-256" ? "ES256" : "ES256K",
    publicJwk,
    thumbprint,
    raw: options.rawReason !== undefined,
    rawReason: options.rawReason,
    state: audit.state,
    close: close === undefined ? () => Promise.resolve() : () => close(),
    sign: (signingInput, context) =>
      audit.run(context, async () => {
        const digest = new Uint8Array(createHash("sha256").update(signingInput).digest());
        const { r, s } = normalizeSignature(signer.curve, signer.publicKey, digest, await signer.signDigest(digest));
        const signature = new Uint8Array(64);
        signature.set(Buffer.from(r.toString(16).padStart(64, "0"), "hex"), 0);
        signature.set(Buffer.from(s.toString(16).padStart(64, "0"), "hex"), 32);
        return { ok: true as const, signature, digest: toHex(digest) };
      }),
  };
}
