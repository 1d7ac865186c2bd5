import { describe, expect, test } from "bun:test";
import { domainSeparator, keccak256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { hashStruct } from "viem/utils";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import { base64UrlEncode, didToAddress } from "../domain/did/mod.ts";
import {
  canonicalJson,
  hashOffer,
  hashReceipt,
  OFFER_DOMAIN,
  OFFER_TYPES,
  type OfferPayload,
  RECEIPT_DOMAIN,
  RECEIPT_TYPES,
  type ReceiptPayload,
  resourceUrlToDidWeb,
} from "../domain/payments/mod.ts";
import { verifySignedOffer, verifySignedReceipt } from "../domain/payments/mod.ts";
import type { DidDocumentFetcher } from "../ports/discovery.ts";
import { createEip712Issuer, createJwsIssuerFromJwk, type PrivateJwk } from "./signers.ts";
import vectors from "./testdata/x402_vectors.json" with { type: "json" };

const ANVIL_0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const ANVIL_1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const OFFER: OfferPayload = {
  version: 1,
  resourceUrl: "https://api.example.com/premium-data",
  scheme: "exact",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "10000",
  validUntil: 1703123516,
};
const RECEIPT: ReceiptPayload = {
  version: 1,
  network: "eip155:8453",
  resourceUrl: "https://api.example.com/premium-data",
  payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66",
  issuedAt: 1703123456,
};
const TX = "0x1234567890abcdef1234567890abcdef1234567890abcdef1234567890abcdef";
const AT = { nowSeconds: 1703123400 };

// RFC 8037 A.1 (Ed25519) and RFC 7515 A.3 (P-256) private keys; Anvil #1 for secp256k1.
const ED25519: PrivateJwk = {
  kty: "OKP",
  crv: "Ed25519",
  x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
  d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A",
};
const P256: PrivateJwk = {
  kty: "EC",
  crv: "P-256",
  x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
  y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0",
  d: "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI",
};
const SECP256K1: PrivateJwk = {
  ...vectors.jws_ES256K.publicJwk,
  d: base64UrlEncode(Uint8Array.from(Buffer.from(ANVIL_1.slice(2), "hex"))),
};

/** A did.json host for `did:web:api.example.com` publishing one key with `alg`. */
function didHost(publicJwk: Record<string, unknown>, alg: string): DidDocumentFetcher {
  const did = "did:web:api.example.com";
  return {
    fetchDidDocument: (host) =>
      Promise.resolve(host === "api.example.com"
        ? {
          status: "ok",
          url: "https://api.example.com/.well-known/did.json",
          document: {
            id: did,
            verificationMethod: [{ id: `${did}#key-1`, type: "JsonWebKey2020", controller: did, publicKeyJwk: { ...publicJwk, alg } }],
            assertionMethod: [`${did}#key-1`],
          },
        }
        : { status: "not-found", url: `https://${host}/.well-known/did.json` }),
  };
}

describe("x402_vectors.json: EIP-712", () => {
  const v = vectors.eip712;
  test("domain separators and type hashes match the vectors", () => {
    expect(domainSeparator({ domain: OFFER_DOMAIN })).toBe(v.offerDomainSeparator as `0x${string}`);
    expect(domainSeparator({ domain: RECEIPT_DOMAIN })).toBe(v.receiptDomainSeparator as `0x${string}`);
    expect(keccak256(stringToBytes(v.offerTypeString))).toBe(v.offerTypeHash as `0x${string}`);
    expect(keccak256(stringToBytes(v.receiptTypeString))).toBe(v.receiptTypeHash as `0x${string}`);
    const offerType = `Offer(${OFFER_TYPES.Offer.map((f) => `${f.type} ${f.name}`).join(",")})`;
    const receiptType = `Receipt(${RECEIPT_TYPES.Receipt.map((f) => `${f.type} ${f.name}`).join(",")})`;
    expect(offerType).toBe(v.offerTypeString);
    expect(receiptType).toBe(v.receiptTypeString);
  });

  test("digests match, with and without the transaction", () => {
    expect(hashOffer(OFFER)).toBe(v.offerDigest as `0x${string}`);
    expect(hashReceipt(RECEIPT)).toBe(v.receiptDigest as `0x${string}`);
    expect(hashReceipt({ ...RECEIPT, transaction: TX })).toBe(v.receiptTxDigest as `0x${string}`);
    expect(hashStruct({ data: { ...OFFER, version: 1n, validUntil: BigInt(OFFER.validUntil) }, primaryType: "Offer", types: OFFER_TYPES }))
      .toBe("0xbc1be3a7ddfbb672f3cb1d8d03c8af6fbd7b9dbdef6fe6798e2d2e83deca0b46");
  });

  test("our eip712 issuer reproduces the vector signatures and kid", async () => {
    const issuer = createEip712Issuer({ privateKey: ANVIL_0 });
    expect(issuer.kid).toBe(v.kid);
    const offer = await issuer.signOffer(OFFER);
    const receipt = await issuer.signReceipt(RECEIPT);
    const receiptTx = await issuer.signReceipt({ ...RECEIPT, transaction: TX });
    expect(offer.signature).toBe(v.offerSignature);
    expect(receipt.signature).toBe(v.receiptSignature);
    expect(receiptTx.signature).toBe(v.receiptTxSignature);
    // eip712 receipts always carry `transaction`, empty when not included.
    expect(receipt).toEqual({ format: "eip712", payload: { ...RECEIPT, transaction: "" }, signature: v.receiptSignature as `0x${string}` });
  });

  test("our verifier recovers the vector signer from the vector signatures", async () => {
    const jws = createWebCryptoJwsVerifier();
    const offer = await verifySignedOffer({ format: "eip712", payload: OFFER, signature: v.offerSignature }, { jws }, AT);
    const receipt = await verifySignedReceipt({ format: "eip712", payload: { ...RECEIPT, transaction: "" }, signature: v.receiptSignature }, { jws }, AT);
    expect(offer.ok && offer.value.signer.address).toBe(v.offerRecovered as `0x${string}`);
    expect(receipt.ok && receipt.value.signer.address).toBe(v.receiptRecovered as `0x${string}`);
    expect(offer.ok && offer.value.signer.controllerDid).toBe(`did:pkh:eip155:1:${v.signerAddress.toLowerCase()}`);
  });
});

describe("x402_vectors.json: JCS and JWS", () => {
  test("JCS bytes of the payloads match", () => {
    expect(canonicalJson(OFFER)).toBe(vectors.jcs.offer);
    expect(canonicalJson(RECEIPT)).toBe(vectors.jcs.receipt);
    expect(canonicalJson({ ...RECEIPT, transaction: undefined })).toBe(vectors.jcs.receipt);
  });

  // The upstream vectors have the header {alg, kid}; our issuers write it without `jwk` when told to (decisions §18).
  test("EdDSA and ES256K issuers reproduce the deterministic vector JWS byte for byte", async () => {
    const kid = "did:web:api.example.com#key-1";
    const ed = await createJwsIssuerFromJwk({ kid, alg: "EdDSA", privateJwk: ED25519, embedJwk: false });
    expect((await ed.signOffer(OFFER)).signature).toBe(vectors.jws_EdDSA.offerJws);
    expect((await ed.signReceipt(RECEIPT)).signature).toBe(vectors.jws_EdDSA.receiptJws);
    const k1 = await createJwsIssuerFromJwk({ kid, alg: "ES256K", privateJwk: SECP256K1, embedJwk: false });
    expect((await k1.signOffer(OFFER)).signature).toBe(vectors.jws_ES256K.offerJws);
    expect((await k1.signReceipt(RECEIPT)).signature).toBe(vectors.jws_ES256K.receiptJws);
  });

  test("ES256 (randomized in WebCrypto) shares the vector's header and payload and verifies", async () => {
    const kid = "did:web:api.example.com#key-1";
    const issuer = await createJwsIssuerFromJwk({ kid, alg: "ES256", privateJwk: P256, embedJwk: false });
    const ours = (await issuer.signReceipt(RECEIPT)).signature;
    const [h, p] = vectors.jws_ES256.receiptJws.split(".");
    expect(ours.startsWith(`${h}.${p}.`)).toBe(true);
    const deps = { jws: createWebCryptoJwsVerifier(), didDocuments: didHost(vectors.jws_ES256.publicJwk, "ES256") };
    expect((await verifySignedReceipt({ format: "jws", signature: ours }, deps, AT)).ok).toBe(true);
  });

  for (const alg of ["EdDSA", "ES256", "ES256K"] as const) {
    test(`our verifier accepts the ${alg} vector offer and receipt through did:web and derives the did:jwk`, async () => {
      const v = vectors[`jws_${alg}`];
      const deps = { jws: createWebCryptoJwsVerifier(), didDocuments: didHost(v.publicJwk, alg) };
      const offer = await verifySignedOffer({ format: "jws", signature: v.offerJws }, deps, AT);
      const receipt = await verifySignedReceipt({ format: "jws", signature: v.receiptJws }, deps, AT);
      expect(offer.ok && offer.value.payload).toEqual(OFFER);
      expect(receipt.ok && receipt.value.payload).toEqual(RECEIPT);
      expect(receipt.ok && receipt.value.signer).toEqual({
        format: "jws",
        controllerDid: v.didJwk,
        kid: v.kid,
        alg,
        keyDocumentDid: "did:web:api.example.com",
      });
    });
  }

  test("a flipped payload byte fails every vector", async () => {
    for (const alg of ["EdDSA", "ES256", "ES256K"] as const) {
      const v = vectors[`jws_${alg}`];
      const [h, , s] = v.receiptJws.split(".");
      const forged = `${h}.${base64UrlEncode(new TextEncoder().encode(vectors.jcs.receipt.replace("1703123456", "1703123457")))}.${s}`;
      const deps = { jws: createWebCryptoJwsVerifier(), didDocuments: didHost(v.publicJwk, alg) };
      const result = await verifySignedReceipt({ format: "jws", signature: forged }, deps, AT);
      expect(result.ok ? "ok" : result.code).toBe("INVALID_SIGNATURE");
    }
  });
});

describe("x402_vectors.json: did:web and DID address", () => {
  test("the resource URL maps to did:web:api.example.com and its DID address", () => {
    const did = resourceUrlToDidWeb("https://api.example.com/premium-data?x=1#f");
    expect(did).toEqual({ ok: true, value: "did:web:api.example.com" });
    expect(didToAddress("did:web:api.example.com")).toEqual({ ok: true, value: "0x09a34a416806a7eba14b6b183369082602e8064b" });
  });

  test("www., case, trailing dot and a non-default port follow the did:web rules", () => {
    expect(resourceUrlToDidWeb("https://WWW.Example.COM./x")).toEqual({ ok: true, value: "did:web:example.com" });
    expect(resourceUrlToDidWeb("http://localhost:4021/paid")).toEqual({ ok: true, value: "did:web:localhost%3A4021" });
    expect(resourceUrlToDidWeb("https://api.example.com:443/x")).toEqual({ ok: true, value: "did:web:api.example.com" });
    expect(resourceUrlToDidWeb("ftp://x.com/").ok).toBe(false);
    expect(privateKeyToAccount(ANVIL_0).address).toBe(vectors.eip712.signerAddress as `0x${string}`);
  });
});
