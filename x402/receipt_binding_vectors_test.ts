/**
 * testdata/receipt_binding_vectors.json (decisions §18): our issuers reproduce it byte for byte, `jose` (an
 * independent JOSE library) verifies the JWS through the embedded `jwk` and through the published key, our
 * verifier accepts the bound receipts and refuses the forged `jwk` and the receipt bound to another offer,
 * and the official `@x402/extensions` verifiers still accept the `jwk`-carrying artifacts.
 */
import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { verifyOfferSignatureJWS, verifyReceiptSignatureJWS } from "@x402/extensions/offer-receipt";
import { secp256k1 } from "@noble/curves/secp256k1";
import { base64url, calculateJwkThumbprint, compactVerify, decodeProtectedHeader, EmbeddedJWK, importJWK } from "jose";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import {
  canonicalJson,
  offerHashOf,
  readOfferPayload,
  readReceiptPayload,
  receiptOfferBinding,
  receiptOfferContradictions,
  type SignedOffer,
  verifySignedOffer,
  verifySignedReceipt,
} from "../domain/payments/mod.ts";
import type { DidDocumentFetcher } from "../ports/discovery.ts";
import { createJwsIssuerFromJwk, type PrivateJwk } from "./signers.ts";
import v from "./testdata/receipt_binding_vectors.json" with { type: "json" };
import upstream from "./testdata/x402_vectors.json" with { type: "json" };

const AT = { nowSeconds: 1703123400 };
const jws = createWebCryptoJwsVerifier();
const ED25519: PrivateJwk = { ...upstream.jws_EdDSA.publicJwk, d: "nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A" };
const SECP256K1: PrivateJwk = {
  ...upstream.jws_ES256K.publicJwk,
  d: Buffer.from("59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d", "hex").toString("base64url"),
};
const sha256Hex = (text: string) => `0x${createHash("sha256").update(text, "utf8").digest("hex")}`;
const jwsOffer = (signature: string): SignedOffer => ({ format: "jws", signature });

/** api.example.com's did.json publishing one key as `#key-1`. */
function didHost(publicJwk: Record<string, unknown>): DidDocumentFetcher {
  const did = "did:web:api.example.com";
  return {
    fetchDidDocument: (host) =>
      Promise.resolve(host === "api.example.com"
        ? {
          status: "ok",
          url: "https://api.example.com/.well-known/did.json",
          document: {
            id: did,
            verificationMethod: [{ id: `${did}#key-1`, type: "JsonWebKey2020", controller: did, publicKeyJwk: publicJwk }],
            assertionMethod: [`${did}#key-1`],
          },
        }
        : { status: "not-found", url: `https://${host}/.well-known/did.json` }),
  };
}

describe("receipt_binding_vectors.json: our issuers", () => {
  test("EdDSA and ES256K issuers (jwk in the header by default) reproduce the vectors byte for byte", async () => {
    for (const [f, privateJwk] of [[v.jws_EdDSA, ED25519], [v.jws_ES256K, SECP256K1]] as const) {
      const issuer = await createJwsIssuerFromJwk({ kid: f.kid, alg: f.alg as "EdDSA" | "ES256K", privateJwk });
      const offer = await issuer.signOffer(v.inputs.offer);
      expect(offer.signature).toBe(f.offerJws);
      expect(offerHashOf(offer)).toBe(f.offerHash as `0x${string}`);
      expect((await issuer.signReceipt({ ...v.inputs.receipt, offerHash: f.offerHash as `0x${string}` })).signature).toBe(f.receiptJws);
      expect(f.protectedHeader).toBe(JSON.stringify({ alg: f.alg, kid: f.kid, jwk: { crv: f.publicJwk.crv, kty: f.publicJwk.kty, x: f.publicJwk.x, ...("y" in f.publicJwk ? { y: f.publicJwk.y } : {}), alg: f.alg } }));
    }
  });

  test("offerHash is SHA-256 of the offer's compact JWS as sent (node:crypto agrees), and the receipt payload is JCS with it", () => {
    for (const f of [v.jws_EdDSA, v.jws_ES256K]) {
      expect(f.offerHash).toBe(sha256Hex(f.offerJws));
      expect(f.otherOfferHash).toBe(sha256Hex(f.otherOfferJws));
      expect(Buffer.from(f.receiptJws.split(".")[1]!, "base64url").toString("utf8")).toBe(f.receiptPayloadJcs);
      expect(f.receiptPayloadJcs).toBe(canonicalJson({ ...v.inputs.receipt, offerHash: f.offerHash }));
    }
  });
});

describe("receipt_binding_vectors.json: jose, an independent JWS library", () => {
  test("EdDSA: jose verifies offer and receipt through the embedded jwk and through the published key; the jwk is the published key (same RFC 7638 thumbprint)", async () => {
    const f = v.jws_EdDSA;
    for (const compact of [f.offerJws, f.receiptJws, f.otherOfferJws, f.receiptBoundToOtherOfferJws]) {
      const embedded = await compactVerify(compact, EmbeddedJWK);
      const published = await compactVerify(compact, await importJWK(f.publicJwk, "EdDSA"));
      expect(embedded.protectedHeader).toMatchObject({ alg: "EdDSA", kid: f.kid });
      expect(new TextDecoder().decode(published.payload)).toBe(new TextDecoder().decode(embedded.payload));
      const headerJwk = decodeProtectedHeader(compact).jwk!;
      expect(await calculateJwkThumbprint(headerJwk)).toBe(await calculateJwkThumbprint(f.publicJwk));
    }
    const receipt = JSON.parse(new TextDecoder().decode((await compactVerify(f.receiptJws, EmbeddedJWK)).payload));
    expect(receipt.offerHash).toBe(f.offerHash);
  });

  test("ES256K: jose decodes the header (it has no secp256k1 on Bun); noble verifies with the header's jwk, which is the published key", async () => {
    const f = v.jws_ES256K;
    const header = decodeProtectedHeader(f.receiptJws);
    expect(header).toMatchObject({ alg: "ES256K", kid: f.kid, jwk: { kty: "EC", crv: "secp256k1", x: f.publicJwk.x, y: f.publicJwk.y } });
    const [h, p, s] = f.receiptJws.split(".") as [string, string, string];
    const point = Uint8Array.from([0x04, ...base64url.decode(header.jwk!.x!), ...base64url.decode(header.jwk!.y!)]);
    const digest = createHash("sha256").update(`${h}.${p}`).digest();
    expect(secp256k1.verify(base64url.decode(s), digest, point)).toBe(true);
  });

  test("the forged receipt verifies under its own embedded jwk (jose) but not under the key its kid names", async () => {
    const f = v.forgedJwk;
    expect((await compactVerify(f.receiptJws, EmbeddedJWK)).protectedHeader.kid).toBe("did:web:api.example.com#key-1");
    await expect(compactVerify(f.receiptJws, await importJWK(v.jws_EdDSA.publicJwk, "EdDSA"))).rejects.toThrow("signature verification failed");
  });
});

describe("receipt_binding_vectors.json: our verifier", () => {
  for (const f of [v.jws_EdDSA, v.jws_ES256K]) {
    test(`${f.alg}: the jwk-carrying offer and receipt verify through did:web (kid resolved, jwk the same key) and the receipt reads its offerHash`, async () => {
      const deps = { jws, didDocuments: didHost(f.publicJwk) };
      const offer = await verifySignedOffer(jwsOffer(f.offerJws), deps, AT);
      const receipt = await verifySignedReceipt({ format: "jws", signature: f.receiptJws }, deps, AT);
      expect(offer.ok && offer.value.signer.keyDocumentDid).toBe("did:web:api.example.com");
      expect(receipt.ok && receipt.value.payload.offerHash).toBe(f.offerHash as `0x${string}`);
    });
  }

  test("a jwk that is not the key kid resolves to is refused, with the reason, before its signature counts", async () => {
    const result = await verifySignedReceipt({ format: "jws", signature: v.forgedJwk.receiptJws }, { jws, didDocuments: didHost(v.jws_EdDSA.publicJwk) }, AT);
    expect(result).toMatchObject({ ok: false, code: "UNRESOLVABLE_KEY", message: "Embedded jwk and kid name different keys" });
  });

  test("a kid that cannot be resolved is not bypassed by an embedded jwk", async () => {
    const unreachable: DidDocumentFetcher = { fetchDidDocument: () => Promise.resolve({ status: "unavailable", url: "https://api.example.com/.well-known/did.json", reason: "network-error" }) };
    const result = await verifySignedReceipt({ format: "jws", signature: v.jws_EdDSA.receiptJws }, { jws, didDocuments: unreachable }, AT);
    expect(result).toMatchObject({ ok: false, code: "UNRESOLVABLE_KEY" });
  });

  test("the receipt is bound to its offer; the one bound to the other offer contradicts it, with the reason", () => {
    for (const f of [v.jws_EdDSA, v.jws_ES256K]) {
      const offer = jwsOffer(f.offerJws);
      const terms = readOfferPayload(offer);
      const bound = readReceiptPayload({ format: "jws", signature: f.receiptJws });
      const other = readReceiptPayload({ format: "jws", signature: f.receiptBoundToOtherOfferJws });
      if (!terms.ok || !bound.ok || !other.ok) throw new Error("unreadable vector");
      expect(receiptOfferContradictions(bound.value, offer, terms.value)).toEqual([]);
      expect(receiptOfferContradictions(other.value, offer, terms.value)).toEqual(["the receipt is bound to another offer (offerHash differs)"]);
      const otherTerms = readOfferPayload(jwsOffer(f.otherOfferJws));
      if (!otherTerms.ok) throw new Error("unreadable vector");
      expect(receiptOfferContradictions(other.value, jwsOffer(f.otherOfferJws), otherTerms.value)).toEqual([]);
    }
  });

  test("terms that contradict the offer are each named: resource URL, network, an expired offer, an eip712 offer for a hash", () => {
    const offer = jwsOffer(v.jws_EdDSA.offerJws);
    const terms = readOfferPayload(offer);
    const receipt = readReceiptPayload({ format: "jws", signature: v.jws_EdDSA.receiptJws });
    if (!terms.ok || !receipt.ok) throw new Error("unreadable vector");
    const r = receipt.value;
    expect(receiptOfferContradictions({ ...r, resourceUrl: "https://api.example.com/other" }, offer, terms.value)).toEqual(["the receipt's resourceUrl is not the offer's"]);
    expect(receiptOfferContradictions({ ...r, network: "eip155:1" }, offer, terms.value)).toEqual(["the receipt's network is not the offer's"]);
    expect(receiptOfferContradictions({ ...r, issuedAt: terms.value.validUntil + 301 }, offer, terms.value)).toEqual(["the receipt was issued after the offer expired"]);
    expect(receiptOfferContradictions({ ...r, issuedAt: terms.value.validUntil + 300 }, offer, terms.value)).toEqual([]);
    const eip712 = { format: "eip712" as const, payload: terms.value, signature: upstream.eip712.offerSignature as `0x${string}` };
    expect(receiptOfferContradictions(r, eip712, terms.value)).toEqual(["the receipt's offerHash names a JWS offer, and this offer is not one"]);
    const { offerHash: _h, ...withoutHash } = r;
    expect(receiptOfferContradictions(withoutHash, eip712, terms.value)).toEqual([]);
  });

  test("receiptOfferBinding(): bound only through a signed offerHash; an EIP-712 receipt with any matching offer is unknown (issue 33)", () => {
    const offer = jwsOffer(v.jws_EdDSA.offerJws);
    const terms = readOfferPayload(offer);
    const bound = readReceiptPayload({ format: "jws", signature: v.jws_EdDSA.receiptJws });
    const other = readReceiptPayload({ format: "jws", signature: v.jws_EdDSA.receiptBoundToOtherOfferJws });
    const eip712Receipt = readReceiptPayload({ format: "eip712", payload: { ...JSON.parse(upstream.jcs.receipt), transaction: "" }, signature: upstream.eip712.receiptSignature });
    if (!terms.ok || !bound.ok || !other.ok || !eip712Receipt.ok) throw new Error("unreadable vector");
    expect(receiptOfferBinding(bound.value, offer, terms.value)).toEqual({ status: "bound", reasons: [] });
    expect(receiptOfferBinding(other.value, offer, terms.value)).toEqual({ status: "unbound", reasons: ["the receipt is bound to another offer (offerHash differs)"] });
    // Another purchase's offer with the receipt's resource and network: nothing contradicts it, nothing names it.
    const anotherPurchase = { ...terms.value, resourceUrl: eip712Receipt.value.resourceUrl, network: eip712Receipt.value.network, amount: "999999", validUntil: 0 };
    const eip712Offer = { format: "eip712" as const, payload: anotherPurchase, signature: upstream.eip712.offerSignature as `0x${string}` };
    expect(receiptOfferBinding(eip712Receipt.value, eip712Offer, anotherPurchase)).toEqual({ status: "unknown", reasons: [] });
    expect(receiptOfferBinding(eip712Receipt.value, offer, { ...anotherPurchase, network: "eip155:999" }))
      .toEqual({ status: "unbound", reasons: ["the receipt's network is not the offer's"] });
  });

  test("an offerHash beside an EIP-712 receipt's payload is not signed, so it is not read", () => {
    const payload = readReceiptPayload({ format: "eip712", payload: { ...upstream.jcs && JSON.parse(upstream.jcs.receipt), transaction: "", offerHash: v.jws_EdDSA.offerHash }, signature: upstream.eip712.receiptSignature });
    expect(payload.ok && payload.value.offerHash).toBeUndefined();
  });
});

describe("receipt_binding_vectors.json: the official @x402/extensions verifiers", () => {
  test("EdDSA offer and receipt with jwk and offerHash verify with the official functions and the published key", async () => {
    const f = v.jws_EdDSA;
    expect(await verifyOfferSignatureJWS({ format: "jws", signature: f.offerJws }, { ...f.publicJwk })).toEqual(v.inputs.offer);
    const receipt: unknown = await verifyReceiptSignatureJWS({ format: "jws", signature: f.receiptJws }, { ...f.publicJwk });
    expect(receipt).toEqual({ ...v.inputs.receipt, offerHash: f.offerHash });
  });
});
