/** What SQLite and PostgreSQL share for the oauth store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { AuthorizedClient, ClientAuthMethod, Grant, OAuthClient, SignerPublicKey, StoredCode, StoredSigningKey } from "../../ports/oauth.ts";

/**
 * Indexes on columns added after the tables were first created: the rate per network and the pool of unused open
 * clients each count only their own rows (a registration's cost stays bounded however many others registered).
 */
export const OAUTH_CLIENT_LATE_INDEXES: readonly string[] = [
  `CREATE INDEX IF NOT EXISTS oauth_clients_network ON oauth_clients (registered_network, created_at_ms) WHERE registered_network IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS oauth_clients_unused ON oauth_clients (created_at_ms) WHERE account_id IS NULL AND granted_at_ms IS NULL AND evicted_at_ms IS NULL`,
];

/** The OAuth tables (decisions §19), in SQLite (`INTEGER`) or PostgreSQL (`BIGINT`) words for times. */
export function oauthTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS oauth_clients (
       client_id TEXT PRIMARY KEY,
       account_id TEXT,
       secret_hash TEXT,
       name TEXT,
       redirect_uris TEXT NOT NULL,
       grant_types TEXT NOT NULL,
       scope TEXT NOT NULL,
       auth_method TEXT NOT NULL,
       registered_by TEXT,
       created_at_ms ${bigint} NOT NULL,
       granted_at_ms ${bigint}
     )`,
    `CREATE INDEX IF NOT EXISTS oauth_clients_account ON oauth_clients (account_id, created_at_ms)`,
    `CREATE INDEX IF NOT EXISTS oauth_clients_registered ON oauth_clients (registered_by, created_at_ms)`,
    `CREATE INDEX IF NOT EXISTS oauth_clients_open ON oauth_clients (created_at_ms) WHERE account_id IS NULL`,
    // Added with the eviction of unused open clients and the per-network rate (attack review, finding 4): when a
    // registration past the pool evicted the client, and the caller's IPv6 /48. SQLite adds them in createSqliteOAuth,
    // then the indexes on them.
    ...(bigint === "BIGINT"
      ? [`ALTER TABLE oauth_clients ADD COLUMN IF NOT EXISTS evicted_at_ms BIGINT`, `ALTER TABLE oauth_clients ADD COLUMN IF NOT EXISTS registered_network TEXT`, ...OAUTH_CLIENT_LATE_INDEXES]
      : []),
    `CREATE TABLE IF NOT EXISTS oauth_codes (
       code_hash TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       redirect_uri TEXT NOT NULL,
       scope TEXT NOT NULL,
       code_challenge TEXT NOT NULL,
       resource TEXT,
       created_at_ms ${bigint} NOT NULL,
       expires_at_ms ${bigint} NOT NULL,
       used_at_ms ${bigint},
       grant_id TEXT
     )`,
    // 1: the authorization request named no redirect_uri (issue 33); NULL: it named one (every code stored before).
    // SQLite adds it in createSqliteOAuth (it has no ADD COLUMN IF NOT EXISTS).
    ...(bigint === "BIGINT" ? [`ALTER TABLE oauth_codes ADD COLUMN IF NOT EXISTS redirect_uri_omitted BIGINT`] : []),
    `CREATE INDEX IF NOT EXISTS oauth_codes_expiry ON oauth_codes (expires_at_ms)`,
    `CREATE INDEX IF NOT EXISTS oauth_codes_client ON oauth_codes (client_id)`,
    `CREATE INDEX IF NOT EXISTS oauth_codes_account ON oauth_codes (account_id, client_id)`,
    `CREATE TABLE IF NOT EXISTS oauth_grants (
       id TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       scope TEXT NOT NULL,
       resource TEXT,
       created_at_ms ${bigint} NOT NULL,
       revoked_at_ms ${bigint}
     )`,
    `CREATE INDEX IF NOT EXISTS oauth_grants_client ON oauth_grants (client_id)`,
    `CREATE INDEX IF NOT EXISTS oauth_grants_account ON oauth_grants (account_id, client_id)`,
    `CREATE TABLE IF NOT EXISTS oauth_refresh_tokens (
       token_hash TEXT PRIMARY KEY,
       grant_id TEXT NOT NULL,
       created_at_ms ${bigint} NOT NULL,
       expires_at_ms ${bigint} NOT NULL,
       used_at_ms ${bigint}
     )`,
    `CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id)`,
    `CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_expiry ON oauth_refresh_tokens (expires_at_ms)`,
    `CREATE TABLE IF NOT EXISTS oauth_revoked_tokens (
       jti TEXT PRIMARY KEY,
       client_id TEXT NOT NULL,
       expires_at_ms ${bigint} NOT NULL
     )`,
    `CREATE TABLE IF NOT EXISTS oauth_signing_keys (
       kid TEXT PRIMARY KEY,
       private_jwk TEXT NOT NULL,
       public_jwk TEXT NOT NULL,
       created_at_ms ${bigint} NOT NULL
     )`,
    // Added with OAUTH_SIGNER's retirement of the store's keys (SQLite adds it in createSqliteOAuth).
    ...(bigint === "BIGINT" ? [`ALTER TABLE oauth_signing_keys ADD COLUMN IF NOT EXISTS retired_at_ms BIGINT`] : []),
    // The public keys of the OAUTH_SIGNERs instances sign with (never a private one): a token of another instance's
    // signer, or of the signer before a restart, verifies until its key was not seen for its grace.
    `CREATE TABLE IF NOT EXISTS oauth_signer_keys (
       kid TEXT PRIMARY KEY,
       public_jwk TEXT NOT NULL,
       first_seen_at_ms ${bigint} NOT NULL,
       seen_at_ms ${bigint} NOT NULL
     )`,
    // An operator's revocations of token-signing keys (a leaked key, a forgotten instance on a replaced one): a table
    // of their own, never written by an instance's record nor deleted with an unseen key, so a key recorded again (an
    // instance still running with it) stays refused. One row a revocation, kept for good.
    `CREATE TABLE IF NOT EXISTS oauth_revoked_keys (
       kid TEXT PRIMARY KEY,
       revoked_at_ms ${bigint} NOT NULL
     )`,
  ];
}

/** A row of oauth_clients. */
export type OAuthClientRow = {
  client_id: string;
  account_id: string | null;
  secret_hash: string | null;
  name: string | null;
  redirect_uris: string;
  grant_types: string;
  scope: string;
  auth_method: string;
  created_at_ms: number | string;
};

/** A client from its row. */
export function toOAuthClient(row: OAuthClientRow): OAuthClient {
  return {
    clientId: row.client_id,
    accountId: row.account_id,
    secretHash: row.secret_hash,
    name: row.name,
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    grantTypes: row.grant_types === "" ? [] : row.grant_types.split(" "),
    scope: row.scope,
    authMethod: row.auth_method as ClientAuthMethod,
    createdAtMs: Number(row.created_at_ms),
  };
}

/** The column values of a client, in the insert's order (`registeredNetwork`: an open client's caller's IPv6 /48). */
export function clientValues(c: OAuthClient, registeredBy: string | null, registeredNetwork: string | null = null) {
  return [c.clientId, c.accountId, c.secretHash, c.name, JSON.stringify(c.redirectUris), c.grantTypes.join(" "), c.scope, c.authMethod, registeredBy, c.createdAtMs, registeredNetwork] as const;
}

export type Num = number | string | bigint;

export const numOrNull = (v: Num | null | undefined) => (v === null || v === undefined ? null : Number(v));

/** A code from its row. */
export function toStoredCode(row: Record<string, unknown>): StoredCode {
  return {
    codeHash: String(row.code_hash),
    clientId: String(row.client_id),
    accountId: String(row.account_id),
    redirectUri: String(row.redirect_uri),
    redirectUriGiven: row.redirect_uri_omitted === null || row.redirect_uri_omitted === undefined || Number(row.redirect_uri_omitted) === 0,
    scope: String(row.scope),
    codeChallenge: String(row.code_challenge),
    resource: (row.resource as string | null) ?? null,
    createdAtMs: Number(row.created_at_ms),
    expiresAtMs: Number(row.expires_at_ms),
    usedAtMs: numOrNull(row.used_at_ms as Num | null),
    grantId: (row.grant_id as string | null) ?? null,
  };
}

/** A grant from its row (columns prefixed `g_` where joined). */
export function toGrant(row: Record<string, unknown>): Grant {
  return {
    id: String(row.id),
    clientId: String(row.client_id),
    accountId: String(row.account_id),
    scope: String(row.scope),
    resource: (row.resource as string | null) ?? null,
    createdAtMs: Number(row.created_at_ms),
    revokedAtMs: numOrNull(row.revoked_at_ms as Num | null),
  };
}

/** How long after its last token an access token may still be live: its lifetime (decisions §19). */
export const ACCESS_TOKEN_LIFE_MS = 3_600_000;

/** An authorized client from its grouped row (`scopes`: the distinct scope strings joined by a newline). */
export function toAuthorizedClient(row: Record<string, unknown>): AuthorizedClient {
  return {
    clientId: String(row.client_id),
    clientName: (row.name as string | null) ?? null,
    scopes: String(row.scopes ?? "").split("\n").filter((s) => s !== ""),
    firstAuthorizedAtMs: Number(row.first_ms),
    lastAuthorizedAtMs: Number(row.last_ms),
    grants: Number(row.grants),
  };
}

/** A signing key from its row. */
export function toOAuthSigningKey(row: Record<string, unknown>): StoredSigningKey {
  return {
    kid: String(row.kid),
    privateJwk: String(row.private_jwk),
    publicJwk: String(row.public_jwk),
    createdAtMs: Number(row.created_at_ms),
    retiredAtMs: numOrNull(row.retired_at_ms as Num | null),
    ...revocationOf(row),
  };
}

/** A signer's public key from its row. */
export function toSignerPublicKey(row: Record<string, unknown>): SignerPublicKey {
  return { kid: String(row.kid), publicJwk: String(row.public_jwk), firstSeenAtMs: Number(row.first_seen_at_ms), seenAtMs: Number(row.seen_at_ms), ...revocationOf(row) };
}

/** A key row's `revoked_at_ms` (joined from oauth_revoked_keys) as `revokedAtMs`, absent when the key is not revoked. */
function revocationOf(row: Record<string, unknown>): { revokedAtMs?: number } {
  const at = numOrNull(row.revoked_at_ms as Num | null | undefined);
  return at === null ? {} : { revokedAtMs: at };
}

/** The signing keys with their revocations, newest first: one read (a token issued without OAUTH_SIGNER reads it). */
export const SIGNING_KEYS_SQL = `SELECT k.*, r.revoked_at_ms FROM oauth_signing_keys k LEFT JOIN oauth_revoked_keys r ON r.kid = k.kid
  ORDER BY k.created_at_ms DESC, k.kid DESC`;

/** The signers' public keys with their revocations, the most recently seen first. */
export const SIGNER_KEYS_SQL = `SELECT k.*, r.revoked_at_ms FROM oauth_signer_keys k LEFT JOIN oauth_revoked_keys r ON r.kid = k.kid
  ORDER BY k.seen_at_ms DESC, k.kid DESC`;

/** The INSERT of {@link OAuthStore.revokeKey} (`$1` kid, `$2` now): a second revocation keeps the first one's time. */
export const REVOKE_KEY_SQL = `INSERT INTO oauth_revoked_keys (kid, revoked_at_ms) VALUES ($1, $2) ON CONFLICT (kid) DO NOTHING`;

/**
 * The upsert of {@link OAuthStore.seeSignerKey} (`$1` kid, `$2` public JWK, `$3` now; `latest`: SQLite's `MAX` or
 * PostgreSQL's `GREATEST`): a known key's last sighting only moves forward, whichever instance's clock is behind.
 */
export const seeSignerKeySql = (latest: "MAX" | "GREATEST") => `INSERT INTO oauth_signer_keys (kid, public_jwk, first_seen_at_ms, seen_at_ms) VALUES ($1, $2, $3, $3)
  ON CONFLICT (kid) DO UPDATE SET seen_at_ms = ${latest}(oauth_signer_keys.seen_at_ms, excluded.seen_at_ms)`;

/**
 * The DELETE of {@link OAuthStore.dropSigningKeys} (`$1` created before, `$2` retired before): a key that may sign
 * goes once a newer one that may sign is settled (never the newest of them); a retired key goes once its grace ended,
 * even the newest (a signer signs now: before, the last store key was kept, and trusted, for good).
 */
export const DROP_SIGNING_KEYS_SQL = `DELETE FROM oauth_signing_keys
  WHERE (retired_at_ms IS NULL AND created_at_ms < $1 AND kid <> (
          SELECT kid FROM oauth_signing_keys WHERE retired_at_ms IS NULL ORDER BY created_at_ms DESC, kid DESC LIMIT 1))
     OR (retired_at_ms IS NOT NULL AND retired_at_ms < $2)`;

/**
 * The live codes of one account past its bound (`$1` account, `$2` the new code's client, `$3` now, `$4` how many): its
 * oldest, the same client's first, so one client's codes make room for each other before another client's go. The
 * outer `used_at_ms IS NULL` is checked again on a row an exchange just locked (PostgreSQL): an exchanged code stays.
 */
export const EVICT_ACCOUNT_CODES_SQL = `DELETE FROM oauth_codes WHERE used_at_ms IS NULL AND code_hash IN (
  SELECT code_hash FROM oauth_codes WHERE account_id = $1 AND used_at_ms IS NULL AND expires_at_ms > $3
   ORDER BY CASE WHEN client_id = $2 THEN 0 ELSE 1 END, created_at_ms, code_hash LIMIT $4)`;

/**
 * One live code of a client past its bound (`$1` client, `$2` now): the oldest of the account holding the most live
 * codes of the client (ties: the account with the oldest code). Throwaway accounts holding many codes lose theirs
 * first; a person holding one loses it only when no account holds more.
 */
export const EVICT_CLIENT_CODE_SQL = `DELETE FROM oauth_codes WHERE used_at_ms IS NULL AND code_hash = (
  SELECT c.code_hash FROM oauth_codes c JOIN (
    SELECT account_id, COUNT(*) AS n FROM oauth_codes WHERE client_id = $1 AND used_at_ms IS NULL AND expires_at_ms > $2 GROUP BY account_id
  ) h ON h.account_id = c.account_id
   WHERE c.client_id = $1 AND c.used_at_ms IS NULL AND c.expires_at_ms > $2
   ORDER BY h.n DESC, c.created_at_ms, c.code_hash LIMIT 1)`;

/** The unused open clients of the window (`$1` since): what `RegistrationLimits.total` (ports/oauth.ts) bounds. */
export const UNUSED_OPEN_CLIENTS_WHERE = `account_id IS NULL AND granted_at_ms IS NULL AND evicted_at_ms IS NULL AND created_at_ms > $1`;

/** `oauth_clients`' row has a live code (neither exchanged nor expired at `now`, the given parameter). */
const HOLDS_LIVE_CODE = (now: string) =>
  `EXISTS (SELECT 1 FROM oauth_codes k WHERE k.client_id = oauth_clients.client_id AND k.used_at_ms IS NULL AND k.expires_at_ms > ${now})`;

/**
 * The unused open clients a registration past the pool may evict (`$1` since, `$2` the newest registration time that
 * may go, i.e. now minus `UNUSED_CLIENT_GRACE_MS`, `$3` now): not in their grace period after registering, and holding
 * no live code (a user is between approval and exchange). Fewer than needed: the pool is passed, nobody refused.
 */
export const EVICTABLE_OPEN_CLIENTS_WHERE = `${UNUSED_OPEN_CLIENTS_WHERE} AND created_at_ms <= $2 AND NOT ${HOLDS_LIVE_CODE("$3")}`;

/**
 * Evicting an open client (`$1` client, `$2` now, `$3` the newest registration time that may go): the row stays as
 * the record its address's and network's rates count (pruned with the unused clients after a day), its metadata
 * blanked to a few bytes. What made it evictable is checked again here (PostgreSQL: `granted_at_ms` on a row a first
 * exchange just locked, and a code stored before the client's code lock was taken), so a client that got a grant or
 * a live code meanwhile stays.
 */
export const EVICT_CLIENT_SQL = `UPDATE oauth_clients SET evicted_at_ms = $2, name = NULL, redirect_uris = '[]', scope = ''
  WHERE client_id = $1 AND account_id IS NULL AND granted_at_ms IS NULL AND evicted_at_ms IS NULL AND created_at_ms <= $3
    AND NOT ${HOLDS_LIVE_CODE("$2")}`;

/**
 * The unexchanged codes of a client being evicted (`$1` client, `$2` now): only expired ones, since an evictable
 * client holds no live code; deleted before the client's row (an exchange's lock order: code, then client).
 */
export const EVICTED_CLIENT_CODES_SQL = `DELETE FROM oauth_codes WHERE client_id = $1 AND used_at_ms IS NULL AND expires_at_ms <= $2`;

/**
 * {@link OAuthStore.accessTokenActive} in one statement (`$1` client, `$2` jti, `$3` grant or '', `$4` the token's
 * account): `c` the client, which for a token without a grant must be a confidential client-credentials client of
 * that account (before, any client that existed passed, a public one too); `r` the token revoked; `g` the grant live
 * and the client's and the account's.
 */
export const ACCESS_TOKEN_ACTIVE_SQL = `SELECT
  (SELECT COUNT(*) FROM oauth_clients WHERE client_id = $1 AND ($3 <> '' OR (account_id = $4 AND secret_hash IS NOT NULL
     AND (' ' || grant_types || ' ') LIKE '% client_credentials %'))) AS c,
  (SELECT COUNT(*) FROM oauth_revoked_tokens WHERE jti = $2) AS r,
  (SELECT COUNT(*) FROM oauth_grants WHERE id = $3 AND client_id = $1 AND account_id = $4 AND revoked_at_ms IS NULL) AS g`;
