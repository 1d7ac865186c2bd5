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

describe("decodeSchemaData(): data that reads one part twice", () => {
  const word = (n: number) => n.toString(16).padStart(64, "0");
  /** `string[] proofs` whose `count` offsets all name one string of `text`: what no encoder writes. */
  const shared = (count: number, text: string) => {
    const bytes = Buffer.from(text, "latin1").toString("hex");
    const offsets = Array.from({ length: count }, () => word(32 * count)).join("");
    return `0x${word(32)}${word(count)}${offsets}${word(text.length)}${bytes.padEnd(Math.ceil(bytes.length / 64) * 64, "0")}` as const;
  };

  test("a thousand offsets naming one string is undecodable, not a thousand strings (about 180 times its size as JSON)", () => {
    const data = shared(1_000, "\x01".repeat(1_000));
    expect(decodeSchemaData("string[] proofs", data)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    // Two offsets naming one string: still read twice.
    expect(decodeSchemaData("string[] proofs", shared(2, "x".repeat(40))).ok).toBe(false);
    // One offset: as written.
    expect(decodeSchemaData("string[] proofs", shared(1, "x".repeat(40)))).toEqual({ ok: true, value: { proofs: ["x".repeat(40)] } });
  });

  test("every schema's own encoding decodes, invalid UTF-8, nested arrays and trailing bytes included", () => {
    for (const name of ["user-review", "linked-identifier", "key-binding", "responsibility-claim", "security-assessment", "certification"]) {
      const schema = findSchemaByName(name)!.schema;
      const fields = schema.split(",").map((f) => f.trim().split(" ") as [string, string]);
      const data = Object.fromEntries(fields.map(([type, field]) => [
        field,
        type === "string" ? "ü€😀 text" : type === "string[]" ? ["a", "", "😀".repeat(40)] : type === "address" ? `0x${"11".repeat(20)}` : type === "bool" ? true : type.startsWith("bytes32") ? `0x${"22".repeat(32)}` : type.startsWith("uint8") ? 3 : 7n,
      ]));
      const encoded = encodeSchemaData(schema, data);
      expect({ name, ok: encoded.ok }).toEqual({ name, ok: true });
      const value = (encoded as { value: `0x${string}` }).value;
      expect({ name, ok: decodeSchemaData(schema, value).ok, trailing: decodeSchemaData(schema, `${value}${"00".repeat(32)}`).ok }).toEqual({ name, ok: true, trailing: true });
    }
    // A string of bytes that are not UTF-8 decodes (each bad byte one U+FFFD, never counted as more than it was).
    const latin = `0x${word(32)}${word(4)}${"ff".repeat(4).padEnd(64, "0")}` as const;
    expect(decodeSchemaData("string name", latin)).toEqual({ ok: true, value: { name: "\uFFFD".repeat(4) } });
  });
});
