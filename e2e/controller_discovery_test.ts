import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";

const HOSTS = ["svc.test", "down.test", "other.test", "huge.test", "wrongid.test", "noid.test", "slow.test", "redirect.test", "badjson.test", "timeout.test", "tcp.test"];
/** The did.json fetch's total budget (decisions §8) and the resolver's per-attempt timeout times its two attempts. */
const DID_JSON_TIMEOUT_MS = 5_000;

let dns: DnsServer;
let https: HttpsServer;
/** Started with the default configuration: ALLOW_PRIVATE_NETWORK is not set. */
let stack: Stack;
/** The same service with ALLOW_PRIVATE_NETWORK=true, so the loopback test servers can be reached. */
let open: Service;
let base: string;
let did: string;

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  const leaf = await issueLeaf(HOSTS);
  https = await startHttpsServer({
    ...leaf,
    routes: async (request) => {
      const host = (request.headers.get("host") ?? "").split(":")[0];
      if (host === "down.test") return new Response("boom", { status: 500 });
      if (host === "huge.test") return new Response(JSON.stringify({ id: "x", pad: "a".repeat(70_000) }));
      if (host === "wrongid.test") return Response.json({ id: "did:web:evil.test", verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] });
      if (host === "noid.test") return Response.json({ verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] });
      if (host === "slow.test") {
        await Bun.sleep(DID_JSON_TIMEOUT_MS + 2_000);
        return Response.json({ id: `did:web:slow.test%3A${https.port}`, verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] });
      }
      if (host === "redirect.test") return new Response(null, { status: 302, headers: { location: "https://10.0.0.1/.well-known/did.json" } });
      if (host === "badjson.test") return new Response("{not json");
      if (host !== "svc.test") return new Response("nope", { status: 404 });
      return Response.json({
        id: did,
        verificationMethod: [
          { id: `${did}#evm`, type: "EcdsaSecp256k1RecoveryMethod2020", controller: did, blockchainAccountId: `eip155:1:${B}` },
          { id: `${did}#jwk`, type: "JsonWebKey2020", controller: did, publicKeyJwk: JWK },
        ],
      });
    },
  });
  did = `did:web:svc.test%3A${https.port}`;
  for (const name of HOSTS) dns.setA(name, ["127.0.0.1"]);
  dns.setTxt("_controllers.svc.test", [["v=1;controller=did:pkh:eip155:66238:", A]]);
  dns.setServfail("_omatrust.svc.test");
  // Nothing but the resolver: ALLOW_PRIVATE_NETWORK keeps its default.
  stack = await startStack({ env: { DNS_SERVERS: dns.address }, didJsonCa: ca.cert });
  open = await stack.restartService({ ALLOW_PRIVATE_NETWORK: "true" });
  base = open.url;
});
afterAll(async () => {
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

async function get(base: string, path: string) {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any>, cacheControl: res.headers.get("cache-control") };
}

describe("controller discovery against real DNS and HTTPS servers", () => {
  test("endpoint confirm merges DNS TXT (split strings) and did.json keys with their sources", async () => {
    const res = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(did)}`);
    expect(res.status).toBe(200);
    expect(res.body.domain).toBe("svc.test");
    expect(res.body.subject).toMatchObject({ canonical: `did:web:svc.test%3a${https.port}`, type: "did-web" });
    expect(res.body.evidence.map((e: any) => [e.kind, e.status, e.location])).toEqual([
      ["dns-txt", "found", "_controllers.svc.test"],
      ["dns-txt", "unavailable", "_omatrust.svc.test"],
      ["did-json", "found", `https://svc.test:${https.port}/.well-known/did.json`],
    ]);
    const keys = Object.fromEntries(res.body.controllerKeys.map((k: any) => [k.canonicalId, k]));
    expect(keys[`did:pkh:eip155:66238:${A}`]).toMatchObject({ sources: ["dns-txt"], basic: true });
    expect(keys[`did:pkh:eip155:1:${B}`]).toMatchObject({ sources: ["did-json"], basic: true });
    expect(keys[DID_JWK]).toMatchObject({ sources: ["did-json"], basic: true });
    expect(res.body).not.toHaveProperty("approvedIssuer");
  });

  test("controller confirm adds the wallet and the approved-issuer block", async () => {
    const res = await get(base, `/api/public/controller-confirm?subjectDid=${encodeURIComponent(did)}&walletDid=did:pkh:eip155:66238:${A}`);
    expect(res.status).toBe(200);
    expect(res.body.evidence[0]).toEqual({ kind: "account-wallet", status: "found", location: "request.walletDid", keys: [`did:pkh:eip155:66238:${A}`] });
    expect(res.body.controllerKeys.find((k: any) => k.canonicalId === `did:pkh:eip155:66238:${A}`).sources).toEqual(["dns-txt", "account-wallet"]);
    expect(res.body.approvedIssuer).toMatchObject({ status: "not-approved", checkedIdentifiers: [`did:pkh:eip155:66238:${A}`] });
    const none = await get(base, `/v1/controller-confirm?subjectDid=${encodeURIComponent(did)}`);
    expect(none.body.approvedIssuer).toEqual({ status: "not-configured", checkedIdentifiers: [], registryUrl: null });
  });

  test("NXDOMAIN and 404 are not-found, a 500 is unavailable", async () => {
    const missing = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(`did:web:other.test%3A${https.port}`)}`);
    expect(missing.body.evidence.map((e: any) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    // A host with no DNS records at all (NXDOMAIN for its TXT names and for its address) has nothing published.
    const ghost = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent("did:web:ghost.test")}`);
    expect(ghost.body.evidence.map((e: any) => [e.status, e.error])).toEqual([["not-found", undefined], ["not-found", undefined], ["not-found", undefined]]);
    const down = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(`did:web:down.test%3A${https.port}`)}`);
    expect(down.body.evidence[2]).toMatchObject({ status: "unavailable", error: "HTTP 500" });
    expect(JSON.stringify(down.body)).not.toContain("boom");
    // A view with a failed lookup is revalidated at every use by a shared cache, never held for the whole max-age.
    expect(missing.cacheControl).toMatch(/^public, max-age=[1-9][0-9]*, /);
    expect(down.cacheControl).toBe("public, no-cache");
    const wallet = await get(base, `/v1/controller-confirm?subjectDid=${encodeURIComponent(`did:web:down.test%3A${https.port}`)}`);
    expect([wallet.status, wallet.cacheControl]).toEqual([200, "public, no-cache"]);
  });

  test("huge, wrong-id, redirecting and invalid documents are unavailable, without upstream text", async () => {
    const cases: [string, string][] = [
      ["huge.test", "DID document exceeds 64 KiB"],
      ["wrongid.test", "DID document id does not match the subject"],
      ["noid.test", "DID document has no id"],
      ["redirect.test", "Redirects are not followed"],
      ["badjson.test", "DID document is not valid JSON"],
    ];
    for (const [host, error] of cases) {
      const subject = encodeURIComponent(`did:web:${host}%3A${https.port}`);
      const res = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${subject}`);
      expect(res.body.evidence[2]).toMatchObject({ kind: "did-json", status: "unavailable", keys: [], error });
      expect(res.body.controllerKeys).toEqual([]);
    }
  });

  test("DNS timeouts are unavailable and the sources are looked up in parallel", async () => {
    dns.setTimeout("_controllers.timeout.test");
    dns.setTimeout("_omatrust.timeout.test");
    try {
      const subject = encodeURIComponent(`did:web:timeout.test%3A${https.port}`);
      const before = dns.queries.length;
      const res = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${subject}`);
      expect(res.body.evidence.map((e: any) => [e.status, e.error])).toEqual([
        ["unavailable", "DNS lookup timed out"],
        ["unavailable", "DNS lookup timed out"],
        ["not-found", undefined],
      ]);
      // Each timed-out name costs two attempts. In parallel, both names are asked before either is asked again; one
      // after the other, a name's retry would come before the other name's first query. Order, not a clock, shows it.
      const timedOut = new Set(["_controllers.timeout.test", "_omatrust.timeout.test"]);
      const asked = dns.queries.slice(before).map((q) => q.name).filter((name) => timedOut.has(name));
      expect(asked).toHaveLength(4);
      expect(new Set(asked.slice(0, 2)).size).toBe(2);
    } finally {
      dns.clear("_controllers.timeout.test");
      dns.clear("_omatrust.timeout.test");
    }
  }, 20_000);

  test("a slow did.json is cut off at the fetch timeout; the DNS evidence still comes back", async () => {
    dns.setTxt("_controllers.slow.test", [[`v=1;controller=did:pkh:eip155:1:${B}`]]);
    const subject = encodeURIComponent(`did:web:slow.test%3A${https.port}`);
    const res = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${subject}`);
    // The server answers 2 s after the fetch's 5 s: "timed out" (not a document) is the cut-off, whatever the clock says.
    expect(res.body.evidence.map((e: any) => [e.kind, e.status])).toEqual([["dns-txt", "found"], ["dns-txt", "not-found"], ["did-json", "unavailable"]]);
    expect(res.body.evidence[2].error).toBe("DID document fetch timed out");
    expect(res.body.controllerKeys.map((k: any) => k.canonicalId)).toEqual([`did:pkh:eip155:1:${B}`]);
  }, 20_000);

  test("a truncated UDP answer is retried over TCP", async () => {
    dns.setTxt("_controllers.tcp.test", [[`v=1;controller=did:pkh:eip155:1:${B}`]]);
    const before = dns.queries.length;
    dns.setTruncateUdp(true);
    try {
      const res = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(`did:web:tcp.test%3A${https.port}`)}`);
      expect(res.body.evidence[0]).toMatchObject({ kind: "dns-txt", status: "found", keys: [`did:pkh:eip155:1:${B}`] });
      expect(res.body.evidence[2]).toMatchObject({ kind: "did-json", status: "not-found" });
    } finally {
      dns.setTruncateUdp(false);
    }
    const txt = dns.queries.slice(before).filter((q) => q.name === "_controllers.tcp.test").map((q) => q.transport);
    expect(txt).toEqual(["udp", "tcp"]);
  });

  test("the read-only views reuse a subject's answer for DISCOVERY_CACHE_SECONDS; the spelling does not matter", async () => {
    const subject = `did:web:svc.test%3A${https.port}`;
    const first = await get(base, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(subject)}`);
    const before = { dns: dns.queries.length, https: https.requests.length };
    const again = await get(base, `/api/public/controller-confirm?subjectDid=${encodeURIComponent(subject.toUpperCase().replace("DID:WEB:", "did:web:"))}`);
    expect(again.body.evidence.filter((e: any) => e.kind !== "account-wallet")).toEqual(first.body.evidence);
    expect(again.body.subject.input).toBe(subject.toUpperCase().replace("DID:WEB:", "did:web:"));
    expect({ dns: dns.queries.length, https: https.requests.length }).toEqual(before);
    // With the cache off every request looks afresh.
    const uncached = await stack.restartService({ ALLOW_PRIVATE_NETWORK: "true", DISCOVERY_CACHE_SECONDS: "0" });
    await get(uncached.url, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(subject)}`);
    const between = dns.queries.length;
    await get(uncached.url, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(subject)}`);
    expect(dns.queries.length).toBeGreaterThan(between);
  });

  test("the devnet witness wallet is an approved issuer in controller confirm", async () => {
    const witness = privateKeyToAccount(stack.devnet.keys.witness).address;
    const walletDid = `did:pkh:eip155:${stack.devnet.chainId}:${witness}`;
    const res = await get(base, `/v1/controller-confirm?subjectDid=${encodeURIComponent(did)}&walletDid=${walletDid}`);
    expect(res.status).toBe(200);
    expect(res.body.approvedIssuer).toMatchObject({ status: "approved", checkedIdentifiers: [walletDid, walletDid.toLowerCase()] });
    expect(res.body.approvedIssuer.registryUrl).toMatch(/\/v1\/trust-anchors$/);
  });

  test("a service started without ALLOW_PRIVATE_NETWORK refuses the loopback did.json host and never contacts it", async () => {
    const before = https.requests.length;
    const res = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(did)}`);
    expect(res.body.evidence[2]).toMatchObject({ kind: "did-json", status: "unavailable", error: "Host resolves to a non-public address" });
    // DNS evidence is still read; only the private address is refused.
    expect(res.body.evidence[0]).toMatchObject({ kind: "dns-txt", status: "found" });
    expect(https.requests.length).toBe(before);
  });

  test("bare domains are normalized; bad input is 400", async () => {
    const bare = await get(base, "/v1/controller-endpoint-confirm?subjectDid=Example.com");
    expect(bare.body.subject).toMatchObject({ input: "Example.com", canonical: "did:web:example.com", label: "example.com" });
    const www = await get(base, "/v1/controller-endpoint-confirm?subjectDid=WWW.Other.Test");
    expect(www.body.subject).toMatchObject({ input: "WWW.Other.Test", canonical: "did:web:other.test" });
    expect((await get(base, "/v1/controller-endpoint-confirm")).body.code).toBe("INVALID_INPUT");
    const bad = await get(base, "/v1/controller-endpoint-confirm?subjectDid=did:");
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_DID"]);
    const pkh = await get(base, `/v1/controller-endpoint-confirm?subjectDid=did:pkh:eip155:1:${A}`);
    expect(pkh.body.evidence.every((e: any) => e.status === "unsupported")).toBe(true);
    expect(pkh.body.warnings).toHaveLength(1);
  });

  test("lookups for one registrable domain are rate limited across subdomains and both confirm views", async () => {
    const limited = await stack.restartService({ ALLOW_PRIVATE_NETWORK: "true", DISCOVERY_DOMAIN_RATE_PER_MINUTE: "3" });
    const queriesFor = () => dns.queries.filter((q) => q.name.endsWith("flood.test")).length;
    const paths = [
      "/v1/controller-endpoint-confirm?subjectDid=a.flood.test",
      "/api/public/controller-confirm?subjectDid=did:web:b.flood.test",
      "/v1/controller-endpoint-confirm?subjectDid=did:web:c.flood.test",
    ];
    for (const path of paths) {
      const before = queriesFor();
      const res = await get(limited.url, path);
      expect(res.body.warnings).toEqual([]);
      // Two TXT names, and A and AAAA for the did.json host.
      expect(queriesFor() - before).toBe(4);
    }
    const before = queriesFor();
    const res = await get(limited.url, "/v1/controller-confirm?subjectDid=did:web:d.flood.test");
    expect(res.status).toBe(200);
    expect(queriesFor()).toBe(before);
    const error = "Lookups for flood.test are rate limited";
    expect(res.body.evidence).toEqual([
      { kind: "dns-txt", status: "unavailable", location: "_controllers.d.flood.test", keys: [], error },
      { kind: "dns-txt", status: "unavailable", location: "_omatrust.d.flood.test", keys: [], error },
      { kind: "did-json", status: "unavailable", location: "https://d.flood.test/.well-known/did.json", keys: [], error },
    ]);
    expect(res.body.warnings).toHaveLength(1);
    expect(res.body.warnings[0]).toMatch(/^Lookups for flood\.test are rate limited; retry in [0-9]+ s$/);
    // A subject seen within the minute is answered from the cache, without spending the budget.
    const seen = await get(limited.url, "/v1/controller-confirm?subjectDid=did:web:a.flood.test");
    expect(seen.body.warnings).toEqual([]);
    expect(seen.body.evidence.every((e: any) => e.error !== error)).toBe(true);
    expect(queriesFor()).toBe(before);
    // Another domain is not affected.
    expect((await get(limited.url, "/v1/controller-endpoint-confirm?subjectDid=did:web:calm.test")).body.warnings).toEqual([]);
  });
});
