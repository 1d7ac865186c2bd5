import { describe, expect, test } from "bun:test";
import { fakeAttestationIndex, fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import type { HexString } from "../../ports/eas.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { jwkToDidJwk } from "../did/mod.ts";
import { createDiscoverControllers, createJwksLookup, jwkThumbprint } from "../discovery/mod.ts";
import { computeSchemaUid, findSchemaByName } from "../schemas.ts";
import { createKeyStatus } from "./key_status.ts";

const CHAIN = 31337;
const SUBJECT = "did:web:shop.test";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK = (jwkToDidJwk(JWK) as { value: string }).value;
const uidOf = (name: string) => computeSchemaUid(findSchemaByName(name)!).toLowerCase() as HexString;
const anchors: TrustAnchors = {
  version: 1,
  updatedAt: "2026-01-01T00:00:00Z",
  widgetOrigins: [],
  chains: { [`eip155:${CHAIN}`]: { name: "devnet", easContract: "0x5FbDB2315678afecb367f032d93F642f64180aa3", schemas: { "controller-witness": uidOf("controller-witness"), "key-binding": uidOf("key-binding") } } },
  registries: [],
};

function setUp(txt: string[] | undefined, jwks: unknown) {
  const index = fakeAttestationIndex({ chainId: CHAIN });
  for (const name of ["controller-witness", "key-binding"]) index.register(uidOf(name), findSchemaByName(name)!.schema, findSchemaByName(name)!.revocable);
  const dns = fakeDnsResolver(txt === undefined ? {} : { "_controllers.shop.test": { status: "found", records: txt } });
  const docs = fakeDidDocumentFetcher({}, jwks === undefined ? {} : { "shop.test": { status: "ok", url: "https://shop.test/.well-known/jwks.json", document: jwks } });
  const clock = fakeClock();
  const discover = createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" });
  return { docs, status: createKeyStatus({ index, trustAnchors: anchors, clock, discover, jwks: createJwksLookup({ didDocuments: docs, clock }) }) };
}

describe("key status of a did:jwk key (decisions §25 evidence, §17 rules)", () => {
  test("a jkt=S256: thumbprint in DNS TXT is endpoint evidence from dns-txt: basic", async () => {
    const s = setUp([`v=1;jkt=S256:${jwkThumbprint(JWK)}`], undefined);
    expect(await s.status(SUBJECT, DID_JWK)).toMatchObject({ ok: true, value: { trustLevel: "basic", endpointEvidence: { found: true, sources: ["dns-txt"] } } });
    expect(s.docs.jwksFetches).toEqual([]);
  });

  test("the domain's JWK Set is endpoint evidence from jwks; other keys never fetch it", async () => {
    const s = setUp(undefined, { keys: [{ ...JWK, kid: "a" }] });
    expect(await s.status(SUBJECT, DID_JWK)).toMatchObject({ ok: true, value: { trustLevel: "basic", endpointEvidence: { found: true, sources: ["jwks"] } } });
    expect(await s.status(SUBJECT, "did:pkh:eip155:1:0x00000000000000000000000000000000000000b1")).toMatchObject({ ok: true, value: { trustLevel: "none" } });
    expect(s.docs.jwksFetches).toEqual(["shop.test"]);
  });

  test("neither: none, as before", async () => {
    expect(await setUp(undefined, undefined).status(SUBJECT, DID_JWK)).toMatchObject({ ok: true, value: { trustLevel: "none", endpointEvidence: { found: false, sources: [] } } });
  });
});
