import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";

const A = "0x1111111111111111111111111111111111111111";
const B = "0x2222222222222222222222222222222222222222";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";

let dns: DnsServer;
let https: HttpsServer;
let stack: Stack;
let blocked: Stack;
let did: string;

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  const leaf = await issueLeaf(["svc.test", "down.test", "other.test", "huge.test", "wrongid.test", "redirect.test", "badjson.test"]);
  https = await startHttpsServer({
    ...leaf,
    routes: (request) => {
      const host = (request.headers.get("host") ?? "").split(":")[0];
      if (host === "down.test") return new Response("boom", { status: 500 });
      if (host === "huge.test") return new Response(JSON.stringify({ id: "x", pad: "a".repeat(70_000) }));
      if (host === "wrongid.test") return Response.json({ id: "did:web:evil.test", verificationMethod: [{ blockchainAccountId: `eip155:1:${A}` }] });
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
  for (const name of ["svc.test", "down.test", "other.test", "huge.test", "wrongid.test", "redirect.test", "badjson.test"]) {
    dns.setA(name, ["127.0.0.1"]);
  }
  dns.setTxt("_controllers.svc.test", [["v=1;controller=did:pkh:eip155:66238:", A]]);
  dns.setServfail("_omatrust.svc.test");
  const env = { DNS_SERVERS: dns.address };
  stack = await startStack({ env: { ...env, ALLOW_PRIVATE_NETWORK: "true" }, didJsonCa: ca.cert });
  blocked = await stack.restartService({ ...env, ALLOW_PRIVATE_NETWORK: "false" }).then(async (service) => ({ ...stack, service, baseUrl: service.url }));
});
afterAll(async () => {
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

async function get(base: string, path: string) {
  const res = await fetch(`${base}${path}`);
  return { status: res.status, body: await res.json() as Record<string, any> };
}

describe("controller discovery against real DNS and HTTPS servers", () => {
  test("endpoint confirm merges DNS TXT (split strings) and did.json keys with their sources", async () => {
    const res = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(did)}`);
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
    const res = await get(stack.baseUrl, `/api/public/controller-confirm?subjectDid=${encodeURIComponent(did)}&walletDid=did:pkh:eip155:66238:${A}`);
    expect(res.status).toBe(200);
    expect(res.body.evidence[0]).toEqual({ kind: "account-wallet", status: "found", location: "request.walletDid", keys: [`did:pkh:eip155:66238:${A}`] });
    expect(res.body.controllerKeys.find((k: any) => k.canonicalId === `did:pkh:eip155:66238:${A}`).sources).toEqual(["dns-txt", "account-wallet"]);
    expect(res.body.approvedIssuer).toMatchObject({ status: "not-approved", checkedIdentifiers: [`did:pkh:eip155:66238:${A}`] });
    const none = await get(stack.baseUrl, `/v1/controller-confirm?subjectDid=${encodeURIComponent(did)}`);
    expect(none.body.approvedIssuer).toEqual({ status: "not-configured", checkedIdentifiers: [], registryUrl: null });
  });

  test("NXDOMAIN and 404 are not-found, a 500 is unavailable", async () => {
    const missing = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(`did:web:other.test%3A${https.port}`)}`);
    expect(missing.body.evidence.map((e: any) => e.status)).toEqual(["not-found", "not-found", "not-found"]);
    const down = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(`did:web:down.test%3A${https.port}`)}`);
    expect(down.body.evidence[2]).toMatchObject({ status: "unavailable", error: "HTTP 500" });
    expect(JSON.stringify(down.body)).not.toContain("boom");
  });

  test("huge, wrong-id, redirecting and invalid documents are unavailable, without upstream text", async () => {
    const cases: [string, string][] = [
      ["huge.test", "DID document exceeds 64 KiB"],
      ["wrongid.test", "DID document id does not match the subject"],
      ["redirect.test", "Redirects are not followed"],
      ["badjson.test", "DID document is not valid JSON"],
    ];
    for (const [host, error] of cases) {
      const subject = encodeURIComponent(`did:web:${host}%3A${https.port}`);
      const res = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${subject}`);
      expect(res.body.evidence[2]).toMatchObject({ kind: "did-json", status: "unavailable", keys: [], error });
      expect(res.body.controllerKeys).toEqual([]);
    }
  });

  test("a DNS timeout is unavailable and does not hold up the other sources beyond the timeout", async () => {
    dns.setTimeout("_controllers.other.test");
    const subject = encodeURIComponent(`did:web:other.test%3A${https.port}`);
    const res = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${subject}`);
    expect(res.body.evidence.map((e: any) => e.status)).toEqual(["unavailable", "not-found", "not-found"]);
    dns.clear("_controllers.other.test");
  });

  test("by default a host on a private address is refused and never contacted", async () => {
    const before = https.requests.length;
    const res = await get(blocked.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(did)}`);
    expect(res.body.evidence[2]).toMatchObject({ kind: "did-json", status: "unavailable" });
    expect(https.requests.length).toBe(before);
  });

  test("bare domains are normalized; bad input is 400", async () => {
    const bare = await get(stack.baseUrl, "/v1/controller-endpoint-confirm?subjectDid=WWW.Other.Test");
    expect(bare.body.subject.canonical).toBe("did:web:other.test");
    expect((await get(stack.baseUrl, "/v1/controller-endpoint-confirm")).body.code).toBe("INVALID_INPUT");
    const bad = await get(stack.baseUrl, "/v1/controller-endpoint-confirm?subjectDid=did:");
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_DID"]);
    const pkh = await get(stack.baseUrl, `/v1/controller-endpoint-confirm?subjectDid=did:pkh:eip155:1:${A}`);
    expect(pkh.body.evidence.every((e: any) => e.status === "unsupported")).toBe(true);
    expect(pkh.body.warnings).toHaveLength(1);
  });
});
