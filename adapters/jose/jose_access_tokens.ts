/**
 * The service's access tokens with `jose` (decisions §19): JWTs of RFC 9068 (`typ: at+jwt`), ES256, keys kept in the
 * database so that every instance signs and verifies with the same ones, published as a JWKS. Rotation adds a new
 * newest key; an old key stays published (and verifying) until two hours after its successor was made, well past the
 * one-hour life of anything it signed, so rotating logs nobody out. Every instance signs with the newest key in the
 * database from its next token on; it verifies a token of a key it has not seen yet by reading the keys again.
 *
 * With `OAUTH_SIGNER` (decisions §27) the key is the instance's own, and instances may hold different ones (a rolling
 * restart onto a new key, §28): each records its signer's public key in the database at its start and at each upkeep,
 * and every instance verifies and publishes every recorded key, so a token of the old key works at the new instance
 * and one of the new key at the old. A key no instance said it signs with for {@link RETIRED_KEY_GRACE_MS} is dropped.
 */
import { calculateJwkThumbprint, errors, exportJWK, generateKeyPair, importJWK, type JWK, jwtVerify, SignJWT } from "jose";
import type { Clock } from "../../ports/clock.ts";
import type { AccessTokenClaims, AccessTokenKeys, OAuthStore, StoredSigningKey } from "../../ports/oauth.ts";
import { type JwsSigner, SignerUnavailableError } from "../../ports/signer.ts";

/**
 * How long a replaced key stays published: its last tokens (one hour) plus the instances' key caches. A signer's key
 * is dropped once no instance said it signs with it for as long: an instance says so at each upkeep (every 10 minutes,
 * app/oauth.ts), so its last token was signed at most that long after the last sighting and expired an hour later.
 */
export const RETIRED_KEY_GRACE_MS = 2 * 3_600_000;
/** How often the keys are read from the database again (other instances may have rotated). */
const RELOAD_MS = 60_000;
/** An unknown `kid` makes a reload at most this often (a forged kid cannot make every request query the store). */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/** Options of {@link createJoseAccessTokenKeys}. */
export type JoseAccessTokenKeysOptions = {
  readonly store: Pick<OAuthStore, "signingKeys" | "addSigningKey" | "dropSigningKeys" | "retireSigningKeys" | "signerKeys" | "seeSignerKey" | "dropSignerKeys">;
  readonly clock: Clock;
  /** A key older than this is replaced by `maintain` (`OAUTH_KEY_ROTATION_DAYS`). */
  readonly rotateAfterMs: number;
  /**
   * `OAUTH_SIGNER` (decisions §27): this key (P-256, ES256) signs every token and is published first in the JWKS, its
   * `kid` its RFC 7638 thumbprint; the store's keys are no longer made or rotated: they are retired at the first upkeep
   * with the signer, keep verifying (and stay published) for their grace, so switching logs nobody out, then go, the
   * newest too (before, the newest store key stayed, and was trusted, for good: with its private JWK in the database).
   * Its public key is recorded in the store, so other instances (and this one after a restart with another key)
   * verify its tokens.
   */
  readonly signer?: JwsSigner | undefined;
};

/** The access-token keys plus the upkeep the wiring runs at start and on a timer. */
export type JoseAccessTokenKeys = AccessTokenKeys & {
  /**
   * Makes the first key, replaces the newest when it is due, drops keys past their grace; with a signer, first says
   * in the store that this instance signs with it (see {@link RETIRED_KEY_GRACE_MS}).
   */
  readonly maintain: () => Promise<void>;
};

type Loaded = { readonly stored: StoredSigningKey; readonly publicJwk: JWK; readonly sign?: CryptoKey | undefined; readonly verify: CryptoKey };
/** A recorded signer's public key (this instance's or another's). */
type LoadedSigner = { readonly kid: string; readonly publicJwk: JWK; readonly verify: CryptoKey };

/** Builds the keys; nothing is read until the first use. */
export function createJoseAccessTokenKeys(options: JoseAccessTokenKeysOptions): JoseAccessTokenKeys {
  const { store, clock } = options;
  let keys: Loaded[] = [];
  let signerKeys: LoadedSigner[] = [];
  let loadedAtMs = -Infinity;
  let unknownReloadAtMs = -Infinity;
  let loading: Promise<void> | undefined;

  const load = () => {
    loading ??= (async () => {
      try {
        const [stored, seen] = await Promise.all([store.signingKeys(), store.signerKeys()]);
        keys = await Promise.all(stored.map(async (s) => {
          const known = keys.find((k) => k.stored.kid === s.kid);
          if (known) return known;
          const publicJwk = JSON.parse(s.publicJwk) as JWK;
          return { stored: s, publicJwk, verify: await importJWK(publicJwk, "ES256") as CryptoKey };
        }));
        signerKeys = await Promise.all(seen.map(async (s) => {
          const known = signerKeys.find((k) => k.kid === s.kid);
          if (known) return known;
          const publicJwk = JSON.parse(s.publicJwk) as JWK;
          return { kid: s.kid, publicJwk, verify: await importJWK(publicJwk, "ES256") as CryptoKey };
        }));
        loadedAtMs = clock.nowMs();
      } finally {
        loading = undefined;
      }
    })();
    return loading;
  };
  const current = async () => {
    if (clock.nowMs() - loadedAtMs >= RELOAD_MS) await load();
    return keys;
  };

  async function addKey(): Promise<string> {
    const pair = await generateKeyPair("ES256", { extractable: true });
    const publicJwk = await exportJWK(pair.publicKey);
    const kid = await calculateJwkThumbprint(publicJwk);
    const privateJwk = await exportJWK(pair.privateKey);
    await store.addSigningKey({
      kid,
      privateJwk: JSON.stringify({ ...privateJwk, kid, alg: "ES256" }),
      publicJwk: JSON.stringify({ ...publicJwk, kid, alg: "ES256", use: "sig" }),
      createdAtMs: clock.nowMs(),
    });
    await load();
    return kid;
  }

  const signer = options.signer === undefined ? undefined : configuredSigner(options.signer, store, clock);

  return {
    async sign(claims: AccessTokenClaims) {
      if (signer !== undefined) return await signer.sign(claims);
      // The keys are read again for every token issued (a few rows; issuing is rare beside verifying): a key rotated by
      // another instance or by the operator (`ops oauth rotate-key`) signs from the next token on, everywhere.
      await load();
      // A retired key (a signer signed meanwhile) never signs again.
      let newest = keys.find((k) => k.stored.retiredAtMs === null || k.stored.retiredAtMs === undefined);
      if (newest === undefined) {
        await addKey();
        newest = keys.find((k) => k.stored.retiredAtMs === null || k.stored.retiredAtMs === undefined)!;
      }
      if (newest.sign === undefined) {
        const signKey = await importJWK(JSON.parse(newest.stored.privateJwk) as JWK, "ES256") as CryptoKey;
        newest = { ...newest, sign: signKey };
        keys = keys.map((k) => (k.stored.kid === newest!.stored.kid ? newest! : k));
      }
      const { iat, exp, ...rest } = claims;
      return await new SignJWT({ ...rest })
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid: newest.stored.kid })
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .sign(newest.sign!);
    },

    async verify(token, expected) {
      try {
        const { payload } = await jwtVerify(token, async (header) => {
          if (signer !== undefined && header.kid === signer.kid) return await signer.verifyKey();
          await current();
          const find = () => keys.find((k) => k.stored.kid === header.kid)?.verify ?? signerKeys.find((k) => k.kid === header.kid)?.verify;
          let found = find();
          // Another instance's new signer (a rolling restart onto another key) is learnt here, without a restart.
          if (found === undefined && clock.nowMs() - unknownReloadAtMs >= UNKNOWN_KID_RELOAD_MS) {
            unknownReloadAtMs = clock.nowMs();
            await load();
            found = find();
          }
          if (found === undefined) throw new errors.JWKSNoMatchingKey();
          return found;
        }, {
          issuer: expected.issuer,
          audience: expected.audience,
          typ: "at+jwt",
          algorithms: ["ES256"],
          currentDate: new Date(clock.nowMs()),
          requiredClaims: ["sub", "client_id", "scope", "jti", "iat", "exp"],
        });
        const { sub, aud, client_id, scope, jti, iat, exp, gid } = payload as Record<string, unknown>;
        if (typeof sub !== "string" || typeof client_id !== "string" || typeof scope !== "string" || typeof jti !== "string" ||
          typeof iat !== "number" || typeof exp !== "number" || (gid !== undefined && typeof gid !== "string")) {
          return { ok: false, reason: "invalid" };
        }
        return {
          ok: true,
          claims: { iss: expected.issuer, sub, aud: Array.isArray(aud) ? expected.audience : String(aud), client_id, scope, jti, iat, exp, gid: gid as string | undefined },
        };
      } catch (error) {
        return { ok: false, reason: error instanceof errors.JWTExpired ? "expired" : "invalid" };
      }
    },

    async jwks() {
      const stored = (await current()).map((k) => ({ ...k.publicJwk }));
      const others = signerKeys.filter((k) => k.kid !== signer?.kid).map((k) => ({ ...k.publicJwk }));
      return { keys: [...(signer === undefined ? [] : [{ ...signer.jwk }]), ...stored, ...others] };
    },

    rotate: addKey,

    async maintain() {
      // First, so a failure below never leaves this instance's key unseen (and dropped by another instance meanwhile).
      if (signer !== undefined) await signer.see();
      await load();
      const now = clock.nowMs();
      const signing = keys.filter((k) => k.stored.retiredAtMs === null || k.stored.retiredAtMs === undefined);
      const newest = signing[0];
      // With OAUTH_SIGNER the configured key signs: the store's keys are retired, and go once their grace ended.
      if (signer !== undefined && signing.length > 0) await store.retireSigningKeys(now);
      if (signer === undefined && (newest === undefined || now - newest.stored.createdAtMs >= options.rotateAfterMs)) await addKey();
      // Every key older than the newest key made at least the grace ago has a successor that old: it may go.
      const settled = signer === undefined ? signing.find((k) => k.stored.createdAtMs <= now - RETIRED_KEY_GRACE_MS) : undefined;
      const dropped = await store.dropSigningKeys(settled?.stored.createdAtMs ?? Number.MIN_SAFE_INTEGER, now - RETIRED_KEY_GRACE_MS) +
        // A signer's key no instance signed with for the grace: whatever it signed expired (this instance's was just seen).
        await store.dropSignerKeys(now - RETIRED_KEY_GRACE_MS);
      if (dropped > 0 || signer !== undefined) await load();
    },
  };
}

/**
 * The instance's `OAUTH_SIGNER`: its public JWK (the public members only, named one by one: whatever else a backend's
 * JWK held never reaches the store or the JWKS), its record in the store, and the tokens it signs.
 */
function configuredSigner(signer: JwsSigner, store: Pick<OAuthStore, "seeSignerKey">, clock: Clock) {
  if (signer.alg !== "ES256") throw new Error("OAUTH_SIGNER: access tokens are ES256: the key must be P-256");
  const { kty, crv, x, y } = signer.publicJwk;
  const jwk: JWK = { kty, crv, x, y, kid: signer.thumbprint, alg: "ES256", use: "sig" };
  let verify: Promise<CryptoKey> | undefined;
  /** Whether this instance recorded the key yet: before its first token, so that every instance verifies it. */
  let seen = false;
  const see = async () => {
    await store.seeSignerKey(signer.thumbprint, JSON.stringify(jwk), clock.nowMs());
    seen = true;
  };
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return {
    kid: signer.thumbprint,
    jwk,
    see,
    verifyKey: () => (verify ??= importJWK(jwk, "ES256") as Promise<CryptoKey>),
    async sign(claims: AccessTokenClaims): Promise<string> {
      if (!seen) await see();
      const { iat, exp, ...rest } = claims;
      const input = `${b64({ alg: "ES256", typ: "at+jwt", kid: signer.thumbprint })}.${b64({ ...rest, iat, exp })}`;
      const signed = await signer.sign(new TextEncoder().encode(input), { purpose: "access-token", ref: claims.jti });
      if (!signed.ok) throw new SignerUnavailableError();
      return `${input}.${Buffer.from(signed.signature).toString("base64url")}`;
    },
  };
}
