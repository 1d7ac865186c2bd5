import { describe, expect, test } from "bun:test";
import { importJWK, type JWK, SignJWT } from "jose";
import { fakeClock, fakeOAuthStore } from "../../ports/fakes/mod.ts";
import { type JwsSigner, SignerUnavailableError } from "../../ports/signer.ts";
import { nobleSecp256k1 } from "../crypto/mod.ts";
import { openJwsSigner } from "../signers/mod.ts";
import { createJoseAccessTokenKeys, RETIRED_KEY_GRACE_MS } from "./mod.ts";

const ISSUER = "https://ats.example";
const claims = (nowS: number) =>
  ({ iss: ISSUER, sub: "acct", aud: ISSUER, client_id: "c1", scope: "account:read", jti: "j1", iat: nowS, exp: nowS + 3_600 }) as never;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

async function oauthSigner(): Promise<JwsSigner> {
  const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign"]);
  const jwk = JSON.stringify(await crypto.subtle.exportKey("jwk", pair.privateKey));
  return await openJwsSigner("oauth", "env:J", { audit: { log: quiet, timeoutMs: 1_000 }, env: { J: jwk }, secp256k1: nobleSecp256k1 });
}

describe("access tokens signed by OAUTH_SIGNER (decisions §27)", () => {
  test("the configured key signs, is published first in the JWKS under its thumbprint, and the store's keys keep verifying", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const before = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    await before.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const old = await before.sign(claims(now));
    const [stored] = await store.signingKeys();
    const oldKid = stored!.kid;
    const oldPrivate = JSON.parse(stored!.privateJwk) as JWK;
    const signer = await oauthSigner();
    const keys = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer });
    await keys.maintain();
    const token = await keys.sign(claims(now));
    const header = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8"));
    expect(header).toEqual({ alg: "ES256", typ: "at+jwt", kid: signer.thumbprint });
    const jwks = await keys.jwks();
    expect(jwks.keys[0]).toMatchObject({ kid: signer.thumbprint, kty: "EC", crv: "P-256", alg: "ES256" });
    expect(jwks.keys).toHaveLength(2);
    expect(await keys.verify(token, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true, claims: { sub: "acct" } });
    // Tokens of the store's key, signed before the switch, still verify.
    expect(await keys.verify(old, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    // No store key is made or rotated while the signer signs; the store's key is retired at the switch and goes once
    // its grace ended. Before, the newest store key stayed for good, published and trusted, its private JWK in the
    // database: anyone who read the database (a backup) could mint tokens for any account.
    expect((await store.signingKeys()).map((k) => k.retiredAtMs)).toEqual([clock.nowMs()]);
    clock.set(clock.nowMs() + RETIRED_KEY_GRACE_MS - 1);
    await keys.maintain();
    expect(await keys.verify(old, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: false });
    expect((await store.signingKeys()).length).toBe(1);
    clock.set(clock.nowMs() + 2);
    await keys.maintain();
    expect(await store.signingKeys()).toEqual([]);
    expect((await keys.jwks()).keys.map((k) => k.kid)).toEqual([signer.thumbprint]);
    // A token made with the old key's private JWK (as one read from a backup would be) no longer verifies.
    const forged = await new SignJWT({ sub: "victim", client_id: "c", scope: "witness:write", jti: "j" })
      .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: oldKid })
      .setIssuer(ISSUER).setAudience(ISSUER).setIssuedAt().setExpirationTime("1h")
      .sign(await importJWK(oldPrivate, "ES256"));
    expect(await keys.verify(forged, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
  });

  test("back to the store's keys after a signer: a retired key never signs again, a new one is made", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    await createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 }).maintain();
    const [first] = await store.signingKeys();
    await createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: await oauthSigner() }).maintain();
    const again = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    await again.maintain();
    const token = await again.sign(claims(Math.floor(clock.nowMs() / 1000)));
    const kid = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")).kid;
    expect(kid).not.toBe(first!.kid);
  });

  test("a signer that gives no signature throws SignerUnavailableError (503 at the token route)", async () => {
    const signer = await oauthSigner();
    const down: JwsSigner = { ...signer, sign: () => Promise.resolve({ ok: false, reason: "timeout" }) };
    const keys = createJoseAccessTokenKeys({ store: fakeOAuthStore(), clock: fakeClock(), rotateAfterMs: 86_400_000, signer: down });
    await expect(keys.sign(claims(1_700_000_000))).rejects.toBeInstanceOf(SignerUnavailableError);
  });

  test("rotating OAUTH_SIGNER logs nobody out (decisions §19, §28): instances with different signers on one store verify each other's tokens and publish both keys, a restart onto a new key keeps the old one's tokens", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as { kid: string }).kid;
    const [a, b] = [await oauthSigner(), await oauthSigner()];
    const old = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: a });
    await old.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const before = await old.sign(claims(now));
    // The rolling restart: the next instance starts with the new key while the old one still serves.
    const next = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    await next.maintain();
    const after = await next.sign(claims(now));
    expect([kidOf(before), kidOf(after)]).toEqual([a.thumbprint, b.thumbprint]);
    expect(await next.verify(before, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true, claims: { sub: "acct" } });
    // The old instance read the keys before the new one started: the unknown kid makes it read them again.
    expect(await old.verify(after, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true, claims: { sub: "acct" } });
    expect((await next.jwks()).keys.map((k) => k.kid)).toEqual([b.thumbprint, a.thumbprint]);
    expect((await old.jwks()).keys.map((k) => k.kid)).toEqual([a.thumbprint, b.thumbprint]);
    // Only public members are stored, whatever the backend's JWK held.
    for (const key of await store.signerKeys()) expect(Object.keys(JSON.parse(key.publicJwk)).sort()).toEqual(["alg", "crv", "kid", "kty", "use", "x", "y"]);
    // A single instance (SQLite) restarted with the new key, the old instance gone: the old key's token still verifies.
    const restarted = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    await restarted.maintain();
    expect(await restarted.verify(before, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
  });

  test("a signer's key no instance signed with for its grace is dropped at the next upkeep: its tokens are refused and it leaves the JWKS; a key in use stays", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const [a, b] = [await oauthSigner(), await oauthSigner()];
    const gone = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: a });
    await gone.maintain();
    const start = clock.nowMs();
    // A token that would still be within its time when its key goes (the service's own last an hour).
    const long = await gone.sign({ ...(claims(Math.floor(start / 1000)) as Record<string, unknown>), exp: Math.floor(start / 1000) + 10 * 3_600 } as never);
    const live = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    // The instance with the new key runs its upkeep every 10 minutes; the one with the old key stopped at the start.
    let upkeeps = 0;
    while (clock.nowMs() + 600_000 < start + RETIRED_KEY_GRACE_MS) {
      clock.set(clock.nowMs() + 600_000);
      await live.maintain();
      upkeeps++;
    }
    expect(upkeeps).toBe(11);
    expect(await live.verify(long, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect((await live.jwks()).keys.map((k) => k.kid)).toEqual([b.thumbprint, a.thumbprint]);
    clock.set(start + RETIRED_KEY_GRACE_MS + 1);
    await live.maintain();
    expect(await live.verify(long, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    expect((await live.jwks()).keys.map((k) => k.kid)).toEqual([b.thumbprint]);
    expect((await store.signerKeys()).map((k) => k.kid)).toEqual([b.thumbprint]);
    // The key in use was seen at each upkeep: hours later it is still there.
    clock.set(clock.nowMs() + 600_000);
    await live.maintain();
    expect((await store.signerKeys()).map((k) => [k.kid, k.firstSeenAtMs < k.seenAtMs])).toEqual([[b.thumbprint, true]]);
  });
});
