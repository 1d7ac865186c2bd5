/**
 * OAuth 2 for registered software (issue 26, decisions §19) on the devnet with real DNS, driven by a third-party,
 * spec-compliant client library (oauth4webapi): discovery, registration (RFC 7591), the consent page submitted as a
 * browser would (the HTML fetched, its form parsed, its fields posted), PKCE S256, refresh with rotation, client
 * credentials, revocation, and a controller witness written with a bearer token. Then the security cases: each is
 * refused and nothing is written.
 */
import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { importJWK, SignJWT } from "jose";
import * as o from "oauth4webapi";
import { createPublicClient, type Hex, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { runOps } from "../app/ops.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { type DnsServer, startDnsServer } from "./support/dns_server.ts";
import { freePort, type Stack, startStack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const REDIRECT = "http://127.0.0.1:9/callback";
const alice = generatePrivateKey();
const pkh = (key: Hex) => `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;
const insecure = { [o.allowInsecureRequests]: true } as const;

let dns: DnsServer;
let stack: Stack;
let base: string;
let as: o.AuthorizationServer;

beforeAll(async () => {
  dns = await startDnsServer();
  dns.setTxt("_controllers.oauth.test", [[`v=1;controller=${pkh(alice)}`]]);
  const port = freePort();
  base = `http://127.0.0.1:${port}`;
  stack = await startStack({
    env: {
      PORT: String(port),
      PUBLIC_BASE_URL: base,
      SIWE_DOMAINS: "app.test",
      CORS_ORIGINS: APP,
      SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
      DNS_SERVERS: dns.address,
      ALLOW_PRIVATE_NETWORK: "true",
      FREE_PLAN_ANNUAL_WRITES: "10",
      WITNESS_USER_RATE_PER_MINUTE: "100",
      WITNESS_DOMAIN_RATE_PER_MINUTE: "100",
      DISCOVERY_DOMAIN_RATE_PER_MINUTE: "100",
    },
  });
  const issuer = new URL(base);
  as = await o.processDiscoveryResponse(issuer, await o.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure }));
});
afterAll(async () => {
  await stack?.stop();
  await dns?.stop();
});

const chain = () => createPublicClient({ cacheTime: 0, transport: http(stack.devnet.rpcUrl) });
const witnessTxs = () => chain().getTransactionCount({ address: privateKeyToAccount(stack.devnet.keys.witness).address });
const witnessBody = () => ({ subjectDid: "did:web:oauth.test", controllerDid: pkh(alice) });

async function api(method: string, path: string, options: { token?: string; cookie?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.cookie !== undefined) Object.assign(headers, { cookie: options.cookie, origin: APP });
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text === "" ? {} : JSON.parse(text)) as Record<string, any> };
}

const decode = (text: string) => text.replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

/** The consent form of a page: its action and its hidden fields, read from the HTML as a browser would. */
function consentForm(html: string): { action: string; fields: Record<string, string> } {
  const form = /<form[^>]*id="consent-form"[^>]*action="([^"]+)"[^>]*>([\s\S]*?)<\/form>/.exec(html);
  if (form === null) throw new Error("no consent form on the page");
  const fields: Record<string, string> = {};
  for (const input of form[2]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) fields[decode(input[1]!)] = decode(input[2]!);
  return { action: decode(form[1]!), fields };
}

/** Open registrations made so far from this test's one address. */
let registered = 0;

/** Registers a public client the way the library does. */
async function register(redirectUris = [REDIRECT]): Promise<o.Client> {
  registered++;
  const response = await o.dynamicClientRegistrationRequest(as, { redirect_uris: redirectUris, client_name: "Release bot", token_endpoint_auth_method: "none" }, insecure);
  return await o.processDynamicClientRegistrationResponse(response) as o.Client;
}

/** The person (signed in with `cookie`) opens the authorization URL, reads the consent page and presses a button. */
async function authorize(client: o.Client, cookie: string, options: { decision?: "approve" | "deny"; scope?: string; resource?: string } = {}) {
  const verifier = o.generateRandomCodeVerifier();
  const state = o.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set("client_id", client.client_id);
  url.searchParams.set("redirect_uri", REDIRECT);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("scope", options.scope ?? "witness:write account:read");
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", await o.calculatePKCECodeChallenge(verifier));
  url.searchParams.set("code_challenge_method", "S256");
  if (options.resource !== undefined) url.searchParams.set("resource", options.resource);
  const page = await fetch(url, { headers: { cookie } });
  expect(page.status).toBe(200);
  expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
  const { action, fields } = consentForm(await page.text());
  const posted = await fetch(new URL(action, base), {
    method: "POST",
    redirect: "manual",
    headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ ...fields, decision: options.decision ?? "approve" }),
  });
  expect(posted.status).toBe(303);
  return { location: new URL(posted.headers.get("location")!), verifier, state };
}

/** The whole authorization code flow: tokens for `client`. */
async function codeFlow(client: o.Client, cookie: string, options: { scope?: string; resource?: string } = {}) {
  const { location, verifier, state } = await authorize(client, cookie, options);
  const params = o.validateAuthResponse(as, client, location, state);
  const response = await o.authorizationCodeGrantRequest(as, client, o.None(), params, REDIRECT, verifier, { ...insecure, ...(options.resource ? { additionalParameters: { resource: options.resource } } : {}) });
  return await o.processAuthorizationCodeResponse(as, client, response);
}

describe("OAuth 2 with oauth4webapi", () => {
  test("discovery: the authorization server and the protected resource describe themselves; a bare request names the metadata", async () => {
    expect(as).toMatchObject({
      issuer: base,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      code_challenge_methods_supported: ["S256"],
      scopes_supported: expect.arrayContaining(["witness:write", "relay:write", "rpc:read", "account:read", "subjects:write", "keys:write", "webhooks:write"]),
    });
    const resource = await o.processResourceDiscoveryResponse(new URL(base), await o.resourceDiscoveryRequest(new URL(base), insecure));
    expect(resource).toMatchObject({ resource: base, authorization_servers: [base], bearer_methods_supported: ["header"] });
    const mcp = new URL(`${base}/mcp`);
    expect(await o.processResourceDiscoveryResponse(mcp, await o.resourceDiscoveryRequest(mcp, insecure))).toMatchObject({ resource: `${base}/mcp`, authorization_servers: [base] });
    const jwks = await (await fetch(as.jwks_uri!)).json() as { keys: Record<string, string>[] };
    expect(jwks.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(jwks.keys[0]!.d).toBeUndefined();

    // The contract's 401 on a route that needs a credential, naming the ways in.
    const bare = await fetch(`${base}/v1/controller-witness`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(witnessBody()) });
    expect(bare.status).toBe(401);
    expect((await bare.json() as { code: string }).code).toBe("UNAUTHENTICATED");
    expect(bare.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`);
    // The same on the routes for a signed-in person only (decisions §13 amended: every route that needs a credential).
    for (const [method, path] of [
      ["GET", "/api/private/oauth/clients"],
      ["POST", "/api/private/oauth/clients"],
      ["GET", "/api/private/oauth/authorizations"],
      ["PATCH", "/api/private/accounts/me"],
    ] as const) {
      const none = await api(method, path, { body: method === "GET" ? undefined : { displayName: "x" } });
      expect([method, path, none.status, none.body.code]).toEqual([method, path, 401, "UNAUTHENTICATED"]);
      expect(none.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource"`);
    }
    // The library reads the challenge of a refused token as RFC 6750 and RFC 9728 write it.
    const challenge = await o.protectedResourceRequest("not-a-token", "POST", new URL(`${base}/v1/controller-witness`), new Headers({ "content-type": "application/json" }), JSON.stringify(witnessBody()), insecure)
      .then(() => undefined, (error: unknown) => error);
    expect(challenge).toBeInstanceOf(o.WWWAuthenticateChallengeError);
    expect((challenge as o.WWWAuthenticateChallengeError).cause[0]).toMatchObject({
      scheme: "bearer",
      parameters: { resource_metadata: `${base}/.well-known/oauth-protected-resource`, error: "invalid_token" },
    });
  });

  test("registration, consent, PKCE, a witness written with the bearer token on the chain, refresh with rotation and reuse detection", async () => {
    const client = await register();
    expect(client).toMatchObject({ token_endpoint_auth_method: "none", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"] });
    const cookie = await signInCookie(base, alice, { origin: APP });
    const tokens = await codeFlow(client, cookie);
    expect(tokens).toMatchObject({ token_type: "bearer", expires_in: 3600, scope: "witness:write account:read" });
    expect(tokens.refresh_token).toBeString();
    const [header] = tokens.access_token.split(".");
    expect(JSON.parse(atob(header!.replace(/-/g, "+").replace(/_/g, "/")))).toMatchObject({ alg: "ES256", typ: "at+jwt" });

    // The witness, as the person could: written on the chain by the witness wallet.
    const before = await witnessTxs();
    const written = await api("POST", "/v1/controller-witness", { token: tokens.access_token, body: witnessBody() });
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ success: true, method: "dns-txt" });
    const attestation = await chain().readContract({ address: stack.service.easAddress, abi: EAS_ABI, functionName: "getAttestation", args: [written.body.uid as Hex] });
    expect(attestation.attester).toBe(privateKeyToAccount(stack.devnet.keys.witness).address);
    expect(await witnessTxs()).toBe(before + 1);
    const me = await api("GET", "/api/private/accounts/me", { token: tokens.access_token });
    expect(me.status).toBe(200);
    expect(me.body.subscription).toMatchObject({ sponsoredWritesUsedCurrentYear: 1 });
    const session = await api("GET", "/v1/session/me", { token: tokens.access_token });
    expect(session.body.client).toMatchObject({ clientId: client.client_id, authMode: "oauth" });
    // A scope the token lacks: 403 insufficient_scope, with the challenge.
    const premium = await api("POST", "/api/private/rpc-premium", { token: tokens.access_token, body: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" } });
    expect([premium.status, premium.body.code]).toEqual([403, "insufficient_scope"]);
    expect(premium.headers.get("www-authenticate")).toContain('error="insufficient_scope", scope="rpc:read"');
    // A person's own routes take no access token: 403 insufficient_scope, never "no credential", and nothing changes.
    for (const [method, path, body] of [
      ["PATCH", "/api/private/accounts/me", { displayName: "set by a token" }],
      ["GET", "/api/private/oauth/clients", undefined],
      ["POST", "/api/private/oauth/clients", { client_name: "by a token", grant_types: ["client_credentials"], scope: "account:read" }],
      ["GET", "/api/private/oauth/authorizations", undefined],
    ] as const) {
      const refused = await api(method, path, { token: tokens.access_token, body });
      expect([method, path, refused.status, refused.body.code]).toEqual([method, path, 403, "insufficient_scope"]);
      expect(refused.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${base}/.well-known/oauth-protected-resource", error="insufficient_scope"`);
    }
    expect((await api("GET", "/api/private/accounts/me", { token: tokens.access_token })).body.account.displayName).not.toBe("set by a token");

    // Refresh: a new pair; the old refresh token used again ends the whole family.
    const refreshed = await o.processRefreshTokenResponse(as, client, await o.refreshTokenGrantRequest(as, client, o.None(), tokens.refresh_token!, insecure));
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect((await api("GET", "/api/private/accounts/me", { token: refreshed.access_token })).status).toBe(200);
    const reuse = await o.refreshTokenGrantRequest(as, client, o.None(), tokens.refresh_token!, insecure);
    expect(reuse.status).toBe(400);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    const next = await o.refreshTokenGrantRequest(as, client, o.None(), refreshed.refresh_token!, insecure);
    expect(await next.json()).toMatchObject({ error: "invalid_grant" });
    const afterReuse = await api("GET", "/api/private/accounts/me", { token: refreshed.access_token });
    expect(afterReuse.status).toBe(401);
    expect(afterReuse.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });

  test("a denial goes back to the client with access_denied and the state", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const { location, state } = await authorize(client, cookie, { decision: "deny" });
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe(state);
    expect(location.searchParams.get("iss")).toBe(base);
  });

  test("client credentials: an API client made in the account, a token for a subset of its scopes, revocation, deletion", async () => {
    const cookie = await signInCookie(base, alice, { origin: APP });
    const created = await api("POST", "/api/private/oauth/clients", { cookie, body: { client_name: "CI", scope: "account:read rpc:read subjects:write", grant_types: ["client_credentials"] } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ client_name: "CI", grant_types: ["client_credentials"], token_endpoint_auth_method: "client_secret_basic" });
    const secret = created.body.client_secret as string;
    const listed = await api("GET", "/api/private/oauth/clients", { cookie });
    expect(listed.body.clients.find((c: { client_id: string }) => c.client_id === created.body.client_id)).toBeDefined();
    expect(JSON.stringify(listed.body)).not.toContain(secret);

    const client: o.Client = { client_id: created.body.client_id };
    const grant = (scope: string) => o.clientCredentialsGrantRequest(as, client, o.ClientSecretBasic(secret), new URLSearchParams({ scope }), insecure);
    const tokens = await o.processClientCredentialsResponse(as, client, await grant("account:read"));
    expect(tokens.scope).toBe("account:read");
    expect((await api("GET", "/api/private/accounts/me", { token: tokens.access_token })).status).toBe(200);
    expect((await api("GET", "/api/private/subjects", { token: tokens.access_token })).status).toBe(200);
    const beyond = await grant("witness:write");
    expect([beyond.status, (await beyond.json() as { error: string }).error]).toEqual([400, "invalid_scope"]);
    const wrongSecret = await o.clientCredentialsGrantRequest(as, client, o.ClientSecretBasic(`${secret}x`), new URLSearchParams(), insecure);
    expect([wrongSecret.status, (await wrongSecret.json() as { error: string }).error]).toEqual([401, "invalid_client"]);

    // RFC 7009: the revoked access token is refused from then on; another token of the client still works.
    const other = await o.processClientCredentialsResponse(as, client, await grant("account:read rpc:read"));
    await o.processRevocationResponse(await o.revocationRequest(as, client, o.ClientSecretBasic(secret), tokens.access_token, insecure));
    expect((await api("GET", "/api/private/accounts/me", { token: tokens.access_token })).status).toBe(401);
    expect((await api("POST", "/api/private/rpc-premium", { token: other.access_token, body: { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" } })).status).toBe(200);

    // Deleting the client ends its tokens.
    expect((await api("DELETE", `/api/private/oauth/clients/${client.client_id}`, { cookie })).status).toBe(200);
    const gone = await api("GET", "/api/private/accounts/me", { token: other.access_token });
    expect(gone.status).toBe(401);
    const noMore = await grant("account:read");
    expect(noMore.status).toBe(401);
  });

  test("the signing key rotates without logging anyone out: tokens of the old key keep working beside those of the new one", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const before = await codeFlow(client, cookie, { scope: "account:read" });
    // Rotation as an operator (or the timer, when the key is due) does it: a new newest key in the shared store.
    const db = new Database(join(stack.dir, "ats.sqlite"));
    const oldKids = (db.query("SELECT kid FROM oauth_signing_keys").all() as { kid: string }[]).map((r) => r.kid);
    db.close();
    const { createJoseAccessTokenKeys } = await import("../adapters/jose/mod.ts");
    const { openSqliteStorage } = await import("../adapters/sqlite/mod.ts");
    // A second instance on the same database rotates, then signs with its new key.
    const storage = openSqliteStorage(join(stack.dir, "ats.sqlite"));
    const instance = createJoseAccessTokenKeys({ store: storage.oauth, clock: { nowMs: () => Date.now() }, rotateAfterMs: 1 });
    const newKid = await instance.rotate();
    expect(oldKids).not.toContain(newKid);
    const claims = JSON.parse(atob(before.access_token.split(".")[1]!.replace(/-/g, "+").replace(/_/g, "/"))) as Record<string, unknown>;
    const now = Math.floor(Date.now() / 1000);
    const after = await instance.sign({ ...claims, jti: "rotated-1", iat: now, exp: now + 3_600 } as never);
    await storage.close();
    expect(JSON.parse(atob(after.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")))).toMatchObject({ kid: newKid });
    // This instance reads the keys again for a kid it does not know: both tokens work.
    expect((await api("GET", "/api/private/accounts/me", { token: before.access_token })).status).toBe(200);
    expect((await api("GET", "/api/private/accounts/me", { token: after })).status).toBe(200);
    const kids = ((await (await fetch(as.jwks_uri!)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    for (const kid of oldKids) expect(kids).toContain(kid);
  });
});

describe("issue 26 hardening", () => {
  const kidOf = (token: string) => (JSON.parse(atob(token.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))) as { kid: string }).kid;

  test("live codes are bounded per account: 30 approvals in parallel all get a code, the 10 newest stay live (OAUTH_LIVE_CODES_PER_ACCOUNT), the account's older ones are evicted; an exchanged code stays and no longer counts", async () => {
    const client = await register();
    const bob = generatePrivateKey();
    const cookie = await signInCookie(base, bob, { origin: APP });
    const verifier = o.generateRandomCodeVerifier();
    const url = new URL(as.authorization_endpoint!);
    for (const [k, v] of Object.entries({ client_id: client.client_id, redirect_uri: REDIRECT, response_type: "code", scope: "account:read", state: "st-1", code_challenge: await o.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256" })) url.searchParams.set(k, v);
    const { action, fields } = consentForm(await (await fetch(url, { headers: { cookie } })).text());
    const approve = async () => {
      const posted = await fetch(new URL(action, base), {
        method: "POST", redirect: "manual",
        headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ ...fields, decision: "approve" }),
      });
      expect(posted.status).toBe(303);
      return new URL(posted.headers.get("location")!);
    };
    // Before (attack review, finding 2): 20 of them went back with temporarily_unavailable, and a client's shared
    // bound refused every account so.
    const back = await Promise.all(Array.from({ length: 30 }, approve));
    expect(back.filter((l) => l.searchParams.has("code"))).toHaveLength(30);
    expect([back[0]!.searchParams.get("state"), back[0]!.searchParams.get("iss"), back[0]!.searchParams.get("error")]).toEqual(["st-1", base, null]);
    const account = (await api("GET", "/v1/session/me", { cookie })).body.account.id as string;
    const db = new Database(join(stack.dir, "ats.sqlite"));
    const stored = () => (db.query("SELECT COUNT(*) AS n FROM oauth_codes WHERE account_id = ?").get(account) as { n: number }).n;
    expect(stored()).toBe(10);
    // The newest approval's code works (the library exchanges it); the exchanged code stays (single use) and no longer counts.
    const params = o.validateAuthResponse(as, client, await approve(), "st-1");
    const tokens = await o.processAuthorizationCodeResponse(as, client, await o.authorizationCodeGrantRequest(as, client, o.None(), params, REDIRECT, verifier, insecure));
    expect(tokens.scope).toBe("account:read");
    expect(stored()).toBe(10);
    for (let i = 0; i < 3; i++) expect((await approve()).searchParams.has("code")).toBe(true);
    expect(stored()).toBe(11);
    db.close();
  });

  test("the applications a person authorised: listed with their scopes, revoked (refresh and access tokens refused at once), session only", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const first = await codeFlow(client, cookie, { scope: "account:read" });
    const second = await codeFlow(client, cookie, { scope: "witness:write account:read" });
    const listed = await api("GET", "/api/private/oauth/authorizations", { cookie });
    expect(listed.status).toBe(200);
    const mine = (listed.body.authorizations as { client_id: string }[]).find((a) => a.client_id === client.client_id);
    expect(mine).toMatchObject({ client_id: client.client_id, client_name: "Release bot", scope: "witness:write account:read", grants: 2 });
    // Not by token (a token cannot manage what tokens exist: no scope grants it, 403), and not from another site.
    expect((await api("GET", "/api/private/oauth/authorizations", { token: first.access_token })).status).toBe(403);
    const crossSite = await fetch(`${base}/api/private/oauth/authorizations/${client.client_id}`, { method: "DELETE", headers: { cookie, origin: "https://evil.test" } });
    expect(crossSite.status).toBe(403);
    expect((await api("GET", "/api/private/accounts/me", { token: first.access_token })).status).toBe(200);

    const revoked = await api("DELETE", `/api/private/oauth/authorizations/${client.client_id}`, { cookie });
    expect([revoked.status, revoked.body]).toEqual([200, { success: true, client_id: client.client_id }]);
    for (const token of [first.access_token, second.access_token]) expect((await api("GET", "/api/private/accounts/me", { token })).status).toBe(401);
    const refresh = await o.refreshTokenGrantRequest(as, client, o.None(), second.refresh_token!, insecure);
    expect([refresh.status, (await refresh.json() as { error: string }).error]).toEqual([400, "invalid_grant"]);
    const after = await api("GET", "/api/private/oauth/authorizations", { cookie });
    expect((after.body.authorizations as { client_id: string }[]).some((a) => a.client_id === client.client_id)).toBe(false);
    const again = await api("DELETE", `/api/private/oauth/authorizations/${client.client_id}`, { cookie });
    expect([again.status, again.body.code]).toEqual([404, "AUTHORIZATION_NOT_FOUND"]);
    // The application may ask again; a new consent works.
    const renewed = await codeFlow(client, cookie, { scope: "account:read" });
    expect((await api("GET", "/api/private/accounts/me", { token: renewed.access_token })).status).toBe(200);
  });

  test("npm run ops -- oauth rotate-key: a token signed before still works, the next one carries the new kid, both keys in the JWKS", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const before = await codeFlow(client, cookie, { scope: "account:read" });
    const lines: string[] = [];
    expect(await runOps(["oauth", "rotate-key"], { DATABASE_PATH: join(stack.dir, "ats.sqlite") }, (l) => lines.push(l))).toBe(0);
    const rotated = JSON.parse(lines[0]!) as { kid: string; previousKids: string[]; previousKeysPublishedUntil: string };
    expect(rotated.previousKids).toContain(kidOf(before.access_token));
    expect(rotated.kid).not.toBe(kidOf(before.access_token));
    expect(Date.parse(rotated.previousKeysPublishedUntil)).toBeGreaterThan(Date.now() + 3_600_000);
    expect(await runOps(["oauth", "rotate-key", "now"], {}, () => {})).toBe(2);

    const refreshed = await o.processRefreshTokenResponse(as, client, await o.refreshTokenGrantRequest(as, client, o.None(), before.refresh_token!, insecure));
    expect(kidOf(refreshed.access_token)).toBe(rotated.kid);
    expect((await api("GET", "/api/private/accounts/me", { token: before.access_token })).status).toBe(200);
    expect((await api("GET", "/api/private/accounts/me", { token: refreshed.access_token })).status).toBe(200);
    const kids = ((await (await fetch(as.jwks_uri!)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(kids).toContain(rotated.kid);
    expect(kids).toContain(kidOf(before.access_token));
  });
});

describe("issue 33: the token and revocation endpoints as RFC 6749 and RFC 7009 say", () => {
  test("a code asked for without redirect_uri (the client registered one) is exchanged without it; a refresh token revoked with token_type_hint=access_token ends its grant", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const verifier = o.generateRandomCodeVerifier();
    const state = o.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    for (const [k, v] of Object.entries({ client_id: client.client_id, response_type: "code", scope: "account:read", state, code_challenge: await o.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256" })) {
      url.searchParams.set(k, v);
    }
    const { action, fields } = consentForm(await (await fetch(url, { headers: { cookie } })).text());
    expect(fields.redirect_uri).toBeUndefined();
    const posted = await fetch(new URL(action, base), {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ ...fields, decision: "approve" }),
    });
    expect(posted.status).toBe(303);
    const location = new URL(posted.headers.get("location")!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    const params = o.validateAuthResponse(as, client, location, state);
    // RFC 6749 §4.1.3: redirect_uri is required only when the authorization request named it.
    const exchanged = await fetch(as.token_endpoint!, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
      body: new URLSearchParams({ grant_type: "authorization_code", client_id: client.client_id, code: params.get("code")!, code_verifier: verifier }),
    });
    const tokens = await o.processAuthorizationCodeResponse(as, client, exchanged);
    expect(tokens).toMatchObject({ token_type: "bearer", scope: "account:read" });
    expect((await api("GET", "/api/private/accounts/me", { token: tokens.access_token })).status).toBe(200);

    // RFC 7009 §2.1: the hint is wrong; the service looks further, and the grant ends.
    await o.processRevocationResponse(await o.revocationRequest(as, client, o.None(), tokens.refresh_token!, { ...insecure, additionalParameters: { token_type_hint: "access_token" } }));
    const refreshed = await o.refreshTokenGrantRequest(as, client, o.None(), tokens.refresh_token!, insecure);
    expect([refreshed.status, (await refreshed.json() as { error: string }).error]).toEqual([400, "invalid_grant"]);
    expect((await api("GET", "/api/private/accounts/me", { token: tokens.access_token })).status).toBe(401);
  });
});

describe("security: each refused, nothing written", () => {
  test("a wrong PKCE verifier, a reused code, a redirect URI one character off", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const before = await witnessTxs();
    const { location, verifier, state } = await authorize(client, cookie);
    const params = o.validateAuthResponse(as, client, location, state);
    const wrong = await o.authorizationCodeGrantRequest(as, client, o.None(), params, REDIRECT, `${verifier.slice(0, -1)}${verifier.endsWith("A") ? "B" : "A"}`, insecure);
    expect([wrong.status, (await wrong.json() as { error: string }).error]).toEqual([400, "invalid_grant"]);
    const offByOne = await o.authorizationCodeGrantRequest(as, client, o.None(), params, `${REDIRECT}x`, verifier, insecure);
    expect([offByOne.status, (await offByOne.json() as { error: string }).error]).toEqual([400, "invalid_grant"]);
    // The right verifier still works once (the failures above used nothing up); the same code again is refused and ends its tokens.
    const tokens = await o.processAuthorizationCodeResponse(as, client, await o.authorizationCodeGrantRequest(as, client, o.None(), params, REDIRECT, verifier, insecure));
    const again = await o.authorizationCodeGrantRequest(as, client, o.None(), params, REDIRECT, verifier, insecure);
    expect([again.status, (await again.json() as { error: string }).error]).toEqual([400, "invalid_grant"]);
    expect((await api("POST", "/v1/controller-witness", { token: tokens.access_token, body: witnessBody() })).status).toBe(401);
    // At the authorization endpoint a redirect URI one character off is shown as an error, never redirected to.
    const url = new URL(as.authorization_endpoint!);
    for (const [k, v] of Object.entries({ client_id: client.client_id, redirect_uri: `${REDIRECT}/`, response_type: "code", code_challenge: "a".repeat(43), code_challenge_method: "S256" })) url.searchParams.set(k, v);
    const shown = await fetch(url, { headers: { cookie }, redirect: "manual" });
    expect(shown.status).toBe(400);
    expect(shown.headers.get("location")).toBeNull();
    expect(await shown.text()).toContain("redirect_uri");
    expect(await witnessTxs()).toBe(before);
  });

  test("a refused request of a self-registered client is shown, never sent back on its own (the service is no open redirector)", async () => {
    // Anyone may register https://evil.example/… and hand out a bare link to /oauth/authorize: it used to answer 303 to
    // that page, no sign-in and no click needed (RFC 9700 §4.11.2).
    const evil = await register(["https://evil.example/phish"]);
    for (const params of [{}, { response_type: "token" }, { response_type: "code", code_challenge_method: "plain" }, { response_type: "code", scope: "admin" }]) {
      const url = new URL(as.authorization_endpoint!);
      url.searchParams.set("client_id", evil.client_id);
      url.searchParams.set("state", "attacker-state");
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const answer = await fetch(url, { redirect: "manual" });
      const page = await answer.text();
      expect({ params, status: answer.status, location: answer.headers.get("location") }).toEqual({ params, status: 400, location: null });
      expect(page).toContain("nothing was sent back to https://evil.example");
    }
  });

  test("a token for another audience, an expired token, a forged consent form", async () => {
    const client = await register();
    const cookie = await signInCookie(base, alice, { origin: APP });
    const before = await witnessTxs();
    const mcp = await codeFlow(client, cookie, { resource: `${base}/mcp` });
    const other = await api("POST", "/v1/controller-witness", { token: mcp.access_token, body: witnessBody() });
    expect(other.status).toBe(401);

    // A token signed with the service's own key but expired a minute ago.
    const db = new Database(join(stack.dir, "ats.sqlite"));
    const row = db.query("SELECT kid, private_jwk FROM oauth_signing_keys ORDER BY created_at_ms DESC LIMIT 1").get() as { kid: string; private_jwk: string };
    db.close();
    const key = await importJWK(JSON.parse(row.private_jwk), "ES256");
    const now = Math.floor(Date.now() / 1000);
    const me = await api("GET", "/v1/session/me", { cookie });
    const expired = await new SignJWT({ client_id: client.client_id, scope: "witness:write", jti: "expired-1" })
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: row.kid })
      .setIssuer(base).setAudience(base).setSubject(me.body.account.id).setIssuedAt(now - 3_700).setExpirationTime(now - 60)
      .sign(key);
    const refused = await api("POST", "/v1/controller-witness", { token: expired, body: witnessBody() });
    expect([refused.status, refused.body.code]).toEqual([401, "UNAUTHENTICATED"]);
    expect(refused.headers.get("www-authenticate")).toContain('error="invalid_token"');

    // A consent form posted without the page's CSRF token (or from another origin) approves nothing.
    const { location } = await authorize(client, cookie, { decision: "deny" });
    expect(location.searchParams.get("code")).toBeNull();
    const forged = await fetch(`${base}/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: "https://evil.test", "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: "a".repeat(43), code_challenge_method: "S256", decision: "approve" }),
    });
    expect(forged.status).toBe(403);
    const noToken = await fetch(`${base}/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: { cookie, origin: base, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ response_type: "code", client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: "a".repeat(43), code_challenge_method: "S256", decision: "approve" }),
    });
    expect(noToken.status).toBe(200);
    expect(noToken.headers.get("location")).toBeNull();
    expect(await witnessTxs()).toBe(before);
  });

  test("open registration is rate-limited per client address and keeps metadata bounded", async () => {
    const tooMany = await o.dynamicClientRegistrationRequest(as, { redirect_uris: Array.from({ length: 11 }, (_, i) => `https://app.test/cb${i}`) }, insecure);
    expect([tooMany.status, (await tooMany.json() as { error: string }).error]).toEqual([400, "invalid_redirect_uri"]);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await o.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, insecure)).status);
    // Ten an hour from one address (OAUTH_REGISTER_RATE_PER_HOUR, its default), the earlier tests' included.
    expect(statuses.filter((s) => s === 201)).toHaveLength(10 - registered);
    expect(statuses.filter((s) => s === 429)).toHaveLength(12 - (10 - registered));
    const refused = await o.dynamicClientRegistrationRequest(as, { redirect_uris: [REDIRECT] }, insecure);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ error: "rate_limited" });
  });
});

describe("ops oauth signer-keys and revoke-signer-key on the stored keys (without OAUTH_SIGNER)", () => {
  test("revoking the stored key that signs makes a new one sign the next token at once; the list shows it revoked", async () => {
    const cookie = await signInCookie(base, alice, { origin: APP });
    const created = await api("POST", "/api/private/oauth/clients", { cookie, body: { client_name: "CI", scope: "account:read", grant_types: ["client_credentials"] } });
    expect(created.status).toBe(201);
    const { client_id, client_secret } = created.body as { client_id: string; client_secret: string };
    const token = async () => {
      const res = await fetch(`${base}/oauth/token`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`${client_id}:${client_secret}`)}`, "content-type": "application/x-www-form-urlencoded" },
        body: "grant_type=client_credentials",
      });
      expect(res.status).toBe(200);
      return (await res.json() as { access_token: string }).access_token;
    };
    const ops = async (...args: string[]) => {
      const lines: string[] = [];
      expect(await runOps(args, { DATABASE_PATH: join(stack.dir, "ats.sqlite") }, (l) => void lines.push(l))).toBe(0);
      return lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    };
    const kidOf = (jwt: string) => (JSON.parse(Buffer.from(jwt.split(".")[0]!, "base64url").toString("utf8")) as { kid: string }).kid;
    const signing = kidOf(await token());
    expect((await ops("oauth", "signer-keys")).find((k) => k.kid === signing)).toMatchObject({ kind: "stored", revoked: false, retiredAt: null });
    const [revoked] = await ops("oauth", "revoke-signer-key", signing);
    const newKid = revoked!.newKid;
    expect(revoked).toMatchObject({ kid: signing, kind: "stored", revoked: true, alreadyRevoked: false });
    expect(typeof newKid).toBe("string");
    const next = await token();
    expect(kidOf(next)).toBe(newKid as string);
    expect((await api("GET", "/api/private/accounts/me", { token: next })).status).toBe(200);
    expect((await ops("oauth", "signer-keys")).find((k) => k.kid === signing)).toMatchObject({ kind: "stored", revoked: true });
    // Again: already revoked, nothing new made.
    const [again] = await ops("oauth", "revoke-signer-key", signing);
    expect(again).toMatchObject({ alreadyRevoked: true });
    expect(again).not.toHaveProperty("newKid");
  });
});
