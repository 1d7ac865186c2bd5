import { describe, expect, test } from "bun:test";
import { fail, ok } from "../result.ts";
import { buildReviewData, buildReviewResponseData, supersedingReview } from "./reviews.ts";

const receiptProof = { proofType: "x402-receipt", proofPurpose: "commercial-tx", proofObject: { format: "eip712", payload: {} } };

describe("buildReviewData()", () => {
  test("normalizes the subject and stringifies each proof", () => {
    const built = buildReviewData({ subject: "WWW.Shop.Example", ratingValue: 4, reviewBody: "Good", proofs: [receiptProof] });
    expect(built).toEqual(ok({
      subject: "did:web:shop.example",
      version: "1",
      ratingValue: 4,
      reviewBody: "Good",
      screenshotUrls: [],
      proofs: [JSON.stringify(receiptProof)],
    }));
  });

  test("refuses bad input with the field named", () => {
    const base = { subject: "did:web:shop.example", ratingValue: 5 };
    const cases: [Parameters<typeof buildReviewData>[0], string][] = [
      [{ ...base, subject: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" }, "subject must be the service's did:web or its contract's did:pkh"],
      [{ ...base, ratingValue: 0 }, "ratingValue must be an integer from 1 to 5"],
      [{ ...base, ratingValue: 4.5 }, "ratingValue must be an integer from 1 to 5"],
      [{ ...base, reviewBody: "x".repeat(501) }, "reviewBody must be text of at most 500 characters"],
      [{ ...base, screenshotUrls: Array(11).fill("https://a.example/s.png") }, "screenshotUrls must hold at most 10 URLs"],
      [{ ...base, screenshotUrls: ["javascript:alert(1)"] }, "screenshotUrls must be http(s) URLs"],
      [{ ...base, proofs: [{ ...receiptProof, proofType: "pop-jws" }] }, "proofs: proofType must be one of x402-receipt, x402-offer, tx-interaction, tx-encoded-value"],
      [{ ...base, proofs: [{ ...receiptProof, proofPurpose: "shared-control" }] }, "proofs: proofPurpose must be commercial-tx"],
    ];
    for (const [draft, message] of cases) {
      const result = buildReviewData(draft);
      expect(result.ok ? "ok" : result.message).toBe(message);
    }
    expect(buildReviewData({ ...base, reviewBody: "é".repeat(500) }).ok).toBe(true);
  });
});

describe("buildReviewResponseData()", () => {
  const uid = `0x${"ab".repeat(32)}`;
  test("the subject is the reviewer's did:pkh and refUID the review", () => {
    expect(buildReviewResponseData({ reviewerDid: "did:pkh:eip155:1:0xABCDEF0000000000000000000000000000000001", reviewUid: uid, responseBody: "Thanks" }))
      .toEqual(ok({ subject: "did:pkh:eip155:1:0xabcdef0000000000000000000000000000000001", refUID: uid, responseBody: "Thanks" }));
  });
  test("refuses a non-pkh reviewer, a bad uid and an empty or long body", () => {
    expect(buildReviewResponseData({ reviewerDid: "did:web:x.example", reviewUid: uid, responseBody: "x" }))
      .toEqual(fail("INVALID_DID", "reviewerDid must be the reviewer's did:pkh"));
    expect(buildReviewResponseData({ reviewerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001", reviewUid: `0x${"0".repeat(64)}`, responseBody: "x" }).ok).toBe(false);
    expect(buildReviewResponseData({ reviewerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001", reviewUid: uid, responseBody: " " }).ok).toBe(false);
    expect(buildReviewResponseData({ reviewerDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001", reviewUid: uid, responseBody: "x".repeat(501) }).ok).toBe(false);
  });
});

describe("supersedingReview()", () => {
  const head = (uid: string, attester: string, subject: string, time: bigint, position = 0n) => ({ uid, attester, subject, time, position });
  test("the newest review of the same attester about the same service counts", () => {
    const first = head("0x01", "0xAA", "did:web:shop.example", 10n);
    const second = head("0x02", "0xaa", "did:web:WWW.shop.example", 20n);
    const otherAttester = head("0x03", "0xbb", "did:web:shop.example", 30n);
    const otherService = head("0x04", "0xaa", "did:web:else.example", 40n);
    expect(supersedingReview(first, [first, second, otherAttester, otherService])).toBe(second);
    expect(supersedingReview(second, [first, second, otherAttester, otherService])).toBeUndefined();
    // Same second: chain order decides, whatever the uids.
    const later = head("0x00", "0xaa", "did:web:shop.example", 20n, 7n);
    expect(supersedingReview(second, [later])).toBe(later);
    expect(supersedingReview(later, [second])).toBeUndefined();
  });
});
