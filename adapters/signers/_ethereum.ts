/**
 * Ethereum signers over a key: in this process (env:, keystore:) signing with the service's secp256k1 (libsecp256k1
 * when present: the hot path stays one native signature), or a digest signer elsewhere (PKCS#11, AWS KMS) whose
 * signature is normalised to low s with its recovery id found (_ecdsa.ts) before it goes into a transaction.
 */
import { secp256k1 as nobleCurve } from "@noble/curves/secp256k1";
import { getAddress, hashTypedData, keccak256 } from "viem";
import type { HexString } from "../../ports/eas.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { EcdsaSignature, Secp256k1 } from "../../ports/secp256k1.ts";
import type { EthereumSigner, RawReason, SignerBackend, SignerRole, TypedDataInput } from "../../ports/signer.ts";
import { signEip1559Digest } from "../chain/mod.ts";
import { createAudit, type SignerAuditDeps, toHex } from "./_audit.ts";
import { type DigestSigner, SignerError } from "./_digest_signer.ts";
import { normalizeSignature } from "./_ecdsa.ts";

/** The address of an uncompressed secp256k1 public key (65 bytes, 0x04 first), checksummed. */
export function addressOfPublicKey(publicKey: Uint8Array): HexString {
  if (publicKey.length !== 65 || publicKey[0] !== 0x04) throw new SignerError("config", "The key is not an uncompressed secp256k1 public key");
  return getAddress(`0x${keccak256(publicKey.subarray(1)).slice(-40)}`);
}

/** A 65-byte r‖s‖v signature with v 27 or 28. */
export function signatureHex(signature: EcdsaSignature): HexString {
  return `0x${signature.r.toString(16).padStart(64, "0")}${signature.s.toString(16).padStart(64, "0")}${(27 + signature.recovery).toString(16)}`;
}

/** The digest of typed data, as bytes. */
function typedDataDigest(typedData: TypedDataInput): Uint8Array {
  // viem's types are stricter than eth_signTypedData_v4's JSON: the shapes are the same.
  return Buffer.from(hashTypedData(typedData as Parameters<typeof hashTypedData>[0]).slice(2), "hex");
}

/** Options shared by both builders. */
type Common = { readonly role: SignerRole; readonly audit: SignerAuditDeps; readonly keccak?: Keccak256 | undefined };

/** An Ethereum signer over a raw key held in this process (env:, or a keystore once decrypted). */
export function localEthereumSigner(
  privateKey: Uint8Array,
  options: Common & { readonly backend: Extract<SignerBackend, "env" | "keystore">; readonly secp256k1: Secp256k1; readonly rawReason: RawReason | undefined },
): EthereumSigner {
  if (privateKey.length !== 32) throw new SignerError("config", "A private key is 32 bytes");
  const address = addressOfPublicKey(nobleCurve.getPublicKey(privateKey, false));
  const sign = (digest: Uint8Array) => Promise.resolve(options.secp256k1.sign(digest, privateKey));
  return build(address, sign, { ...options, raw: options.rawReason !== undefined });
}

/** An Ethereum signer over a digest signer (PKCS#11, AWS KMS): secp256k1 keys only. */
export function digestEthereumSigner(signer: DigestSigner, options: Common & { readonly secp256k1?: Secp256k1 | undefined }): EthereumSigner {
  if (signer.curve !== "secp256k1") throw new SignerError("config", `An Ethereum role needs a secp256k1 key, and this one is ${signer.curve}`);
  const address = addressOfPublicKey(signer.publicKey);
  const sign = async (digest: Uint8Array): Promise<EcdsaSignature> => {
    const normalized = normalizeSignature("secp256k1", signer.publicKey, digest, await signer.signDigest(digest), {
      secp256k1: options.secp256k1,
      address: options.secp256k1 === undefined ? undefined : address.toLowerCase() as HexString,
    });
    return { r: normalized.r, s: normalized.s, recovery: normalized.yParity };
  };
  return build(address, sign, { ...options, backend: signer.backend, raw: false, close: signer.close });
}

function build(
  address: HexString,
  sign: (digest: Uint8Array) => Promise<EcdsaSignature>,
  options: Common & { readonly backend: SignerBackend; readonly raw: boolean; readonly rawReason?: RawReason | undefined; readonly close?: (() => Promise<void>) | undefined },
): EthereumSigner {
  const keccakBytes = options.keccak?.bytes;
  const audit = createAudit({ role: options.role, backend: options.backend, key: address }, options.audit);
  return {
    role: options.role,
    backend: options.backend,
    address,
    raw: options.raw,
    rawReason: options.rawReason,
    state: audit.state,
    close: options.close ?? (() => Promise.resolve()),
    signTransaction: (tx, context) =>
      audit.run(context, async () => {
        const signed = await signEip1559Digest(tx, sign, keccakBytes);
        return { ok: true as const, raw: signed.raw, txHash: signed.txHash, digest: toHex(signed.digest) };
      }),
    signTypedData: (typedData, context) =>
      audit.run(context, async () => {
        const digest = typedDataDigest(typedData);
        return { ok: true as const, signature: signatureHex(await sign(digest)), digest: toHex(digest) };
      }),
  };
}
