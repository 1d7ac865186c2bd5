import { describe, expect, test } from "bun:test";
import type { DidDocumentFetch } from "../../ports/discovery.ts";
import { fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { createDiscoverControllers } from "./controller_discovery.ts";
import { controllerKeysFromDidDocument, isLastingFetchFailure } from "./did_document.ts";
import { liveControllerEvidence } from "./live_evidence.ts";

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

describe("a did.json that could not be read now, and one read and unusable for good", () => {
  const url = "https://example.com/.well-known/did.json";
  const failed = (reason: Extract<DidDocumentFetch, { status: "unavailable" }>["reason"], httpStatus?: number): DidDocumentFetch =>
    ({ status: "unavailable", url, reason, ...(httpStatus === undefined ? {} : { httpStatus }) });

  test("isLastingFetchFailure(): content that can never be a DID document is lasting; a failed read, any status and a refused address are not", () => {
    for (const lasting of [failed("invalid-json"), failed("too-large"), failed("invalid-host"), failed("redirect")]) {
      expect({ lasting, is: isLastingFetchFailure(lasting) }).toEqual({ lasting, is: true });
    }
    // A 401, 403 or 421 is as often a WAF or a CDN's incident as the subject's answer; a refused address may be a
    // rebinding attempt (review of the lasting rule: both let a third party decide the answer).
    const now = [failed("timeout"), failed("network-error"), failed("tls-error"), failed("dns-failure"), failed("http-status", 500), failed("http-status", 429), failed("http-status", 408), failed("http-status"),
      failed("http-status", 403), failed("http-status", 401), failed("http-status", 421), failed("http-status", 410), failed("blocked-address")];
    for (const transient of now) expect({ transient, is: isLastingFetchFailure(transient) }).toEqual({ transient, is: false });
    expect(isLastingFetchFailure({ status: "not-found", url })).toBe(false);
  });

  test("discovery marks a lasting did.json fault `lasting`; live evidence leaves only a source unread now open", async () => {
    const discover = (didJson: DidDocumentFetch) =>
      createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher({ "example.com": didJson }), serviceDnsLabel: "omatrust" })("did:web:example.com");
    const controller = `did:pkh:eip155:1:${A}`;
    const bad = await discover(failed("invalid-json"));
    if (!bad.ok) throw new Error(bad.message);
    expect(bad.value.evidence[2]).toEqual({ kind: "did-json", status: "unavailable", location: url, keys: [], error: "DID document is not valid JSON", lasting: true });
    expect(liveControllerEvidence(controller, bad.value)).toEqual({ methods: [], unavailable: false });
    const wrong = await discover({ status: "ok", url, document: { id: "did:web:evil.com" } });
    if (!wrong.ok) throw new Error(wrong.message);
    expect(wrong.value.evidence[2]).toMatchObject({ status: "unavailable", error: "DID document id does not match the subject", lasting: true });
    expect(liveControllerEvidence(controller, wrong.value).unavailable).toBe(false);
    const down = await discover(failed("http-status", 502));
    if (!down.ok) throw new Error(down.message);
    expect(down.value.evidence[2]).toEqual({ kind: "did-json", status: "unavailable", location: url, keys: [], error: "HTTP 502" });
    expect(liveControllerEvidence(controller, down.value)).toEqual({ methods: [], unavailable: true });
    // A JWK Set alike: read and not a set is lasting.
    expect(liveControllerEvidence(controller, undefined, { status: "unavailable", location: "j", keys: [], lasting: true }).unavailable).toBe(false);
    expect(liveControllerEvidence(controller, undefined, { status: "unavailable", location: "j", keys: [] }).unavailable).toBe(true);
  });
});
