import { describe, expect, test } from "bun:test";
import type { HexString } from "../../ports/eas.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import { normalizeSubjectDid } from "../did/mod.ts";
import { createSubjectOf, subjectsToForget } from "./record_subject.ts";

const REVIEW = findSchemaByName("user-review")!;
const REVIEW_UID = `0x${"5".repeat(64)}` as HexString;
const subjectOf = createSubjectOf({ "user-review": REVIEW_UID });
const review = (subject: string) => {
  const data = encodeSchemaData(REVIEW.schema, { subject, version: "1", ratingValue: 5, reviewBody: "x", screenshotUrls: [], proofs: [] });
  if (!data.ok) throw new Error(data.message);
  return { schema: REVIEW_UID, data: data.value as HexString };
};

describe("createSubjectOf()", () => {
  test("a record's subject is read by the one subject rule the routes take", () => {
    expect(subjectOf(review("did:web:Shop.Example"))).toBe("did:web:shop.example");
    expect(subjectOf(review("shop.example"))).toBe("did:web:shop.example");
  });

  test("a subject no route can name names none: U+0000, other control characters, whitespace", () => {
    // U+0000 in a subject written straight to EAS stopped the index on PostgreSQL for good (its text refuses it).
    for (const subject of ["did:web:shop.example\u0000", "did:web:exa\tmple.com", "did:web:not a did", "did:web:a..b"]) {
      expect({ subject, named: subjectOf(review(subject)) }).toEqual({ subject, named: null });
    }
  });
});

describe("createSubjectOf(): a record's subject is read as the list reads it", () => {
  test("a fragment is not part of the subject: whitespace, NBSP or U+0000 in it leaves the subject named (the list lists it)", () => {
    for (const subject of ["did:web:shop.example#\tx", "did:web:shop.example#\u00a0", "did:web:shop.example#\u0000", "did:web:Shop.Example# key-1"]) {
      expect({ subject, named: subjectOf(review(subject)) }).toEqual({ subject, named: "did:web:shop.example" });
    }
    // Outside the fragment the one subject rule still holds: no whitespace, no query, one normal form.
    for (const subject of ["did:web:shop.example?x=1#\t", "did:web:www.www.shop.example#x", "did:web:shop.example\u200b", "did:web:sh\u043ep.example"]) {
      expect({ subject, named: subjectOf(review(subject)) }).toEqual({ subject, named: null });
    }
  });

  test("the rule names how subjects are read, so subjects stored by the earlier reading are stored again", () => {
    // The earlier rule's text: the schemas alone.
    expect(subjectOf.rule).not.toBe(JSON.stringify([[REVIEW_UID, REVIEW.schema]]));
    expect(createSubjectOf({ "user-review": REVIEW_UID }).rule).toBe(subjectOf.rule);
    expect(createSubjectOf({}).rule).not.toBe(subjectOf.rule);
  });
});

describe("subjectsToForget(): a change of rule carries what it makes wrong", () => {
  test("from v1 (the schemas alone) to v2 under the same schemas: only '' under them and subjects over 2,048 characters; anything else: every subject", () => {
    const v1 = JSON.stringify([[REVIEW_UID, REVIEW.schema]]);
    expect(subjectsToForget(v1, subjectOf.rule)).toEqual({ all: false, unnamedOf: [REVIEW_UID], longerThan: 2_048 });
    // No rule kept (subjects stored before rules were kept), other anchors, another reading, a text of no rule.
    const other = createSubjectOf({ "user-review": `0x${"6".repeat(64)}` }).rule;
    for (const kept of [undefined, JSON.stringify([]), createSubjectOf({}).rule, other, JSON.stringify({ reading: "record-subject-v9", schemas: [[REVIEW_UID, REVIEW.schema]] }), "{", "7"]) {
      expect({ kept, forget: subjectsToForget(kept, subjectOf.rule) }).toEqual({ kept, forget: { all: true } });
    }
  });

  test("v1 and v2 differ only where the narrow forgetting finds the row: v1 named none (''), or named one over the length", () => {
    const v1 = (subject: string) => {
      const named = normalizeSubjectDid(subject);
      return named.ok ? named.value : "";
    };
    const subjects = [
      "did:web:shop.example", "did:web:shop.example#\tx", "did:web:shop.example#\u00a0", "shop.example.", "did:web:shop.example..", "did:web:www.www.shop.example",
      "did:web:shop.example\u0000", "did:web:shop.example?x=1", "did:pkh:eip155:01:0x00000000000000000000000000000000000000c0", `example.com:${"a".repeat(2_036)}`,
      `example.com:${"a".repeat(2_030)}`, "did:key:z6MkShop#\n", " did:web:Shop.Example\t", "did:jwk:e30", "",
    ];
    for (const subject of subjects) {
      const was = v1(subject);
      const now = subjectOf(review(subject)) ?? "";
      if (was !== now) expect({ subject, found: was === "" || was.length > 2_048 }).toEqual({ subject, found: true });
    }
  });
});
