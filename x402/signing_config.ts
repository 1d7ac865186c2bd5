/**
 * The dedicated offer/receipt signing key from the environment (the resource server's own settings;
 * the service's config.ts does not carry them):
 *
 * - `X402_SIGNING_FORMAT`: `eip712` (default) or `jws`;
 * - `X402_SIGNING_KEY`: eip712 — a 32-byte hex private key; jws — a private JWK as JSON;
 * - `X402_SIGNING_ALG`: jws only, `ES256` (default), `EdDSA` or `ES256K`;
 * - `X402_PUBLIC_BASE_URL`: the public origin; jws kids are `did:web:<its host>#key-1`;
 * - `X402_KID_CHAIN_ID`: eip712 only, the chain id in the did:pkh kid (default 1).
 */
import type { X402JwsAlgorithm } from "../domain/payments/mod.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, didWebKid, type OfferReceiptIssuer, type PrivateJwk } from "./signers.ts";

/** The variables read. */
export type X402SigningEnv = Readonly<Record<string, string | undefined>>;

/** Builds the issuer named by the environment; a bad value throws naming the variable. */
export async function issuerFromEnv(env: X402SigningEnv): Promise<OfferReceiptIssuer> {
  const format = env.X402_SIGNING_FORMAT ?? "eip712";
  const key = env.X402_SIGNING_KEY;
  if (key === undefined || key === "") throw new Error("X402_SIGNING_KEY is required");
  if (format === "eip712") {
    if (!/^0x[0-9a-fA-F]{64}$/.test(key)) throw new Error("X402_SIGNING_KEY must be a 32-byte hex private key for eip712");
    const chainId = Number(env.X402_KID_CHAIN_ID ?? "1");
    if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new Error("X402_KID_CHAIN_ID must be a positive integer");
    return createEip712Issuer({ privateKey: key as `0x${string}`, chainId });
  }
  if (format !== "jws") throw new Error("X402_SIGNING_FORMAT must be eip712 or jws");
  const alg = (env.X402_SIGNING_ALG ?? "ES256") as X402JwsAlgorithm;
  if (alg !== "ES256" && alg !== "EdDSA" && alg !== "ES256K") throw new Error("X402_SIGNING_ALG must be ES256, EdDSA or ES256K");
  const base = env.X402_PUBLIC_BASE_URL;
  if (base === undefined || base === "") throw new Error("X402_PUBLIC_BASE_URL is required for jws (it names the did:web)");
  let jwk: PrivateJwk;
  try {
    jwk = JSON.parse(key) as PrivateJwk;
  } catch {
    throw new Error("X402_SIGNING_KEY must be a private JWK (JSON) for jws");
  }
  if (typeof jwk.d !== "string") throw new Error("X402_SIGNING_KEY must be a private JWK (JSON) for jws");
  try {
    return await createJwsIssuerFromJwk({ kid: didWebKid(base), alg, privateJwk: jwk });
  } catch {
    throw new Error(`X402_SIGNING_KEY is not a usable ${alg} key`);
  }
}
