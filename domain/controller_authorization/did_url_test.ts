import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher } from "../../ports/fakes/mod.ts";
import { jwkToDidJwk } from "../did/mod.ts";
import { createDidUrlResolver } from "./did_url.ts";

const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK = (jwkToDidJwk(JWK) as { value: string }).value;
const ACCOUNT = "0x00000000000000000000000000000000000000b1";

function setUp(document: unknown) {
  const docs = fakeDidDocumentFetcher({ "api.example.com": { status: "ok", url: "https://api.example.com/.well-known/did.json", document } });
  return { docs, resolve: createDidUrlResolver({ didDocuments: docs, clock: fakeClock() }) };
}

describe("createDidUrlResolver()", () => {
  const document = {
    id: "did:web:api.example.com",
    verificationMethod: [
      { id: "#key-1", type: "JsonWebKey2020", publicKeyJwk: { ...JWK, kid: "key-1", alg: "ES256" } },
      { id: "did:web:api.example.com#wallet", blockchainAccountId: `eip155:1:${ACCOUNT}` },
      { id: "#leaked", publicKeyJwk: { ...JWK, d: "c2VjcmV0" } },
    ],
  };

  test("a did:web key reference resolves to the durable did:jwk of the key the document names now, fetched once", async () => {
    const s = setUp(document);
    expect(await s.resolve("did:web:api.example.com#key-1")).toEqual({
      ok: true,
      value: { didUrl: "did:web:api.example.com#key-1", did: "did:web:api.example.com", fragment: "key-1", publicKeyJwk: JWK, controllerDid: DID_JWK },
    });
    expect(await s.resolve("did:web:api.example.com#wallet")).toMatchObject({ ok: true, value: { publicKeyJwk: null, controllerDid: `did:pkh:eip155:1:${ACCOUNT}` } });
    expect(s.docs.fetches).toEqual(["api.example.com"]);
  });

  test("a did:jwk's #0 is itself; a missing method is NOT_FOUND; a private key and a bare DID are refused", async () => {
    const s = setUp(document);
    expect(await s.resolve(`${DID_JWK}#0`)).toMatchObject({ ok: true, value: { controllerDid: DID_JWK, fragment: "0" } });
    expect(await s.resolve("did:web:api.example.com#key-9")).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(await s.resolve("did:web:api.example.com#leaked")).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(await s.resolve("did:web:api.example.com")).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await s.resolve("")).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await s.resolve("did:web:nowhere.example#key-1")).toMatchObject({ ok: false, code: "NOT_FOUND" });
  });
});
