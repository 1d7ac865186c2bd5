/**
 * The accounts API of decisions §12 on the real service (issue 17, item 1): the richer verify and session/me
 * answers, register, accounts/me with PATCH, subscriptions/current; private-route guards on PATCH.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Hex, keccak256, stringToBytes } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";

const APP = "https://app.test";
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ env: { SIWE_DOMAINS: "app.test", CORS_ORIGINS: APP, SIWE_CHALLENGE_RATE_PER_MINUTE: "1000" } });
});
afterAll(async () => await stack?.stop());

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { origin: APP, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}

/** A signed challenge for a fresh or given wallet, ready for verify or register. */
async function signed(key: Hex, extra: Record<string, unknown> = {}) {
  const wallet = privateKeyToAccount(key);
  const challenge = await call("POST", "/v1/session/wallet/challenge", {
    walletDid: `did:pkh:eip155:${stack.devnet.chainId}:${wallet.address}`,
    domain: "app.test",
    uri: `${APP}/login`,
  });
  const signature = await wallet.signMessage({ message: challenge.body.siweMessage });
  return { challengeId: challenge.body.challengeId, siweMessage: challenge.body.siweMessage, signature, ...extra };
}
const cookieOf = (headers: Headers) => headers.get("set-cookie")!.split(";")[0]!;

describe("accounts API", () => {
  test("register creates the account and signs in; a second register of the wallet is 409 and verify still works", async () => {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address.toLowerCase();
    const registered = await call("POST", "/api/private/session/wallet/register", await signed(key, { walletProviderId: "metamask", executionMode: "subscription" }));
    expect(registered.status).toBe(200);
    expect(registered.body).toMatchObject({
      account: { displayName: null, address, plan: "free" },
      client: { clientId: "ats-web" },
      wallet: { did: `did:pkh:eip155:${stack.devnet.chainId}:${address}`, walletProviderId: "metamask", executionMode: "subscription", isManagedWallet: false },
      created: true,
    });
    expect(registered.body.session.id).toMatch(/^[0-9a-f]{32}$/);
    const again = await call("POST", "/api/private/session/wallet/register", await signed(key));
    expect([again.status, again.body.code]).toEqual([409, "ACCOUNT_ALREADY_EXISTS"]);
    const verified = await call("POST", "/api/private/session/wallet/verify", await signed(key));
    expect([verified.status, verified.body.created, verified.body.account.id]).toEqual([200, false, registered.body.account.id]);
    const bad = await call("POST", "/api/private/session/wallet/verify", await signed(key, { executionMode: "gasless" }));
    expect([bad.status, bad.body.code]).toEqual([400, "INVALID_INPUT"]);
  });

  test("session/me, accounts/me and subscriptions/current show the account as the reference client reads it", async () => {
    const key = generatePrivateKey();
    const address = privateKeyToAccount(key).address.toLowerCase();
    const verified = await call("POST", "/v1/session/wallet/verify", await signed(key, { walletProviderId: "rabby", executionMode: "native" }));
    const cookie = cookieOf(verified.headers);
    const walletDid = `did:pkh:eip155:${stack.devnet.chainId}:${address}`;
    const me = await call("GET", "/v1/session/me", undefined, { cookie });
    expect(me.body).toMatchObject({
      account: { id: verified.body.account.id, displayName: null },
      wallet: { did: walletDid, walletProviderId: "rabby", executionMode: "native", isManagedWallet: false },
      credential: { kind: "wallet", identifier: walletDid },
      subscription: { plan: "free", status: "active" },
      client: { clientId: "ats-web", authMode: "session" },
      primarySubject: { canonicalDid: walletDid, subjectDidHash: keccak256(stringToBytes(walletDid)) },
    });
    const year = new Date().getUTCFullYear();
    const accountMe = await call("GET", "/api/private/accounts/me", undefined, { cookie });
    expect(accountMe.body).toEqual({
      account: { id: verified.body.account.id, displayName: null },
      subscription: {
        plan: "free",
        status: "active",
        annualSponsoredWriteLimit: 10,
        sponsoredWritesUsedCurrentYear: 0,
        annualPremiumReadLimit: 100,
        premiumReadsUsedCurrentYear: 0,
        entitlementPeriodStart: `${year}-01-01T00:00:00.000Z`,
        entitlementPeriodEnd: `${year + 1}-01-01T00:00:00.000Z`,
        // What the free plan may write (FREE_PLAN_SCHEMAS): a client tells before the wallet signs.
        eligibleSchemas: ["controller-witness"],
      },
      primarySubject: {
        id: expect.stringMatching(/^sub_[0-9a-f]{24}$/),
        canonicalDid: walletDid,
        subjectDidHash: keccak256(stringToBytes(walletDid)),
        displayName: null,
      },
      wallets: [{ did: walletDid, address }],
    });
    const current = await call("GET", "/api/private/subscriptions/current", undefined, { cookie });
    expect(current.body).toEqual({ subscription: accountMe.body.subscription });

    const renamed = await call("PATCH", "/api/private/accounts/me", { displayName: "  Alice's shop  " }, { cookie });
    expect(renamed.body).toEqual({ account: { id: verified.body.account.id, displayName: "Alice's shop" } });
    expect((await call("GET", "/v1/session/me", undefined, { cookie })).body.account.displayName).toBe("Alice's shop");
    const tooLong = await call("PATCH", "/api/private/accounts/me", { displayName: "x".repeat(101) }, { cookie });
    expect([tooLong.status, tooLong.body.code]).toEqual([400, "INVALID_INPUT"]);
    const cleared = await call("PATCH", "/api/private/accounts/me", { displayName: null }, { cookie });
    expect(cleared.body.account.displayName).toBeNull();
  });

  test("without a session 401; a cross-origin or non-JSON PATCH is refused before anything changes", async () => {
    const key = generatePrivateKey();
    const cookie = cookieOf((await call("POST", "/v1/session/wallet/verify", await signed(key))).headers);
    for (const path of ["/api/private/accounts/me", "/api/private/subscriptions/current"]) {
      const res = await call("GET", path);
      expect([path, res.status, res.body.code]).toEqual([path, 401, "UNAUTHENTICATED"]);
    }
    const crossOrigin = await call("PATCH", "/api/private/accounts/me", { displayName: "evil" }, { cookie, origin: "https://evil.test" });
    expect([crossOrigin.status, crossOrigin.body.code]).toEqual([403, "ORIGIN_NOT_ALLOWED"]);
    const plain = await fetch(`${stack.baseUrl}/api/private/accounts/me`, {
      method: "PATCH",
      headers: { origin: APP, cookie, "content-type": "text/plain" },
      body: JSON.stringify({ displayName: "form" }),
    });
    expect(plain.status).toBe(415);
    expect((await call("GET", "/api/private/accounts/me", undefined, { cookie })).body.account.displayName).toBeNull();
    const preflight = await fetch(`${stack.baseUrl}/api/private/accounts/me`, { method: "OPTIONS", headers: { origin: APP } });
    expect(preflight.headers.get("access-control-allow-methods")).toContain("PATCH");
  });
});
