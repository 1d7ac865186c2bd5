/**
 * The OAuth store's behaviour (decisions §19), one suite run against SQLite and PostgreSQL: the registration rates,
 * API clients per account, single-use codes, refresh-token rotation with reuse detection, revocation, deletion that
 * ends a client's tokens, signing keys and pruning. Races are run in parallel and counted.
 */
import { describe, expect, test } from "bun:test";
import { type Grant, type OAuthClient, type RefreshToken, MAX_EVICTIONS_PER_REGISTRATION, UNUSED_CLIENT_GRACE_MS } from "../../ports/oauth.ts";
import type { Storage } from "../../ports/storage.ts";

let counter = 0;
const fresh = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;
const T0 = 1_900_000_000_000;
/** Code bounds that never refuse (the tests that are not about them). */
const ROOMY = { perAccount: 1_000_000, perClient: 1_000_000 };
/** A grant bound per account that never revokes (the tests that are not about it). */
const ROOMY_GRANTS = 1_000_000;

const client = (over: Partial<OAuthClient> = {}): OAuthClient => ({
  clientId: fresh("client"),
  accountId: null,
  secretHash: null,
  name: "Bot",
  redirectUris: ["https://app.test/cb"],
  grantTypes: ["authorization_code", "refresh_token"],
  scope: "witness:write account:read",
  authMethod: "none",
  createdAtMs: T0,
  ...over,
});
const code = (clientId: string, codeHash = fresh("code")) => ({
  codeHash, clientId, accountId: "acct", redirectUri: "https://app.test/cb", redirectUriGiven: true, scope: "account:read", codeChallenge: "c".repeat(43),
  resource: null, createdAtMs: T0, expiresAtMs: T0 + 60_000,
});
const grant = (clientId: string): Grant => ({ id: fresh("grant"), clientId, accountId: "acct", scope: "account:read", resource: null, createdAtMs: T0, revokedAtMs: null });
const refresh = (grantId: string, tokenHash = fresh("rt")): RefreshToken => ({ tokenHash, grantId, createdAtMs: T0, expiresAtMs: T0 + 86_400_000, usedAtMs: null });

/** Registration rates, API clients, codes and the bound of grants per account. */
function clientAndCodeTests(open: () => Promise<Storage>) {
  test("oauth: registration is refused past the rates per client address and per network, with when the next one fits; the pool evicts the oldest unused client, never refuses, never one in its grace period or holding a live code (review finding 3)", async () => {
    const { oauth } = await open();
    const who = fresh("10.0.0.1");
    const limits = { client: who, perClient: 3, total: 1_000_000, windowMs: 3_600_000 };
    const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => oauth.registerClient(client({ createdAtMs: T0 + i }), limits, T0 + 10)));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(3);
    const refused = outcomes.find((o) => !o.ok) as { limit: string; retryAfterMs: number };
    expect(refused.limit).toBe("client");
    expect(refused.retryAfterMs).toBeGreaterThan(3_599_000);
    // An hour later the address may register again.
    expect((await oauth.registerClient(client({ createdAtMs: T0 + 3_600_011 }), limits, T0 + 3_600_011)).ok).toBe(true);

    // The /64s of one /48 share the network's rate (in parallel too); another /48 is not counted with them.
    const net = `2001:db8:${(++counter).toString(16)}`;
    const byNetwork = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      oauth.registerClient(client({ createdAtMs: T0 + i }), { client: `${net}:${i.toString(16)}::/64`, perClient: 3, network: { key: `${net}::/48`, max: 5 }, total: 1_000_000, windowMs: 3_600_000 }, T0 + 20)));
    expect(byNetwork.filter((o) => o.ok)).toHaveLength(5);
    expect(byNetwork.find((o) => !o.ok)).toMatchObject({ ok: false, limit: "network" });
    const elsewhere = `2001:db8:${(++counter).toString(16)}`;
    expect((await oauth.registerClient(client(), { client: `${elsewhere}:1::/64`, perClient: 3, network: { key: `${elsewhere}::/48`, max: 5 }, total: 1_000_000, windowMs: 3_600_000 }, T0 + 20)).ok).toBe(true);

    // The pool of unused open clients never refuses: past it the oldest evictable unused client of the window is
    // evicted (unknown from then on, its expired codes gone), a used one never; the evicted row still counts for its
    // address. Never evicted (review finding 3): a client in its grace period after registering, or holding a live
    // code; with nothing evictable the pool is passed.
    const G = UNUSED_CLIENT_GRACE_MS;
    const at = T0 + 50 * 3_600_000 + counter * 10_000; // a window of this test's own
    const pool = { perClient: 100, total: 2, windowMs: 3_600_000 };
    const used = client({ createdAtMs: at });
    const [a, b, c] = [client({ createdAtMs: at + 1 }), client({ createdAtMs: at + 2 }), client({ createdAtMs: at + 3 })];
    const address = fresh("192.0.2.1");
    expect(await oauth.registerClient(used, { ...pool, client: fresh("k") }, at)).toEqual({ ok: true, evicted: 0 });
    const hash = fresh("code");
    await oauth.saveCode({ ...code(used.clientId, hash), createdAtMs: at, expiresAtMs: at + 60_000 }, ROOMY);
    expect(await oauth.exchangeCode(hash, grant(used.clientId), null, at, ROOMY_GRANTS)).toBe(true);
    expect(await oauth.registerClient(a, { ...pool, client: address }, at + 1)).toEqual({ ok: true, evicted: 0 });
    const pending = fresh("code"); // live until at + 2G: its user is between approval and exchange
    await oauth.saveCode({ ...code(a.clientId, pending), createdAtMs: at + 1, expiresAtMs: at + 2 * G }, ROOMY);
    expect(await oauth.registerClient(b, { ...pool, client: fresh("k") }, at + 2)).toEqual({ ok: true, evicted: 0 });
    const lapsed = fresh("code"); // expired at at + 60,002
    await oauth.saveCode({ ...code(b.clientId, lapsed), createdAtMs: at + 2, expiresAtMs: at + 60_002 }, ROOMY);
    // a and b are in their grace period: nothing evicted, the pool passed.
    expect(await oauth.registerClient(c, { ...pool, client: fresh("k") }, at + 3)).toEqual({ ok: true, evicted: 0 });
    for (const kept of [used, a, b, c]) expect((await oauth.findClient(kept.clientId))?.clientId).toBe(kept.clientId);
    // Past the grace: a holds a live code and stays with it; b and c go, b's expired code with it.
    const d = client({ createdAtMs: at + G + 10 });
    expect(await oauth.registerClient(d, { ...pool, client: fresh("k") }, at + G + 10)).toEqual({ ok: true, evicted: 2 });
    for (const gone of [b, c]) expect(await oauth.findClient(gone.clientId)).toBeUndefined();
    expect(await oauth.findCode(lapsed)).toBeUndefined();
    expect((await oauth.findClient(a.clientId))?.clientId).toBe(a.clientId);
    expect((await oauth.findCode(pending))?.usedAtMs).toBeNull();
    // Once a's code expired it is evictable (d, 5 ms short of its grace, is not).
    const e = client({ createdAtMs: at + 2 * G + 5 });
    expect(await oauth.registerClient(e, { ...pool, client: fresh("k") }, at + 2 * G + 5)).toEqual({ ok: true, evicted: 1 });
    expect(await oauth.findClient(a.clientId)).toBeUndefined();
    expect(await oauth.findCode(pending)).toBeUndefined();
    expect((await oauth.findClient(d.clientId))?.clientId).toBe(d.clientId);
    expect(await oauth.registerClient(client({ createdAtMs: at + 2 * G + 6 }), { ...pool, client: address, perClient: 1 }, at + 2 * G + 6)).toMatchObject({ ok: false, limit: "client" });
    // Parallel registrations past the pool: every one stored; only d and e (past their grace) evicted, then the pool
    // is passed since the new ones are in theirs.
    const later = at + 4 * G;
    const parallel = await Promise.all(Array.from({ length: 6 }, (_, i) => oauth.registerClient(client({ createdAtMs: later + i }), { ...pool, client: fresh("k") }, later + 10)));
    expect(parallel.every((o) => o.ok)).toBe(true);
    expect(parallel.reduce((n, o) => n + (o.ok ? o.evicted : 0), 0)).toBe(2);
    for (const gone of [d, e]) expect(await oauth.findClient(gone.clientId)).toBeUndefined();
    expect(await oauth.findClient(used.clientId)).toBeDefined();
    // Past their grace the pool is 5 over, and one registration evicts at most MAX_EVICTIONS_PER_REGISTRATION (found
    // by review: thousands over, one registration evicted them all, a lock each, in one transaction).
    const after = later + G + 100;
    expect(await oauth.registerClient(client({ createdAtMs: after }), { ...pool, client: fresh("k") }, after)).toEqual({ ok: true, evicted: MAX_EVICTIONS_PER_REGISTRATION });
    expect(await oauth.registerClient(client({ createdAtMs: after + 1 }), { ...pool, client: fresh("k") }, after + 1)).toEqual({ ok: true, evicted: MAX_EVICTIONS_PER_REGISTRATION });
  });

  test("oauth: an account holds at most its API clients; listing shows its own; deleting ends the client's grants and tokens", async () => {
    const { oauth } = await open();
    const account = fresh("acct");
    const made = await Promise.all(Array.from({ length: 6 }, () =>
      oauth.createClient(client({ accountId: account, secretHash: "ab".repeat(32), grantTypes: ["client_credentials"], authMethod: "client_secret_basic", redirectUris: [] }), 4)));
    expect(made.filter(Boolean)).toHaveLength(4);
    const listed = await oauth.listClients(account);
    expect(listed).toHaveLength(4);
    expect(listed[0]).toMatchObject({ accountId: account, grantTypes: ["client_credentials"], redirectUris: [], authMethod: "client_secret_basic" });
    const victim = listed[0]!.clientId;
    await oauth.revokeAccessToken(fresh("jti"), victim, T0 + 3_600_000);
    const g = grant(victim);
    await oauth.saveCode(code(victim, "code-of-victim-" + victim), ROOMY);
    expect(await oauth.exchangeCode("code-of-victim-" + victim, g, refresh(g.id, "rt-of-" + victim), T0, ROOMY_GRANTS)).toBe(true);
    expect(await oauth.accessTokenActive({ jti: "any", clientId: victim, grantId: g.id, accountId: g.accountId })).toBe(true);
    expect(await oauth.deleteClient("someone-else", victim)).toBe(false);
    expect(await oauth.deleteClient(account, victim)).toBe(true);
    expect(await oauth.findClient(victim)).toBeUndefined();
    expect(await oauth.accessTokenActive({ jti: "any", clientId: victim, grantId: g.id, accountId: g.accountId })).toBe(false);
    expect(await oauth.findRefreshToken("rt-of-" + victim)).toBeUndefined();
    expect(await oauth.listClients(account)).toHaveLength(3);
  });

  test("oauth: a code is exchanged once, also by parallel requests; the exchange stores its grant and first refresh token", async () => {
    const { oauth } = await open();
    const c = client();
    await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const hash = fresh("code");
    await oauth.saveCode(code(c.clientId, hash), ROOMY);
    expect(await oauth.findCode(hash)).toMatchObject({ clientId: c.clientId, usedAtMs: null, grantId: null });
    const grants = Array.from({ length: 8 }, () => grant(c.clientId));
    const results = await Promise.all(grants.map((g) => oauth.exchangeCode(hash, g, refresh(g.id), T0 + 1, ROOMY_GRANTS)));
    expect(results.filter(Boolean)).toHaveLength(1);
    const winner = grants[results.indexOf(true)]!;
    expect(await oauth.findCode(hash)).toMatchObject({ usedAtMs: T0 + 1, grantId: winner.id, accountId: winner.accountId });
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: winner.id, accountId: winner.accountId })).toBe(true);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: grants.find((g) => g !== winner)!.id, accountId: "acct" })).toBe(false);
  });

  test("oauth: a code keeps whether its authorization request named redirect_uri (issue 33)", async () => {
    const { oauth } = await open();
    const c = client();
    await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const named = fresh("code");
    const omitted = fresh("code");
    await oauth.saveCode(code(c.clientId, named), ROOMY);
    await oauth.saveCode({ ...code(c.clientId, omitted), redirectUriGiven: false }, ROOMY);
    expect(await oauth.findCode(named)).toMatchObject({ redirectUri: "https://app.test/cb", redirectUriGiven: true });
    expect(await oauth.findCode(omitted)).toMatchObject({ redirectUri: "https://app.test/cb", redirectUriGiven: false });
  });

  test("oauth: an account keeps at most its bound of unrevoked grants, all clients together: each exchange past it revokes the oldest", async () => {
    const { oauth } = await open();
    const account = fresh("acct");
    const other = fresh("acct");
    const [a, b] = [client(), client()];
    for (const c of [a, b]) await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const exchange = async (c: OAuthClient, who: string, at: number) => {
      const hash = fresh("code");
      await oauth.saveCode({ ...code(c.clientId, hash), accountId: who }, ROOMY);
      const g = { ...grant(c.clientId), accountId: who, createdAtMs: at };
      const token = refresh(g.id);
      expect(await oauth.exchangeCode(hash, g, token, at, 3)).toBe(true);
      return { g, token };
    };
    const theirs = await exchange(a, other, T0);
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await exchange(i % 2 === 0 ? a : b, account, T0 + 10 * (i + 1)));
    const live = async ({ g }: { g: Grant }) => await oauth.accessTokenActive({ jti: fresh("jti"), clientId: g.clientId, grantId: g.id, accountId: g.accountId });
    expect(await Promise.all(made.map(live))).toEqual([false, false, false, true, true, true]);
    expect((await oauth.findRefreshToken(made[0]!.token.tokenHash))?.grant.revokedAtMs).toBe(T0 + 40);
    expect((await oauth.rotateRefreshToken(made[0]!.token.tokenHash, refresh(made[0]!.g.id), T0 + 100)).kind).toBe("invalid");
    // Another account's grant is not counted nor touched.
    expect(await live(theirs)).toBe(true);
    // Parallel exchanges of one account still leave it at most the bound.
    const parallel = await Promise.all(Array.from({ length: 6 }, async (_, i) => {
      const hash = fresh("code");
      await oauth.saveCode({ ...code(a.clientId, hash), accountId: account }, ROOMY);
      const g = { ...grant(a.clientId), accountId: account, createdAtMs: T0 + 200 + i };
      expect(await oauth.exchangeCode(hash, g, refresh(g.id), T0 + 200 + i, 3)).toBe(true);
      return { g };
    }));
    const alive = (await Promise.all([...made, ...parallel].map(live))).filter(Boolean);
    expect(alive).toHaveLength(3);
  });
}


/** Refresh tokens, live codes, authorizations, signing keys and pruning. */
function tokenTests(open: () => Promise<Storage>) {
  test("oauth: a refresh token rotates once; its reuse revokes the grant, so the next token and the grant's access tokens die", async () => {
    const { oauth } = await open();
    const c = client();
    await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const g = grant(c.clientId);
    const hash = fresh("code");
    await oauth.saveCode(code(c.clientId, hash), ROOMY);
    const first = refresh(g.id);
    await oauth.exchangeCode(hash, g, first, T0, ROOMY_GRANTS);
    // Parallel uses of one token: one rotation; the others are reuse.
    const nexts = Array.from({ length: 5 }, () => refresh(g.id));
    const outcomes = await Promise.all(nexts.map((n) => oauth.rotateRefreshToken(first.tokenHash, n, T0 + 5)));
    expect(outcomes.filter((o) => o.kind === "rotated")).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === "reused")).toHaveLength(4);
    const rotatedTo = nexts[outcomes.findIndex((o) => o.kind === "rotated")]!;
    expect(await oauth.rotateRefreshToken(rotatedTo.tokenHash, refresh(g.id), T0 + 6)).toEqual({ kind: "invalid" });
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: g.id, accountId: g.accountId })).toBe(false);
    expect((await oauth.findRefreshToken(first.tokenHash))?.grant.revokedAtMs).toBe(T0 + 5);
  });

  test("oauth: a clean rotation keeps the grant; an expired or unknown token is invalid; a revoked access token is refused", async () => {
    const { oauth } = await open();
    const c = client();
    await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const g = grant(c.clientId);
    const hash = fresh("code");
    await oauth.saveCode(code(c.clientId, hash), ROOMY);
    const first = refresh(g.id);
    await oauth.exchangeCode(hash, g, first, T0, ROOMY_GRANTS);
    const second = refresh(g.id);
    expect(await oauth.rotateRefreshToken(first.tokenHash, second, T0 + 1)).toMatchObject({ kind: "rotated", grant: { id: g.id, clientId: c.clientId, scope: "account:read", revokedAtMs: null } });
    expect(await oauth.rotateRefreshToken(second.tokenHash, refresh(g.id), second.expiresAtMs)).toEqual({ kind: "invalid" });
    expect(await oauth.rotateRefreshToken(fresh("unknown"), refresh(g.id), T0)).toEqual({ kind: "invalid" });
    const jti = fresh("jti");
    expect(await oauth.accessTokenActive({ jti, clientId: c.clientId, grantId: g.id, accountId: g.accountId })).toBe(true);
    await oauth.revokeAccessToken(jti, c.clientId, T0 + 3_600_000);
    await oauth.revokeAccessToken(jti, c.clientId, T0 + 3_600_000);
    expect(await oauth.accessTokenActive({ jti, clientId: c.clientId, grantId: g.id, accountId: g.accountId })).toBe(false);
    // A token without a grant is a client-credentials token: only a confidential API client's, for its own account
    // (before, any existing client passed, this public one too).
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: null, accountId: g.accountId })).toBe(false);
    const api = client({ accountId: "acct-api", secretHash: "ab".repeat(32), grantTypes: ["client_credentials"], authMethod: "client_secret_basic", redirectUris: [] });
    expect(await oauth.createClient(api, 4)).toBe(true);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: api.clientId, grantId: null, accountId: "acct-api" })).toBe(true);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: api.clientId, grantId: null, accountId: "acct" })).toBe(false);
    // A grant counts only for its own client and account.
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: api.clientId, grantId: g.id, accountId: g.accountId })).toBe(false);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: g.id, accountId: "acct-api" })).toBe(false);
    await oauth.revokeGrant(g.id, T0 + 2);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: c.clientId, grantId: g.id, accountId: g.accountId })).toBe(false);
  });

  test("oauth: live codes are bounded per account (its own oldest evicted, the same client's first) and per client (the biggest holder's evicted), also for parallel requests; nothing refused; exchanged codes are never evicted", async () => {
    const { oauth } = await open();
    const [c, d] = [client(), client()];
    for (const x of [c, d]) await oauth.registerClient(x, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const account = fresh("acct");
    const mine = (hash = fresh("code"), at = T0, clientId = c.clientId) => ({ ...code(clientId, hash), accountId: account, createdAtMs: at, expiresAtMs: at + 60_000 });
    const live = async (hashes: string[]) => (await Promise.all(hashes.map((h) => oauth.findCode(h)))).filter((x) => x !== undefined && x.usedAtMs === null);
    // The account's code for another client, its oldest.
    const elsewhere = fresh("code");
    expect(await oauth.saveCode(mine(elsewhere, T0 - 1, d.clientId), { perAccount: 4, perClient: 100 })).toEqual({ evicted: 0 });
    const hashes = Array.from({ length: 20 }, () => fresh("code"));
    const outcomes = await Promise.all(hashes.map((h, i) => oauth.saveCode(mine(h, T0 + i), { perAccount: 4, perClient: 100 })));
    // Before: 4 saved, 16 refused (account_limit). Now every one stored, 4 live in the end, the other client's kept.
    expect(outcomes.reduce((n, o) => n + o.evicted, 0)).toBe(17);
    expect(await live(hashes)).toHaveLength(3);
    expect(await oauth.findCode(elsewhere)).toBeDefined();
    // An exchanged code is never evicted and no longer counts.
    const exchanged = (await live(hashes))[0]!.codeHash;
    expect(await oauth.exchangeCode(exchanged, grant(c.clientId), null, T0 + 30, ROOMY_GRANTS)).toBe(true);
    for (let i = 0; i < 6; i++) await oauth.saveCode(mine(fresh("code"), T0 + 40 + i), { perAccount: 4, perClient: 100 });
    expect((await oauth.findCode(exchanged))?.usedAtMs).toBe(T0 + 30);
    // At their expiry codes no longer count: nothing evicted.
    expect(await oauth.saveCode(mine(fresh("code"), T0 + 120_000), { perAccount: 4, perClient: 100 })).toEqual({ evicted: 0 });

    // The client's bound: throwaway accounts holding many codes lose theirs, a person holding one keeps it.
    const other = client();
    await oauth.registerClient(other, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const person = fresh("code");
    await oauth.saveCode({ ...code(other.clientId, person), accountId: fresh("person") }, { perAccount: 100, perClient: 5 });
    const spam = Array.from({ length: 12 }, () => fresh("code"));
    const byClient = await Promise.all(spam.map((h, i) =>
      oauth.saveCode({ ...code(other.clientId, h), accountId: `${account}-${i % 3}`, createdAtMs: T0 + 1 + i }, { perAccount: 100, perClient: 5 })));
    expect(byClient.reduce((n, o) => n + o.evicted, 0)).toBe(8);
    expect(await live(spam)).toHaveLength(4);
    const another = fresh("code");
    expect(await oauth.saveCode({ ...code(other.clientId, another), accountId: fresh("person"), createdAtMs: T0 + 20 }, { perAccount: 100, perClient: 5 })).toEqual({ evicted: 1 });
    expect(await oauth.findCode(person)).toBeDefined();
    expect(await oauth.findCode(another)).toBeDefined();
  });

  test("oauth: authorizations are listed per client with their live grants' scopes; revoking ends the pair's grants and pending codes only", async () => {
    const { oauth } = await open();
    const account = fresh("acct");
    const [a, b] = [client({ name: "App A" }), client({ name: null })];
    for (const c of [a, b]) await oauth.registerClient(c, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, T0);
    const grantOf = async (c: OAuthClient, scope: string, at: number, withRefresh: boolean, who = account) => {
      const g: Grant = { ...grant(c.clientId), accountId: who, scope, createdAtMs: at };
      const hash = fresh("code");
      await oauth.saveCode({ ...code(c.clientId, hash), accountId: who }, ROOMY);
      await oauth.exchangeCode(hash, g, withRefresh ? { ...refresh(g.id), createdAtMs: at, expiresAtMs: at + 86_400_000 } : null, at, ROOMY_GRANTS);
      return g;
    };
    const now = T0 + 10 * 3_600_000;
    await grantOf(a, "account:read", now - 7_200_000, true);
    const a2 = await grantOf(a, "witness:write account:read", now - 1_000, false);
    await grantOf(b, "rpc:read", now - 500, true);
    const stale = await grantOf(b, "keys:write", now - 7_200_000, false); // no refresh token, its access token expired
    const strangers = await grantOf(a, "rpc:read", now, true, fresh("other"));
    const listed = await oauth.listAuthorizations(account, now, 10);
    expect(listed.map((x) => x.clientId)).toEqual([b.clientId, a.clientId]);
    expect(listed[0]).toEqual({ clientId: b.clientId, clientName: null, scopes: ["rpc:read"], firstAuthorizedAtMs: now - 500, lastAuthorizedAtMs: now - 500, grants: 1 });
    expect(listed[1]).toMatchObject({ clientId: a.clientId, clientName: "App A", firstAuthorizedAtMs: now - 7_200_000, lastAuthorizedAtMs: now - 1_000, grants: 2 });
    expect([...listed[1]!.scopes].sort()).toEqual(["account:read", "witness:write account:read"]);
    expect(await oauth.listAuthorizations(account, now, 1)).toHaveLength(1);

    const pending = fresh("code");
    await oauth.saveCode({ ...code(a.clientId, pending), accountId: account, createdAtMs: now, expiresAtMs: now + 60_000 }, ROOMY);
    expect(await oauth.revokeAuthorizations(account, a.clientId, now)).toBe(3);
    expect(await oauth.findCode(pending)).toBeUndefined();
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: a.clientId, grantId: a2.id, accountId: a2.accountId })).toBe(false);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: a.clientId, grantId: strangers.id, accountId: strangers.accountId })).toBe(true);
    expect((await oauth.listAuthorizations(account, now, 10)).map((x) => x.clientId)).toEqual([b.clientId]);
    expect(await oauth.revokeAuthorizations(account, a.clientId, now)).toBe(0);
    // Another account has nothing of b to revoke; the account's grant past its tokens is not counted, but revoked all the same.
    expect(await oauth.revokeAuthorizations(fresh("nobody"), b.clientId, now)).toBe(0);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: b.clientId, grantId: stale.id, accountId: stale.accountId })).toBe(true);
    expect(await oauth.revokeAuthorizations(account, b.clientId, now)).toBe(1);
    expect(await oauth.accessTokenActive({ jti: fresh("jti"), clientId: b.clientId, grantId: stale.id, accountId: stale.accountId })).toBe(false);
    expect(await oauth.listAuthorizations(account, now, 10)).toEqual([]);
  });

  test("oauth: signing keys newest first; dropping keeps the newest; pruning removes what expired and unused open clients", async () => {
    const { oauth } = await open();
    const base = T0 + 10_000_000 + counter * 1_000;
    for (const [i, kid] of [fresh("kid-a"), fresh("kid-b"), fresh("kid-c")].entries()) {
      await oauth.addSigningKey({ kid, privateJwk: "{}", publicJwk: `{"kid":"${kid}"}`, createdAtMs: base + i });
    }
    const keys = await oauth.signingKeys();
    expect(keys[0]!.createdAtMs).toBeGreaterThanOrEqual(base + 2);
    expect(await oauth.dropSigningKeys(Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER)).toBeGreaterThanOrEqual(2);
    const left = await oauth.signingKeys();
    expect(left).toHaveLength(1);
    expect(left[0]!.kid).toBe(keys[0]!.kid);
    // A signer took over: the key is retired, kept through its grace, then dropped, newest or not.
    expect(await oauth.retireSigningKeys(base + 100)).toBe(1);
    expect((await oauth.signingKeys())[0]).toMatchObject({ kid: keys[0]!.kid, retiredAtMs: base + 100 });
    expect(await oauth.retireSigningKeys(base + 200)).toBe(0);
    expect(await oauth.dropSigningKeys(Number.MAX_SAFE_INTEGER, base + 100)).toBe(0);
    expect(await oauth.dropSigningKeys(Number.MAX_SAFE_INTEGER, base + 101)).toBe(1);
    expect((await oauth.signingKeys()).find((k) => k.kid === keys[0]!.kid)).toBeUndefined();

    const unused = client({ createdAtMs: 1_000 });
    await oauth.registerClient(unused, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, 1_000);
    const used = client({ createdAtMs: 1_000 });
    await oauth.registerClient(used, { client: fresh("k"), perClient: 100, total: 1_000_000, windowMs: 1 }, 1_000);
    const g = grant(used.clientId);
    const hash = fresh("code");
    await oauth.saveCode({ ...code(used.clientId, hash), expiresAtMs: 2_000 }, ROOMY);
    await oauth.exchangeCode(hash, g, refresh(g.id), 1_500, ROOMY_GRANTS);
    const stale = fresh("code");
    await oauth.saveCode({ ...code(used.clientId, stale), expiresAtMs: 2_000 }, ROOMY);
    expect(await oauth.prune(3_000, 2_000)).toBeGreaterThanOrEqual(3);
    expect(await oauth.findClient(unused.clientId)).toBeUndefined();
    expect(await oauth.findClient(used.clientId)).toBeDefined();
    expect(await oauth.findCode(stale)).toBeUndefined();
  });
}

/** Registers the OAuth store's contract tests. */
export function oauthStorageContract(name: string, open: () => Promise<Storage>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`oauth storage contract: ${name}`, () => {
    clientAndCodeTests(open);
    tokenTests(open);
    signerKeyTests(open);
    revokedKeyTests(open);
  });
}

/** The public keys of the instances' OAUTH_SIGNERs (decisions §27): recorded, seen again, dropped once unseen. */
function signerKeyTests(open: () => Promise<Storage>) {
  test("oauth: a signer's public key is recorded once, its sighting only moves forward, and it is dropped once unseen since the bound", async () => {
    const { oauth } = await open();
    const base = T0 + 20_000_000 + counter * 1_000;
    const [a, b] = [fresh("signer-a"), fresh("signer-b")];
    const jwk = (kid: string) => JSON.stringify({ kty: "EC", crv: "P-256", x: "x", y: "y", kid });
    await oauth.seeSignerKey(a, jwk(a), base);
    await oauth.seeSignerKey(b, jwk(b), base + 10);
    // Seen again by an instance whose clock is ahead, then by one whose clock is behind: the later sighting stays.
    await oauth.seeSignerKey(a, jwk(a), base + 50);
    await oauth.seeSignerKey(a, jwk(a), base + 20);
    const ours = (await oauth.signerKeys()).filter((k) => k.kid === a || k.kid === b);
    expect(ours).toEqual([
      { kid: a, publicJwk: jwk(a), firstSeenAtMs: base, seenAtMs: base + 50 },
      { kid: b, publicJwk: jwk(b), firstSeenAtMs: base + 10, seenAtMs: base + 10 },
    ]);
    expect(await oauth.dropSignerKeys(base + 10)).toBe(0);
    expect(await oauth.dropSignerKeys(base + 11)).toBe(1);
    expect((await oauth.signerKeys()).map((k) => k.kid)).toContain(a);
    expect((await oauth.signerKeys()).map((k) => k.kid)).not.toContain(b);
    expect(await oauth.dropSignerKeys(base + 51)).toBe(1);
    expect((await oauth.signerKeys()).map((k) => k.kid)).not.toContain(a);
  });
}

/**
 * An operator's revocation of a token key (review of the signer keys' records, finding 1): it comes with the key's row
 * (one read), is never cleared by a record of the key, and outlives the row, so a forgotten instance recording the key
 * again finds it revoked.
 */
function revokedKeyTests(open: () => Promise<Storage>) {
  test("oauth: a revoked key reads as revoked, a record never clears it, and it outlives the key's row; stored keys too", async () => {
    const { oauth } = await open();
    const base = T0 + 30_000_000 + counter * 1_000;
    const [a, b, stored, ahead] = [fresh("revoked-a"), fresh("kept-b"), fresh("revoked-stored"), fresh("revoked-before-seen")];
    const jwk = (kid: string) => JSON.stringify({ kty: "EC", crv: "P-256", x: "x", y: "y", kid });
    await oauth.seeSignerKey(a, jwk(a), base);
    await oauth.seeSignerKey(b, jwk(b), base);
    await oauth.addSigningKey({ kid: stored, privateJwk: "{}", publicJwk: jwk(stored), createdAtMs: base });
    expect(await oauth.revokeKey(a, base + 5)).toBe(true);
    // A second revocation keeps the first one's time.
    expect(await oauth.revokeKey(a, base + 9)).toBe(false);
    expect(await oauth.revokeKey(stored, base + 6)).toBe(true);
    // A kid no table holds yet may be revoked too (a leaked key whose row was dropped already).
    expect(await oauth.revokeKey(ahead, base + 7)).toBe(true);
    const ours = async () => (await oauth.signerKeys()).filter((k) => [a, b, ahead].includes(k.kid));
    expect(await ours()).toEqual([
      ...[
        { kid: a, publicJwk: jwk(a), firstSeenAtMs: base, seenAtMs: base, revokedAtMs: base + 5 },
        { kid: b, publicJwk: jwk(b), firstSeenAtMs: base, seenAtMs: base },
      ].sort((x, y) => (x.kid < y.kid ? 1 : -1)),
    ]);
    expect((await oauth.signingKeys()).find((k) => k.kid === stored)).toMatchObject({ kid: stored, revokedAtMs: base + 6 });
    // Recorded again (an instance still runs with it): seen later, still revoked.
    await oauth.seeSignerKey(a, jwk(a), base + 100);
    expect((await ours()).find((k) => k.kid === a)).toMatchObject({ seenAtMs: base + 100, revokedAtMs: base + 5 });
    // Its row goes once unseen for the grace; the revocation stays, so the key comes back revoked.
    await oauth.dropSignerKeys(base + 101);
    expect((await ours()).map((k) => k.kid)).toEqual([]);
    await oauth.seeSignerKey(a, jwk(a), base + 200);
    await oauth.seeSignerKey(ahead, jwk(ahead), base + 200);
    expect((await ours()).map((k) => [k.kid, k.revokedAtMs])).toEqual([[a, base + 5], [ahead, base + 7]].sort((x, y) => (x[0]! < y[0]! ? 1 : -1)));
    const revoked = (await oauth.revokedKeys()).filter((r) => [a, b, stored, ahead].includes(r.kid));
    expect(revoked).toEqual([{ kid: ahead, revokedAtMs: base + 7 }, { kid: stored, revokedAtMs: base + 6 }, { kid: a, revokedAtMs: base + 5 }]);
  });
}
