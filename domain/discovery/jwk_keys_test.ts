import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { jwkToDidJwk } from "../did/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { explainControllerTxtRecord, parseJktTxtRecord } from "./txt_records.ts";
import { controllerKeysFromJwks, jwkThumbprint } from "./jwk_keys.ts";
import { createJwksLookup } from "./jwks_lookup.ts";
import { liveControllerEvidence } from "./live_evidence.ts";

const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK = (jwkToDidJwk(JWK) as { value: string }).value;
const JKT = jwkThumbprint(JWK)!;

describe("jkt= in DNS TXT", () => {
  test("parseJktTxtRecord() reads S256 thumbprints of a v=1 record only", () => {
    expect(parseJktTxtRecord(`v=1;jkt=S256:${JKT};controller=did:pkh:eip155:1:0x00000000000000000000000000000000000000b1`)).toEqual([JKT]);
    expect(parseJktTxtRecord(`v=2;jkt=S256:${JKT}`)).toEqual([]);
    expect(parseJktTxtRecord("v=1;jkt=S384:abc;jkt=S256:short")).toEqual([]);
    expect(explainControllerTxtRecord(`v=1;jkt=S256:${JKT}`).notes).toEqual([]);
  });

  test("discovery reports the thumbprints of a name, and the live evidence of a did:jwk reads them as dns", async () => {
    const dns = fakeDnsResolver({ "_controllers.shop.test": { status: "found", records: [`v=1;jkt=S256:${JKT}`] } });
    const discover = createDiscoverControllers({ dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });
    const found = await discover("did:web:shop.test");
    expect(found.ok && found.value.evidence[0]).toMatchObject({ kind: "dns-txt", status: "found", keys: [], thumbprints: [JKT] });
    expect(found.ok && found.value.evidence[1]?.thumbprints).toBeUndefined();
    expect(liveControllerEvidence(DID_JWK, found.ok ? found.value : undefined)).toEqual({ methods: ["dns"], unavailable: false });
  });
});

describe("JWK Sets", () => {
  test("controllerKeysFromJwks() keeps public keys as did:jwk, skips private and unknown ones", () => {
    expect(controllerKeysFromJwks({ keys: [{ ...JWK, kid: "a" }, { ...JWK, d: "eA" }, { kty: "oct", k: "eA" }] })).toEqual([DID_JWK]);
    expect(controllerKeysFromJwks([])).toBeUndefined();
  });

  test("controllerKeysFromJwks() reads every key of the set: the 70th counts as the first (no cap of 64)", () => {
    const keys = Array.from({ length: 70 }, (_, i) => ({ kty: "OKP", crv: "Ed25519", x: `${"A".repeat(41)}${String(i).padStart(2, "0")}` }));
    const read = controllerKeysFromJwks({ keys: [...keys, keys[0]] });
    expect(read).toHaveLength(70);
    expect(read?.[69]).toBe((jwkToDidJwk(keys[69]!) as { value: string }).value);
  });

  test("createJwksLookup() spends the domain's budget, keeps answers, never keeps a refusal", async () => {
    const docs = fakeDidDocumentFetcher({}, { "shop.test": { status: "ok", url: "https://shop.test/.well-known/jwks.json", document: { keys: [JWK] } } });
    const clock = fakeClock();
    const lookup = createJwksLookup({ didDocuments: docs, clock, domainRate: createRateLimiter(clock, { capacity: 1, perMinute: 1 }), freshMs: 60_000 });
    expect(await lookup("did:web:shop.test")).toEqual({ status: "found", location: "https://shop.test/.well-known/jwks.json", keys: [DID_JWK] });
    expect((await lookup("did:web:shop.test")).status).toBe("found");
    expect((await lookup("did:web:other.shop.test")).status).toBe("unavailable");
    expect(docs.jwksFetches).toEqual(["shop.test"]);
    expect(await lookup("did:pkh:eip155:1:0x00000000000000000000000000000000000000b1")).toMatchObject({ status: "unsupported" });
    // The host's JWK Set is the host's: a did:web with a path is not looked up there (its did.json is its evidence).
    expect(await lookup("did:web:shop.test:users:alice")).toMatchObject({ status: "unsupported" });
    expect(docs.jwksFetches).toEqual(["shop.test"]);
  });
});
