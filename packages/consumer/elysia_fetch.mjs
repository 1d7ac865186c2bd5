// The extension's `./elysia` entry from its packed tarball under plain Node (decisions §26: the Elysia adapter as a
// subpath export). withX402 is fetch-level, so the app is driven through the returned handler, no server: the
// official client pays (v2), and the official @x402/extensions verifier accepts the EIP-712 receipt; the DID
// document route answers application/did+json. Run by scripts/packages_test.sh once elysia is installed.
import assert from "node:assert/strict";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentResponseHeader } from "@x402/core/http";
import { x402HTTPResourceServer, x402ResourceServer } from "@x402/core/server";
import { decodeSignedOffers, verifyReceiptMatchesOffer, verifyReceiptSignatureEIP712 } from "@x402/extensions/offer-receipt";
import { Elysia } from "elysia";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { buildDidDocument, createEip712Issuer, createOfferReceiptExtension, declareOfferReceiptExtension, DID_DOCUMENT_PATH } from "@ats/x402-offer-receipt";
import { didDocumentRoutes, withX402 } from "@ats/x402-offer-receipt/elysia";
import { createTestFacilitator, testSchemeClient, testSchemeServer } from "@ats/x402-offer-receipt/testing";

const NETWORK = "eip155:84532";
const payer = privateKeyToAccount(generatePrivateKey());
const issuer = createEip712Issuer({ privateKey: generatePrivateKey(), chainId: 84532 });
const facilitator = createTestFacilitator({ networks: [NETWORK] });
const resourceServer = new x402ResourceServer(facilitator)
  .register(NETWORK, testSchemeServer())
  .registerExtension(createOfferReceiptExtension({ issuer, publicBaseUrl: "https://api.example.com" }));
const httpServer = new x402HTTPResourceServer(resourceServer, {
  "GET /paid": {
    accepts: { scheme: "exact", network: NETWORK, payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", price: "$0.001" },
    extensions: declareOfferReceiptExtension({ includeTxHash: true }),
  },
});
const didDocument = buildDidDocument({ did: "did:web:api.example.com", issuers: [issuer] });
const app = new Elysia().use(didDocumentRoutes(didDocument)).get("/paid", () => ({ data: "premium" }));
const handle = withX402(app, { httpServer });
const get = (headers = {}) => handle(new Request("https://api.example.com/paid", { headers }));

const http = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
const unpaid = await get();
assert.equal(unpaid.status, 402);
const paymentRequired = http.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.json());
const [offer] = paymentRequired.extensions["offer-receipt"].info.offers;
const paid = await get(http.encodePaymentSignatureHeader(await http.createPaymentPayload(paymentRequired)));
assert.equal(paid.status, 200);
assert.deepEqual(await paid.json(), { data: "premium" });
const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response"));
const receipt = settlement.extensions["offer-receipt"].info.receipt;
const verified = await verifyReceiptSignatureEIP712(receipt);
assert.equal(verified.signer, issuer.address);
assert.equal(verified.payload.resourceUrl, "https://api.example.com/paid");
assert.equal(verified.payload.transaction, settlement.transaction);
assert.equal(verifyReceiptMatchesOffer(receipt, decodeSignedOffers([offer])[0], [payer.address]), true);

const did = await app.handle(new Request(`https://api.example.com${DID_DOCUMENT_PATH}`));
assert.equal(did.headers.get("content-type"), "application/did+json");
assert.equal((await did.json()).id, "did:web:api.example.com");
console.log("ok - @ats/x402-offer-receipt/elysia under Node: withX402 paid flow accepted by @x402/extensions, did.json route");
