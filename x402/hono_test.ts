/**
 * Issue 7 R3: our `offer-receipt` extension inside an official middleware that accepts extensions,
 * `@x402/hono`'s `paymentMiddleware`, on Bun, with the in-process test facilitator and the official
 * client paying. Only the registration is ours; the request flow is the official package's.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { type RouteConfig, x402ResourceServer } from "@x402/core/server";
import { decodeSignedOffers, verifyReceiptMatchesOffer } from "@x402/extensions/offer-receipt";
import { paymentMiddleware } from "@x402/hono";
import { Hono } from "hono";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import type { SignedOffer, SignedReceipt } from "../domain/payments/mod.ts";
import { verifySignedOffer, verifySignedReceipt } from "../domain/payments/mod.ts";
import { createOfferReceiptExtension, declareOfferReceiptExtension } from "./extension.ts";
import { createJwsIssuerFromJwk, generateSigningJwk, type OfferReceiptIssuer } from "./signers.ts";
import { createTestFacilitator, testSchemeClient, testSchemeServer } from "./testing.ts";

const NETWORK = "eip155:84532";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const PAY_TO_2 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const jws = createWebCryptoJwsVerifier();
const payer = privateKeyToAccount(generatePrivateKey());
const nowSeconds = () => Math.floor(Date.now() / 1000);

const stops: (() => void)[] = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

/** A Hono app on 127.0.0.1 behind the official paymentMiddleware, our extension registered on the resource server. */
async function startHono(options: { includeTxHash: boolean; issuer: OfferReceiptIssuer }) {
  const facilitator = createTestFacilitator({ networks: [NETWORK] });
  const resourceServer = new x402ResourceServer(facilitator)
    .register(NETWORK, testSchemeServer())
    .registerExtension(createOfferReceiptExtension({ issuer: options.issuer }));
  const route: RouteConfig = {
    accepts: [
      { scheme: "exact", network: NETWORK, payTo: PAY_TO, price: "$0.001", maxTimeoutSeconds: 120 },
      { scheme: "exact", network: NETWORK, payTo: PAY_TO_2, price: "$0.002" },
    ],
    description: "demo",
    mimeType: "application/json",
    extensions: declareOfferReceiptExtension({ includeTxHash: options.includeTxHash }),
  };
  const app = new Hono();
  app.use(paymentMiddleware({ "GET /paid": route }, resourceServer));
  app.get("/paid", (c) => c.json({ data: "premium" }));
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: app.fetch });
  stops.push(() => void server.stop(true));
  return { url: `http://127.0.0.1:${server.port}`, facilitator };
}

/** The official client: 402 → payment payload echoing the extensions → paid request. */
async function payThrough(url: string) {
  const http = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
  const unpaid = await fetch(url);
  const paymentRequired = http.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.clone().json());
  const paid = await fetch(url, { headers: http.encodePaymentSignatureHeader(await http.createPaymentPayload(paymentRequired)) });
  const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response")!);
  const receipt = (settlement.extensions?.["offer-receipt"] as { info: { receipt: SignedReceipt } }).info.receipt;
  return { unpaid, paid, settlement, receipt };
}

/** An EdDSA issuer whose kid is its own did:jwk, so verification needs no DID document host. */
async function selfResolvingIssuer(): Promise<OfferReceiptIssuer> {
  const privateJwk = await generateSigningJwk("EdDSA");
  const did = `did:jwk:${Buffer.from(JSON.stringify({ crv: "Ed25519", kty: "OKP", x: privateJwk.x })).toString("base64url")}`;
  return await createJwsIssuerFromJwk({ kid: `${did}#0`, alg: "EdDSA", privateJwk });
}

describe("our extension through the official @x402/hono paymentMiddleware", () => {
  test("the 402's accepts each carry our signed offer; the paid 200 carries a receipt for the same canonical URL, with the tx hash", async () => {
    const s = await startHono({ includeTxHash: true, issuer: await selfResolvingIssuer() });
    const url = `${s.url}/paid?session=abc`;
    const { unpaid, paid, settlement, receipt } = await payThrough(url);

    expect(unpaid.status).toBe(402);
    const paymentRequired = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!);
    const offers = (paymentRequired.extensions?.["offer-receipt"] as { info: { offers: SignedOffer[] } }).info.offers;
    expect(offers.map((o) => o.acceptIndex)).toEqual([0, 1]);
    const verifiedOffers = [];
    const signers: string[] = [];
    for (const [i, offer] of offers.entries()) {
      const verified = await verifySignedOffer(offer, { jws }, { nowSeconds: nowSeconds() });
      if (!verified.ok) throw new Error(verified.message);
      const accept = paymentRequired.accepts[i]!;
      expect(verified.value.payload).toMatchObject({ scheme: accept.scheme, network: accept.network, asset: accept.asset, payTo: accept.payTo, amount: accept.amount });
      verifiedOffers.push(verified.value.payload);
      signers.push(verified.value.signer.controllerDid);
    }
    // Hono's getUrl() is the request URL with its query; both artifacts sign the one canonical URL without it.
    expect(verifiedOffers.map((o) => o.resourceUrl)).toEqual([`${s.url}/paid`, `${s.url}/paid`]);

    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ data: "premium" });
    expect(settlement).toMatchObject({ success: true, payer: payer.address });
    const verified = await verifySignedReceipt(receipt, { jws }, { nowSeconds: nowSeconds() });
    if (!verified.ok) throw new Error(verified.message);
    expect(verified.value.payload).toMatchObject({ resourceUrl: `${s.url}/paid`, payer: payer.address, network: NETWORK });
    expect(verified.value.payload.transaction).toBe(settlement.transaction);
    expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(verified.value.signer.controllerDid).toBe(signers[0]!);
    // And the official client-side check agrees that the receipt answers the offer.
    expect(verifyReceiptMatchesOffer(receipt, decodeSignedOffers([offers[0]!])[0]!, [payer.address])).toBe(true);
    expect(s.facilitator.calls.settle).toBe(1);
  });

  test("includeTxHash: false (the default) keeps the transaction out of the receipt", async () => {
    const s = await startHono({ includeTxHash: false, issuer: await selfResolvingIssuer() });
    const { settlement, receipt } = await payThrough(`${s.url}/paid`);
    const verified = await verifySignedReceipt(receipt, { jws }, { nowSeconds: nowSeconds() });
    if (!verified.ok) throw new Error(verified.message);
    expect(settlement.transaction).toMatch(/^0x/);
    expect(verified.value.payload.transaction).toBeUndefined();
  });
});
