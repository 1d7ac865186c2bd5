import type { HexString } from "./eas.ts";

/**
 * The secp256k1 operations of the delegated-attestation hot path (issue 28): recovering the signer of a digest and
 * signing the service's own transactions. The adapter answers with the native libsecp256k1 when the machine has it
 * and with @noble/curves (the JavaScript viem uses) otherwise; both give the same answers (adapters/crypto).
 */
export type Secp256k1 = {
  /** Which implementation answers, for the startup log: `libsecp256k1` or `@noble/curves`. */
  readonly implementation: string;
  /**
   * The address (lowercase) whose key signed the 32-byte `hash` with `signature`, 65 bytes r‖s‖v with v 27, 28, 0 or 1;
   * undefined when the signature does not recover (r or s zero or not below the group order, another v, no point).
   * A high s recovers as it does in viem: malleability is the caller's rule to apply.
   */
  readonly recoverAddress: (hash: HexString, signature: HexString) => HexString | undefined;
  /** The RFC 6979 deterministic, low-s signature of the 32-byte `hash` by the 32-byte `privateKey`. */
  readonly sign: (hash: Uint8Array, privateKey: Uint8Array) => EcdsaSignature;
};

/** An ECDSA signature with the parity of its point (0 or 1), as a transaction carries it. */
export type EcdsaSignature = { readonly r: bigint; readonly s: bigint; readonly recovery: 0 | 1 };
