import { describe, expect, test } from "bun:test";
import { fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { canonicalControllerKey } from "./controller_values.ts";
import { controllerTxtRecordFor, explainControllerTxtRecord, parseControllerTxtRecord } from "./txt_records.ts";

const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";

describe("parseControllerTxtRecord()", () => {
  test("reads every controller= value and normalizes it", () => {
    expect(parseControllerTxtRecord(`v=1;controller=did:pkh:EIP155:1:${A.toUpperCase().replace("0X", "0x")}; controller=eip155:66238:${B}`))
      .toEqual([`did:pkh:eip155:1:${A}`, `did:pkh:eip155:66238:${B}`]);
  });

  test("a v other than 1 yields nothing; no v is accepted", () => {
    expect(parseControllerTxtRecord(`v=2;controller=did:pkh:eip155:1:${A}`)).toEqual([]);
    expect(parseControllerTxtRecord(`controller=did:pkh:eip155:1:${A}`)).toEqual([`did:pkh:eip155:1:${A}`]);
  });

  test("keeps the case of did:jwk and drops non-key DIDs and garbage", () => {
    expect(parseControllerTxtRecord(`v=1;controller=${DID_JWK};controller=did:web:x.com;controller=nonsense;=x;controller=`))
      .toEqual([DID_JWK]);
    expect(canonicalControllerKey(`"did:key:z6MkTest"`)).toBe("did:key:z6MkTest");
  });
});


describe("what a person sees of a TXT answer", () => {
  test("explainControllerTxtRecord() names the keys read and why other values are ignored", () => {
    expect(explainControllerTxtRecord(`v=1;controller=did:pkh:eip155:1:${A};controller=did:web:x.com`)).toEqual({
      keys: [`did:pkh:eip155:1:${A}`],
      notes: ['"did:web:x.com" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id'],
    });
    expect(explainControllerTxtRecord(`v=2;controller=did:pkh:eip155:1:${A}`).notes[0]).toBe("The record says v=2; only v=1 is read, so it is ignored");
    expect(explainControllerTxtRecord("google-site-verification=abc").notes).toEqual([
      'A record without controller= is not a controller record: "google-site-verification=abc"',
    ]);
  });

  test("discovery repeats the TXT records and says why a name gave no key", async () => {
    const dns = fakeDnsResolver({
      "_controllers.a.com": { status: "found", records: [`v=1;controller=did:pkh:eip155:1:${A}`, "v=1;controller=0xnope"] },
      "_omatrust.a.com": { status: "nodata" },
    });
    const result = await createDiscoverControllers({ dns, didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" })("a.com");
    expect(result.ok && result.value.evidence[0]).toEqual({
      kind: "dns-txt",
      status: "found",
      location: "_controllers.a.com",
      keys: [`did:pkh:eip155:1:${A}`],
      records: [`v=1;controller=did:pkh:eip155:1:${A}`, "v=1;controller=0xnope"],
      notes: ['"0xnope" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id'],
    });
    expect(result.ok && result.value.evidence[1]).toMatchObject({ status: "not-found", notes: ["The name exists but has no TXT record"] });
    expect(result.ok && result.value.evidence[1]?.records).toBeUndefined();
  });

  test("controllerTxtRecordFor() gives the exact record to publish, or why there is none", () => {
    expect(controllerTxtRecordFor("www.Shop.example", `eip155:31337:${A}`)).toEqual({
      ok: true,
      value: { name: "_controllers.shop.example", value: `v=1;controller=did:pkh:eip155:31337:${A}` },
    });
    expect(controllerTxtRecordFor("did:pkh:eip155:1:" + A, `did:pkh:eip155:1:${A}`)).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(controllerTxtRecordFor("shop.example", "did:web:x.com")).toMatchObject({ ok: false, code: "INVALID_DID" });
  });
});
