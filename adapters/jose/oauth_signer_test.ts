import { describe, expect, test } from "bun:test";
import { calculateJwkThumbprint, importJWK, type JWK, SignJWT } from "jose";
import { fakeClock, fakeOAuthStore } from "../../ports/fakes/mod.ts";
import { type JwsSigner, SignerUnavailableError } from "../../ports/signer.ts";
import { nobleSecp256k1 } from "../crypto/mod.ts";
import { openJwsSigner } from "../signers/mod.ts";
import { createJoseAccessTokenKeys, RETIRED_KEY_GRACE_MS, SIGNER_RECORD_MS, SignerKeyRevokedError } from "./mod.ts";

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
    // Both publish both keys, in one order (not each its own first: the same bytes, and ETag, everywhere).
    expect((await next.jwks()).keys.map((k) => k.kid).sort()).toEqual([a.thumbprint, b.thumbprint].sort());
    expect(await old.jwks()).toEqual(await next.jwks());
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

/** A logger that keeps what was logged at `error`. */
function errorLog() {
  const errors: { event: string; fields?: Record<string, unknown> | undefined }[] = [];
  return { errors, log: { ...quiet, error: (event: string, fields?: Record<string, unknown>) => void errors.push({ event, fields }) } };
}
const kidOf = (token: string) => (JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString("utf8")) as { kid: string }).kid;
const RELOAD_MS = 60_000;

describe("signer keys: revocation, unusable rows, records while the upkeep stalls, reads per token, one JWKS (review of the signer keys' records)", () => {
  test("a revoked key is refused and unpublished everywhere within a reload, its own instance's too, which signs no more and says so; recording it again never clears it", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const [a, b] = [await oauthSigner(), await oauthSigner()];
    const logged = errorLog();
    // The forgotten instance still on the old key, and one already on the new key.
    const forgotten = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: a, log: logged.log });
    const current = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    await forgotten.maintain();
    await current.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    const leaked = await forgotten.sign(claims(now));
    expect(await current.verify(leaked, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });

    expect(await store.revokeKey(a.thumbprint, clock.nowMs())).toBe(true);
    clock.set(clock.nowMs() + RELOAD_MS);
    expect(await current.verify(leaked, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    expect(await forgotten.verify(leaked, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    expect((await current.jwks()).keys.map((k) => k.kid)).toEqual([b.thumbprint]);
    expect(await forgotten.jwks()).toEqual(await current.jwks());
    await expect(forgotten.sign(claims(now))).rejects.toBeInstanceOf(SignerKeyRevokedError);
    expect([await forgotten.signerRevoked(), await current.signerRevoked()]).toEqual([true, false]);
    expect(logged.errors.map((e) => [e.event, e.fields?.kid])).toEqual([["oauth_signer_key_revoked", a.thumbprint]]);

    // Its upkeep records the key again, and goes on doing so for hours: it stays revoked (a DELETE was undone so).
    for (let i = 0; i < 15; i++) {
      clock.set(clock.nowMs() + 600_000);
      await forgotten.maintain();
      await current.maintain();
    }
    expect((await store.signerKeys()).find((k) => k.kid === a.thumbprint)).toMatchObject({ revokedAtMs: expect.any(Number) });
    expect(await current.verify(leaked, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    // Restarted with it, an instance refuses it from its start; its row dropped meanwhile and recorded anew, too.
    clock.set(clock.nowMs() + RETIRED_KEY_GRACE_MS + 1);
    await current.maintain();
    expect((await store.signerKeys()).map((k) => k.kid)).toEqual([b.thumbprint]);
    const restarted = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: a });
    await restarted.maintain();
    expect(await restarted.signerRevoked()).toBe(true);
    await expect(restarted.sign(claims(Math.floor(clock.nowMs() / 1000)))).rejects.toBeInstanceOf(SignerKeyRevokedError);
    clock.set(clock.nowMs() + RELOAD_MS);
    expect((await current.jwks()).keys.map((k) => k.kid)).toEqual([b.thumbprint]);
  });

  test("a revoked store key never signs again: the next token is signed by a new key", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const keys = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    await keys.maintain();
    const before = await keys.sign(claims(Math.floor(clock.nowMs() / 1000)));
    await store.revokeKey(kidOf(before), clock.nowMs());
    const after = await keys.sign(claims(Math.floor(clock.nowMs() / 1000)));
    expect(kidOf(after)).not.toBe(kidOf(before));
    clock.set(clock.nowMs() + RELOAD_MS);
    expect(await keys.verify(before, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    expect((await keys.jwks()).keys.map((k) => k.kid)).toEqual([kidOf(after)]);
  });

  test("a key row that cannot be used (not JSON, another curve, a kid that is not its thumbprint) is logged once and left out; the other keys verify, issuing works, the JWKS answers, the upkeep drops it", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const b = await oauthSigner();
    const other = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    await other.maintain();
    const theirs = await other.sign(claims(Math.floor(clock.nowMs() / 1000)));
    // Rows written by hand or damaged: one that is no JSON, a P-384 key, and B's own JWK under another kid (a token
    // of B's key naming that kid verified under it).
    await store.seeSignerKey("not-json", "{", clock.nowMs());
    const p384 = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-384" }, true, ["sign"]);
    const p384Jwk = await crypto.subtle.exportKey("jwk", p384.publicKey) as JWK;
    await store.seeSignerKey(await calculateJwkThumbprint(p384Jwk), JSON.stringify(p384Jwk), clock.nowMs());
    await store.seeSignerKey("impostor", JSON.stringify({ ...b.publicJwk, kid: "impostor" }), clock.nowMs());
    const [head, payload] = theirs.split(".");
    const header = Buffer.from(JSON.stringify({ alg: "ES256", typ: "at+jwt", kid: "impostor" })).toString("base64url");
    const signed = await b.sign(new TextEncoder().encode(`${header}.${payload}`), { purpose: "test" });
    const impostor = `${header}.${payload}.${Buffer.from((signed as { signature: Uint8Array }).signature).toString("base64url")}`;
    expect(head).not.toBe(header);

    const logged = errorLog();
    const keys = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, log: logged.log });
    await keys.maintain();
    expect(await keys.verify(theirs, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect(await keys.verify(impostor, { issuer: ISSUER, audience: ISSUER })).toEqual({ ok: false, reason: "invalid" });
    const own = await keys.sign(claims(Math.floor(clock.nowMs() / 1000)));
    expect(await keys.verify(own, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true });
    expect((await keys.jwks()).keys.map((k) => k.kid).sort()).toEqual([b.thumbprint, kidOf(own)].sort());
    clock.set(clock.nowMs() + RELOAD_MS);
    await keys.jwks();
    expect(logged.errors.map((e) => [e.event, e.fields?.kid]).sort()).toEqual([
      ["oauth_key_unusable", "impostor"],
      ["oauth_key_unusable", "not-json"],
      ["oauth_key_unusable", await calculateJwkThumbprint(p384Jwk)],
    ].sort());
    // Nobody records them: they go at the upkeep after their grace, B's key (in use) stays.
    clock.set(clock.nowMs() + RETIRED_KEY_GRACE_MS);
    await other.maintain();
    await keys.maintain();
    expect((await store.signerKeys()).map((k) => k.kid)).toEqual([b.thumbprint]);
  });

  test("an instance whose upkeep stalled records its key again before a token once its last record is half an hour old, so another instance's upkeep never drops a key that signs", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    let records = 0;
    const counted = { ...store, seeSignerKey: (kid: string, jwk: string, at: number) => (records++, store.seeSignerKey(kid, jwk, at)) };
    const [a, b] = [await oauthSigner(), await oauthSigner()];
    const stalled = createJoseAccessTokenKeys({ store: counted, clock, rotateAfterMs: 86_400_000, signer: a });
    const other = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer: b });
    await stalled.maintain();
    await other.maintain();
    const start = clock.nowMs();
    expect(records).toBe(1);
    // Its timer stops firing (a paused process); within the half hour a token records nothing.
    clock.set(start + SIGNER_RECORD_MS - 1);
    await stalled.sign(claims(Math.floor(clock.nowMs() / 1000)));
    expect(records).toBe(1);
    clock.set(start + 100 * 60_000);
    const fresh = await stalled.sign(claims(Math.floor(clock.nowMs() / 1000)));
    for (let i = 0; i < 5; i++) await stalled.sign(claims(Math.floor(clock.nowMs() / 1000)));
    expect(records).toBe(2);
    // Two hours after its last upkeep the other instance's upkeep runs: the key signed 25 minutes ago stays.
    clock.set(start + RETIRED_KEY_GRACE_MS + 5 * 60_000);
    await other.maintain();
    expect(await other.verify(fresh, { issuer: ISSUER, audience: ISSUER })).toMatchObject({ ok: true, claims: { sub: "acct" } });
  });

  test("issuing a token reads the store's keys once without OAUTH_SIGNER (never the signers' keys) and nothing per token with it", async () => {
    const clock = fakeClock();
    const reads = { signingKeys: 0, signerKeys: 0 };
    const counted = () => {
      const store = fakeOAuthStore();
      return { ...store, signingKeys: () => (reads.signingKeys++, store.signingKeys()), signerKeys: () => (reads.signerKeys++, store.signerKeys()) };
    };
    // Two deployments (a signer retires the store's keys).
    const withStore = createJoseAccessTokenKeys({ store: counted(), clock, rotateAfterMs: 86_400_000 });
    const withSigner = createJoseAccessTokenKeys({ store: counted(), clock, rotateAfterMs: 86_400_000, signer: await oauthSigner() });
    await withStore.maintain();
    await withSigner.maintain();
    const now = Math.floor(clock.nowMs() / 1000);
    reads.signingKeys = reads.signerKeys = 0;
    for (let i = 0; i < 5; i++) await withStore.sign(claims(now));
    expect(reads).toEqual({ signingKeys: 5, signerKeys: 0 });
    reads.signingKeys = reads.signerKeys = 0;
    for (let i = 0; i < 5; i++) await withSigner.sign(claims(now));
    expect(reads).toEqual({ signingKeys: 0, signerKeys: 0 });
    // The keys are read again on the minute's cadence, once for as many tokens.
    clock.set(clock.nowMs() + RELOAD_MS);
    for (let i = 0; i < 5; i++) await withSigner.sign(claims(now));
    expect(reads).toEqual({ signingKeys: 1, signerKeys: 1 });
  });

  test("every instance serves the same JWKS, its keys in one order (signers' newest recorded first, then the store's), each kid once", async () => {
    const clock = fakeClock();
    const store = fakeOAuthStore();
    const [a, b, c] = [await oauthSigner(), await oauthSigner(), await oauthSigner()];
    const withStore = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000 });
    await withStore.maintain();
    const instances = [];
    for (const signer of [a, b, c]) {
      clock.set(clock.nowMs() + 1_000);
      const keys = createJoseAccessTokenKeys({ store, clock, rotateAfterMs: 86_400_000, signer });
      await keys.maintain();
      instances.push(keys);
    }
    const storedKid = (await store.signingKeys())[0]!.kid;
    // The same key recorded as a signer's and kept as a store key (an operator gave OAUTH_SIGNER a stored key).
    await store.addSigningKey({ kid: c.thumbprint, privateJwk: "{}", publicJwk: JSON.stringify({ ...c.publicJwk, kid: c.thumbprint, alg: "ES256", use: "sig" }), createdAtMs: clock.nowMs() });
    clock.set(clock.nowMs() + RELOAD_MS);
    const served = await Promise.all([withStore, ...instances].map((k) => k.jwks()));
    expect(served[0]!.keys.map((k) => k.kid)).toEqual([c.thumbprint, b.thumbprint, a.thumbprint, storedKid]);
    for (const jwks of served) expect(JSON.stringify(jwks)).toBe(JSON.stringify(served[0]));
  });
});
