import { describe, expect, test } from "bun:test";
import { computeSchemaUid, findSchemaByName, KNOWN_SCHEMAS } from "./schemas.ts";

// Reference §3.1: the nine schemas with the UIDs the public registry computes for them.
const REFERENCE_UIDS: Record<string, string> = {
  "user-review": "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47",
  "user-review-response": "0x53498ae8ae4928a8789e09663f44d6e3c77daeb703c3765aa184b958c3ca41be",
  "linked-identifier": "0x56d1e74383cbcfb89e23b25f444a081951a5d2fa7876b159da082b8cbd967af8",
  "linked-identifier-legacy": "0x26e21911c55587925afee4b17839ab091e9829321b4a4e1658c497eb0088b453",
  "key-binding": "0x807b38ce9aa23fdde4457de01db9c5e8d6ec7c8feebee242e52be70847b7b966",
  "controller-witness": "0xc81419f828755c0be2c49091dcad0887b5ca7342316dfffb4314aadbf8205090",
  "security-assessment": "0x67bcc2424e3721d56e85bb650c6aba8bf7f1711d9c9a434c3afae3a22d23eed7",
  "certification": "0x2b0d1100f7943c0c2ea29e35c1286bd860fa752124e035cafb503bb83f234805",
  "responsibility-claim": "0x877911f942a77a527661b288f8b0f6703fe461286bbf2e4a71967e2f2ec1b651",
};

describe("KNOWN_SCHEMAS", () => {
  test("holds exactly the nine schemas of the reference", () => {
    expect(KNOWN_SCHEMAS.map((s) => s.name).sort()).toEqual(Object.keys(REFERENCE_UIDS).sort());
  });

  test("computeSchemaUid() gives the reference UID for each type string and revocability", () => {
    for (const definition of KNOWN_SCHEMAS) {
      expect({ name: definition.name, uid: computeSchemaUid(definition) }).toEqual({
        name: definition.name,
        uid: REFERENCE_UIDS[definition.name] as `0x${string}`,
      });
    }
  });

  test("a different revocability is a different schema", () => {
    const review = findSchemaByName("user-review")!;
    expect(computeSchemaUid({ ...review, revocable: true })).not.toBe(REFERENCE_UIDS["user-review"]);
  });
});
