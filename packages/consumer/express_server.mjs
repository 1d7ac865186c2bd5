// The extension from its packed tarball in a plain Node project (decisions §26): an Express server with the official
// @x402/express paymentMiddleware and our extension registered, paid by the official client, in both signing
// formats; the official @x402/extensions verifiers check every offer and receipt. Run by scripts/packages_test.sh.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { x402Client, x402HTTPClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { x402ResourceServer } from "@x402/core/server";
import { paymentMiddleware } from "@x402/express";
import {
  decodeSignedOffers,
  verifyOfferSignatureEIP712,
  verifyOfferSignatureJWS,
  verifyReceiptMatchesOffer,
  verifyReceiptSignatureEIP712,
  verifyReceiptSignatureJWS,
} from "@x402/extensions/offer-receipt";
import express from "express";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import {
  buildDidDocument,
  createEip712Issuer,
  createJwsIssuerFromJwk,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
  DID_DOCUMENT_PATH,
  DID_JSON_CONTENT_TYPE,
  generateSigningJwk,
} from "@ats/x402-offer-receipt";
import { createTestFacilitator, testSchemeClient, testSchemeServer } from "@ats/x402-offer-receipt/testing";

const NETWORK = "eip155:84532";
const PAY_TO = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C";
const PAY_TO_2 = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const payer = privateKeyToAccount(generatePrivateKey());

/** Express on 127.0.0.1 behind the official middleware; only the extension's registration is ours. */
async function startExpress(issuer) {
  const facilitator = createTestFacilitator({ networks: [NETWORK] });
  const resourceServer = new x402ResourceServer(facilitator)
    .register(NETWORK, testSchemeServer())
    .registerExtension(createOfferReceiptExtension({ issuer }));
  const routes = {
    "GET /paid": {
      accepts: [
        { scheme: "exact", network: NETWORK, payTo: PAY_TO, price: "$0.001", maxTimeoutSeconds: 120 },
        { scheme: "exact", network: NETWORK, payTo: PAY_TO_2, price: "$0.002" },
      ],
      description: "demo",
      mimeType: "application/json",
      extensions: declareOfferReceiptExtension({ includeTxHash: true }),
    },
  };
  const app = express();
  const didDocument = buildDidDocument({ did: issuer.kid.split("#")[0], issuers: [issuer] });
  app.get(DID_DOCUMENT_PATH, (_req, res) => void res.type(DID_JSON_CONTENT_TYPE).send(JSON.stringify(didDocument)));
  app.use(paymentMiddleware(routes, resourceServer));
  app.get("/paid", (_req, res) => void res.json({ data: "premium" }));
  const server = await new Promise((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  return { url: `http://127.0.0.1:${server.address().port}`, facilitator, stop: () => server.close() };
}

/** The official client: 402, payment payload, paid request. */
async function payThrough(url) {
  const http = new x402HTTPClient(new x402Client().register(NETWORK, testSchemeClient(payer)).setSpendControls(false));
  const unpaid = await fetch(url);
  assert.equal(unpaid.status, 402);
  const paymentRequired = http.getPaymentRequiredResponse((n) => unpaid.headers.get(n), await unpaid.clone().json());
  const paid = await fetch(url, { headers: http.encodePaymentSignatureHeader(await http.createPaymentPayload(paymentRequired)) });
  assert.equal(paid.status, 200);
  assert.deepEqual(await paid.json(), { data: "premium" });
  const settlement = decodePaymentResponseHeader(paid.headers.get("payment-response"));
  return { unpaid, settlement };
}

async function check(format) {
  const issuer = format === "jws"
    ? await createJwsIssuerFromJwk({ kid: "did:web:api.example.com#key-1", alg: "ES256", privateJwk: await generateSigningJwk("ES256") })
    : createEip712Issuer({ privateKey: generatePrivateKey(), chainId: 84532 });
  const s = await startExpress(issuer);
  try {
    const { unpaid, settlement } = await payThrough(`${s.url}/paid?session=abc`);
    const paymentRequired = decodePaymentRequiredHeader(unpaid.headers.get("payment-required"));
    const offers = paymentRequired.extensions["offer-receipt"].info.offers;
    assert.deepEqual(offers.map((o) => [o.format, o.acceptIndex]), [[format, 0], [format, 1]]);
    assert.equal(settlement.success, true);
    assert.equal(settlement.payer, payer.address);
    const receipt = settlement.extensions["offer-receipt"].info.receipt;
    assert.equal(receipt.format, format);

    let offerPayloads;
    let receiptPayload;
    if (format === "jws") {
      // The key as a verifier finds it: the DID document the server publishes.
      const did = await fetch(`${s.url}${DID_DOCUMENT_PATH}`);
      assert.equal(did.headers.get("content-type").split(";")[0], DID_JSON_CONTENT_TYPE);
      const method = (await did.json()).verificationMethod.find((m) => m.id === issuer.kid);
      offerPayloads = await Promise.all(offers.map((o) => verifyOfferSignatureJWS(o, { ...method.publicKeyJwk })));
      receiptPayload = await verifyReceiptSignatureJWS(receipt, { ...method.publicKeyJwk });
      // The receipt names the offer it settles (x402 issue 3006): the first accept's, which the client paid.
      assert.equal(receiptPayload.offerHash, `0x${createHash("sha256").update(offers[0].signature).digest("hex")}`);
    } else {
      const verified = await Promise.all(offers.map((o) => verifyOfferSignatureEIP712(o)));
      for (const v of verified) assert.equal(v.signer, issuer.address);
      offerPayloads = verified.map((v) => v.payload);
      const r = await verifyReceiptSignatureEIP712(receipt);
      assert.equal(r.signer, issuer.address);
      receiptPayload = r.payload;
    }
    for (const [i, offer] of offerPayloads.entries()) {
      const accept = paymentRequired.accepts[i];
      assert.equal(offer.resourceUrl, `${s.url}/paid`, "offers sign the canonical URL, without the query");
      assert.deepEqual(
        [offer.scheme, offer.network, offer.asset, offer.payTo, offer.amount],
        [accept.scheme, accept.network, accept.asset, accept.payTo, accept.amount],
      );
    }
    assert.equal(receiptPayload.resourceUrl, `${s.url}/paid`);
    assert.equal(receiptPayload.payer, payer.address);
    assert.equal(receiptPayload.transaction, settlement.transaction);
    assert.equal(verifyReceiptMatchesOffer(receipt, decodeSignedOffers([offers[0]])[0], [payer.address]), true);
    assert.equal(s.facilitator.calls.settle, 1);
    console.log(`ok - express + @x402/express + @ats/x402-offer-receipt (${format}): offers and receipt accepted by @x402/extensions`);
  } finally {
    s.stop();
  }
}

await check("jws");
await check("eip712");
