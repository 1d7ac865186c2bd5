import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, createTestClient, createWalletClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteAccountStore, createSqliteWriteLedger } from "../adapters/sqlite/mod.ts";
import { createViemEas } from "../adapters/chain/mod.ts";
import { createViemTxStatusReader, createViemWitnessWriter } from "../adapters/chain/mod.ts";
import { LEGACY_WITNESS_DEPRECATION_HEADER } from "../domain/witness/mod.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { decodeSchemaData, encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { fetchSession, requestControllerWitness, signInWithWallet, signOut, type WalletSession } from "../client/session.ts";
import { isAtsClientError } from "../client/errors.ts";
import { runOps } from "../app/ops.ts";
import type { Service } from "../app/service.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { type HttpsServer, startHttpsServer } from "./support/https_server.ts";
import { getTestCa, issueLeaf } from "./support/test_ca.ts";
import { startStack, type Stack } from "./harness.ts";
import { nonceReadFault } from "./support/nonce_read_fault.ts";
import { isSend } from "./support/rpc_proxy.ts";

const WITNESS_SCHEMA = findSchemaByName("controller-witness")!;
const APP = "https://app.test";
const JWK = { kty: "EC", crv: "P-256", x: "f83OJ3D7xI1Yp1V2iFIYA7n5OYXc4K1Uo7jY14FKMC4", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" };
const DID_JWK =
  "did:jwk:eyJjcnYiOiJQLTI1NiIsImt0eSI6IkVDIiwieCI6ImY4M09KM0Q3eEkxWXAxVjJpRklZQTduNU9ZWGM0SzFVbzdqWTE0RktNQzQiLCJ5IjoieF9GRXpSdTltMzZITE5fdHVlNjU5TE5wWFc2cEN5U3Rpa1lqS0lXSTVhMCJ9";
const dnsKey = privateKeyToAccount(generatePrivateKey());
const webKey = privateKeyToAccount(generatePrivateKey());
/** 70 controllers many.test publishes (70 TXT records, one each) and manyjson.test's did.json names (70 methods). */
const manyKeys = Array.from({ length: 70 }, () => privateKeyToAccount(generatePrivateKey()).address);

let dns: DnsServer;
let https: HttpsServer;
let stack: Stack;
let webDid: string;
const dnsDid = "did:web:dns.test";
/** dns.test on the HTTPS server's port: its did.json is the server's 404 (not-found), its DNS dns.test's. */
const dnsPortDid = () => `did:web:dns.test%3a${https.port}`;
const env = (dnsAddress: string) => ({
  DNS_SERVERS: dnsAddress,
  ALLOW_PRIVATE_NETWORK: "true",
  SIWE_DOMAINS: "app.test",
  CORS_ORIGINS: APP,
  FREE_PLAN_ANNUAL_WRITES: "3",
  WITNESS_USER_RATE_PER_MINUTE: "100",
  WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
  DISCOVERY_DOMAIN_RATE_PER_MINUTE: "100",
  // Many sign-ins from 127.0.0.1 in one minute.
  SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
});

beforeAll(async () => {
  dns = await startDnsServer();
  const ca = await getTestCa();
  const leaf = await issueLeaf(["web.test", "dns.test", "badjson.test", "busy.test", "manyjson.test"]);
  https = await startHttpsServer({
    ...leaf,
    routes: (request) => {
      const host = (request.headers.get("host") ?? "").split(":")[0];
      // Read fine, and unusable for good: the subject's fault, not an outage.
      if (host === "badjson.test") return new Response("{not json", { headers: { "content-type": "application/did+json" } });
      if (host === "busy.test") return new Response("try later", { status: 503 });
      if (host === "manyjson.test") {
        const id = `did:web:manyjson.test%3A${https.port}`;
        return Response.json({
          id,
          verificationMethod: manyKeys.map((a, i) => ({ id: `${id}#k${i}`, type: "EcdsaSecp256k1RecoveryMethod2020", controller: id, blockchainAccountId: `eip155:1:${a}` })),
        });
      }
      if (host !== "web.test") return new Response("nope", { status: 404 });
      return Response.json({
        id: webDid,
        verificationMethod: [
          { id: `${webDid}#evm`, type: "EcdsaSecp256k1RecoveryMethod2020", controller: webDid, blockchainAccountId: `eip155:1:${webKey.address}` },
          { id: `${webDid}#jwk`, type: "JsonWebKey2020", controller: webDid, publicKeyJwk: JWK },
        ],
      });
    },
  });
  webDid = `did:web:web.test%3A${https.port}`;
  dns.setA("web.test", ["127.0.0.1"]);
  dns.setA("dns.test", ["127.0.0.1"]);
  dns.setA("badjson.test", ["127.0.0.1"]);
  dns.setA("busy.test", ["127.0.0.1"]);
  dns.setA("many.test", ["127.0.0.1"]);
  dns.setA("manyjson.test", ["127.0.0.1"]);
  dns.setTxt("_controllers.many.test", manyKeys.map((a) => [`v=1;controller=did:pkh:eip155:1:${a}`]));
  dns.setTxt("_controllers.dns.test", [[`v=1;controller=did:pkh:eip155:31337:${dnsKey.address}`]]);
  stack = await startStack({ env: env(dns.address), didJsonCa: ca.cert, wrapRpcFetch: (inner) => silenceable(witnessNonce.wrap(inner)) });
});
afterAll(async () => {
  await stack?.stop();
  await https?.stop();
  await dns?.stop();
});

/** While armed, the witness wallet's pending-nonce read fails (the read just before the witness transaction is signed). */
const witnessNonce = nonceReadFault();
/** While set, the service's chain does not answer (its index follower's reads aside). */
let chainSilent = false;
const silenceable = (inner: typeof fetch) =>
  (async (input: RequestInfo | URL, init?: RequestInit) => {
    if (chainSilent && new Headers(init?.headers).get("x-ats-reader") !== "index-follower") throw new TypeError("fetch failed (test: the chain is silent)");
    return await inner(input, init);
  }) as typeof fetch;

const opts = (service?: Service) => ({ baseUrl: service?.url ?? stack.baseUrl, origin: APP });

async function signIn(service?: Service, key: Hex = generatePrivateKey()): Promise<WalletSession> {
  const wallet = privateKeyToAccount(key);
  return await signInWithWallet({
    walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
    domain: "app.test",
    uri: `${APP}/login`,
    sign: (message) => wallet.signMessage({ message }),
  }, opts(service));
}

async function post(path: string, body: unknown, headers: Record<string, string> = {}, base = stack.baseUrl) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}

/** A restarted instance of the service, a session on it and a witness request for `subjectDid` under a new Idempotency-Key. */
async function freshWitnessRequest(subjectDid = dnsDid) {
  const service = await stack.restartService(env(dns.address));
  const session = await signIn(service);
  const body = { subjectDid, controllerDid: `did:pkh:eip155:1:${dnsKey.address}` };
  const headers = { cookie: session.cookie, origin: APP, "idempotency-key": crypto.randomUUID() };
  return { service, session, body, headers };
}

/** The request's first answer was not kept under its Idempotency-Key: the retry runs (not replayed) and is charged once. */
async function expectRetryRuns(request: Awaited<ReturnType<typeof freshWitnessRequest>>): Promise<void> {
  const again = await post("/v1/controller-witness", request.body, request.headers, request.service.url);
  expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, null]);
  expect(again.body).toMatchObject({ success: true, method: "dns-txt" });
  expect((await fetchSession(request.session, opts(request.service))).quota).toMatchObject({ used: 1, reserved: 0 });
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return "ok";
  } catch (error) {
    if (isAtsClientError(error)) return `${error.status} ${error.code}`;
    throw error;
  }
}

const client = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl), pollingInterval: 50 });

async function readWitness(uid: Hex) {
  const attestation = await client().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [uid] });
  const data = decodeSchemaData(WITNESS_SCHEMA.schema, attestation.data);
  return { attestation, data: data.ok ? data.value : undefined };
}

describe("sign-in with a wallet", () => {
  test("a signed challenge gives an HttpOnly, SameSite=Lax session cookie (no Secure on loopback) and a free account", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const challenge = await post("/v1/session/wallet/challenge", {
      walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
      chainId: stack.devnet.chainId,
      domain: "app.test",
      uri: `${APP}/login`,
    }, { origin: APP });
    expect(challenge.status).toBe(200);
    expect(challenge.headers.get("access-control-allow-origin")).toBe(APP);
    expect(challenge.headers.get("access-control-allow-credentials")).toBe("true");
    expect(challenge.body.siweMessage).toContain(`app.test wants you to sign in with your Ethereum account:\n${wallet.address}`);
    const signature = await wallet.signMessage({ message: challenge.body.siweMessage });
    const verified = await post("/api/private/session/wallet/verify", { ...challenge.body, signature });
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ account: { address: wallet.address.toLowerCase(), plan: "free" }, created: true });
    const cookie = verified.headers.get("set-cookie")!;
    expect(cookie).toMatch(/^ats_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Expires=/);
    expect(cookie).not.toContain("Secure");

    const me = await fetchSession({ cookie: cookie.split(";")[0]! }, opts());
    expect(me.quota).toMatchObject({ limit: 3, used: 0, reserved: 0, remaining: 3, eligibleSchemas: ["controller-witness"] });

    // The same signed challenge cannot be used twice.
    const replay = await post("/v1/session/wallet/verify", { ...challenge.body, signature });
    expect([replay.status, replay.body.code]).toEqual([400, "INVALID_CHALLENGE"]);
  });

  test("a wrong signature is 401 INVALID_SIGNATURE; an unlisted SIWE domain is 403 CLIENT_NOT_ALLOWED", async () => {
    const wallet = privateKeyToAccount(generatePrivateKey());
    const walletDid = `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`;
    const refused = await post("/v1/session/wallet/challenge", { walletDid, chainId: stack.devnet.chainId, domain: "evil.test", uri: "https://evil.test" });
    expect([refused.status, refused.body.code]).toEqual([403, "CLIENT_NOT_ALLOWED"]);
    const challenge = await post("/v1/session/wallet/challenge", { walletDid, chainId: stack.devnet.chainId, domain: "app.test", uri: `${APP}/x` });
    const forged = await privateKeyToAccount(generatePrivateKey()).signMessage({ message: challenge.body.siweMessage });
    const res = await post("/v1/session/wallet/verify", { ...challenge.body, signature: forged });
    expect([res.status, res.body.code]).toEqual([401, "INVALID_SIGNATURE"]);
  });

  test("logout revokes the session server-side and clears the cookie", async () => {
    const session = await signIn();
    const res = await post("/v1/session/logout", {}, { cookie: session.cookie, origin: APP });
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toMatch(/^ats_session=; Path=\/; HttpOnly; SameSite=Lax; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0$/);
    expect(await codeOf(fetchSession(session, opts()))).toBe("401 UNAUTHENTICATED");
    expect(await codeOf(requestControllerWitness({ subjectDid: dnsDid, controllerDid: `did:pkh:eip155:1:${dnsKey.address}` }, session, opts())))
      .toBe("401 UNAUTHENTICATED");
  });

  test("CSRF: a foreign origin is refused, a form body is refused, a preflight from the app is answered", async () => {
    const session = await signIn();
    const foreign = await post("/v1/controller-witness", { subjectDid: dnsDid, controllerDid: DID_JWK }, { cookie: session.cookie, origin: "https://evil.test" });
    expect([foreign.status, foreign.body.code]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    const form = await post("/v1/controller-witness", "subjectDid=did:web:dns.test", { cookie: session.cookie, "content-type": "application/x-www-form-urlencoded" });
    expect([form.status, form.body.code]).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
    const preflight = await fetch(`${stack.baseUrl}/v1/controller-witness`, { method: "OPTIONS", headers: { origin: APP } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(APP);
    expect(preflight.headers.get("access-control-allow-credentials")).toBe("true");
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 0, reserved: 0 });
  });
});

describe("one DID per host, every published controller", () => {
  test("a trailing dot before the port names the host: the witness writes the host's DID and address, not the alias's", async () => {
    const alias = `did:web:dns.test.%3A${https.port}`;
    const canonical = dnsPortDid();
    // Before, the alias was a DID of its own (`did:web:dns.test.%3a…`, another DID address), with the host's evidence.
    const view = await fetch(`${stack.baseUrl}/v1/controller-endpoint-confirm?subjectDid=${encodeURIComponent(alias)}`);
    expect(((await view.json()) as { subject: { canonical: string } }).subject.canonical).toBe(canonical);
    const session = await signIn();
    const result = await requestControllerWitness({ subjectDid: alias, controllerDid: `did:pkh:eip155:${stack.devnet.chainId}:${dnsKey.address}` }, session, opts());
    expect(result).toMatchObject({ success: true, method: "dns-txt" });
    const { attestation, data } = await readWitness(result.uid as Hex);
    expect(data).toMatchObject({ subject: canonical });
    expect(attestation.recipient.toLowerCase()).toBe((didToAddress(canonical) as { value: string }).value.toLowerCase());
    expect((didToAddress(alias) as { value: string }).value).toBe((didToAddress(canonical) as { value: string }).value);
  });

  test("the 70th controller of a TXT name (70 records) and of a did.json (70 methods) is confirmed and witnessed", async () => {
    // Before, only the first 64 of a source were read: 422 EVIDENCE_NOT_FOUND for a controller the subject published.
    const session = await signIn();
    const txt = await requestControllerWitness({ subjectDid: `did:web:many.test%3A${https.port}`, controllerDid: `did:pkh:eip155:1:${manyKeys[69]}` }, session, opts());
    expect(txt).toMatchObject({ success: true, method: "dns-txt" });
    const json = await requestControllerWitness({ subjectDid: `did:web:manyjson.test%3A${https.port}`, controllerDid: `did:pkh:eip155:1:${manyKeys[69]}` }, session, opts());
    expect(json).toMatchObject({ success: true, method: "did-json" });
  });
});

describe("controller witness on the devnet", () => {
  test("through DNS TXT: the witness wallet writes a non-revocable witness to the subject's DID address, one write charged", async () => {
    const session = await signIn();
    const controllerDid = `did:pkh:eip155:${stack.devnet.chainId}:${dnsKey.address}`;
    const result = await requestControllerWitness({ subjectDid: dnsDid, controllerDid }, session, opts());
    expect(result).toMatchObject({ success: true, method: "dns-txt" });
    expect(result.uid).toMatch(/^0x[0-9a-f]{64}$/);
    const { attestation, data } = await readWitness(result.uid as Hex);
    expect(attestation.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness).address);
    expect(attestation.recipient.toLowerCase()).toBe((didToAddress(dnsDid) as { value: string }).value.toLowerCase());
    expect(attestation.revocable).toBe(false);
    expect(attestation.schema).toBe(stack.service.trustAnchors.chains[`eip155:${stack.devnet.chainId}`]!.schemas["controller-witness"] as Hex);
    expect(data).toEqual({ subject: dnsDid, controller: controllerDid.toLowerCase(), method: "dns-txt", observedAt: String(result.observedAt) });
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 1, reserved: 0, remaining: 2 });
  });

  test("through did.json: an EVM key (any chain) and a did:jwk key", async () => {
    const session = await signIn();
    const evm = await requestControllerWitness({ subjectDid: webDid, controllerDid: `did:pkh:eip155:${stack.devnet.chainId}:${webKey.address}` }, session, opts());
    expect(evm.method).toBe("did-json");
    const jwk = await requestControllerWitness({ subjectDid: webDid, controllerDid: DID_JWK }, session, opts());
    expect(jwk.method).toBe("did-json");
    const { data } = await readWitness(jwk.uid as Hex);
    expect(data).toMatchObject({ subject: webDid.toLowerCase(), controller: DID_JWK, method: "did-json" });
  });

  test("the legacy body is accepted and answered with a Deprecation header", async () => {
    const session = await signIn();
    const res = await post("/api/private/controller-witness", {
      subject: dnsDid,
      controller: `did:pkh:eip155:${stack.devnet.chainId}:${dnsKey.address}`,
      attestationUid: `0x${"0".repeat(64)}`,
      easContract: stack.service.easAddress,
      schemaUid: `0x${"0".repeat(64)}`,
      method: "dns-txt",
      chainId: stack.devnet.chainId,
    }, { cookie: session.cookie });
    expect(res.status).toBe(200);
    // RFC 9745: `@` and the Unix seconds of the deprecation date.
    expect(res.headers.get("deprecation")).toBe(LEGACY_WITNESS_DEPRECATION_HEADER);
    expect(res.headers.get("deprecation")).toMatch(/^@[0-9]+$/);
    expect(res.body).toMatchObject({ success: true, method: "dns-txt" });
  });

  test("every refusal has the contract's status and code and charges nothing", async () => {
    const session = await signIn();
    const controllerDid = `did:pkh:eip155:1:${dnsKey.address}`;
    const cases: [unknown, number, string][] = [
      ["{not json", 400, "INVALID_JSON"],
      [{ subjectDid: dnsDid }, 400, "INVALID_INPUT"],
      [{ subjectDid: dnsDid, controllerDid, chainId: "31337" }, 400, "INVALID_INPUT"],
      [{ subjectDid: "did:web:", controllerDid }, 400, "INVALID_DID"],
      [{ subjectDid: dnsDid, controllerDid: "did:pkh:broken" }, 400, "INVALID_DID"],
      [{ subjectDid: "did:pkh:eip155:1:0x0000000000000000000000000000000000000001", controllerDid }, 400, "UNSUPPORTED_SUBJECT_TYPE"],
      [{ subjectDid: dnsDid, controllerDid, chainId: 1 }, 400, "UNSUPPORTED_CHAIN"],
      // dns.test on its HTTPS server's port: every source answers (its did.json 404), none names the controller.
      [{ subjectDid: dnsPortDid(), controllerDid: `did:pkh:eip155:1:${webKey.address}` }, 422, "EVIDENCE_NOT_FOUND"],
      [{ subjectDid: "did:web:nowhere.test", controllerDid }, 422, "EVIDENCE_NOT_FOUND"],
      // dns.test's did.json (port 443, nothing listening: the connection is refused) cannot be read now, and DNS does not
      // name the controller: it might be there.
      [{ subjectDid: dnsDid, controllerDid: `did:pkh:eip155:1:${webKey.address}` }, 502, "NETWORK_ERROR"],
    ];
    for (const [body, status, code] of cases) {
      const res = await post("/v1/controller-witness", body, { cookie: session.cookie });
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status, code });
      expect(Object.keys(res.body).sort()).toEqual(["code", "error"]);
    }
    const missing = await post("/v1/controller-witness", { subjectDid: dnsPortDid(), controllerDid: `did:pkh:eip155:1:${webKey.address}` }, { cookie: session.cookie });
    expect(missing.body.error).toBe(
      `Controller did:pkh:eip155:1:${webKey.address.toLowerCase()} not confirmed by endpoint evidence for ${dnsPortDid()}. Evidence checked: ` +
        `dns-txt _controllers.dns.test: found, dns-txt _omatrust.dns.test: not-found, did-json https://dns.test:${https.port}/.well-known/did.json: not-found`,
    );
    const unread = await post("/v1/controller-witness", { subjectDid: dnsDid, controllerDid: `did:pkh:eip155:1:${webKey.address}` }, { cookie: session.cookie });
    expect(unread.body.error).toBe(
      `Controller did:pkh:eip155:1:${webKey.address.toLowerCase()} not confirmed for ${dnsDid}, and endpoint evidence could not be read now; try again. ` +
        "Evidence checked: dns-txt _controllers.dns.test: found, dns-txt _omatrust.dns.test: not-found, did-json https://dns.test/.well-known/did.json: unavailable",
    );
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 0, reserved: 0 });
  });

  test("ten parallel requests with one write left: exactly one success and nine 403s", async () => {
    const tight = await stack.restartService({ ...env(dns.address), FREE_PLAN_ANNUAL_WRITES: "1" });
    const session = await signIn(tight);
    const controllerDid = `did:pkh:eip155:1:${dnsKey.address}`;
    const results = await Promise.all(
      Array.from({ length: 10 }, () => codeOf(requestControllerWitness({ subjectDid: dnsDid, controllerDid }, session, opts(tight)))),
    );
    expect(results.sort()).toEqual(["403 SPONSORED_WRITE_LIMIT_EXCEEDED", ...Array(8).fill("403 SPONSORED_WRITE_LIMIT_EXCEEDED"), "ok"].sort());
    expect((await fetchSession(session, opts(tight))).quota).toMatchObject({ limit: 1, used: 1, reserved: 0, remaining: 0 });
  });

  test("plan terms: SCHEMA_NOT_ELIGIBLE for a plan without the schema; the operator command moves the user to paid", async () => {
    const strict = await stack.restartService({ ...env(dns.address), FREE_PLAN_SCHEMAS: "user-review" });
    const session = await signIn(strict);
    const request = () =>
      requestControllerWitness({ subjectDid: dnsDid, controllerDid: `did:pkh:eip155:1:${dnsKey.address}` }, session, opts(strict));
    expect(await codeOf(request())).toBe("403 SCHEMA_NOT_ELIGIBLE");

    const lines: string[] = [];
    const opsEnv = { DATABASE_PATH: join(stack.dir, "ats.sqlite"), FREE_PLAN_ANNUAL_WRITES: "3" };
    expect(await runOps(["accounts", "list"], opsEnv, (l) => lines.push(l))).toBe(0);
    const listed = lines.map((l) => JSON.parse(l)).find((a) => a.id === session.account.id);
    expect(listed).toMatchObject({ plan: "free", address: session.account.address, writeLimit: 3 });
    lines.length = 0;
    expect(await runOps(["accounts", "set-plan", session.account.address, "paid"], opsEnv, (l) => lines.push(l))).toBe(0);
    expect(JSON.parse(lines[0]!)).toMatchObject({ id: session.account.id, plan: "paid", writeLimit: 1000 });
    expect(await runOps(["accounts", "set-plan", session.account.id, "gold"], opsEnv, () => {})).toBe(2);
    expect(await runOps(["accounts", "set-plan", "0xnobody", "paid"], opsEnv, () => {})).toBe(1);

    expect(await codeOf(request())).toBe("ok");
    expect((await fetchSession(session, opts(strict))).account.plan).toBe("paid");
  });

  test("SCHEMA_NOT_DEPLOYED when the anchors lack the witness schema; 503 SUBMISSION_FAILED with an unfunded witness wallet, nothing reserved", async () => {
    const anchors = JSON.parse(readFileSync(stack.devnet.trustAnchorsPath, "utf8"));
    delete anchors.chains[`eip155:${stack.devnet.chainId}`].schemas["controller-witness"];
    const noSchemaPath = join(stack.dir, "anchors-no-witness.json");
    writeFileSync(noSchemaPath, JSON.stringify(anchors));
    const noSchema = await stack.restartService({ ...env(dns.address), TRUST_ANCHORS_PATH: noSchemaPath });
    const session = await signIn(noSchema);
    const body = { subjectDid: dnsDid, controllerDid: `did:pkh:eip155:1:${dnsKey.address}` };
    expect(await codeOf(requestControllerWitness(body, session, opts(noSchema)))).toBe("500 SCHEMA_NOT_DEPLOYED");

    const broke = await stack.restartService({ ...env(dns.address), WITNESS_PRIVATE_KEY: generatePrivateKey() });
    const res = await post("/v1/controller-witness", body, { cookie: session.cookie }, broke.url);
    expect([res.status, res.body.code]).toEqual([503, "SUBMISSION_FAILED"]);
    expect(JSON.stringify(res.body)).not.toContain("http://");
    expect((await fetchSession(session, opts(broke))).quota).toMatchObject({ used: 0, reserved: 0 });
  });

  test("a chain that does not answer: 500 RPC_ERROR, nothing charged, and the retry under the same Idempotency-Key runs once it answers", async () => {
    // An instance of its own: the others' witness wallet may have sent since they last read its nonce.
    const request = await freshWitnessRequest();
    const { service, session, body, headers } = request;
    chainSilent = true;
    let down: Awaited<ReturnType<typeof post>>;
    try {
      down = await post("/v1/controller-witness", body, headers, service.url);
    } finally {
      chainSilent = false;
    }
    expect([down.status, down.body]).toEqual([500, { error: "Witness submission failed: the chain did not answer", code: "RPC_ERROR" }]);
    expect((await fetchSession(session, opts(service))).quota).toMatchObject({ used: 0, reserved: 0 });
    // Not kept under the key: the retry runs (before, the 500 was replayed for the key's 24 hours).
    await expectRetryRuns(request);
  });

  test("the witness wallet's nonce not read before signing: 500 RPC_ERROR, nothing sent or charged, and the retry under the same Idempotency-Key runs", async () => {
    // It was 500 SUBMISSION_FAILED ("the chain refused the witness transaction"), replayed under the key for 24 hours.
    // A fresh instance: its sender has not read the wallet's nonce yet, so its first send reads it.
    const request = await freshWitnessRequest();
    const { service, session, body, headers } = request;
    stack.rpc.reset();
    witnessNonce.wallet = privateKeyToAccount(stack.devnet.keys.witness).address;
    witnessNonce.failed = 0;
    let down: Awaited<ReturnType<typeof post>>;
    try {
      down = await post("/v1/controller-witness", body, headers, service.url);
    } finally {
      witnessNonce.wallet = undefined;
    }
    expect(witnessNonce.failed).toBeGreaterThanOrEqual(1);
    expect(stack.rpc.methods().filter(isSend)).toEqual([]);
    expect([down.status, down.body]).toEqual([500, { error: "Witness submission failed: the chain did not answer", code: "RPC_ERROR" }]);
    expect((await fetchSession(session, opts(service))).quota).toMatchObject({ used: 0, reserved: 0 });
    await expectRetryRuns(request);
  });

  test("DNS SERVFAIL and no did.json: 502 NETWORK_ERROR, never 'not confirmed'; nothing charged, and the retry under the same Idempotency-Key runs once DNS answers", async () => {
    const request = await freshWitnessRequest("did:web:flaky.test");
    const { service, session, body, headers } = request;
    const names = ["_controllers.flaky.test", "_omatrust.flaky.test", "flaky.test"];
    for (const name of names) dns.setServfail(name);
    const down = await post("/v1/controller-witness", body, headers, service.url);
    expect([down.status, down.body.code]).toEqual([502, "NETWORK_ERROR"]);
    expect(down.body.error).toContain("dns-txt _controllers.flaky.test: unavailable, dns-txt _omatrust.flaky.test: unavailable, did-json https://flaky.test/.well-known/did.json: unavailable");
    expect((await fetchSession(session, opts(service))).quota).toMatchObject({ used: 0, reserved: 0 });
    for (const name of names) dns.clear(name);
    dns.setTxt("_controllers.flaky.test", [[`v=1;controller=did:pkh:eip155:31337:${dnsKey.address}`]]);
    // Not kept under the key: the retry runs (before, a 422 EVIDENCE_NOT_FOUND was answered and replayed for 24 hours).
    await expectRetryRuns(request);
  });

  test("a did.json read and unusable for good (not JSON) is 422 EVIDENCE_NOT_FOUND saying why, never 502; a host the address policy refuses and a 5xx stay 502, not kept", async () => {
    const session = await signIn();
    const controllerDid = `did:pkh:eip155:1:${dnsKey.address}`;
    const badDid = `did:web:badjson.test%3A${https.port}`;
    const badUrl = `https://badjson.test:${https.port}/.well-known/did.json`;
    const bad = await post("/v1/controller-witness", { subjectDid: badDid, controllerDid }, { cookie: session.cookie });
    // Before: 502 NETWORK_ERROR, "could not be read now; try again", for a document that will never parse.
    expect([bad.status, bad.body]).toEqual([422, {
      code: "EVIDENCE_NOT_FOUND",
      error: `Controller ${controllerDid.toLowerCase()} not confirmed by endpoint evidence for ${badDid.replace("%3A", "%3a")}. Evidence checked: ` +
        `dns-txt _controllers.badjson.test: not-found, dns-txt _omatrust.badjson.test: not-found, ` +
        `did-json ${badUrl}: unavailable (DID document is not valid JSON)`,
    }]);
    expect(https.requests.some((r) => r.host.startsWith("badjson.test"))).toBe(true);

    // The same service without ALLOW_PRIVATE_NETWORK: web.test resolves to loopback, which the address policy refuses
    // before any connection. That answer came from a resolver, which a third party may steer (a rebinding attempt):
    // not the subject's lasting fault, so 502 as a source that could not be read, never the subject's 422.
    const strict = await stack.restartService({ ...env(dns.address), ALLOW_PRIVATE_NETWORK: "false" });
    const strictSession = await signIn(strict);
    const before = https.requests.length;
    const refused = await post("/v1/controller-witness", { subjectDid: webDid, controllerDid: `did:pkh:eip155:1:${webKey.address}` }, { cookie: strictSession.cookie }, strict.url);
    expect([refused.status, refused.body.code]).toEqual([502, "NETWORK_ERROR"]);
    expect(refused.body.error).toEndWith(`did-json https://web.test:${https.port}/.well-known/did.json: unavailable`);
    expect(https.requests.length).toBe(before);

    // A did.json host answering 503 could not be read now: 502, and not kept under the Idempotency-Key.
    const busy = { subjectDid: `did:web:busy.test%3A${https.port}`, controllerDid };
    const headers = { cookie: session.cookie, origin: APP, "idempotency-key": crypto.randomUUID() };
    for (let attempt = 0; attempt < 2; attempt++) {
      const down = await post("/v1/controller-witness", busy, headers);
      expect([down.status, down.body.code, down.headers.get("idempotent-replayed")]).toEqual([502, "NETWORK_ERROR", null]);
      expect(down.body.error).toEndWith(`did-json https://busy.test:${https.port}/.well-known/did.json: unavailable`);
    }
    expect(https.requests.filter((r) => r.host.startsWith("busy.test"))).toHaveLength(2);
    expect((await fetchSession(session, opts())).quota).toMatchObject({ used: 0, reserved: 0 });
    expect((await fetchSession(strictSession, opts(strict))).quota).toMatchObject({ used: 0, reserved: 0 });
  });

  test("a did.json that ends with the connection (no Content-Length, not chunked), cut halfway: 502 NETWORK_ERROR, never 422 or ownership failed; not kept, the retry under the same Idempotency-Key runs once it comes whole", async () => {
    const tls = await import("node:tls");
    const leaf = await issueLeaf(["cut.test"]);
    let whole = false;
    let port = 0;
    let served = 0;
    // A raw server: Bun.serve always frames its bodies. Each answer is flushed, then the TCP connection is dropped
    // without TLS close_notify (a FIN, as a cut on the path would).
    const raw = tls.createServer({ cert: leaf.cert, key: leaf.key }, (socket) => {
      socket.on("error", () => {});
      socket.once("data", () => {
        served++;
        const id = `did:web:cut.test%3A${port}`;
        const document = JSON.stringify({
          id,
          verificationMethod: [{ id: `${id}#evm`, type: "EcdsaSecp256k1RecoveryMethod2020", controller: id, blockchainAccountId: `eip155:1:${webKey.address}` }],
        });
        const body = whole ? document : document.slice(0, 60);
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/did+json\r\nconnection: close\r\n\r\n${body}`, () => socket.destroy());
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    port = (raw.address() as { port: number }).port;
    dns.setA("cut.test", ["127.0.0.1"]);
    try {
      const subjectDid = `did:web:cut.test%3A${port}`;
      const service = await stack.restartService(env(dns.address));
      const session = await signIn(service);
      const body = { subjectDid, controllerDid: `did:pkh:eip155:1:${webKey.address}` };
      const headers = { cookie: session.cookie, origin: APP, "idempotency-key": crypto.randomUUID() };
      const cut = await post("/v1/controller-witness", body, headers, service.url);
      // Before: 422 EVIDENCE_NOT_FOUND "(DID document is not valid JSON)", kept and replayed under the key.
      expect([cut.status, cut.body.code, cut.headers.get("idempotent-replayed")]).toEqual([502, "NETWORK_ERROR", null]);
      expect(cut.body.error).toEndWith(`did-json https://cut.test:${port}/.well-known/did.json: unavailable`);
      // decisions §12: a lookup that could not be made is 502, never failed.
      const ownership = await post("/api/verify/subject-ownership", { subjectDid, connectedWalletDid: `did:pkh:eip155:1:${webKey.address}` }, {}, service.url);
      expect([ownership.status, ownership.body.code]).toEqual([502, "NETWORK_ERROR"]);
      expect((await fetchSession(session, opts(service))).quota).toMatchObject({ used: 0, reserved: 0 });
      const cutServed = served;
      expect(cutServed).toBeGreaterThanOrEqual(1);

      whole = true;
      const again = await post("/v1/controller-witness", body, headers, service.url);
      expect([again.status, again.headers.get("idempotent-replayed")]).toEqual([200, null]);
      expect(again.body).toMatchObject({ success: true, method: "did-json" });
      expect(served).toBeGreaterThan(cutServed);
      expect((await fetchSession(session, opts(service))).quota).toMatchObject({ used: 1, reserved: 0 });
    } finally {
      raw.close();
    }
  });

  test("per-domain rate limit: a flood for subdomains of one victim domain is cut off before any lookup", async () => {
    const limited = await stack.restartService({ ...env(dns.address), WITNESS_DOMAIN_RATE_PER_MINUTE: "2" });
    const sessions = await Promise.all([signIn(limited), signIn(limited), signIn(limited)]);
    const before = dns.queries.filter((q) => q.name.endsWith("victim.test")).length;
    const results: string[] = [];
    for (const [i, session] of sessions.entries()) {
      const body = { subjectDid: `did:web:host${i}.victim.test`, controllerDid: `did:pkh:eip155:1:${dnsKey.address}` };
      const res = await post("/v1/controller-witness", body, { cookie: session.cookie }, limited.url);
      results.push(`${res.status} ${res.body.code}${res.headers.get("retry-after") ? " retry-after" : ""}`);
    }
    expect(results).toEqual(["422 EVIDENCE_NOT_FOUND", "422 EVIDENCE_NOT_FOUND", "429 RATE_LIMITED retry-after"]);
    const lookups = dns.queries.filter((q) => q.name.endsWith("victim.test")).length - before;
    // Two requests looked up two TXT names and the did.json host (A and AAAA) each; the third nothing.
    expect(lookups).toBe(8);
  });

  test("anonymous confirm views that spent their lookup budget for a domain leave the witness's alone; its own, once spent, is 429 before any lookup, nothing charged", async () => {
    const limited = await stack.restartService({ ...env(dns.address), DISCOVERY_DOMAIN_RATE_PER_MINUTE: "2" });
    // Made-up subdomains, each its own answer: the views' budget for spent.test goes, the third is refused.
    const views = [];
    for (const sub of ["a", "b", "c"]) {
      const res = await fetch(`${limited.url}/v1/controller-endpoint-confirm?subjectDid=${sub}.spent.test`);
      views.push((await res.json() as { warnings: string[] }).warnings.length);
    }
    expect(views).toEqual([0, 0, 1]);
    // The witness still looks (nothing is published there: 422), once per turn of its own budget.
    const session = await signIn(limited);
    const witness = async () => {
      const before = dns.queries.filter((q) => q.name.endsWith("spent.test")).length;
      const res = await post("/v1/controller-witness", { subjectDid: "did:web:spent.test", controllerDid: DID_JWK }, { cookie: session.cookie }, limited.url);
      return { status: res.status, code: res.body.code, looked: dns.queries.filter((q) => q.name.endsWith("spent.test")).length > before, retryAfter: res.headers.get("retry-after") };
    };
    expect(await witness()).toMatchObject({ status: 422, code: "EVIDENCE_NOT_FOUND", looked: true });
    expect(await witness()).toMatchObject({ status: 422, code: "EVIDENCE_NOT_FOUND", looked: true });
    const spent = await witness();
    expect(spent).toMatchObject({ status: 429, code: "RATE_LIMITED", looked: false });
    expect(Number(spent.retryAfter)).toBeGreaterThan(0);
    expect((await fetchSession(session, opts(limited))).quota).toMatchObject({ used: 0, reserved: 0 });
  });

  test("the reconciler's status reader tells a pending transaction from a mined and an unknown one", async () => {
    const testClient = createTestClient({ mode: "anvil", transport: http(stack.devnet.rpcUrl) });
    const sender = privateKeyToAccount(generatePrivateKey());
    await testClient.setBalance({ address: sender.address, value: 10n ** 18n });
    const reader = createViemTxStatusReader({ client: client() as never, easAddress: stack.service.easAddress });
    const wallet = createWalletClient({ account: sender, transport: http(stack.devnet.rpcUrl) });
    await testClient.setAutomine(false);
    let txHash: Hex;
    try {
      txHash = await wallet.sendTransaction({ chain: null, to: sender.address, value: 0n, gas: 21_000n });
      expect(await reader.status(txHash)).toEqual({ status: "pending" });
      await testClient.mine({ blocks: 1 });
    } finally {
      await testClient.setAutomine(true);
    }
    expect(await reader.status(txHash)).toMatchObject({ status: "success", uid: null });
    expect(await reader.status(`0x${"ab".repeat(32)}`)).toEqual({ status: "not-found" });
  });

  test("a crash between broadcast and bookkeeping: the restart settles the write from the stored hash, charged once, not re-sent", async () => {
    const session = await signIn();
    const db = openSqlite(join(stack.dir, "ats.sqlite"));
    const ledger = createSqliteWriteLedger(db);
    const year = new Date().getUTCFullYear();
    const accountId = (await createSqliteAccountStore(db).findAccount(session.account.address))!.id;
    expect(await ledger.reserve({ id: "crash-1", accountId, year, fingerprint: "crash", createdAtMs: Date.now() }, 3)).toBe(true);
    // A plain send then receipt polls, so the record passes through "broadcast" (a send answered with its receipt
    // goes from "signed" straight to its outcome, issue 28; a "signed" record is settled the same way).
    const eas = createViemEas({ rpcUrl: stack.devnet.rpcUrl, chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, sendSync: "off" });
    const writer = createViemWitnessWriter({ client: eas.client, sender: eas.senderFor(stack.devnet.keys.witness), easAddress: stack.service.easAddress });
    const schemaUid = stack.service.trustAnchors.chains[`eip155:${stack.devnet.chainId}`]!.schemas["controller-witness"] as Hex;
    const data = encodeSchemaData(WITNESS_SCHEMA.schema, { subject: dnsDid, controller: DID_JWK, method: "dns-txt", observedAt: 1n });
    const call = {
      schema: schemaUid,
      data: { recipient: (didToAddress(dnsDid) as { value: Hex }).value, expirationTime: 0n, revocable: false, refUID: `0x${"0".repeat(64)}` as Hex, data: (data as { value: Hex }).value, value: 0n },
    };
    const simulation = await writer.simulate(call);
    if (!simulation.ok) throw new Error("simulation failed");
    // The service stores the hash, broadcasts, and dies before it writes down the outcome.
    const sent = await writer.submit(call, {
      gas: simulation.gas,
      onSigned: async (tx) => void (await ledger.markSigned("crash-1", tx, Date.now())),
      onSent: () => ledger.markSent("crash-1", Date.now()),
    });
    expect(sent.ok).toBe(true);
    expect(await ledger.find("crash-1")).toMatchObject({ state: "broadcast" });
    db.close();

    const restarted = await stack.restartService(env(dns.address));
    const check = createSqliteWriteLedger(openSqlite(join(stack.dir, "ats.sqlite")));
    const settled = await check.find("crash-1");
    expect(settled).toMatchObject({ state: "committed", txHash: sent.ok ? sent.txHash : "", uid: sent.ok ? sent.uid : "" });
    expect((await fetchSession(session, opts(restarted))).quota).toMatchObject({ used: 1, reserved: 0 });
    // One attestation on chain for that transaction: nothing was sent again.
    const logs = await client().getLogs({ address: stack.service.easAddress, fromBlock: 0n });
    expect(logs.filter((l) => l.transactionHash === (sent.ok ? sent.txHash : ""))).toHaveLength(1);
  });
});
