/**
 * Rotating `OAUTH_SIGNER` (decisions §19, §27, §28) logs nobody out. On SQLite, the service restarted with a new key:
 * a token the old key signed still works and the JWKS lists both keys. On PostgreSQL, a rolling restart's two
 * instances with different keys: each accepts the other's tokens, and both publish both keys. (Found by attack: every
 * live token was refused by the new instance, and the new instance's tokens by the old.)
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generatePrivateKey } from "viem/accounts";
import { TEST_RELAY_LIMITS } from "./harness.ts";
import { postgresUnavailableReason } from "./support/postgres.ts";
import { type PostgresInstances, startPostgresInstances } from "./support/postgres_instances.ts";
import { runOps } from "../app/ops.ts";
import { restartableService } from "./support/restartable_service.ts";
import { signInCookie } from "./support/sign_in.ts";

const APP = "https://app.test";
const KEY_A = generatePrivateKey().slice(2);
const KEY_B = generatePrivateKey().slice(2);
/** What every instance shares: one public address (the tokens' issuer and audience), sign-in, both keys at hand. */
const SHARED = {
  PUBLIC_BASE_URL: "http://ats.test",
  SIWE_DOMAINS: "app.test",
  CORS_ORIGINS: APP,
  OAUTH_KEY_A: KEY_A,
  OAUTH_KEY_B: KEY_B,
};

/**
 * A client-credentials client of a freshly signed-in account at `base`: the status its creation was answered with, and
 * the token endpoint's raw answer for it anywhere.
 */
async function clientCredentials(base: string) {
  const cookie = await signInCookie(base, generatePrivateKey(), { origin: APP });
  const created = await fetch(`${base}/api/private/oauth/clients`, {
    method: "POST",
    headers: { cookie, origin: APP, "content-type": "application/json" },
    body: JSON.stringify({ client_name: "CI", scope: "account:read", grant_types: ["client_credentials"] }),
  });
  const { client_id, client_secret } = await created.json() as { client_id: string; client_secret: string };
  const token = async (at: string) => {
    const res = await fetch(`${at}/oauth/token`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`${client_id}:${client_secret}`)}`, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    });
    return { status: res.status, body: await res.json() as { access_token?: string; error?: string } };
  };
  return { created: created.status, token };
}

/** An API client (client_credentials) of a freshly signed-in account at `base`, and a way to get its tokens anywhere. */
async function apiClient(base: string) {
  const { created, token } = await clientCredentials(base);
  expect(created).toBe(201);
  return async (at: string) => {
    const { status, body } = await token(at);
    expect(status).toBe(200);
    return body.access_token!;
  };
}

const me = async (base: string, token: string) => (await fetch(`${base}/api/private/accounts/me`, { headers: { authorization: `Bearer ${token}` } })).status;
const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as { kid: string }).kid;
const jwksKids = async (base: string) => ((await (await fetch(`${base}/oauth/jwks.json`)).json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);

describe("OAUTH_SIGNER rotated on SQLite (one instance, restarted with the new key)", () => {
  const stack = restartableService("ats-oauth-rotation-");

  test("a token the old key signed keeps working after the restart; the JWKS lists both keys", async () => {
    const first = await stack.start({ ...SHARED, OAUTH_SIGNER: "env:OAUTH_KEY_A" });
    const token = await apiClient(first.url);
    const before = await token(first.url);
    expect(await me(first.url, before)).toBe(200);
    expect(await first.stop()).toBe(0);

    const second = await stack.start({ ...SHARED, OAUTH_SIGNER: "env:OAUTH_KEY_B" });
    const after = await token(second.url);
    expect(kidOf(after)).not.toBe(kidOf(before));
    expect({ before: await me(second.url, before), after: await me(second.url, after) }).toEqual({ before: 200, after: 200 });
    expect(await jwksKids(second.url)).toEqual([kidOf(after), kidOf(before)]);
  });
});

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[oauth_signer_rotation_test] ${skip}`);

describe.skipIf(skip !== undefined)(`OAUTH_SIGNER rotated on PostgreSQL (a rolling restart: two instances, two keys)${skip ? ` (skipped: ${skip})` : ""}`, () => {
  let pg: PostgresInstances;
  beforeAll(async () => {
    pg = await startPostgresInstances("ats-oauth-rotation-pg-");
  });
  afterAll(async () => {
    for (const code of await pg?.stop() ?? []) expect(code).toBe(0);
  });

  test("each instance accepts the other's tokens, the old one without a restart; both publish both keys", async () => {
    const [old] = await pg.start({ ...SHARED, ...TEST_RELAY_LIMITS, OAUTH_SIGNER: "env:OAUTH_KEY_A" });
    const token = await apiClient(old!.url);
    const before = await token(old!.url);
    expect(await me(old!.url, before)).toBe(200);
    // The old instance has read the keys already; the new one starts beside it.
    expect(await jwksKids(old!.url)).toEqual([kidOf(before)]);
    const [next] = await pg.start({ ...SHARED, ...TEST_RELAY_LIMITS, OAUTH_SIGNER: "env:OAUTH_KEY_B" });
    const after = await token(next!.url);
    expect(kidOf(after)).not.toBe(kidOf(before));
    expect({
      oldAtNew: await me(next!.url, before),
      newAtOld: await me(old!.url, after),
      newAtNew: await me(next!.url, after),
      oldAtOld: await me(old!.url, before),
    }).toEqual({ oldAtNew: 200, newAtOld: 200, newAtNew: 200, oldAtOld: 200 });
    // The same JWKS at both, the key recorded last first (before, each listed its own first: two ETags for one URL).
    expect(await jwksKids(next!.url)).toEqual([kidOf(after), kidOf(before)]);
    expect(await jwksKids(old!.url)).toEqual([kidOf(after), kidOf(before)]);
  });
});

describe("an OAUTH_SIGNER key revoked by the operator (ops oauth revoke-signer-key): refused and unpublished for good, the instance still on it signs nothing and shows oauth false on /readyz", () => {
  const stack = restartableService("ats-oauth-revocation-");
  const ops = async (...args: string[]) => {
    const lines: string[] = [];
    const code = await runOps(args, { DATA_DIR: stack.dataDir() }, (line) => void lines.push(line));
    return { code, lines: lines.map((l) => (l.startsWith("{") ? JSON.parse(l) as Record<string, unknown> : { said: l })) };
  };
  test("listed, revoked while its instance runs, then refused at every start (its own instance's too), gone from the JWKS; the new key's tokens work", async () => {
    const first = await stack.start({ ...SHARED, OAUTH_SIGNER: "env:OAUTH_KEY_A" });
    const { token } = await clientCredentials(first.url);
    const issued = await token(first.url);
    const before = issued.body.access_token!;
    expect(await me(first.url, before)).toBe(200);
    const kidA = kidOf(before);
    const listed = await ops("oauth", "signer-keys");
    expect(listed.code).toBe(0);
    expect(listed.lines).toEqual([expect.objectContaining({ kid: kidA, kind: "signer", revoked: false, revokedAt: null })]);

    expect((await ops("oauth", "revoke-signer-key", "not-a-kid")).code).toBe(2);
    const revoked = await ops("oauth", "revoke-signer-key", kidA);
    expect([revoked.code, revoked.lines[0]]).toEqual([0, expect.objectContaining({ kid: kidA, kind: "signer", revoked: true, alreadyRevoked: false })]);
    expect(await first.stop()).toBe(0);

    // The forgotten instance: started again on the revoked key, it records it again, and it stays revoked.
    const forgotten = await stack.start({ ...SHARED, OAUTH_SIGNER: "env:OAUTH_KEY_A" });
    const ready = await fetch(`${forgotten.url}/readyz`);
    expect([ready.status, ((await ready.json()) as { checks: Record<string, boolean> }).checks.oauth]).toEqual([200, false]);
    expect(await token(forgotten.url)).toEqual({ status: 500, body: expect.objectContaining({ error: "server_error" }) });
    expect(await me(forgotten.url, before)).toBe(401);
    expect(await jwksKids(forgotten.url)).toEqual([]);
    expect(await forgotten.stop()).toBe(0);

    const next = await stack.start({ ...SHARED, OAUTH_SIGNER: "env:OAUTH_KEY_B" });
    const after = await token(next.url);
    expect(after.status).toBe(200);
    expect({ before: await me(next.url, before), after: await me(next.url, after.body.access_token!) }).toEqual({ before: 401, after: 200 });
    expect(await jwksKids(next.url)).toEqual([kidOf(after.body.access_token!)]);
    const ready2 = await fetch(`${next.url}/readyz`);
    expect(((await ready2.json()) as { checks: Record<string, boolean> }).checks.oauth).toBe(true);
    expect((await ops("oauth", "signer-keys")).lines.map((l) => [l.kid, l.revoked])).toEqual([[kidOf(after.body.access_token!), false], [kidA, true]]);
  });
});
