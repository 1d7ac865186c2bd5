/** The JWS algorithms proofs may use. */
export type JwsAlgorithm = "ES256" | "ES256K" | "EdDSA";

/** What to check: a JWS signature over its signing input, with a public JWK. */
export type JwsSignatureCheck = {
  readonly alg: JwsAlgorithm;
  /** A public JWK (EC P-256 for ES256, EC secp256k1 for ES256K, OKP Ed25519 for EdDSA). */
  readonly jwk: Readonly<Record<string, unknown>>;
  /** ASCII of `<base64url header>.<base64url payload>`. */
  readonly signingInput: Uint8Array;
  /** The decoded signature: r‖s (64 bytes) for ECDSA, 64 bytes for Ed25519. */
  readonly signature: Uint8Array;
};

/**
 * Verifies raw JWS signatures. A port because the implementation uses the platform's WebCrypto,
 * which the domain does not reach for itself; it does no I/O. Never throws: a key, algorithm or
 * signature it cannot use is simply not valid.
 */
export interface JwsVerifier {
  readonly verify: (check: JwsSignatureCheck) => Promise<boolean>;
}
