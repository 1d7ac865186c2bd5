/**
 * A JWS offer or receipt with an embedded `jwk` and a `kid` that is no did:web, did:jwk or did:key URL as written is
 * refused (UNRESOLVABLE_KEY), never verified on the jwk alone with that kid handed back as the signer's.
 */
import { describe, expect, test } from "bun:test";
import { p256 } from "@noble/curves/p256";
import { base64UrlEncode, jwkToDidJwk } from "../domain/did/mod.ts";
import { jwsSigningInput } from "../domain/payments/mod.ts";
import type { DidDocumentFetcher } from "../ports/discovery.ts";
import { verifyOffer, verifyReceipt } from "./x402.ts";

const NOW = 1_800_000_000;
const privateKey = p256.utils.randomPrivateKey();
const publicKey = p256.getPublicKey(privateKey, false);
const jwk = { kty: "EC", crv: "P-256", x: base64UrlEncode(publicKey.slice(1, 33)), y: base64UrlEncode(publicKey.slice(33)) };
const didJwk = (jwkToDidJwk(jwk, { publicOnly: true }) as { value: string }).value;
const RECEIPT = { version: 1, network: "eip155:8453", resourceUrl: "https://api.example.com/x", payer: "0x857b06519E91e3A54538791bDbb0E22373e36b66", issuedAt: NOW };
const OFFER = {
  version: 1,
  resourceUrl: "https://api.example.com/x",
  scheme: "exact",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  validUntil: NOW + 300,
};

/** A compact ES256 JWS over `payload` (JCS) with the protected header `{alg, kid, jwk}`, kid left out when undefined. */
function sign(kid: unknown, payload: object): string {
  const header = base64UrlEncode(new TextEncoder().encode(JSON.stringify({ alg: "ES256", ...(kid === undefined ? {} : { kid }), jwk })));
  const input = `${header}.${jwsSigningInput("ES256", "unused", payload).split(".")[1]!}`;
  const signature = p256.sign(new TextEncoder().encode(input), privateKey, { prehash: true });
  return `${input}.${base64UrlEncode(signature.toCompactRawBytes())}`;
}

/** A did:web resolver publishing the key at did:web:api.example.com#key-1, counting its fetches. */
function didHost() {
  let fetches = 0;
  const didDocuments: DidDocumentFetcher = {
    fetchDidDocument: () => {
      fetches++;
      return Promise.resolve({
        status: "ok",
        url: "https://api.example.com/.well-known/did.json",
        document: {
          id: "did:web:api.example.com",
          verificationMethod: [{ id: "did:web:api.example.com#key-1", type: "JsonWebKey2020", publicKeyJwk: { ...jwk, alg: "ES256" } }],
          assertionMethod: ["did:web:api.example.com#key-1"],
        },
      });
    },
  };
  return { didDocuments, fetches: () => fetches };
}

describe("a JWS kid that is no resolvable DID URL, beside an embedded jwk", () => {
  test("DID:WEB:…, a leading space, did:webb:…, a did:pkh, a bare name, an empty string or a number: UNRESOLVABLE_KEY, nothing fetched", async () => {
    const host = didHost();
    for (const kid of ["DID:WEB:api.example.com#key-1", " did:web:api.example.com#key-1", "did:webb:api.example.com#key-1", "did:pkh:eip155:1:0x857b06519e91e3a54538791bdbb0e22373e36b66", "key-1", "", 7]) {
      // Before: ok, with signer.kid the kid as sent and no fetch made.
      const receipt = await verifyReceipt({ format: "jws", signature: sign(kid, RECEIPT) }, { didDocuments: host.didDocuments, nowSeconds: NOW });
      expect(receipt.ok ? ["ok", receipt.value.signer.kid] : receipt.code).toBe("UNRESOLVABLE_KEY");
      const offer = await verifyOffer({ format: "jws", signature: sign(kid, OFFER) }, { didDocuments: host.didDocuments, nowSeconds: NOW });
      expect(offer.ok ? ["ok", offer.value.signer.kid] : offer.code).toBe("UNRESOLVABLE_KEY");
    }
    expect(host.fetches()).toBe(0);
  });

  test("a did:web kid that resolves to the jwk, a did:jwk kid of it, or no kid at all still verify", async () => {
    const host = didHost();
    for (const kid of ["did:web:api.example.com#key-1", `${didJwk}#0`, undefined]) {
      const receipt = await verifyReceipt({ format: "jws", signature: sign(kid, RECEIPT) }, { didDocuments: host.didDocuments, nowSeconds: NOW });
      expect(receipt.ok && [receipt.value.signer.controllerDid, receipt.value.signer.kid]).toEqual([didJwk, kid]);
    }
    expect(host.fetches()).toBe(1);
  });
});
