/**
 * U+0000 in what a client sends, on PostgreSQL (found by comparing the engines): PostgreSQL's text cannot hold it, and
 * SQLite can, so a value that reached a PostgreSQL statement answered 500 there and something else on SQLite. Every
 * such request is answered as on SQLite, with the route's own code: the real service over loopback on a throwaway
 * PostgreSQL, a real Anvil with EAS, a signed-in account.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { type Stack, startStack } from "./harness.ts";
import { signInCookie } from "./support/sign_in.ts";
import { postgresUnavailableReason, startPostgres, type TestPostgres } from "./support/postgres.ts";

const APP = "https://app.test";
const skip = postgresUnavailableReason();
let stack: Stack;
let pg: TestPostgres | undefined;
let cookie: string;

beforeAll(async () => {
  if (skip !== undefined) return;
  pg = await startPostgres();
  stack = await startStack({ env: { ALLOW_PRIVATE_NETWORK: "true", CORS_ORIGINS: APP, SIWE_DOMAINS: "app.test", DATABASE_URL: pg.url } });
  cookie = await signInCookie(stack.baseUrl, generatePrivateKey() as Hex, { origin: APP });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await pg?.stop();
});

async function call(method: string, path: string, init: { body?: string; type?: string; signedIn?: boolean } = {}) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    redirect: "manual",
    headers: { origin: APP, "content-type": init.type ?? "application/json", ...(init.signedIn === false ? {} : { cookie }) },
    ...(init.body === undefined ? {} : { body: init.body }),
  });
  const text = await res.text();
  let code: unknown;
  try {
    const parsed = JSON.parse(text) as { code?: unknown; error?: unknown };
    code = parsed.code ?? parsed.error;
  } catch {
    code = undefined;
  }
  return { status: res.status, code };
}

describe.skipIf(skip !== undefined)("U+0000 in a request, on PostgreSQL", () => {
  test("OAuth: a client_id holding it is an unknown client, at the token and the authorization endpoints", async () => {
    expect(await call("POST", "/oauth/token", { body: "grant_type=client_credentials&client_id=a%00", type: "application/x-www-form-urlencoded", signedIn: false }))
      .toEqual({ status: 401, code: "invalid_client" });
    expect((await call("GET", "/oauth/authorize?response_type=code&client_id=a%00", { signedIn: false })).status).toBe(400);
  });

  test("sign-in: a challenge's uri holding it is not an absolute URL (400); a challengeId holding it is unknown", async () => {
    const wallet = `did:pkh:eip155:31337:0x${"1".repeat(40)}`;
    expect(await call("POST", "/v1/session/wallet/challenge", { body: JSON.stringify({ walletDid: wallet, domain: "app.test", uri: "https://app.test/login\u0000" }), signedIn: false }))
      .toEqual({ status: 400, code: "INVALID_INPUT" });
    expect(await call("POST", "/v1/session/wallet/verify", { body: JSON.stringify({ challengeId: "abc\u0000", siweMessage: "m", signature: "0x12" }), signedIn: false }))
      .toEqual({ status: 400, code: "INVALID_CHALLENGE" });
  });

  test("signing keys: a tag or keyType filter holding it matches nothing; a key DID holding it is refused (400)", async () => {
    expect((await call("GET", `/api/private/signing-keys?tag=${encodeURIComponent("a\u0000")}`)).status).toBe(200);
    expect((await call("GET", `/api/private/signing-keys?keyType=${encodeURIComponent("attestation\u0000")}`)).status).toBe(200);
    expect((await call("POST", "/api/private/signing-keys", { body: JSON.stringify({ keyDid: "did:ethr:0xabc\u0000", keyType: "attestation", displayName: "k" }) })).status)
      .toBe(400);
  });

  test("webhooks: a deliveries cursor whose id holds it is not a cursor of the list", async () => {
    const created = await fetch(`${stack.baseUrl}/api/private/webhooks`, {
      method: "POST",
      headers: { origin: APP, cookie, "content-type": "application/json" },
      body: JSON.stringify({ url: "http://127.0.0.1:9/hook", events: ["attestation.created"], subjects: [] }),
    });
    const { id } = await created.json() as { id: string };
    const cursor = Buffer.from("1:\u0000").toString("base64url");
    expect(await call("GET", `/api/private/webhooks/${id}/deliveries?cursor=${cursor}`)).toEqual({ status: 400, code: "INVALID_INPUT" });
  });

  test("an id in a path holding it is no such thing: 404 NOT_FOUND, never 500", async () => {
    for (const [method, path] of [
      ["GET", "/v1/submissions/a%00"],
      ["GET", "/api/private/webhooks/a%00"],
      ["DELETE", "/api/private/webhooks/a%00"],
      ["DELETE", "/api/private/oauth/clients/a%00"],
      ["GET", "/api/private/relay/submissions/a%00"],
    ] as const) {
      expect({ method, path, ...(await call(method, path)) }).toEqual({ method, path, status: 404, code: "NOT_FOUND" });
    }
  });
});
