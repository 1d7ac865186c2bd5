import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { OfferPayload, ReceiptPayload } from "../domain/payments/mod.ts";
import { createEip712Issuer } from "../x402/signers.ts";
import { checkReviewProof } from "./reviews.ts";

// Long past: the real clock is far beyond every validUntil here, as it is for any review read later.
const T = 1_700_000_000;
const SUBJECT = "did:web:api.example.com";
const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
const reviewer = privateKeyToAccount(generatePrivateKey());
const OFFER: OfferPayload = {
  version: 1,
  resourceUrl: "https://api.example.com/premium",
  scheme: "exact",
  network: "eip155:84532",
  asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  validUntil: T + 300,
};
const RECEIPT: ReceiptPayload = { version: 1, network: "eip155:84532", resourceUrl: OFFER.resourceUrl, payer: reviewer.address, issuedAt: T };
// Tier 1 without any network: the service publishes the issuer's address.
const trust = { endpointKeys: () => Promise.resolve([`did:pkh:eip155:1:${issuer.address!}`]) };
const wrap = (proofType: string, proofObject: unknown) => ({ proofType, proofPurpose: "commercial-tx", proofObject });
const review = (time: number) => ({ attester: reviewer.address, subject: SUBJECT, time: BigInt(time) });

describe("checkReviewProof() judges a proof as of the review", () => {
  test("an offer valid when the review was attested still verifies once validUntil has passed", async () => {
    const offer = await issuer.signOffer(OFFER);
    expect(Date.now() / 1000).toBeGreaterThan(OFFER.validUntil);
    // Even an explicit clock far past validUntil is not what a review is judged by.
    for (const x402 of [undefined, { nowSeconds: T + 100_000 }]) {
      const checked = await checkReviewProof(wrap("x402-offer", offer), review(T + 100), { trust, x402 });
      expect(checked).toMatchObject({
        proofType: "x402-offer",
        valid: true,
        reasons: [],
        signatureValid: true,
        resourceMatchesSubject: true,
        signerTrust: { tier: 1, basis: "endpoint-evidence" },
      });
    }
  });

  test("an offer that had already expired when the review was attested is refused, its signature still good", async () => {
    const offer = await issuer.signOffer(OFFER);
    const checked = await checkReviewProof(wrap("x402-offer", offer), review(OFFER.validUntil + 1), { trust });
    expect(checked).toMatchObject({ valid: false, signatureValid: true, reasons: ["the offer had expired when the review was attested"] });
  });

  test("an old receipt still counts; a receipt issued after the review does not", async () => {
    const receipt = await issuer.signReceipt(RECEIPT);
    expect(await checkReviewProof(wrap("x402-receipt", receipt), review(T + 60), { trust })).toMatchObject({
      valid: true,
      signatureValid: true,
      payer: { address: reviewer.address, relation: "attester" },
      signerTrust: { tier: 1 },
    });
    const late = await issuer.signReceipt({ ...RECEIPT, issuedAt: T + 3600 });
    expect(await checkReviewProof(wrap("x402-receipt", late), review(T), { trust })).toMatchObject({
      valid: false,
      signatureValid: false,
      reasons: ["signature: Receipt issuedAt lies in the future"],
    });
  });
});
