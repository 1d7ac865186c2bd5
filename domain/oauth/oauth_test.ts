import { describe, expect, test } from "bun:test";
import { fakeAccessTokenKeys, fakeAccountStore, fakeClock, fakeOAuthStore, fakeRandom } from "../../ports/fakes/mod.ts";
import { acceptableRedirectUri, createOAuth, readApiClientMetadata, readPublicClientMetadata, s256Challenge } from "./mod.ts";
import { NETWORK_FACTOR } from "./registration.ts";
import { networkKeyOf } from "../sessions/mod.ts";
import { UNUSED_CLIENT_GRACE_MS } from "../../ports/oauth.ts";

const ISSUER = "https://ats.example";
const REDIRECT = "https://app.example/cb";
const VERIFIER = "v".repeat(43);

async function setup(limits: { liveCodesPerAccount?: number; liveCodesPerClient?: number; grantsPerAccount?: number; registrationsPerHour?: number } = {}) {
  const clock = fakeClock();
  const store = fakeOAuthStore();
  const accounts = fakeAccountStore();
  const { account } = await accounts.findOrCreateAccount("0x00000000000000000000000000000000000000aa", "acct-1", clock.nowMs());
  const keys = fakeAccessTokenKeys(clock);
  const oauth = createOAuth({
    store,
    keys,
    accounts,
    clock,
    random: fakeRandom(),
    issuer: ISSUER,
    policy: { registrationsPerClientPerHour: 3, registrationsPerHour: 100, refreshTokenTtlSeconds: 86_400, liveCodesPerAccount: 100, liveCodesPerClient: 100, grantsPerAccount: 100, ...limits },
  });
  const registered = await oauth.registration.register({ client_name: "Bot", redirect_uris: [REDIRECT] }, "10.0.0.1");
  if (!registered.ok) throw new Error("registration failed");
  const clientId = registered.value.client_id;
  /** A checked request approved by the account: the code. */
  const code = async (params: Record<string, string> = {}) => {
    const checked = await oauth.authorization.check({
      response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256", state: "st", ...params,
    });
    if (!checked.ok) throw new Error(`check failed: ${JSON.stringify(checked)}`);
    const approved = await oauth.authorization.approve(checked.value, account);
    return new URL(approved.value).searchParams.get("code")!;
  };
  const exchange = (c: string, extra: Record<string, string> = {}) =>
    oauth.tokens.token({ grant_type: "authorization_code", client_id: clientId, code: c, redirect_uri: REDIRECT, code_verifier: VERIFIER, ...extra }, {});
  return { clock, store, keys, oauth, account, accounts, clientId, code, exchange };
}

describe("client metadata", () => {
  test("acceptableRedirectUri() takes HTTPS, loopback HTTP and private-use schemes; refuses fragments, plain HTTP elsewhere and script schemes", () => {
    for (const ok of ["https://app.example/cb", "http://127.0.0.1:9000/cb", "http://localhost/cb", "com.example.app:/cb"]) expect({ ok, accepted: acceptableRedirectUri(ok) }).toEqual({ ok, accepted: true });
    for (const bad of ["https://app.example/cb#x", "http://app.example/cb", "javascript:alert(1)", "data:text/html,x", "/relative", "https://a b.example/", `https://app.example/${"a".repeat(2_000)}`]) {
      expect({ bad, accepted: acceptableRedirectUri(bad) }).toEqual({ bad, accepted: false });
    }
  });

  test("readPublicClientMetadata() registers a public client (auth method none whatever was asked) and bounds every list", () => {
    const read = readPublicClientMetadata({ redirect_uris: [REDIRECT], token_endpoint_auth_method: "client_secret_basic", scope: "account:read" });
    expect(read).toEqual({ ok: true, value: { name: null, redirectUris: [REDIRECT], grantTypes: ["authorization_code", "refresh_token"], scope: "account:read", authMethod: "none" } });
    expect(readPublicClientMetadata({ redirect_uris: Array.from({ length: 11 }, (_, i) => `${REDIRECT}${i}`) })).toMatchObject({ ok: false, code: "invalid_redirect_uri" });
    expect(readPublicClientMetadata({ redirect_uris: [REDIRECT], grant_types: ["client_credentials"] })).toMatchObject({ ok: false, code: "invalid_client_metadata" });
    expect(readPublicClientMetadata({ redirect_uris: [REDIRECT], scope: "admin" })).toMatchObject({ ok: false, code: "invalid_client_metadata" });
    expect(readPublicClientMetadata({ redirect_uris: [REDIRECT], client_name: "x".repeat(201) })).toMatchObject({ ok: false, code: "invalid_client_metadata" });
    expect(readApiClientMetadata({ client_name: "CI", redirect_uris: [REDIRECT] })).toMatchObject({ ok: false, code: "invalid_client_metadata" });
    expect(readApiClientMetadata({ client_name: "CI" })).toMatchObject({ ok: true, value: { grantTypes: ["client_credentials"], authMethod: "client_secret_basic" } });
    // Nothing ticked is no scope, never every scope.
    expect(readApiClientMetadata({ client_name: "CI", scope: "" })).toMatchObject({ ok: false, code: "invalid_client_metadata", message: "scope must name at least one scope" });
  });
});

describe("registration", () => {
  test("register() is refused past the rate of one client address, with when to retry, and stores nothing then", async () => {
    const { oauth, store } = await setup();
    expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "10.0.0.1")).ok).toBe(true);
    expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "10.0.0.1")).ok).toBe(true);
    const writes = store.writes;
    const refused = await oauth.registration.register({ redirect_uris: [REDIRECT] }, "10.0.0.1");
    expect(refused).toMatchObject({ ok: false, code: "rate_limited", retryAfterSeconds: 3_600 });
    expect(store.writes).toBe(writes);
    expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "10.0.0.2")).ok).toBe(true);
  });

  test("networkKeyOf() names the /48 of an IPv6 /64 key, and nothing for IPv4 or unknown", () => {
    expect(networkKeyOf("2001:db8:aa00:ff::/64")).toBe("2001:db8:aa00::/48");
    expect(networkKeyOf("2001:db8:0:0::/64")).toBe("2001:db8:0::/48");
    for (const other of ["10.0.0.1", "unknown", "::/64"]) expect(networkKeyOf(other)).toBeUndefined();
  });

  test("one /56 cannot spend everyone's registrations (attack review, finding 4): its /48 gets 4 times a /64's rate, then 429; other networks still register", async () => {
    // Before: only the /64 was counted (3 here), so 100 /64s of one /56 made 300 registrations and spent the
    // shared hourly bound (100 here); every other caller was then refused for an hour.
    const { oauth, store } = await setup({ registrationsPerHour: 100 });
    let ok = 0;
    let lastRefusal: unknown;
    for (let net = 0; net < 100; net++) {
      for (let i = 0; i < 3; i++) {
        const answer = await oauth.registration.register({ redirect_uris: [REDIRECT] }, `2001:db8:aa00:${net.toString(16)}::/64`);
        if (answer.ok) ok++;
        else lastRefusal = answer;
      }
    }
    expect(ok).toBe(3 * NETWORK_FACTOR);
    expect(lastRefusal).toMatchObject({ ok: false, code: "rate_limited", message: "Too many registrations from this network; try again later", retryAfterSeconds: 3_600 });
    expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "2001:db8:aa01:1::/64")).ok).toBe(true);
    expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "198.51.100.99")).ok).toBe(true);
    expect([...store.clients.values()].filter((c) => c.registeredNetwork === "2001:db8:aa00::/48")).toHaveLength(12);
  });

  test("the shared bound never refuses: past it a registration evicts the oldest unused client (unknown from then on), never a used one, one in its grace period or one holding a live code (review finding 3; the bound is passed instead); an evicted registration still counts for its address", async () => {
    const { oauth, store, account, clientId, code, exchange, clock } = await setup({ registrationsPerHour: 3 });
    // The setup's client is used (it got tokens): it is never evicted and not counted.
    expect((await exchange(await code())).ok).toBe(true);
    const made: string[] = [];
    const register = async (address: string) => {
      clock.set(clock.nowMs() + 1_000);
      const answer = await oauth.registration.register({ redirect_uris: [REDIRECT] }, address);
      if (!answer.ok) throw new Error("refused");
      made.push(answer.value.client_id);
    };
    const approve = async (client: string) => {
      const checked = await oauth.authorization.check({
        response_type: "code", client_id: client, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256",
      });
      if (!checked.ok) throw new Error("check failed");
      await oauth.authorization.approve(checked.value, account);
    };
    const codesOf = (client: string) => [...store.codes.values()].filter((c) => c.clientId === client);
    const known = async (client: string) => (await oauth.authorization.check({
      response_type: "code", client_id: client, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256",
    })).ok;
    for (let i = 0; i < 3; i++) await register(`192.0.2.${i}`);
    await approve(made[0]!);
    // Before: the fourth unused client of the hour was 429 rate_limited for everyone. Then (finding 3): it evicted
    // made[0], registered a second before, whose user had just approved. Now the three are in their grace period:
    // nothing is evicted, the bound is passed.
    await register("192.0.2.200");
    for (const kept of made) expect(await known(kept)).toBe(true);
    expect(codesOf(made[0]!)).toHaveLength(1);
    // Past the grace: made[1] holds a live code (its user between approval and exchange) and stays with it; the
    // two oldest of the others go (made[0], whose code expired, and made[2]), the fifth fits: 3 unused kept.
    clock.set(clock.nowMs() + UNUSED_CLIENT_GRACE_MS);
    await approve(made[1]!);
    await register("192.0.2.201");
    expect(await known(made[0]!)).toBe(false);
    expect(await known(made[2]!)).toBe(false);
    expect(await oauth.authorization.check({ response_type: "code", client_id: made[0]!, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256" }))
      .toMatchObject({ ok: false, kind: "show", error: "invalid_client" });
    expect(codesOf(made[0]!)).toHaveLength(0);
    for (const kept of [clientId, made[1]!, made[3]!, made[4]!]) expect(await store.findClient(kept)).toBeDefined();
    expect(codesOf(made[1]!)).toHaveLength(1);
    // The evicted client's address used its rate (3 an hour) all the same: its evicted row still counts.
    for (let i = 0; i < 2; i++) expect((await oauth.registration.register({ redirect_uris: [REDIRECT] }, "192.0.2.0")).ok).toBe(true);
    expect(await oauth.registration.register({ redirect_uris: [REDIRECT] }, "192.0.2.0")).toMatchObject({ ok: false, code: "rate_limited" });
  });
});

describe("authorization", () => {
  test("check() shows what cannot go back to the client and redirects the rest with the state and the issuer", async () => {
    const { oauth, clientId } = await setup();
    const base = { response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256", state: "st" };
    expect(await oauth.authorization.check({ ...base, client_id: "nobody" })).toMatchObject({ kind: "show", error: "invalid_client" });
    expect(await oauth.authorization.check({ ...base, redirect_uri: `${REDIRECT}/` })).toMatchObject({ kind: "show", error: "invalid_request" });
    const back = async (params: Record<string, string>) => {
      const checked = await oauth.authorization.check(params);
      return checked.ok || checked.kind !== "redirect" ? undefined : new URL(checked.location).searchParams;
    };
    const plain = await back({ ...base, code_challenge_method: "plain" });
    expect([plain?.get("error"), plain?.get("state"), plain?.get("iss")]).toEqual(["invalid_request", "st", ISSUER]);
    expect((await back({ ...base, code_challenge: "" }))?.get("error")).toBe("invalid_request");
    expect((await back({ ...base, response_type: "token" }))?.get("error")).toBe("unsupported_response_type");
    expect((await back({ ...base, scope: "admin" }))?.get("error")).toBe("invalid_scope");
    expect((await back({ ...base, resource: "https://other.example" }))?.get("error")).toBe("invalid_target");
    expect(await oauth.authorization.check({ ...base, resource: `${ISSUER}/mcp` })).toMatchObject({ ok: true });
  });
});

describe("grants: bounded per account (OAUTH_GRANTS_PER_ACCOUNT)", () => {
  test("each exchange past the bound revokes the account's oldest grant: its refresh token and access token stop working, the newest work", async () => {
    const { oauth, code, exchange, clock, clientId } = await setup({ grantsPerAccount: 2 });
    const tokens = [];
    for (let i = 0; i < 4; i++) {
      clock.set(clock.nowMs() + 1_000);
      const got = await exchange(await code());
      if (!got.ok) throw new Error("exchange failed");
      tokens.push(got.value);
    }
    const works = async (t: { access_token: string; refresh_token?: string | undefined }) =>
      (await oauth.authenticateBearer(t.access_token, { scope: "account:read" })).ok;
    expect(await Promise.all(tokens.map(works))).toEqual([false, false, true, true]);
    expect(await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens[0]!.refresh_token! }, {}))
      .toMatchObject({ ok: false, code: "invalid_grant" });
    expect((await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens[3]!.refresh_token! }, {})).ok).toBe(true);
  });
});

describe("live codes (issue 26): bounded per account and per client", () => {
  const request = async (oauth: Awaited<ReturnType<typeof setup>>["oauth"], clientId: string) => {
    const checked = await oauth.authorization.check({
      response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256", state: "st",
    });
    if (!checked.ok) throw new Error("check failed");
    return checked.value;
  };

  test("past the account's bound its own oldest code goes, the same client's first: every approval gets a code that works, the evicted one is invalid_grant; an exchanged code is never evicted", async () => {
    const { oauth, store, account, clientId, exchange, clock } = await setup({ liveCodesPerAccount: 3 });
    const other = await oauth.registration.register({ client_name: "Other", redirect_uris: [REDIRECT] }, "10.0.0.2");
    if (!other.ok) throw new Error("registration failed");
    const codeOf = (location: string) => new URL(location).searchParams.get("code")!;
    const otherCode = codeOf((await oauth.authorization.approve(await request(oauth, other.value.client_id), account)).value);
    const req = await request(oauth, clientId);
    const first = codeOf((await oauth.authorization.approve(req, account)).value);
    clock.set(clock.nowMs() + 1);
    const second = codeOf((await oauth.authorization.approve(req, account)).value);
    clock.set(clock.nowMs() + 1);
    // Before: the fourth approval went back with temporarily_unavailable.
    const fourth = await oauth.authorization.approve(req, account);
    expect(fourth).toMatchObject({ ok: true, evicted: 1 });
    expect(store.codes.size).toBe(3);
    // The same client's oldest went, not the other client's (older) code.
    expect(await exchange(first)).toMatchObject({ ok: false, code: "invalid_grant" });
    expect((await exchange(second)).ok).toBe(true);
    expect((await exchange(codeOf(fourth.value))).ok).toBe(true);
    // Exchanged codes stay (a second use is still seen as reuse) and no longer count.
    expect(await exchange(second)).toMatchObject({ ok: false, code: "invalid_grant", message: "The code was used already" });
    expect((await oauth.authorization.approve(req, account)).evicted).toBe(0);
    expect((await oauth.authorization.approve(req, account)).evicted).toBe(0);
    expect((await oauth.authorization.approve(req, account)).evicted).toBe(1);
    // The other client's code, the account's oldest, was spared each time: its own client's codes made room.
    expect((await exchange(otherCode, { client_id: other.value.client_id })).ok).toBe(true);
  });

  test("many accounts filling a client's bound never refuse another account (attack review, finding 2): the code of the account holding the most goes", async () => {
    // Before: past OAUTH_LIVE_CODES_PER_CLIENT every account's approval went back with temporarily_unavailable, so
    // throwaway accounts approving without exchanging locked every real user out of a popular client.
    const { oauth, store, account, accounts, clientId, exchange, clock } = await setup({ liveCodesPerAccount: 10, liveCodesPerClient: 20 });
    const req = await request(oauth, clientId);
    const victim = (await oauth.authorization.approve(req, account)).value;
    for (let a = 0; a < 4; a++) {
      const attacker = (await accounts.findOrCreateAccount(`0x${String(a).padStart(40, "b")}`, `attacker-${a}`, clock.nowMs())).account;
      for (let i = 0; i < 10; i++) {
        clock.set(clock.nowMs() + 1);
        expect((await oauth.authorization.approve(req, attacker)).ok).toBe(true);
      }
    }
    expect([...store.codes.values()].filter((c) => c.usedAtMs === null)).toHaveLength(20);
    const another = (await accounts.findOrCreateAccount("0x00000000000000000000000000000000000000cc", "acct-3", clock.nowMs())).account;
    const real = await oauth.authorization.approve(req, another);
    expect(real).toMatchObject({ ok: true, evicted: 1 });
    // Both real people's codes work: only throwaway accounts' codes were evicted.
    expect((await exchange(new URL(victim).searchParams.get("code")!)).ok).toBe(true);
    expect((await exchange(new URL(real.value).searchParams.get("code")!)).ok).toBe(true);
    expect([...store.codes.values()].filter((c) => c.accountId === account.id || c.accountId === another.id)).toHaveLength(2);
  });
});

describe("authorizations (issue 26): the applications an account authorised, listed and revoked", () => {
  test("list() shows each client once with the union of its live grants' scopes; revoke() ends their tokens and pending codes; another account cannot", async () => {
    const { oauth, account, accounts, clientId, code, exchange, clock } = await setup();
    expect(await oauth.authorizations.list(account)).toEqual([]);
    const first = await exchange(await code({ scope: "account:read" }));
    clock.set(clock.nowMs() + 1_000);
    const second = await exchange(await code({ scope: "witness:write" }));
    if (!first.ok || !second.ok) throw new Error("no tokens");
    const pending = await code({ scope: "rpc:read" });
    const listed = await oauth.authorizations.list(account);
    expect(listed).toEqual([{
      client_id: clientId, client_name: "Bot", scope: "witness:write account:read",
      first_authorized_at: new Date(clock.nowMs() - 1_000).toISOString(), last_authorized_at: new Date(clock.nowMs()).toISOString(), grants: 2,
    }]);

    const stranger = (await accounts.findOrCreateAccount("0x00000000000000000000000000000000000000cc", "acct-3", clock.nowMs())).account;
    expect(await oauth.authorizations.revoke(stranger, clientId)).toMatchObject({ ok: false, code: "authorization_not_found" });
    expect(await oauth.authenticateBearer(first.value.access_token, { scope: "account:read" })).toMatchObject({ ok: true });

    expect(await oauth.authorizations.revoke(account, clientId)).toEqual({ ok: true, value: { client_id: clientId } });
    expect(await oauth.authenticateBearer(first.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });
    expect(await oauth.authenticateBearer(second.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: false, code: "invalid_token" });
    const refreshed = await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: second.value.refresh_token! }, {});
    expect(refreshed).toMatchObject({ ok: false, code: "invalid_grant" });
    // The code approved before the revocation cannot be exchanged after it.
    expect(await exchange(pending)).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await oauth.authorizations.list(account)).toEqual([]);
    expect(await oauth.authorizations.revoke(account, clientId)).toMatchObject({ ok: false, code: "authorization_not_found" });
  });

  test("a grant past its tokens (no live refresh token, its last access token expired) is not listed", async () => {
    const { oauth, account, code, exchange, clock, store } = await setup();
    const tokens = await exchange(await code({ scope: "account:read" }));
    if (!tokens.ok) throw new Error("no tokens");
    expect(await oauth.authorizations.list(account)).toHaveLength(1);
    // The refresh token lives a day in this setup; past it and the hour of the access token, nothing is live.
    clock.set(clock.nowMs() + 86_400_000 + 1);
    expect(await oauth.authorizations.list(account)).toEqual([]);
    expect(store.grants.size).toBe(1);
  });
});

describe("tokens", () => {
  test("authorization code: a wrong verifier or redirect URI is invalid_grant and uses nothing up; the right one gets tokens once; a second use revokes them", async () => {
    const { oauth, code, exchange, store, account } = await setup();
    const c = await code();
    const writes = store.writes;
    expect(await exchange(c, { code_verifier: "w".repeat(43) })).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await exchange(c, { redirect_uri: `${REDIRECT}x` })).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(store.writes).toBe(writes);
    const tokens = await exchange(c);
    expect(tokens).toMatchObject({ ok: true, value: { token_type: "Bearer", expires_in: 3_600, scope: "witness:write relay:write rpc:read account:read subjects:write keys:write webhooks:write" } });
    if (!tokens.ok) return;
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: true, value: { account: { id: account.id } } });
    expect(await exchange(c)).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: false, code: "invalid_token" });
  });

  test("a used code replayed without its client's verifier, or by another client, ends nothing and says nothing of its use", async () => {
    // Found by attack: the reuse rule ran before the client and PKCE checks, so anyone holding a used code (a log, a
    // Referer) and any client_id ended the real client's grant with any 43 characters.
    const { oauth, code, exchange } = await setup();
    const c = await code();
    const tokens = await exchange(c);
    if (!tokens.ok) throw new Error("no tokens");
    const registered = await oauth.registration.register({ client_name: "Other", redirect_uris: [REDIRECT] }, "10.0.0.2");
    if (!registered.ok) throw new Error("registration failed");
    const other = registered.value.client_id;
    for (const replay of [{ code_verifier: "x".repeat(43) }, { client_id: other }] as Record<string, string>[]) {
      expect(await exchange(c, replay)).toMatchObject({ ok: false, code: "invalid_grant", message: "The code is unknown or expired" });
    }
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: true });
    // Its own client with its verifier: a second use, and the tokens end.
    expect(await exchange(c)).toMatchObject({ ok: false, code: "invalid_grant", message: "The code was used already" });
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: false, code: "invalid_token" });
  });

  test("one code exchanged twice at once: one gets tokens, the other invalid_grant, and the winner's tokens end as a second use's do", async () => {
    // Found by attacking the token endpoint: the loser of the race was refused, but the tokens of a stolen code raced
    // against the real client's stayed good.
    const { oauth, code, exchange, clientId } = await setup();
    const c = await code();
    const answers = await Promise.all([exchange(c), exchange(c)]);
    expect(answers.map((a) => a.ok).sort()).toEqual([false, true]);
    expect(answers.find((a) => !a.ok)).toMatchObject({ ok: false, code: "invalid_grant" });
    const won = answers.find((a) => a.ok)!;
    if (!won.ok) throw new Error("unreachable");
    expect(await oauth.authenticateBearer(won.value.access_token, { scope: "witness:write" })).toMatchObject({ ok: false, code: "invalid_token" });
    const refreshed = await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: won.value.refresh_token! }, {});
    expect(refreshed).toMatchObject({ ok: false, code: "invalid_grant" });
  });

  test("redirect_uri at the token endpoint (RFC 6749 §4.1.3, issue 33): optional when the authorization request named none, required when it named one", async () => {
    const { oauth, clientId, account, exchange, store } = await setup();
    const { redirect_uri: _named, ...params } = {
      response_type: "code", client_id: clientId, redirect_uri: REDIRECT, code_challenge: s256Challenge(VERIFIER), code_challenge_method: "S256", state: "st",
    };
    // The request names no redirect_uri (the client registered one): the consent form carries none either, and the
    // form posted back is the same request.
    const checked = await oauth.authorization.check(params);
    if (!checked.ok) throw new Error("check failed");
    expect(checked.value).toMatchObject({ redirectUri: REDIRECT, redirectUriGiven: false });
    const fields = oauth.authorization.formFields(checked.value);
    expect(fields.redirect_uri).toBeUndefined();
    const posted = await oauth.authorization.check(fields);
    if (!posted.ok) throw new Error("check of the posted form failed");
    const approved = await oauth.authorization.approve(posted.value, account);
    if (!approved.ok) throw new Error("approve refused");
    expect(approved.value.startsWith(`${REDIRECT}?`)).toBe(true);
    const omitted = new URL(approved.value).searchParams.get("code")!;
    const writes = store.writes;
    // Given anyway, it must still be where the code went.
    expect(await exchange(omitted, { redirect_uri: `${REDIRECT}x` })).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(store.writes).toBe(writes);
    const { redirect_uri: _sent, ...withoutRedirect } = { grant_type: "authorization_code", client_id: clientId, code: omitted, redirect_uri: REDIRECT, code_verifier: VERIFIER };
    expect(await oauth.tokens.token(withoutRedirect, {})).toMatchObject({ ok: true, value: { token_type: "Bearer" } });

    // The request named it: the token request must name the same.
    const named = await oauth.authorization.check({ ...params, redirect_uri: REDIRECT });
    if (!named.ok) throw new Error("check failed");
    expect(oauth.authorization.formFields(named.value).redirect_uri).toBe(REDIRECT);
    const namedApproved = await oauth.authorization.approve(named.value, account);
    if (!namedApproved.ok) throw new Error("approve refused");
    const c = new URL(namedApproved.value).searchParams.get("code")!;
    expect(await oauth.tokens.token({ ...withoutRedirect, code: c }, {})).toMatchObject({ ok: false, code: "invalid_grant" });
    expect((await exchange(c)).ok).toBe(true);
  });

  test("a code expires after 60 s", async () => {
    const { code, exchange, clock } = await setup();
    const c = await code();
    clock.set(clock.nowMs() + 60_000);
    expect(await exchange(c)).toMatchObject({ ok: false, code: "invalid_grant" });
  });

  test("refresh: rotated each use, narrowed on request; the old one again revokes the family", async () => {
    const { oauth, code, exchange, clientId } = await setup();
    const first = await exchange(await code({ scope: "account:read rpc:read" }));
    if (!first.ok) throw new Error("no tokens");
    const refresh = (token: string, scope?: string) =>
      oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: token, ...(scope ? { scope } : {}) }, {});
    const second = await refresh(first.value.refresh_token!, "account:read");
    expect(second).toMatchObject({ ok: true, value: { scope: "account:read" } });
    if (!second.ok) return;
    expect(await refresh(second.value.refresh_token!, "witness:write")).toMatchObject({ ok: false, code: "invalid_scope" });
    expect(await refresh(first.value.refresh_token!)).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await refresh(second.value.refresh_token!)).toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await oauth.authenticateBearer(second.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });
  });

  test("client credentials: the secret is checked, the scope is a subset of the client's, a public client may not use it", async () => {
    const { oauth, account, clientId } = await setup();
    const created = await oauth.registration.createApiClient(account, { client_name: "CI", scope: "account:read rpc:read" });
    if (!created.ok) throw new Error("no client");
    const basic = { basic: { clientId: created.value.client_id, secret: created.value.client_secret } };
    expect(await oauth.tokens.token({ grant_type: "client_credentials", scope: "rpc:read" }, basic)).toMatchObject({ ok: true, value: { scope: "rpc:read" } });
    expect(await oauth.tokens.token({ grant_type: "client_credentials", scope: "witness:write" }, basic)).toMatchObject({ ok: false, code: "invalid_scope" });
    expect(await oauth.tokens.token({ grant_type: "client_credentials" }, { basic: { ...basic.basic, secret: "wrong" } })).toMatchObject({ ok: false, code: "invalid_client" });
    expect(await oauth.tokens.token({ grant_type: "client_credentials", client_secret: "x" }, basic)).toMatchObject({ ok: false, code: "invalid_request" });
    expect(await oauth.tokens.token({ grant_type: "client_credentials", client_id: clientId }, {})).toMatchObject({ ok: false, code: "unauthorized_client" });
    expect(await oauth.tokens.token({ grant_type: "password" }, basic)).toMatchObject({ ok: false, code: "unsupported_grant_type" });
    // Deleting the client ends its tokens.
    const token = await oauth.tokens.token({ grant_type: "client_credentials" }, basic);
    if (!token.ok) return;
    expect((await oauth.registration.deleteApiClient(account, created.value.client_id)).ok).toBe(true);
    expect(await oauth.authenticateBearer(token.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });
  });
});

describe("revocation (RFC 7009 §2.1): the hint orders the search, it never limits it", () => {
  test("a refresh token sent with token_type_hint=access_token ends its grant; an access token sent with token_type_hint=refresh_token is refused from then on", async () => {
    const { oauth, code, exchange, clientId } = await setup();
    const tokens = await exchange(await code({ scope: "account:read" }));
    if (!tokens.ok) throw new Error("no tokens");
    expect(await oauth.tokens.revoke({ token: tokens.value.refresh_token!, token_type_hint: "access_token", client_id: clientId }, {})).toEqual({ ok: true, value: null });
    expect(await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: tokens.value.refresh_token! }, {}))
      .toMatchObject({ ok: false, code: "invalid_grant" });
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });

    const other = await exchange(await code({ scope: "account:read" }));
    if (!other.ok) throw new Error("no tokens");
    expect(await oauth.tokens.revoke({ token: other.value.access_token, token_type_hint: "refresh_token", client_id: clientId }, {})).toEqual({ ok: true, value: null });
    expect(await oauth.authenticateBearer(other.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token", message: "The access token was revoked" });
    // Only the access token was revoked: the grant's refresh token still works.
    expect((await oauth.tokens.token({ grant_type: "refresh_token", client_id: clientId, refresh_token: other.value.refresh_token! }, {})).ok).toBe(true);
  });
});

describe("bearer", () => {
  test("authenticateBearer() refuses an expired token, one for another audience, one without the scope, and a revoked one", async () => {
    const { oauth, code, exchange, clock, clientId } = await setup();
    const tokens = await exchange(await code({ scope: "account:read" }));
    if (!tokens.ok) throw new Error("no tokens");
    const access = tokens.value.access_token;
    expect(await oauth.authenticateBearer(access, { scope: "witness:write" })).toMatchObject({ ok: false, code: "insufficient_scope" });
    expect(await oauth.authenticateBearer(access, { scope: "account:read", audience: `${ISSUER}/mcp` })).toMatchObject({ ok: false, code: "invalid_token" });
    expect(await oauth.authenticateBearer(`${access}x`, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });
    await oauth.tokens.revoke({ token: access, token_type_hint: "access_token", client_id: clientId }, {});
    expect(await oauth.authenticateBearer(access, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token", message: "The access token was revoked" });
    const fresh = await exchange(await code({ scope: "account:read" }));
    if (!fresh.ok) return;
    clock.set(clock.nowMs() + 3_600_000);
    expect(await oauth.authenticateBearer(fresh.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token", message: "The access token expired" });
  });

  test("a token for the MCP endpoint works there (resource {base}/mcp) and nowhere else", async () => {
    const { oauth, code, clientId } = await setup();
    const c = await code({ resource: `${ISSUER}/mcp`, scope: "account:read" });
    const tokens = await oauth.tokens.token({ grant_type: "authorization_code", client_id: clientId, code: c, redirect_uri: REDIRECT, code_verifier: VERIFIER, resource: `${ISSUER}/mcp` }, {});
    if (!tokens.ok) throw new Error("no tokens");
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "account:read", audience: `${ISSUER}/mcp` })).toMatchObject({ ok: true });
    expect(await oauth.authenticateBearer(tokens.value.access_token, { scope: "account:read" })).toMatchObject({ ok: false, code: "invalid_token" });
  });
});
