import { describe, expect, test } from "bun:test";
import { fakeClock, fakeDidDocumentFetcher, fakeDnsResolver } from "../../ports/fakes/mod.ts";
import { DID_WEB_NO_LOCATION } from "../did/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createDiscoverControllers, HOST_DNS_WARNING, UNSUPPORTED_SUBJECT_WARNING } from "./controller_discovery.ts";
import { rateLimitedLookupError } from "./discovery_record.ts";
import { controllerTxtRecordFor } from "./txt_records.ts";

const A = "0x1111111111111111111111111111111111111111";

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

  test("a did:web with a path: its host's DNS names the host's controllers, not its own; its did.json is its evidence", async () => {
    const B = "0x2222222222222222222222222222222222222222";
    const dns = fakeDnsResolver({ "_controllers.host.example": { status: "found", records: [`v=1;controller=did:pkh:eip155:1:${A}`] } });
    const docs = fakeDidDocumentFetcher({
      "host.example": {
        status: "ok",
        url: "https://host.example/users/alice/did.json",
        document: { id: "did:web:host.example:users:alice", verificationMethod: [{ blockchainAccountId: `eip155:1:${B}` }] },
      },
    });
    const result = await createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" })("did:web:host.example:users:alice");
    if (!result.ok) throw new Error(result.message);
    // Before, the host's key A was a controller of every path under it (and was witnessed for alice).
    expect(result.value.controllerKeys.map((k) => k.canonicalId)).toEqual([`did:pkh:eip155:1:${B.toLowerCase()}`]);
    expect(result.value.evidence.map((e) => [e.kind, e.status])).toEqual([["dns-txt", "unsupported"], ["dns-txt", "unsupported"], ["did-json", "found"]]);
    expect(result.value.warnings).toEqual([HOST_DNS_WARNING]);
    expect(dns.lookups).toEqual([]);
  });

  test("NXDOMAIN and 404 are not-found; a timeout and a 500 are unavailable", async () => {
    const dns = fakeDnsResolver({ "_controllers.a.com": { status: "timeout" }, "_omatrust.a.com": { status: "nodata" } });
    const docs = fakeDidDocumentFetcher({ "a.com": { status: "unavailable", reason: "http-status", httpStatus: 500, url: "u" } });
    const result = await createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" })("did:web:a.com");
    expect(result.ok && result.value.evidence.map((e) => e.status)).toEqual(["unavailable", "not-found", "unavailable"]);
    expect(result.ok && result.value.evidence[2]?.error).toBe("HTTP 500");
  });

  test("a did.json without an id is unavailable for good (lasting) and its keys are not taken", async () => {
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
      lasting: true,
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
      expect({ subject, answer: await discover(subject) }).toEqual({ subject, answer: { ok: false, code: "INVALID_DID", message: "Invalid subjectDid", details: DID_WEB_NO_LOCATION } });
    }
    expect(dns.lookups).toEqual([]);
    expect(docs.fetches).toEqual([]);
    expect(controllerTxtRecordFor("127.0.0.1", `did:pkh:eip155:1:${A}`)).toMatchObject({ ok: false, code: "INVALID_DID" });
  });
});

describe("every controller value of a source counts (decisions §8)", () => {
  test("70 TXT records, 70 values in one record and 70 verification methods: all 210 keys, none dropped, no note of a cap", async () => {
    const address = (i: number) => `0x${i.toString(16).padStart(40, "0")}`;
    const dns = fakeDnsResolver({
      "_controllers.many.example": { status: "found", records: Array.from({ length: 70 }, (_, i) => `v=1;controller=did:pkh:eip155:1:${address(i + 1)}`) },
      "_omatrust.many.example": { status: "found", records: [`v=1;${Array.from({ length: 70 }, (_, i) => `controller=eip155:1:${address(i + 101)}`).join(";")}`] },
    });
    const docs = fakeDidDocumentFetcher({
      "many.example": {
        status: "ok",
        url: "https://many.example/.well-known/did.json",
        document: { id: "did:web:many.example", verificationMethod: Array.from({ length: 70 }, (_, i) => ({ blockchainAccountId: `eip155:1:${address(i + 201)}` })) },
      },
    });
    const result = await createDiscoverControllers({ dns, didDocuments: docs, serviceDnsLabel: "omatrust" })("did:web:many.example");
    if (!result.ok) throw new Error(result.message);
    // Before, each source stopped at 64: the 65th to 70th of each were missing, and the witness said "not confirmed".
    expect(result.value.evidence.map((e) => [e.location, e.keys.length])).toEqual([
      ["_controllers.many.example", 70],
      ["_omatrust.many.example", 70],
      ["https://many.example/.well-known/did.json", 70],
    ]);
    expect(result.value.controllerKeys).toHaveLength(210);
    for (const last of [70, 170, 270]) {
      expect(result.value.controllerKeys.some((k) => k.canonicalId === `did:pkh:eip155:1:${address(last)}`)).toBe(true);
    }
    expect(result.value.evidence.flatMap((e) => e.notes ?? []).filter((n) => /first|read/.test(n))).toEqual([]);
  });
});
