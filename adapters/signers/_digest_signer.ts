export type SignerCurve = "secp256k1" | "P-256";
/** A key that signs 32-byte digests and never leaves its backend (HSM, KMS) or this process (env, keystore). */
export interface DigestSigner {
  readonly backend: "env" | "keystore" | "awskms" | "pkcs11";
  readonly curve: SignerCurve;
  /** Uncompressed SEC1 public key: 65 bytes starting 0x04. */
  readonly publicKey: Uint8Array;
  /** Signs a 32-byte digest; r and s as the backend gave them (s may be high). Throws SignerError. */
  readonly signDigest: (digest: Uint8Array) => Promise<{ r: bigint; s: bigint }>;
  readonly close?: () => Promise<void>;
}
export class SignerError extends Error {
  constructor(readonly kind: "unavailable" | "timeout" | "refused" | "config", message: string) { super(message); }
}
