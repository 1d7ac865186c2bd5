/**
 * receiptMatchesOffer() checks freshness as the official `verifyReceiptMatchesOffer` does (one hour by default,
 * x402_offer_receipt.md §2.2 and §4.3) and the offer's validUntil; a receipt as a review proof keeps no age limit.
 */
import { describe, expect, test } from "bun:test";
import { verifyReceiptMatchesOffer } from "@x402/extensions/offer-receipt";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { OfferPayload, ReceiptPayload } from "../domain/payments/mod.ts";
import { createEip712Issuer } from "../x402/signers.ts";
import { checkReviewProof } from "./reviews.ts";
import { DEFAULT_RECEIPT_MAX_AGE_SECONDS, receiptMatchesOffer, verifyReceipt } from "./x402.ts";

const NOW = 1_800_000_000;
const TWO_YEARS = 2 * 365 * 86_400;
const payer = privateKeyToAccount(generatePrivateKey());
const URL_ = "https://api.example.com/premium";
const OFFER: OfferPayload = {
  version: 1,
  resourceUrl: URL_,
  scheme: "exact",
  network: "eip155:8453",
  asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
  payTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
  amount: "1000",
  validUntil: NOW + 300,
};
const receiptAt = (issuedAt: number): ReceiptPayload & { transaction: string } =>
  ({ version: 1, network: OFFER.network, resourceUrl: URL_, payer: payer.address, issuedAt, transaction: "" });

describe("receiptMatchesOffer(): a fresh receipt for the offer", () => {
  test("a receipt two years old for the same resource, network and payer does not match a current offer (as the official helper)", async () => {
    const now = Math.floor(Date.now() / 1000);
    const offer = { ...OFFER, validUntil: now + 300 };
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    // Far from the one-hour edge either way: a second passing between the two calls changes nothing.
    for (const [age, expected] of [[TWO_YEARS, false], [60, true]] as const) {
      const signed = await issuer.signReceipt(receiptAt(now - age));
      const verified = await verifyReceipt(signed);
      if (!verified.ok) throw new Error(verified.message);
      expect(receiptMatchesOffer(verified.value.payload, offer, [payer.address])).toBe(expected);
      expect(verifyReceiptMatchesOffer(signed as never, offer as never, [payer.address])).toBe(expected);
    }
  });

  test("the age limit is one hour by default, a number or maxAgeSeconds sets it, Infinity lifts it", () => {
    expect(DEFAULT_RECEIPT_MAX_AGE_SECONDS).toBe(3600);
    const at = { nowSeconds: NOW };
    expect(receiptMatchesOffer(receiptAt(NOW - 3599), OFFER, [payer.address], at)).toBe(true);
    expect(receiptMatchesOffer(receiptAt(NOW - 3600), OFFER, [payer.address], at)).toBe(false);
    expect(receiptMatchesOffer(receiptAt(NOW - 3600), OFFER, [payer.address], { ...at, maxAgeSeconds: 7200 })).toBe(true);
    expect(receiptMatchesOffer(receiptAt(NOW - TWO_YEARS), OFFER, [payer.address], { ...at, maxAgeSeconds: Number.POSITIVE_INFINITY })).toBe(true);
    // The official helper's fourth argument: the maximum age alone (against the real clock).
    const now = Math.floor(Date.now() / 1000);
    const current = { ...OFFER, validUntil: now + 300 };
    expect(receiptMatchesOffer(receiptAt(now - 600), current, [payer.address], 60)).toBe(false);
    expect(receiptMatchesOffer(receiptAt(now - 600), current, [payer.address], 86_400)).toBe(true);
  });

  test("a receipt issued after the offer expired does not match it (the 300 s receiptContradictsOffer allows aside); validUntil 0 is none", () => {
    const at = { nowSeconds: NOW + 2000, maxAgeSeconds: 10_000 };
    expect(receiptMatchesOffer(receiptAt(OFFER.validUntil + 300), OFFER, [payer.address], at)).toBe(true);
    expect(receiptMatchesOffer(receiptAt(OFFER.validUntil + 301), OFFER, [payer.address], at)).toBe(false);
    expect(receiptMatchesOffer(receiptAt(OFFER.validUntil + 1500), { ...OFFER, validUntil: 0 }, [payer.address], at)).toBe(true);
  });

  test("resource URL, network and payer still have to match", () => {
    const at = { nowSeconds: NOW };
    expect(receiptMatchesOffer(receiptAt(NOW), OFFER, [payer.address.toLowerCase()], at)).toBe(true);
    expect(receiptMatchesOffer({ ...receiptAt(NOW), network: "eip155:1" }, OFFER, [payer.address], at)).toBe(false);
    expect(receiptMatchesOffer(receiptAt(NOW), OFFER, ["0x0000000000000000000000000000000000000001"], at)).toBe(false);
  });
});

describe("a receipt as a review proof has no age limit", () => {
  test("verifyReceipt sets none unless asked", async () => {
    const receipt = await createEip712Issuer({ privateKey: generatePrivateKey() }).signReceipt(receiptAt(NOW - TWO_YEARS));
    expect((await verifyReceipt(receipt, { nowSeconds: NOW })).ok).toBe(true);
    expect(await verifyReceipt(receipt, { nowSeconds: NOW, maxAgeSeconds: 3600 })).toMatchObject({ ok: false, code: "EXPIRED" });
  });

  test("a receipt two years older than the review still proves it, whatever age limit the caller's x402 options carry", async () => {
    const issuer = createEip712Issuer({ privateKey: generatePrivateKey() });
    const receipt = await issuer.signReceipt(receiptAt(NOW - TWO_YEARS));
    const trust = { endpointKeys: () => Promise.resolve([`did:pkh:eip155:1:${issuer.address!}`]) };
    const wrapper = { proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: receipt };
    const review = { attester: payer.address, subject: "did:web:api.example.com", time: BigInt(NOW) };
    for (const x402 of [undefined, { maxAgeSeconds: 3600 }, { maxAgeSeconds: 3600, nowSeconds: NOW }]) {
      expect(await checkReviewProof(wrapper, review, { trust, x402 })).toMatchObject({
        valid: true,
        reasons: [],
        signatureValid: true,
        provesPayment: true,
        signerTrust: { tier: 1 },
      });
    }
  });
});
