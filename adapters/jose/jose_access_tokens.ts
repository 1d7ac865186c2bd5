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
 *
 * An operator may revoke a key (`ops oauth revoke-signer-key`: a leaked key, a forgotten instance on a replaced one):
 * each instance stops trusting and publishing it at its next read of the keys (within {@link KEY_RELOAD_MS}), its own
 * key too; an instance whose own signer's key is revoked logs it, signs nothing more and shows `checks.oauth` false on /readyz, not counted in `ready` (docs/signing.md).
 */
import { calculateJwkThumbprint, errors, exportJWK, generateKeyPair, importJWK, type JWK, jwtVerify, SignJWT } from "jose";
import type { Clock } from "../../ports/clock.ts";
import type { Logger } from "../../ports/logger.ts";
import type { AccessTokenClaims, AccessTokenKeys, OAuthStore, StoredSigningKey } from "../../ports/oauth.ts";
import { type JwsSigner, SignerUnavailableError } from "../../ports/signer.ts";

/**
 * How long a replaced key stays published: its last tokens (one hour) plus the instances' key caches. A signer's key
 * is dropped once no instance said it signs with it for as long: an instance says so at each upkeep (every 10 minutes,
 * app/oauth.ts) and, should its upkeep stall, before a token once its last record is {@link SIGNER_RECORD_MS} old, so
 * its last token was signed at most that long after the last sighting and expired an hour later.
 */
export const RETIRED_KEY_GRACE_MS = 2 * 3_600_000;
/**
 * A token signed with `OAUTH_SIGNER` records the key again first when its last successful record is this old (the
 * upkeep's timer stalled or the process was paused): so at most one write a half hour comes from signing, and a fresh
 * token's key is never one other instances drop (its record is at most this old, well under the grace less an hour).
 */
export const SIGNER_RECORD_MS = 30 * 60_000;
/**
 * How often the keys are read from the database again (other instances may have rotated, an operator revoked): a
 * revoked key is refused everywhere within it.
 */
export const KEY_RELOAD_MS = 60_000;
/** An unknown `kid` makes a reload at most this often (a forged kid cannot make every request query the store). */
const UNKNOWN_KID_RELOAD_MS = 5_000;

/** Options of {@link createJoseAccessTokenKeys}. */
export type JoseAccessTokenKeysOptions = {
  readonly store: Pick<OAuthStore, "signingKeys" | "addSigningKey" | "dropSigningKeys" | "retireSigningKeys" | "signerKeys" | "seeSignerKey" | "dropSignerKeys">;
  readonly clock: Clock;
  /** A key older than this is replaced by `maintain` (`OAUTH_KEY_ROTATION_DAYS`). */
  readonly rotateAfterMs: number;
  /**
   * `OAUTH_SIGNER` (decisions §27): this key (P-256, ES256) signs every token, its `kid` its RFC 7638 thumbprint; the
   * store's keys are no longer made or rotated: they are retired at the first upkeep with the signer, keep verifying
   * (and stay published) for their grace, so switching logs nobody out, then go, the newest too (before, the newest
   * store key stayed, and was trusted, for good: with its private JWK in the database). Its public key is recorded in
   * the store, so other instances (and this one after a restart with another key) verify its tokens.
   */
  readonly signer?: JwsSigner | undefined;
  /** Where a key row that cannot be used, and this instance's own revoked key, are told (nowhere when absent). */
  readonly log?: Logger | undefined;
};

/** The access-token keys plus the upkeep the wiring runs at start and on a timer. */
export type JoseAccessTokenKeys = AccessTokenKeys & {
  /**
   * Makes the first key, replaces the newest when it is due, drops keys past their grace; with a signer, first says
   * in the store that this instance signs with it (see {@link RETIRED_KEY_GRACE_MS}).
   */
  readonly maintain: () => Promise<void>;
  /**
   * Whether this instance's `OAUTH_SIGNER` key was revoked (read again at most every minute): it then signs no token,
   * and `/readyz` shows `oauth` false (not counted in `ready`). False without a signer.
   */
  readonly signerRevoked: () => Promise<boolean>;
};

type Loaded = { readonly stored: StoredSigningKey; readonly publicJwk: JWK; readonly verify: CryptoKey };
/** A recorded signer's public key (this instance's or another's). */
type LoadedSigner = { readonly kid: string; readonly publicJwk: JWK; readonly firstSeenAtMs: number; readonly verify: CryptoKey };

/** Thrown by `sign` when this instance's own `OAUTH_SIGNER` key was revoked: the token route answers 500. */
export class SignerKeyRevokedError extends Error {
  constructor(kid: string) {
    super(`OAUTH_SIGNER's key ${kid} is revoked: no token is signed with it (configure another key and restart)`);
    this.name = "SignerKeyRevokedError";
  }
}

/** Builds the keys; nothing is read until the first use. */
export function createJoseAccessTokenKeys(options: JoseAccessTokenKeysOptions): JoseAccessTokenKeys {
  const { store, clock } = options;
  const signer = options.signer === undefined ? undefined : configuredSigner(options.signer, store, clock);
  const cache = keyCache(store, clock, { ownKid: signer?.kid, log: options.log });
  /** The private keys of the stored keys this instance signed with, imported once. */
  const signKeys = new Map<string, CryptoKey>();
  let unknownReloadAtMs = -Infinity;

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
    await cache.loadStored();
    return kid;
  }
  const mayStillSign = (k: Loaded) => k.stored.retiredAtMs === null || k.stored.retiredAtMs === undefined;

  return {
    async sign(claims: AccessTokenClaims) {
      if (signer !== undefined) {
        // The keys as read at most a minute ago: an operator's revocation of this key stops its tokens within that.
        await cache.current();
        if (cache.ownRevoked()) throw new SignerKeyRevokedError(signer.kid);
        return await signer.sign(claims);
      }
      // The store's keys are read again for every token issued (one statement, their revocations joined; issuing is
      // rare beside verifying): a key rotated by another instance or by the operator (`ops oauth rotate-key`), or
      // revoked, signs from the next token on, everywhere. The signers' keys are not read here: they only verify.
      await cache.loadStored();
      // A retired key (a signer signed meanwhile) never signs again, nor a revoked one (not among the keys).
      let newest = cache.stored().find(mayStillSign);
      if (newest === undefined) {
        await addKey();
        newest = cache.stored().find(mayStillSign)!;
      }
      const kid = newest.stored.kid;
      let signKey = signKeys.get(kid);
      if (signKey === undefined) {
        signKey = await importJWK(JSON.parse(newest.stored.privateJwk) as JWK, "ES256") as CryptoKey;
        signKeys.set(kid, signKey);
      }
      const { iat, exp, ...rest } = claims;
      return await new SignJWT({ ...rest })
        .setProtectedHeader({ alg: "ES256", typ: "at+jwt", kid })
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .sign(signKey);
    },

    async verify(token, expected) {
      try {
        const { payload } = await jwtVerify(token, async (header) => {
          // The keys as read at most a minute ago; the store down, as last read (its own key stays usable).
          await cache.current().catch(() => undefined);
          const kid = header.kid;
          // Revoked: refused, this instance's own key too, and with no reload (a revoked kid is not an unknown one).
          if (kid === undefined || cache.isRevoked(kid)) throw new errors.JWKSNoMatchingKey();
          if (signer !== undefined && kid === signer.kid) return await signer.verifyKey();
          let found = cache.find(kid);
          // Another instance's new signer (a rolling restart onto another key) is learnt here, without a restart.
          if (found === undefined && clock.nowMs() - unknownReloadAtMs >= UNKNOWN_KID_RELOAD_MS) {
            unknownReloadAtMs = clock.nowMs();
            await cache.load();
            found = cache.find(kid);
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
      await cache.current();
      return { keys: publishedKeys(cache, signer === undefined || cache.isRevoked(signer.kid) ? undefined : { kid: signer.kid, publicJwk: signer.jwk }) };
    },

    rotate: addKey,

    async maintain() {
      // First, so a failure below never leaves this instance's key unseen (and dropped by another instance meanwhile).
      if (signer !== undefined) await signer.record();
      const now = clock.nowMs();
      // Before any read of the keys: whatever a read makes of the rows, what is due goes (this instance's was just
      // seen). A signer's key no instance signed with for the grace: whatever it signed expired.
      let dropped = await store.dropSignerKeys(now - RETIRED_KEY_GRACE_MS);
      await cache.load();
      const signing = cache.stored().filter(mayStillSign);
      const newest = signing[0];
      // With OAUTH_SIGNER the configured key signs: the store's keys are retired, and go once their grace ended.
      if (signer !== undefined && signing.length > 0) await store.retireSigningKeys(now);
      if (signer === undefined && (newest === undefined || now - newest.stored.createdAtMs >= options.rotateAfterMs)) await addKey();
      // Every key older than the newest key made at least the grace ago has a successor that old: it may go.
      const settled = signer === undefined ? signing.find((k) => k.stored.createdAtMs <= now - RETIRED_KEY_GRACE_MS) : undefined;
      dropped += await store.dropSigningKeys(settled?.stored.createdAtMs ?? Number.MIN_SAFE_INTEGER, now - RETIRED_KEY_GRACE_MS);
      if (dropped > 0 || signer !== undefined) await cache.load();
    },

    async signerRevoked() {
      if (signer === undefined) return false;
      await cache.current().catch(() => undefined);
      return cache.ownRevoked();
    },
  };
}

/**
 * The keys as last read from the store, without the revoked ones (whose kids it keeps apart), each row's public key
 * imported once. `loadStored` reads the store's keys alone (one statement: what issuing without a signer needs),
 * `load` both tables, `current` both unless read within {@link KEY_RELOAD_MS}.
 */
function keyCache(store: Pick<OAuthStore, "signingKeys" | "signerKeys">, clock: Clock, options: { ownKid?: string | undefined; log?: Logger | undefined }) {
  const { ownKid, log } = options;
  let stored: Loaded[] = [];
  let signers: LoadedSigner[] = [];
  /** The revoked kids each table's last read named (the revocations come joined to the rows). */
  let revokedStored = new Set<string>();
  let revokedSigners = new Set<string>();
  let loadedAtMs = -Infinity;
  let loading: Promise<void> | undefined;
  let ownRevoked = false;
  /** Rows already told to be unusable, so a bad row is logged once per instance, not at every reload. */
  const told = new Set<string>();
  const isRevoked = (kid: string) => revokedStored.has(kid) || revokedSigners.has(kid);
  const unusable = (table: string, kid: string, reason: string) => {
    if (told.has(`${table}:${kid}`)) return;
    told.add(`${table}:${kid}`);
    log?.error("oauth_key_unusable", { table, kid, reason });
  };

  const loadStored = async () => {
    const rows = await store.signingKeys();
    const revoked = new Set<string>();
    const next: Loaded[] = [];
    for (const row of rows) {
      if (row.revokedAtMs !== undefined) {
        revoked.add(row.kid);
        continue;
      }
      // Known: its imported key is kept, its row (retired meanwhile?) taken as read now.
      const imported = stored.find((k) => k.stored.kid === row.kid) ?? await importKeyRow(row.kid, row.publicJwk, (why) => unusable("oauth_signing_keys", row.kid, why));
      if (imported !== undefined) next.push({ publicJwk: imported.publicJwk, verify: imported.verify, stored: row });
    }
    stored = next;
    revokedStored = revoked;
  };
  const loadSigners = async () => {
    const rows = await store.signerKeys();
    const revoked = new Set<string>();
    const next: LoadedSigner[] = [];
    for (const row of rows) {
      if (row.revokedAtMs !== undefined) {
        revoked.add(row.kid);
        continue;
      }
      const imported = signers.find((k) => k.kid === row.kid) ?? await importKeyRow(row.kid, row.publicJwk, (why) => unusable("oauth_signer_keys", row.kid, why));
      if (imported !== undefined) next.push({ kid: row.kid, publicJwk: imported.publicJwk, verify: imported.verify, firstSeenAtMs: row.firstSeenAtMs });
    }
    signers = next;
    revokedSigners = revoked;
    if (ownKid !== undefined) {
      const now = isRevoked(ownKid);
      if (now && !ownRevoked) log?.error("oauth_signer_key_revoked", { kid: ownKid, detail: "OAUTH_SIGNER's key was revoked: this instance signs no access token (its /readyz shows oauth false); configure another key" });
      ownRevoked = now;
    }
  };
  const load = () => {
    loading ??= (async () => {
      try {
        await Promise.all([loadStored(), loadSigners()]);
        loadedAtMs = clock.nowMs();
      } finally {
        loading = undefined;
      }
    })();
    return loading;
  };
  return {
    loadStored,
    load,
    current: async () => {
      if (clock.nowMs() - loadedAtMs >= KEY_RELOAD_MS) await load();
    },
    stored: () => stored,
    signers: () => signers,
    isRevoked,
    ownRevoked: () => ownRevoked,
    /** The verifying key of a kid not revoked, stored or a signer's. */
    find: (kid: string) => (isRevoked(kid) ? undefined : stored.find((k) => k.stored.kid === kid)?.verify ?? signers.find((k) => k.kid === kid)?.verify),
  };
}

/**
 * A row's public JWK, checked: an EC P-256 public key for ES256, nothing private, whose RFC 7638 thumbprint is the
 * row's `kid`. A row that is not (corrupted, written by hand) is told to `unusable` and left out alone: before, one
 * such row failed every read of the keys, so every token not of this instance's own key was refused, issuing threw and
 * the upkeep never got to drop it.
 */
async function importKeyRow(kid: string, text: string, unusable: (reason: string) => void): Promise<{ publicJwk: JWK; verify: CryptoKey } | undefined> {
  try {
    const publicJwk = JSON.parse(text) as JWK;
    if (typeof publicJwk !== "object" || publicJwk === null) throw new Error("not a JWK");
    if (publicJwk.kty !== "EC" || publicJwk.crv !== "P-256" || (publicJwk.alg !== undefined && publicJwk.alg !== "ES256")) throw new Error("not an ES256 (P-256) key");
    if ("d" in publicJwk) throw new Error("holds private material");
    if (await calculateJwkThumbprint(publicJwk) !== kid) throw new Error("its thumbprint is not its kid");
    return { publicJwk, verify: await importJWK(publicJwk, "ES256") as CryptoKey };
  } catch (error) {
    unusable(error instanceof Error ? error.message : String(error));
    return undefined;
  }
}

/**
 * Every key that verifies, in one order every instance computes alike from the store (so their JWKS are the same
 * bytes, and so the same strong ETag; before, each listed its own key first): the signers' keys, the most recently
 * first recorded first, then the store's, newest made first, ties by kid; a kid once. This instance's own key (`own`,
 * not revoked) is among the signers' (it is recorded before its first token); should it not be yet, it comes last.
 */
function publishedKeys(cache: ReturnType<typeof keyCache>, own: { kid: string; publicJwk: JWK } | undefined): Record<string, unknown>[] {
  const byAge = <K extends { readonly kid: string }>(since: (k: K) => number) => (a: K, b: K) => since(b) - since(a) || (a.kid < b.kid ? -1 : a.kid > b.kid ? 1 : 0);
  const signers = [...cache.signers()].sort(byAge((k) => k.firstSeenAtMs));
  const stored = cache.stored().map((k) => ({ kid: k.stored.kid, publicJwk: k.publicJwk, createdAtMs: k.stored.createdAtMs })).sort(byAge((k) => k.createdAtMs));
  const seen = new Set<string>();
  const published: Record<string, unknown>[] = [];
  for (const k of [...signers, ...stored, ...(own === undefined ? [] : [own])]) {
    if (seen.has(k.kid)) continue;
    seen.add(k.kid);
    published.push({ ...k.publicJwk });
  }
  return published;
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
  /** When this instance last recorded the key, successfully (never: before its first token it records it). */
  let recordedAtMs = -Infinity;
  let recording: Promise<void> | undefined;
  /** Records the key now; calls made meanwhile share the one write. */
  const record = () => {
    recording ??= (async () => {
      try {
        const at = clock.nowMs();
        await store.seeSignerKey(signer.thumbprint, JSON.stringify(jwk), at);
        recordedAtMs = Math.max(recordedAtMs, at);
      } finally {
        recording = undefined;
      }
    })();
    return recording;
  };
  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return {
    kid: signer.thumbprint,
    jwk,
    record,
    verifyKey: () => (verify ??= importJWK(jwk, "ES256") as Promise<CryptoKey>),
    async sign(claims: AccessTokenClaims): Promise<string> {
      // Not only the upkeep's timer records the key: one stalled for the grace would have its fresh tokens refused
      // elsewhere (the key dropped). See SIGNER_RECORD_MS.
      if (clock.nowMs() - recordedAtMs >= SIGNER_RECORD_MS) await record();
      const { iat, exp, ...rest } = claims;
      const input = `${b64({ alg: "ES256", typ: "at+jwt", kid: signer.thumbprint })}.${b64({ ...rest, iat, exp })}`;
      const signed = await signer.sign(new TextEncoder().encode(input), { purpose: "access-token", ref: claims.jti });
      if (!signed.ok) throw new SignerUnavailableError();
      return `${input}.${Buffer.from(signed.signature).toString("base64url")}`;
    },
  };
}
