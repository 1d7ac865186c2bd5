/**
 * did:key kids (x402_offer_receipt.md §3.5, §4.2): self-resolving like did:jwk; multicodec 0xed Ed25519,
 * 0xe7 secp256k1, 0x1200 P-256, decoded in the domain without a crypto library.
 */
import { describe, expect, test } from "bun:test";
import { secp256k1 } from "@noble/curves/secp256k1";
import { createJWSOfferReceiptIssuer, type JWSSigner } from "@x402/extensions/offer-receipt";
import { sha256 } from "viem/utils";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import { base64UrlDecode, base64UrlEncode, jwkToDidJwk } from "../domain/did/mod.ts";
import type { X402JwsAlgorithm } from "../domain/payments/mod.ts";
import { base58btcEncode, didKeyToJwk, evaluateKeyTrust, jwkToDidKey, verifySignedOffer, verifySignedReceipt } from "../domain/payments/mod.ts";
import { createJwsIssuerFromJwk, generateSigningJwk, type PrivateJwk } from "./signers.ts";
import vectors from "./testdata/x402_vectors.json" with { type: "json" };

const NOW = 1_800_000_000;
const jws = createWebCryptoJwsVerifier();
const OFFER_INPUT = {
  acceptIndex: 0,
  scheme: "exact",
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  offerValiditySeconds: 300,
};
const RESOURCE = "https://api.example.com/premium";
const PAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";

const publicOf = ({ d: _d, ...jwk }: PrivateJwk) => jwk as Record<string, string>;
const didJwkOf = (jwk: Record<string, unknown>) => (jwkToDidJwk(jwk, { publicOnly: true }) as { value: string }).value;

describe("didKeyToJwk()", () => {
  test("decodes the published P-256 did:key vectors to their JWKs", () => {
    // did:key test vectors as other implementations (Digital Bazaar, SpruceID) resolve them.
    expect(didKeyToJwk("did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169")).toEqual({
      ok: true,
      value: { kty: "EC", crv: "P-256", x: "fyNYMN0976ci7xqiSdag3buk-ZCwgXU4kz9XNkBlNUI", y: "hW2ojTNfH7Jbi8--CJUo3OCbH3y5n91g-IMA9MLMbTU" },
    });
    expect(didKeyToJwk("did:key:zDnaerx9CtbPJ1q36T5Ln5wYt3MQYeGRG5ehnPAmxcf5mDZpv#zDnaerx9CtbPJ1q36T5Ln5wYt3MQYeGRG5ehnPAmxcf5mDZpv")).toEqual({
      ok: true,
      value: { kty: "EC", crv: "P-256", x: "igrFmi0whuihKnj9R3Om1SoMph72wUGeFaBbzG2vzns", y: "efsX5b10x8yjyrj4ny3pGfLcY7Xby1KzgqOdqnsrJIM" },
    });
  });

  test("decodes the secp256k1 did:key vector to the point noble decompresses", () => {
    const did = "did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme";
    const jwk = didKeyToJwk(did);
    if (!jwk.ok) throw new Error(jwk.message);
    expect(jwk.value).toMatchObject({ kty: "EC", crv: "secp256k1" });
    const x = base64UrlDecode(jwk.value.x!)!;
    const y = base64UrlDecode(jwk.value.y!)!;
    const compressed = Uint8Array.from([0x02 | (y[31]! & 1), ...x]);
    expect(Buffer.from(secp256k1.ProjectivePoint.fromHex(compressed).toRawBytes(false))).toEqual(Buffer.from([4, ...x, ...y]));
    expect(jwkToDidKey(jwk.value)).toEqual({ ok: true, value: did });
  });

  test("the RFC 8037 Ed25519 key and the Anvil #1 secp256k1 key round-trip through did:key", () => {
    const ed = { kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" };
    const edDid = jwkToDidKey(ed);
    expect(edDid.ok && edDid.value.startsWith("did:key:z6Mk")).toBe(true);
    expect(didKeyToJwk((edDid as { value: string }).value)).toEqual({ ok: true, value: ed });
    const k1 = { kty: "EC", crv: "secp256k1", x: vectors.jws_ES256K.publicJwk.x, y: vectors.jws_ES256K.publicJwk.y };
    const k1Did = jwkToDidKey(k1);
    expect(k1Did.ok && k1Did.value.startsWith("did:key:zQ3s")).toBe(true);
    expect(didKeyToJwk((k1Did as { value: string }).value)).toEqual({ ok: true, value: k1 });
  });

  test("fresh keys of every curve round-trip, both y parities included", async () => {
    for (const alg of ["ES256", "ES256K", "EdDSA"] as const) {
      const parities = new Set<number>();
      for (let i = 0; i < 12; i++) {
        const jwk = publicOf(await generateSigningJwk(alg));
        const did = jwkToDidKey(jwk);
        if (!did.ok) throw new Error(did.message);
        expect(didKeyToJwk(`${did.value}#${did.value.slice(8)}`)).toEqual({ ok: true, value: jwk });
        if (jwk.y !== undefined) parities.add(base64UrlDecode(jwk.y)![31]! & 1);
      }
      if (alg !== "EdDSA") expect(parities.size).toBe(2);
    }
  });

  test("other multibases, unknown codecs, bad lengths and points off the curve are refused", () => {
    const x25519 = `did:key:z6LS${"1".repeat(40)}`;
    // The secp256k1 point's coordinates, uncompressed, claimed for P-256: not on that curve.
    const k1 = [...base64UrlDecode(vectors.jws_ES256K.publicJwk.x)!, ...base64UrlDecode(vectors.jws_ES256K.publicJwk.y)!];
    const offCurve = `did:key:z${base58btcEncode(Uint8Array.from([0x80, 0x24, 0x04, ...k1]))}`;
    const xTooLarge = `did:key:z${base58btcEncode(Uint8Array.from([0xe7, 0x01, 0x02, ...new Array<number>(32).fill(0xff)]))}`;
    for (const bad of ["did:key:uAAAA", "did:key:z0OIl", x25519, "did:key:z6Mk", offCurve, xTooLarge, `did:key:z${"2".repeat(200)}`]) {
      expect({ bad, result: didKeyToJwk(bad) }).toMatchObject({ bad, result: { ok: false, code: "UNRESOLVABLE_KEY" } });
    }
  });
});

/** An official JWS issuer whose kid is the did:key of its own key. */
async function officialDidKeyIssuer(alg: X402JwsAlgorithm) {
  const privateJwk = await generateSigningJwk(alg);
  const publicJwk = publicOf(privateJwk);
  const did = jwkToDidKey(publicJwk);
  if (!did.ok) throw new Error(did.message);
  const kid = `${did.value}#${did.value.slice("did:key:".length)}`;
  let sign: (bytes: Uint8Array) => Promise<Uint8Array>;
  if (alg === "ES256K") {
    const d = base64UrlDecode(privateJwk.d)!;
    sign = (bytes) => Promise.resolve(secp256k1.sign(sha256(bytes, "bytes"), d).toCompactRawBytes());
  } else {
    const algorithm = alg === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "Ed25519" };
    const key = await crypto.subtle.importKey("jwk", privateJwk as JsonWebKey, algorithm, false, ["sign"]);
    const params = alg === "ES256" ? { name: "ECDSA", hash: "SHA-256" } : { name: "Ed25519" };
    sign = async (bytes) => new Uint8Array(await crypto.subtle.sign(params, key, new Uint8Array(bytes)));
  }
  const signer: JWSSigner = { kid, format: "jws", algorithm: alg, sign: async (bytes) => base64UrlEncode(await sign(bytes)) };
  return { issuer: createJWSOfferReceiptIssuer(kid, signer), publicJwk, kid };
}

describe("offers and receipts with a did:key kid", () => {
  for (const alg of ["EdDSA", "ES256", "ES256K"] as const) {
    test(`the official issuer's ${alg} offer and receipt with a did:key kid verify without any resolver`, async () => {
      const { issuer, publicJwk, kid } = await officialDidKeyIssuer(alg);
      const offer = await issuer.issueOffer(RESOURCE, OFFER_INPUT);
      const receipt = await issuer.issueReceipt(RESOURCE, PAYER, OFFER_INPUT.network);
      const o = await verifySignedOffer(offer, { jws }, { nowSeconds: Math.floor(Date.now() / 1000) });
      const r = await verifySignedReceipt(receipt, { jws }, { nowSeconds: Math.floor(Date.now() / 1000) });
      if (!o.ok) throw new Error(o.message);
      if (!r.ok) throw new Error(r.message);
      // The durable identity is the key's did:jwk, never the kid.
      expect(o.value.signer).toMatchObject({ format: "jws", alg, kid, controllerDid: didJwkOf(publicJwk) });
      expect(r.value.signer.controllerDid).toBe(didJwkOf(publicJwk));
      expect(r.value.payload).toMatchObject({ resourceUrl: RESOURCE, payer: PAYER });
    });
  }

  test("our own ES256K issuer with a did:key kid verifies; a did:key naming another key does not", async () => {
    const privateJwk = await generateSigningJwk("ES256K");
    const did = (jwkToDidKey(publicOf(privateJwk)) as { value: string }).value;
    const issuer = await createJwsIssuerFromJwk({ kid: did, alg: "ES256K", privateJwk });
    const receipt = await issuer.signReceipt({ version: 1, network: "eip155:84532", resourceUrl: RESOURCE, payer: PAYER, issuedAt: NOW });
    expect((await verifySignedReceipt(receipt, { jws }, { nowSeconds: NOW })).ok).toBe(true);
    const other = (jwkToDidKey(publicOf(await generateSigningJwk("ES256K"))) as { value: string }).value;
    // Without the `jwk` header the kid's key is the only key: the signature does not verify under it.
    const impostor = await createJwsIssuerFromJwk({ kid: other, alg: "ES256K", privateJwk, embedJwk: false });
    const forged = await impostor.signReceipt({ version: 1, network: "eip155:84532", resourceUrl: RESOURCE, payer: PAYER, issuedAt: NOW });
    expect(await verifySignedReceipt(forged, { jws }, { nowSeconds: NOW })).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
  });

  test("a key binding or endpoint evidence naming the key by did:key counts for the same signer", async () => {
    const jwk = publicOf(await generateSigningJwk("EdDSA"));
    const did = (jwkToDidKey(jwk) as { value: string }).value;
    const signer = { format: "jws" as const, controllerDid: didJwkOf(jwk) };
    const decision = evaluateKeyTrust({ subjectDid: "did:web:api.example.com", signer, at: NOW, evidence: { endpointKeys: [did] } });
    expect(decision).toMatchObject({ tier: 1, basis: "endpoint-evidence" });
  });
});
