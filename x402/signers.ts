/**
 * Offer/receipt issuers: who signs, and how. `eip712` signs typed data with a secp256k1 key (viem, or
 * any `signTypedData` such as a KMS wallet); `jws` signs JCS payloads with ES256 or EdDSA through
 * WebCrypto, or ES256K through noble's secp256k1 (no WebCrypto on Bun has it). The key is a dedicated
 * signing key: never the payTo wallet.
 */
import { secp256k1 } from "@noble/curves/secp256k1";
import type { Address, Hex } from "viem";
import { privateKeyToAccount, publicKeyToAddress } from "viem/accounts";
import { bytesToHex, sha256 } from "viem/utils";
import { base64UrlDecode, base64UrlEncode } from "../domain/did/mod.ts";
import {
  jwsSigningInput,
  type OfferPayload,
  offerTypedData,
  type ReceiptPayload,
  receiptTypedData,
  resourceUrlToDidWeb,
  type SignatureFormat,
  type SignedOffer,
  type SignedReceipt,
  type X402JwsAlgorithm,
} from "../domain/payments/mod.ts";

/** A public JWK as published in did.json, with `alg` (Bun's and browsers' jose need it). */
export type PublicJwk = { kty: string; crv: string; x: string; y?: string | undefined; alg: X402JwsAlgorithm };

/** Signs offers and receipts with one key. */
export type OfferReceiptIssuer = {
  readonly format: SignatureFormat;
  /** `did:pkh:eip155:<chainId>:<address>#key-1` (eip712) or `did:web:<domain>#key-1` (jws). */
  readonly kid: string;
  /** The signing address (eip712, ES256K). */
  readonly address?: Address | undefined;
  /** The public key (jws), for the DID document. */
  readonly publicJwk?: PublicJwk | undefined;
  readonly signOffer: (payload: OfferPayload) => Promise<SignedOffer>;
  readonly signReceipt: (payload: ReceiptPayload) => Promise<SignedReceipt>;
};

/** A `signTypedData` such as a viem account's. */
export type SignTypedDataFn = (typedData: ReturnType<typeof offerTypedData> | ReturnType<typeof receiptTypedData>) => Promise<Hex>;

/** Options of {@link createEip712Issuer}. */
export type Eip712IssuerOptions =
  | { readonly privateKey: Hex; readonly chainId?: number | undefined }
  | { readonly signTypedData: SignTypedDataFn; readonly address: Address; readonly chainId?: number | undefined };

/** An eip712 issuer; the kid names the chain given (default 1, as every x402 example does). */
export function createEip712Issuer(options: Eip712IssuerOptions): OfferReceiptIssuer {
  let address: Address;
  let sign: SignTypedDataFn;
  if ("privateKey" in options) {
    // An unset environment variable (the README's OFFER_SIGNING_KEY) threw a bare "Cannot read properties of undefined".
    if (typeof options.privateKey !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(options.privateKey)) {
      throw new TypeError("createEip712Issuer: privateKey must be a 32-byte hex string (0x followed by 64 hex digits)");
    }
    const account = privateKeyToAccount(options.privateKey);
    address = account.address;
    sign = (typedData) => account.signTypedData(typedData as Parameters<typeof account.signTypedData>[0]);
  } else {
    address = options.address;
    sign = options.signTypedData;
  }
  return {
    format: "eip712",
    kid: `did:pkh:eip155:${options.chainId ?? 1}:${address}#key-1`,
    address,
    async signOffer(payload) {
      return { format: "eip712", payload, signature: await sign(offerTypedData(payload)) };
    },
    async signReceipt(payload) {
      // eip712 always carries `transaction`, empty when absent, in the official field order.
      const full = {
        version: payload.version,
        network: payload.network,
        resourceUrl: payload.resourceUrl,
        payer: payload.payer,
        issuedAt: payload.issuedAt,
        transaction: payload.transaction ?? "",
      };
      return { format: "eip712", payload: full, signature: await sign(receiptTypedData(full)) };
    },
  };
}

/** Produces the raw JWS signature (r‖s for ECDSA, 64 bytes for Ed25519) over the signing input. */
export type JwsSignFn = (signingInput: Uint8Array) => Promise<Uint8Array>;

/**
 * The EVM address of a secp256k1 public JWK (keccak of the uncompressed point), so an ES256K key that is
 * also a wallet is caught before it signs offers paying itself; undefined for other keys.
 */
export function evmAddressOfJwk(jwk: { kty: string; crv: string; x: string; y?: string | undefined }): Address | undefined {
  if (jwk.kty !== "EC" || jwk.crv !== "secp256k1" || jwk.y === undefined) return undefined;
  const x = base64UrlDecode(jwk.x);
  const y = base64UrlDecode(jwk.y);
  if (x?.length !== 32 || y?.length !== 32) return undefined;
  return publicKeyToAddress(bytesToHex(Uint8Array.from([0x04, ...x, ...y])));
}

/**
 * A jws issuer over any signing function (a KMS, an HSM). With a public JWK its protected headers carry it as
 * `jwk` beside `kid` (decisions §18; `embedJwk: false` writes the upstream `{alg, kid}` only).
 */
export function createJwsIssuer(options: {
  readonly kid: string;
  readonly alg: X402JwsAlgorithm;
  readonly sign: JwsSignFn;
  readonly publicJwk?: PublicJwk | undefined;
  /** Put the public JWK in the protected header; default true when there is one. */
  readonly embedJwk?: boolean | undefined;
}): OfferReceiptIssuer {
  const headerJwk = options.embedJwk === false ? undefined : options.publicJwk;
  const signJws = async (payload: object) => {
    const input = jwsSigningInput(options.alg, options.kid, payload, headerJwk);
    const signature = await options.sign(new TextEncoder().encode(input));
    return `${input}.${base64UrlEncode(signature)}`;
  };
  return {
    format: "jws",
    kid: options.kid,
    // An ES256K key is an EVM key too: its address lets signOffers refuse a payTo that is the signing key.
    address: options.publicJwk === undefined ? undefined : evmAddressOfJwk(options.publicJwk),
    publicJwk: options.publicJwk,
    async signOffer(payload) {
      return { format: "jws", signature: await signJws(payload) };
    },
    async signReceipt(payload) {
      return { format: "jws", signature: await signJws(payload) };
    },
  };
}

/** A private JWK (with `d`). */
export type PrivateJwk = { kty: string; crv: string; x: string; y?: string | undefined; d: string };

const CURVES: Readonly<Record<X402JwsAlgorithm, { kty: string; crv: string }>> = {
  ES256: { kty: "EC", crv: "P-256" },
  ES256K: { kty: "EC", crv: "secp256k1" },
  EdDSA: { kty: "OKP", crv: "Ed25519" },
};

/** A jws issuer from a private JWK: ES256 and EdDSA through WebCrypto, ES256K through noble. */
export async function createJwsIssuerFromJwk(options: {
  readonly kid: string;
  readonly alg: X402JwsAlgorithm;
  readonly privateJwk: PrivateJwk;
  /** Put the public JWK in the protected header; default true. */
  readonly embedJwk?: boolean | undefined;
}): Promise<OfferReceiptIssuer> {
  const { alg, privateJwk } = options;
  const curve = CURVES[alg];
  if (privateJwk.kty !== curve.kty || privateJwk.crv !== curve.crv) {
    throw new Error(`A ${alg} key must be ${curve.kty} ${curve.crv}`);
  }
  const publicJwk: PublicJwk = { kty: privateJwk.kty, crv: privateJwk.crv, x: privateJwk.x, alg };
  if (privateJwk.y !== undefined) publicJwk.y = privateJwk.y;
  return createJwsIssuer({ kid: options.kid, alg, publicJwk, sign: await rawSigner(alg, privateJwk), embedJwk: options.embedJwk });
}

async function rawSigner(alg: X402JwsAlgorithm, jwk: PrivateJwk): Promise<JwsSignFn> {
  if (alg === "ES256K") {
    const d = base64UrlDecode(jwk.d);
    if (d?.length !== 32) throw new Error("An ES256K key needs a 32-byte d");
    // The published x/y name the signer (and its EVM address for the payTo check): they must be d's key.
    const point = secp256k1.getPublicKey(d, false);
    if (jwk.x !== base64UrlEncode(point.slice(1, 33)) || jwk.y !== base64UrlEncode(point.slice(33, 65))) {
      throw new Error("An ES256K key's x and y must be the public key of its d");
    }
    // Deterministic (RFC 6979) and low-S, as noble signs by default.
    return (input) => Promise.resolve(secp256k1.sign(sha256(input, "bytes"), d).toCompactRawBytes());
  }
  const algorithm = alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "Ed25519" };
  const key = await crypto.subtle.importKey("jwk", { ...jwk, ext: false } as JsonWebKey, algorithm, false, ["sign"]);
  const params = alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : { name: "Ed25519" };
  return async (input) => new Uint8Array(await crypto.subtle.sign(params, key, new Uint8Array(input)));
}

/** Verifies a raw JWS signature over its signing input with a public JWK (ES256, EdDSA: WebCrypto; ES256K: noble). */
export async function verifyWithPublicJwk(jwk: PublicJwk, signingInput: Uint8Array, signature: Uint8Array): Promise<boolean> {
  try {
    if (jwk.alg === "ES256K") {
      const x = base64UrlDecode(jwk.x);
      const y = jwk.y === undefined ? undefined : base64UrlDecode(jwk.y);
      if (x?.length !== 32 || y?.length !== 32 || signature.length !== 64) return false;
      return secp256k1.verify(signature, sha256(signingInput, "bytes"), Uint8Array.from([0x04, ...x, ...y]), { lowS: false });
    }
    const algorithm = jwk.alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "Ed25519" };
    const { alg: _alg, ...members } = jwk;
    const key = await crypto.subtle.importKey("jwk", members as JsonWebKey, algorithm, false, ["verify"]);
    const params = jwk.alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : { name: "Ed25519" };
    return await crypto.subtle.verify(params, key, new Uint8Array(signature), new Uint8Array(signingInput));
  } catch {
    return false;
  }
}

/** Generates a fresh private JWK for an algorithm (development, tests, benches). */
export async function generateSigningJwk(alg: X402JwsAlgorithm): Promise<PrivateJwk> {
  // Before, any other name (`RS256`) silently gave an Ed25519 key.
  if (alg !== "ES256K" && alg !== "ES256" && alg !== "EdDSA") throw new TypeError(`generateSigningJwk: ${String(alg)} is not one of ES256K, ES256, EdDSA`);
  if (alg === "ES256K") {
    const d = secp256k1.utils.randomPrivateKey();
    const point = secp256k1.getPublicKey(d, false);
    return {
      kty: "EC",
      crv: "secp256k1",
      x: base64UrlEncode(point.slice(1, 33)),
      y: base64UrlEncode(point.slice(33, 65)),
      d: base64UrlEncode(d),
    };
  }
  const algorithm = alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "Ed25519" };
  const pair = (await crypto.subtle.generateKey(algorithm, true, ["sign", "verify"])) as CryptoKeyPair;
  const jwk = await crypto.subtle.exportKey("jwk", pair.privateKey);
  const out: PrivateJwk = { kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, d: jwk.d! };
  if (jwk.y !== undefined) out.y = jwk.y;
  return out;
}

/** The JWS kid of a server: `did:web:<domain>#key-1` for its public base URL. */
export function didWebKid(publicBaseUrl: string): string {
  const did = resourceUrlToDidWeb(publicBaseUrl);
  if (!did.ok) throw new Error(`Cannot derive a did:web from ${publicBaseUrl}: ${did.message}`);
  return `${did.value}#key-1`;
}
