import { describe, expect, test } from "bun:test";
import { controllerKeysFromDidDocument } from "./did_document.ts";

const A = "0x1111111111111111111111111111111111111111";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";

describe("controllerKeysFromDidDocument()", () => {
  test("takes blockchainAccountId with its own chain id and publicKeyJwk as did:jwk", () => {
    const doc = {
      id: "did:web:example.com",
      verificationMethod: [
        { id: "#a", type: "EcdsaSecp256k1RecoveryMethod2020", blockchainAccountId: `eip155:66238:${A}` },
        { id: "#b", type: "JsonWebKey2020", publicKeyJwk: { ...JWK, kid: "k1", alg: "ES256" } },
      ],
    };
    expect(controllerKeysFromDidDocument(doc, "did:web:example.com")).toEqual({ ok: true, value: [`did:pkh:eip155:66238:${A}`, DID_JWK] });
  });

  test("an id naming another DID or a non-object is invalid", () => {
    expect(controllerKeysFromDidDocument({ id: "did:web:evil.com" }, "did:web:example.com").ok).toBe(false);
    expect(controllerKeysFromDidDocument([], "did:web:example.com").ok).toBe(false);
  });

  test("a document without an id is invalid: the id must be the subject DID", () => {
    const doc = { verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] };
    expect(controllerKeysFromDidDocument(doc, "did:web:example.com")).toEqual({ ok: false, code: "INVALID_INPUT", message: "DID document has no id" });
  });
});
