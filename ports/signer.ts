/**
 * The keys the service signs with (decisions §27): each role's key sits behind a signer the operator chooses (an HSM
 * through PKCS#11, AWS KMS, a remote JSON-RPC signer, a keystore file, or a raw key in the environment), and every
 * signing place of the service goes through this port. A signer that cannot be reached, times out or refuses is a
 * failure value, never a throw: the caller answers 503 `SIGNER_UNAVAILABLE` before anything is spent.
 */
import type { HexString } from "./eas.ts";

/** The four roles a key signs for. */
export type SignerRole = "delegate" | "witness" | "x402" | "oauth";

/** Where a role's key lives. */
export type SignerBackend = "env" | "keystore" | "jsonrpc" | "awskms" | "pkcs11";

/**
 * Why a key held in this process counts as raw (decisions §27): it is in the environment (`env`), or it is a keystore
 * whose password is in the environment (`password-env`) or empty (`empty-password`: whoever reads the file holds the key).
 */
export type RawReason = "env" | "password-env" | "empty-password";

/** What a signature is for, as the audit trail names it. */
export type SignaturePurpose = "transaction" | "witness" | "offer" | "receipt" | "access-token" | "test";

/** Why a signer gave no signature: unreachable, too slow (`SIGNER_TIMEOUT_MS`), or it refused (a bad answer included). */
export type SignerFailure = { readonly ok: false; readonly reason: "unavailable" | "timeout" | "refused" };

/** Seconds a client is told to wait after a 503 `SIGNER_UNAVAILABLE`. */
export const SIGNER_RETRY_AFTER_SECONDS = 5;

/** What the audit trail of a signature carries besides the role and key: the purpose, and a submission or request id. */
export type SignContext = { readonly purpose: SignaturePurpose; readonly ref?: string | undefined };

/** The fields of an EIP-1559 transaction the service signs (no access list). */
export type TransactionFields = {
  readonly chainId: number;
  readonly nonce: number;
  readonly maxPriorityFeePerGas: bigint;
  readonly maxFeePerGas: bigint;
  readonly gas: bigint;
  readonly to: HexString;
  readonly value: bigint;
  readonly data: HexString;
};

/** A signed transaction: its raw bytes and its hash. */
export type SignedTransaction = { readonly ok: true; readonly raw: HexString; readonly txHash: HexString };

/** EIP-712 typed data as `eth_signTypedData_v4` takes it (bigints allowed in the message). */
export type TypedDataInput = {
  readonly domain: Record<string, unknown>;
  readonly types: Record<string, readonly { readonly name: string; readonly type: string }[]>;
  readonly primaryType: string;
  readonly message: Record<string, unknown>;
};

/** Signs transactions only: what a wallet's transaction sender needs. */
export type TransactionSigner = {
  /** The address the key answers for (EIP-55 checksummed). */
  readonly address: HexString;
  readonly signTransaction: (tx: TransactionFields, context: SignContext) => Promise<SignedTransaction | SignerFailure>;
};

/** A key of an Ethereum role (delegate, witness, an EIP-712 x402 issuer). */
export type EthereumSigner = TransactionSigner & {
  readonly role: SignerRole;
  readonly backend: SignerBackend;
  /** Signs EIP-712 typed data: a 65-byte r‖s‖v signature (v 27 or 28, low s). */
  readonly signTypedData: (typedData: TypedDataInput, context: SignContext) => Promise<{ readonly ok: true; readonly signature: HexString } | SignerFailure>;
  /** Whether the last signature failed (`down`), succeeded (`up`), or none was asked for yet (`unknown`). */
  readonly state: () => SignerState;
  /** Whether the key is a raw key in the process (env:, or a keystore whose password is in the environment or empty). */
  readonly raw: boolean;
  /** Why it is raw, when it is. */
  readonly rawReason?: RawReason | undefined;
  readonly close: () => Promise<void>;
};

/** A JSON Web Key's public half (EC). */
export type PublicEcJwk = { readonly kty: "EC"; readonly crv: "P-256" | "secp256k1"; readonly x: string; readonly y: string };

/** A key of a JWS role (OAuth access tokens, a JWS x402 issuer). */
export type JwsSigner = {
  readonly role: SignerRole;
  readonly backend: SignerBackend;
  readonly alg: "ES256" | "ES256K";
  readonly publicJwk: PublicEcJwk;
  /** The RFC 7638 thumbprint of `publicJwk` (base64url SHA-256): the key's id in logs and, by default, its `kid`. */
  readonly thumbprint: string;
  /** Signs a JWS signing input (`base64url(header).base64url(payload)`): the 64-byte r‖s signature. */
  readonly sign: (signingInput: Uint8Array, context: SignContext) => Promise<{ readonly ok: true; readonly signature: Uint8Array } | SignerFailure>;
  readonly state: () => SignerState;
  readonly raw: boolean;
  readonly rawReason?: RawReason | undefined;
  readonly close: () => Promise<void>;
};

/**
 * Thrown by an adapter whose port answers a plain value (the access-token keys) when its signer gave no signature:
 * the route answers 503 `SIGNER_UNAVAILABLE` with `Retry-After`.
 */
export class SignerUnavailableError extends Error {
  constructor() {
    super("The service's signer is unavailable");
    this.name = "SignerUnavailableError";
  }
}

/** A signer's health as `/readyz` names it. */
export type SignerState = "up" | "down" | "unknown";
