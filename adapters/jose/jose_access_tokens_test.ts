import { describe, expect, test } from "bun:test";
import { SignJWT, generateKeyPair } from "jose";
import { fakeClock, fakeOAuthStore } from "../../ports/fakes/mod.ts";
import { createJoseAccessTokenKeys, RETIRED_KEY_GRACE_MS } from "./mod.ts";

const ISSUER = "https://ats.example";
const claims = (nowS: number, over: Record<string, unknown> = {}) =>
  ({ iss: ISSUER, sub: "acct", aud: ISSUER, client_id: "c1", scope: "account:read", jti: "j1", iat: nowS, exp: nowS + 3_600, ...over }) as never;

describe("jose access-token keys", () => {
  test("signs RFC 9068 JWTs (ES256, typ at+jwt, kid) that verify until they expire, for their issuer and audience only", async () => {
    const clock = fakeClock();
    const keys = createJoseAccessTokenKeys({ store: fakeOAuthStore(), clock, rotateAfterMs: 86_400_000 });
    await keys.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const token = await keys.sign(claims(now));
    const header = JSON.parse(atob(token.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/")));
    const jwks = await keys.jwks();
    expect(header).toEqual({ alg: "ES256", typ: "at+jwt", kid: (jwks.keys[0] as { kid: string }).kid });
    expect(jwks.keys[0]).not.toHaveProperty("d");
    expect(await keys.verify(token, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true, claims: { sub: "acct", client_id: "c1", jti: "j1" } });
    expect(await keys.verify(token, { issuer: ISSUER, audience: `${ISSUER}/mcp` })).toEqual({ ok: false, reason: "invalid" });
    expect(await keys.verify(token, { issuer: "https://other.example", audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    clock.set(clock.nowMs() + 3_600_000);
    expect(await keys.verify(token, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "expired" });
  });

  test("a token signed by a key the service does not hold, or without typ at+jwt, is invalid", async () => {
    const clock = fakeClock();
    const keys = createJoseAccessTokenKeys({ store: fakeOAuthStore(), clock, rotateAfterMs: 86_400_000 });
    await keys.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const kid = ((await keys.jwks()).keys[0] as { kid: string }).kid;
    const stranger = await generateKeyPair("ES256");
    const forged = await new SignJWT({ client_id: "c1", scope: "account:read", jti: "x" }).setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid })
      .setIssuer(ISSUER).setAudience(ISSUER).setSubject("acct").setIssuedAt(now).setExpirationTime(now + 60).sign(stranger.privateKey);
    expect(await keys.verify(forged, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    const valid = await keys.sign(claims(now));
    const [, payload, signature] = valid.split(".");
    const untyped = `${btoa(JSON.stringify({ alg: "ES256", kid })).replace(/=+$/, "")}.${payload}.${signature}`;
    expect(await keys.verify(untyped, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
  });

  test("rotation: a due key is replaced by a new newest key that signs; the old key stays published until two hours after it, then is dropped", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    let dropped = 0;
    const keys = createJoseAccessTokenKeys({
      store: { ...store, dropSigningKeys: async (before) => { const n = (await store.signingKeys()).filter((k) => k.createdAtMs < before).length; dropped += n; return n; } },
      clock,
      rotateAfterMs: 86_400_000,
    });
    await keys.maintain();
    const old = await keys.sign(claims(Math.floor(clock.nowMs() / 1000)));
    clock.set(clock.nowMs() + 86_400_000);
    await keys.maintain();
    expect((await keys.jwks()).keys).toHaveLength(2);
    const fresh = await keys.sign(claims(Math.floor(clock.nowMs() / 1000)));
    expect(fresh.split(".")[0]).not.toBe(old.split(".")[0]);
    expect(dropped).toBe(0);
    clock.set(clock.nowMs() + RETIRED_KEY_GRACE_MS);
    await keys.maintain();
    expect(dropped).toBe(1);
  });

  test("a key rotated elsewhere (another instance, or the operator's ops oauth rotate-key) signs this instance's next token; tokens of the old key still verify", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const here = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    await here.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const before = await here.sign(claims(now));
    const kidOf = (token: string) => (JSON.parse(atob(token.split(".")[0]!.replace(/-/g, "+").replace(/_/g, "/"))) as { kid: string }).kid;
    const elsewhere = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    clock.set(clock.nowMs() + 1_000);
    const rotated = await elsewhere.rotate();
    expect(rotated).not.toBe(kidOf(before));
    const after = await here.sign(claims(now, { jti: "j2" }));
    expect(kidOf(after)).toBe(rotated);
    expect(await here.verify(before, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect(await elsewhere.verify(before, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect(await elsewhere.verify(after, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect(((await here.jwks()).keys as { kid: string }[]).map((k) => k.kid).sort()).toEqual([kidOf(before), rotated].sort());
  });
});
