import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { createRateLimiter } from "../rate_limit.ts";
import {
  canonicalControllerKey,
  controllerKeysFromDidDocument,
  createCachedDiscovery,
  createControllerConfirm,
  createDiscoverControllers,
  controllerTxtRecordFor,
  explainControllerTxtRecord,
  parseControllerTxtRecord,
  rateLimitedLookupError,
  UNSUPPORTED_SUBJECT_WARNING,
} from "./controller_discovery.ts";

const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
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

describe("createDiscoverControllers()", () => {
  test("merges DNS and did.json keys, marks them basic, reports each source", async () => {
    const dns = fakeDnsResolver({
      "_controllers.example.com": { status: "found", records: [`v=1;controller=did:pkh:eip155:66238:${A}`] },
      "_omatrust.example.com": { status: "servfail" },
    });
    const docs = fakeDidDocumentFetcher({
      "example.com": {
        status: "ok",
        url: "https://example.com/.well-known/did.json",
        document: { id: "did:web:example.com", verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] },
      },
    });
    const discover = createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" });
    const result = await discover("www.Example.com");
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.value.subject).toMatchObject({ input: "www.Example.com", canonical: "did:web:example.com", type: "did-web" });
    expect(result.value.domain).toBe("example.com");
    expect(result.value.controllerKeys).toEqual([
      { id: `did:pkh:eip155:66238:${A}`, canonicalId: `did:pkh:eip155:66238:${A}`, label: "0x1111...1111", sources: ["dns-txt", "did-json"], basic: true },
    ]);
    expect(result.value.evidence.map((e) => [e.kind, e.status, e.location])).toEqual([
      ["dns-txt", "found", "_controllers.example.com"],
      ["dns-txt", "unavailable", "_omatrust.example.com"],
      ["did-json", "found", "https://example.com/.well-known/did.json"],
    ]);
    expect(result.value.warnings).toEqual([]);
  });

  test("NXDOMAIN and 404 are not-found; a timeout and a 500 are unavailable", async () => {
    const dns = fakeDnsResolver({ "_controllers.a.com": { status: "timeout" }, "_omatrust.a.com": { status: "nodata" } });
    const docs = fakeDidDocumentFetcher({ "a.com": { status: "unavailable", reason: "http-status", httpStatus: 500, url: "u" } });
    const result = await createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" })("did:web:a.com");
    expect(result.ok && result.value.evidence.map((e) => e.status)).toEqual(["unavailable", "not-found", "unavailable"]);
    expect(result.ok && result.value.evidence[2]?.error).toBe("HTTP 500");
  });

  test("a did.json without an id is unavailable and its keys are not taken", async () => {
    const docs = fakeDidDocumentFetcher({
      "a.com": { status: "ok", url: "https://a.com/.well-known/did.json", document: { verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] } },
    });
    const result = await createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: docs, serviceDnsLabel: "omatrust" })("did:web:a.com");
    expect(result.ok && result.value.evidence[2]).toEqual({
      kind: "did-json",
      status: "unavailable",
      location: "https://a.com/.well-known/did.json",
      keys: [],
      error: "DID document has no id",
    });
    expect(result.ok && result.value.controllerKeys).toEqual([]);
  });

  test("subject.input is the subject as supplied; canonical and label come from the normalized DID", async () => {
    const discover = createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });
    const result = await discover("Example.com");
    expect(result.ok && result.value.subject).toEqual({
      input: "Example.com",
      canonical: "did:web:example.com",
      label: "example.com",
      type: "did-web",
      source: "did-web",
    });
  });

  test("a domain's lookup budget is shared across its subdomains; past it the domain is not contacted", async () => {
    const clock = fakeClock(0);
    const dns = fakeDnsResolver();
    const docs = fakeDidDocumentFetcher();
    const discover = createDiscoverControllers({
      dns,
      didDocuments: docs,
      serviceDnsLabel: "omatrust",
      domainRate: createRateLimiter(clock, { capacity: 3, perMinute: 3 }),
    });
    for (const sub of ["a", "b", "c"]) expect((await discover(`${sub}.victim.co.uk`)).ok).toBe(true);
    const lookups = dns.lookups.length;
    const fetches = docs.fetches.length;
    const limited = await discover("did:web:d.victim.co.uk");
    expect(dns.lookups.length).toBe(lookups);
    expect(docs.fetches.length).toBe(fetches);
    const error = rateLimitedLookupError("victim.co.uk");
    expect(error).toBe("Lookups for victim.co.uk are rate limited");
    expect(limited.ok && limited.value).toMatchObject({
      domain: "d.victim.co.uk",
      controllerKeys: [],
      evidence: [
        { kind: "dns-txt", status: "unavailable", location: "_controllers.d.victim.co.uk", keys: [], error },
        { kind: "dns-txt", status: "unavailable", location: "_omatrust.d.victim.co.uk", keys: [], error },
        { kind: "did-json", status: "unavailable", location: "https://d.victim.co.uk/.well-known/did.json", keys: [], error },
      ],
      warnings: [`${error}; retry in 20 s`],
    });
    // A caller that must answer 429 (the witness) gets a refusal instead.
    expect(await discover("did:web:victim.co.uk", { refuseWhenRateLimited: true })).toMatchObject({
      ok: false,
      code: "RATE_LIMITED",
      retryAfterSeconds: 20,
    });
    // Another domain has its own budget, and the budget refills.
    expect((await discover("did:web:other.co.uk")).ok && dns.lookups.length).toBe(lookups + 2);
    clock.set(20_000);
    const later = await discover("did:web:e.victim.co.uk");
    expect(later.ok && later.value.evidence.map((e) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
  });

  test("a non-did:web subject makes no lookup and is unsupported with a warning", async () => {
    const dns = fakeDnsResolver();
    const docs = fakeDidDocumentFetcher();
    const result = await createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" })(`did:pkh:eip155:1:${A}`);
    expect(result.ok && result.value).toMatchObject({
      domain: null,
      controllerKeys: [],
      evidence: [
        { kind: "dns-txt", status: "unsupported", location: "did:web only", keys: [] },
        { kind: "did-json", status: "unsupported", location: "did:web only", keys: [] },
      ],
      warnings: [UNSUPPORTED_SUBJECT_WARNING],
    });
    expect(dns.lookups).toEqual([]);
    expect(docs.fetches).toEqual([]);
  });

  test("missing subject is INVALID_INPUT; an unnormalizable one INVALID_DID", async () => {
    const discover = createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });
    expect(await discover("")).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await discover("did:")).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await discover("did:web:")).toMatchObject({ ok: false, code: "INVALID_DID" });
  });

  test("a did:web whose host is an IP address is INVALID_DID, and nothing is looked up (issue 33)", async () => {
    const dns = fakeDnsResolver();
    const docs = fakeDidDocumentFetcher();
    const discover = createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" });
    for (const subject of ["did:web:127.0.0.1", "did:web:0", "did:web:1.2.3", "2130706433", "did:web:0x7f.1", "did:web:%5B%3A%3A1%5D", "did:web:10.0.0.1%3A8443"]) {
      expect({ subject, answer: await discover(subject) }).toEqual({ subject, answer: { ok: false, code: "INVALID_DID", message: "Invalid subjectDid", details: "did:web host is not a domain name" } });
    }
    expect(dns.lookups).toEqual([]);
    expect(docs.fetches).toEqual([]);
    expect(controllerTxtRecordFor("127.0.0.1", `did:pkh:eip155:1:${A}`)).toMatchObject({ ok: false, code: "INVALID_DID" });
  });
});

describe("createCachedDiscovery()", () => {
  function setup(options: { capacity?: number; maxEntries?: number } = {}) {
    const clock = fakeClock(0);
    const dns = fakeDnsResolver({ "_omatrust.down.example": { status: "servfail" } });
    const docs = fakeDidDocumentFetcher();
    const inner = createDiscoverControllers({
      dns,
      didDocuments: docs,
      serviceDnsLabel: "omatrust",
      domainRate: createRateLimiter(clock, { capacity: options.capacity ?? 100, perMinute: options.capacity ?? 100 }),
    });
    const discover = createCachedDiscovery(inner, { clock }, { maxEntries: options.maxEntries });
    return { clock, dns, docs, discover };
  }

  test("answers one subject from one lookup for 60 s, each caller with its own input, then looks again", async () => {
    const { clock, dns, discover } = setup();
    const first = await discover("Example.com");
    const second = await discover("did:web:www.example.com");
    expect(dns.lookups.length).toBe(2);
    expect(first.ok && first.value.subject.input).toBe("Example.com");
    expect(second.ok && second.value.subject.input).toBe("did:web:www.example.com");
    expect(second.ok && second.value.evidence).toEqual(first.ok ? first.value.evidence : []);
    clock.set(59_999);
    await discover("example.com");
    expect(dns.lookups.length).toBe(2);
    clock.set(60_000);
    await discover("example.com");
    expect(dns.lookups.length).toBe(4);
  });

  test("an answer with an unavailable source is kept 10 s only; concurrent lookups of one subject share one", async () => {
    const { clock, dns, discover } = setup();
    await Promise.all([discover("down.example"), discover("did:web:down.example"), discover("DOWN.example")]);
    expect(dns.lookups.length).toBe(2);
    clock.set(9_999);
    await discover("down.example");
    expect(dns.lookups.length).toBe(2);
    clock.set(10_000);
    await discover("down.example");
    expect(dns.lookups.length).toBe(4);
  });

  test("when the domain's budget refuses a lookup, the last real answer stands in with its age; a refusal is never kept", async () => {
    const { clock, dns, discover } = setup({ capacity: 1 });
    await discover("a.victim.example");
    clock.set(30_000);
    const refused = await discover("b.victim.example");
    expect(refused.ok && refused.value.evidence.map((e) => e.status)).toEqual(["unavailable", "unavailable", "unavailable"]);
    clock.set(61_000);
    const b = await discover("b.victim.example");
    expect(b.ok && b.value.evidence.map((e) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    const lookups = dns.lookups.length;
    const stale = await discover("a.victim.example");
    expect(dns.lookups.length).toBe(lookups);
    expect(stale.ok && stale.value.evidence.map((e) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    expect(stale.ok && stale.value.warnings).toEqual([`${rateLimitedLookupError("victim.example")}: this evidence was observed 61 s ago`]);
  });

  test("the witness's refusing lookups bypass it, and it holds at most maxEntries subjects", async () => {
    const { dns, discover } = setup({ maxEntries: 2 });
    await discover("one.example");
    await discover("one.example", { refuseWhenRateLimited: true });
    expect(dns.lookups.length).toBe(4);
    await discover("two.example");
    await discover("three.example");
    await discover("one.example");
    expect(dns.lookups.length).toBe(10);
  });
});

describe("createControllerConfirm()", () => {
  const anchors = (issuers: TrustAnchors["registries"][number]["issuers"]): TrustAnchors => ({
    version: 1,
    updatedAt: "",
    widgetOrigins: [],
    chains: {},
    registries: [{ type: "approved-issuers", issuers }],
  });
  const discover = createDiscoverControllers({ dns: fakeDnsResolver(), didDocuments: fakeDidDocumentFetcher(), serviceDnsLabel: "omatrust" });

  test("adds the wallet as an account-wallet key and checks the registry", async () => {
    const confirm = createControllerConfirm({
      discover,
      trustAnchors: anchors([{ address: A, label: "Issuer", schemas: ["controller-witness"], status: "active", validFrom: "2020-01-01T00:00:00Z" }]),
      clock: fakeClock(),
      registryUrl: "http://svc/v1/trust-anchors",
    });
    const approved = await confirm("did:web:x.com", `did:pkh:eip155:66238:${A}`);
    expect(approved.ok && approved.value.approvedIssuer).toEqual({
      status: "approved",
      checkedIdentifiers: [`did:pkh:eip155:66238:${A}`],
      registryUrl: "http://svc/v1/trust-anchors",
    });
    expect(approved.ok && approved.value.evidence[0]).toEqual({
      kind: "account-wallet", status: "found", location: "request.walletDid", keys: [`did:pkh:eip155:66238:${A}`],
    });
    expect(approved.ok && approved.value.controllerKeys[0]).toMatchObject({ sources: ["account-wallet"], basic: false });
    const other = await confirm("did:web:x.com", `did:pkh:eip155:66238:${B}`);
    expect(other.ok && other.value.approvedIssuer.status).toBe("not-approved");
  });

  test("no wallet or no registry is not-configured; a revoked issuer is not approved", async () => {
    const confirm = createControllerConfirm({ discover, trustAnchors: anchors([]), clock: fakeClock(), registryUrl: "u" });
    expect((await confirm("did:web:x.com", undefined)).ok && (await confirm("did:web:x.com", undefined))).toMatchObject({
      value: { approvedIssuer: { status: "not-configured", checkedIdentifiers: [], registryUrl: null } },
    });
    const revoked = createControllerConfirm({
      discover,
      trustAnchors: anchors([{ address: A, label: "", schemas: [], status: "revoked", revokedAt: "2001-01-01T00:00:00Z" }]),
      clock: fakeClock(),
      registryUrl: "u",
    });
    const r = await revoked("did:web:x.com", A);
    expect(r.ok && r.value.approvedIssuer.status).toBe("not-approved");
  });
});

describe("what a person sees of a TXT answer", () => {
  test("explainControllerTxtRecord() names the keys read and why other values are ignored", () => {
    expect(explainControllerTxtRecord(`v=1;controller=did:pkh:eip155:1:${A};controller=did:web:x.com`)).toEqual({
      keys: [`did:pkh:eip155:1:${A}`],
      notes: ['"did:web:x.com" is not a did:pkh, did:ethr, did:key, did:jwk or CAIP-10 account id'],
      valuesRead: 2,
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
