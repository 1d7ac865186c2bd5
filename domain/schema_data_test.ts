import { describe, expect, test } from "bun:test";
import { decodeSchemaData, deriveRecipient, encodeSchemaData } from "./schema_data.ts";
import { findSchemaByName } from "./schemas.ts";

const userReview = findSchemaByName("user-review")!.schema;

describe("encodeSchemaData()", () => {
  test("encodes a user review and decodes it back with big integers as strings", () => {
    const data = {
      subject: "did:web:example.com",
      version: "1.0.0",
      ratingValue: 5,
      reviewBody: "Great",
      screenshotUrls: [],
      proofs: ['{"proofType":"x402-receipt"}'],
    };
    const encoded = encodeSchemaData(userReview, data);
    expect(encoded.ok).toBe(true);
    const decoded = decodeSchemaData(userReview, encoded.ok ? encoded.value : "0x");
    expect(decoded).toEqual({ ok: true, value: { ...data, ratingValue: "5" } });
  });

  test("names the field that does not fit", () => {
    expect(encodeSchemaData(userReview, { subject: "x" })).toMatchObject({ ok: false, message: "version is required" });
    const bad = encodeSchemaData(userReview, {
      subject: "s", version: "1", ratingValue: "five", reviewBody: "", screenshotUrls: [], proofs: [],
    });
    expect(bad).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(!bad.ok && bad.message).toContain("ratingValue");
  });

  test("undecodable data is a failure value, not a throw", () => {
    expect(decodeSchemaData(userReview, "0x1234").ok).toBe(false);
  });
});

describe("deriveRecipient()", () => {
  test("hashes the normalized DID of a did: subject", () => {
    expect(deriveRecipient({ subject: "did:web:Example.COM" })).toEqual({
      ok: true,
      value: "0x173a347faed486bb69081ef673c6e52c03f57f3e",
    });
  });

  test("falls back to subjectDidHash, then recipient, then zero", () => {
    const hash = "0x505b0e657e7acabd2c14e517173a347faed486bb69081ef673c6e52c03f57f3e";
    expect(deriveRecipient({ subject: "plain", subjectDidHash: hash })).toEqual({
      ok: true,
      value: "0x173a347faed486bb69081ef673c6e52c03f57f3e",
    });
    const recipient = "0x1111111111111111111111111111111111111111";
    expect(deriveRecipient({ recipient })).toEqual({ ok: true, value: recipient });
    expect(deriveRecipient({ recipient: "nope" })).toEqual({ ok: true, value: `0x${"0".repeat(40)}` });
  });
});
