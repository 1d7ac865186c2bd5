import type { SQL, TransactionSQL } from "bun";
import { MAX_EVICTIONS_PER_REGISTRATION, type OAuthStore, UNUSED_CLIENT_GRACE_MS } from "../../ports/oauth.ts";
import { ACCESS_TOKEN_LIFE_MS, clientValues, type OAuthClientRow, toAuthorizedClient, toGrant, toOAuthClient, toOAuthSigningKey, toSignerPublicKey, toStoredCode, seeSignerKeySql, DROP_SIGNING_KEYS_SQL, SIGNING_KEYS_SQL, SIGNER_KEYS_SQL, REVOKE_KEY_SQL, ACCESS_TOKEN_ACTIVE_SQL, EVICT_ACCOUNT_CODES_SQL, EVICT_CLIENT_CODE_SQL, EVICT_CLIENT_SQL, EVICTABLE_OPEN_CLIENTS_WHERE, EVICTED_CLIENT_CODES_SQL, UNUSED_OPEN_CLIENTS_WHERE } from "../sql/oauth.ts";

/** Serializes open registrations across instances, so the per-address and per-network rates and the pool hold exactly. */
const REGISTER_LOCK = 7_240_010;
/** Serializes the API-client creations of one account (with the account as second key). */
const CLIENTS_LOCK = 7_240_011;
/**
 * Serialize the code issuance of one account, then of one client (with its hash as second key): the live-code
 * bounds hold exactly across instances. Always taken in this order, so two issuances never wait on each other in a cycle.
 * A client's eviction deletes another account's code without that account's lock: it only lowers what that account's
 * own issuance counts, so its bound still holds. An open client's eviction at registration tries the client's lock
 * without waiting (see evictClient), so no code is stored for it while it is evicted.
 */
const CODES_ACCOUNT_LOCK = 7_240_012;
const CODES_CLIENT_LOCK = 7_240_013;

type Row = Record<string, unknown>;

/**
 * Extra tries of an eviction loop whose chosen row was taken by a concurrent transaction while it waited on the row
 * (an exchange, another account's issuance): beyond how many it has to evict, so the loop always ends.
 */
const EVICTION_RETRIES = 3;

/** Refuses a savepoint's eviction whose re-check failed, so the codes it deleted come back. */
class NotEvicted extends Error {}

/**
 * Evicts one open client (`newestEvictable`: now minus the grace period). It takes the client's code lock (the one
 * code issuance takes after the account's) without waiting: held, a code is being stored for the client, which is in
 * use then (`busy`); taken, no code can be stored for it meanwhile. Not waiting also keeps a registration, holding the
 * rows of the clients it evicted before, from ever waiting on an issuance. Its expired codes are deleted first, then
 * the row updated with the re-check: the order of an exchange (code, then the client's granted_at_ms), so the two
 * never wait on each other in a cycle. If the re-check fails (an exchange committed meanwhile, or a code was stored
 * just before the lock), the savepoint is rolled back: a client's codes go only with the client (review finding 4).
 */
async function evictClient(tx: TransactionSQL, clientId: string, now: number, newestEvictable: number): Promise<"evicted" | "kept" | "busy"> {
  const [lock] = await tx`SELECT pg_try_advisory_xact_lock(${CODES_CLIENT_LOCK}, hashtext(${clientId})) AS taken` as Row[];
  if (lock!.taken !== true) return "busy";
  try {
    return await tx.savepoint(async (sp) => {
      await sp.unsafe(EVICTED_CLIENT_CODES_SQL, [clientId, now]);
      const rows = await sp.unsafe(`${EVICT_CLIENT_SQL} RETURNING client_id`, [clientId, now, newestEvictable]) as Row[];
      if (rows.length === 0) throw new NotEvicted();
      return "evicted" as const;
    });
  } catch (error) {
    if (error instanceof NotEvicted) return "kept";
    throw error;
  }
}

/** Clients, codes and authorizations in PostgreSQL. */
function oauthClientsAndCodes(sql: SQL): Pick<OAuthStore, "registerClient" | "createClient" | "findClient" | "listClients" | "deleteClient" | "saveCode" | "findCode" | "exchangeCode" | "listAuthorizations" | "revokeAuthorizations"> {
  const insertClient = (db: SQL, values: ReturnType<typeof clientValues>) =>
    db`INSERT INTO oauth_clients (client_id, account_id, secret_hash, name, redirect_uris, grant_types, scope, auth_method, registered_by, created_at_ms, registered_network)
       VALUES (${values[0]}, ${values[1]}, ${values[2]}, ${values[3]}, ${values[4]}, ${values[5]}, ${values[6]}, ${values[7]}, ${values[8]}, ${values[9]}, ${values[10]})`;
  return {
    registerClient: (client, limits, now) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${REGISTER_LOCK})`;
        const since = now - limits.windowMs;
        // Evicted clients' rows stay until pruned, so an address's evicted registrations still count against it.
        const [byClient] = await tx`SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM oauth_clients WHERE registered_by = ${limits.client} AND created_at_ms > ${since}` as Row[];
        if (Number(byClient!.n) >= limits.perClient) return { ok: false as const, limit: "client" as const, retryAfterMs: Number(byClient!.oldest) + limits.windowMs - now };
        const network = limits.network ?? null;
        if (network !== null) {
          const [byNetwork] = await tx`SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM oauth_clients WHERE registered_network = ${network.key} AND created_at_ms > ${since}` as Row[];
          if (Number(byNetwork!.n) >= network.max) return { ok: false as const, limit: "network" as const, retryAfterMs: Number(byNetwork!.oldest) + limits.windowMs - now };
        }
        const [pool] = await tx.unsafe(`SELECT COUNT(*) AS n FROM oauth_clients WHERE ${UNUSED_OPEN_CLIENTS_WHERE}`, [since]) as Row[];
        const newestEvictable = now - UNUSED_CLIENT_GRACE_MS;
        let evicted = 0;
        // A candidate that fails the re-check (a grant or a live code came meanwhile) is no longer evictable, so the
        // next query picks another; the tries are bounded all the same.
        let over = Math.min(MAX_EVICTIONS_PER_REGISTRATION, Number(pool!.n) - limits.total + 1);
        for (let tries = over + EVICTION_RETRIES; over > 0 && tries > 0; tries--) {
          const [oldest] = await tx.unsafe(`SELECT client_id FROM oauth_clients WHERE ${EVICTABLE_OPEN_CLIENTS_WHERE} ORDER BY created_at_ms, client_id LIMIT 1`,
            [since, newestEvictable, now]) as Row[];
          if (oldest === undefined) break; // nothing evictable: the pool is passed, nobody refused
          const outcome = await evictClient(tx, String(oldest.client_id), now, newestEvictable);
          if (outcome === "busy") break; // the oldest is being given a code: in use, the pool is passed this time
          if (outcome === "evicted") {
            evicted++;
            over--;
          }
        }
        await insertClient(tx, clientValues(client, limits.client, network?.key ?? null));
        return { ok: true as const, evicted };
      }),
    createClient: (client, max) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${CLIENTS_LOCK}, hashtext(${client.accountId}))`;
        const [held] = await tx`SELECT COUNT(*) AS n FROM oauth_clients WHERE account_id = ${client.accountId}` as Row[];
        if (Number(held!.n) >= max) return false;
        await insertClient(tx, clientValues(client, client.accountId));
        return true;
      }),
    async findClient(clientId) {
      const [row] = await sql`SELECT * FROM oauth_clients WHERE client_id = ${clientId} AND evicted_at_ms IS NULL` as OAuthClientRow[];
      return row === undefined ? undefined : toOAuthClient(row);
    },
    async listClients(accountId) {
      return (await sql`SELECT * FROM oauth_clients WHERE account_id = ${accountId} ORDER BY created_at_ms, client_id` as OAuthClientRow[]).map(toOAuthClient);
    },
    deleteClient: (accountId, clientId) =>
      sql.begin(async (tx) => {
        const deleted = await tx`DELETE FROM oauth_clients WHERE client_id = ${clientId} AND account_id = ${accountId} RETURNING client_id` as Row[];
        if (deleted.length === 0) return false;
        await tx`DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ${clientId})`;
        await tx`DELETE FROM oauth_grants WHERE client_id = ${clientId}`;
        await tx`DELETE FROM oauth_codes WHERE client_id = ${clientId}`;
        return true;
      }),
    saveCode: (code, limits) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${CODES_ACCOUNT_LOCK}, hashtext(${code.accountId}))`;
        await tx`SELECT pg_advisory_xact_lock(${CODES_CLIENT_LOCK}, hashtext(${code.clientId}))`;
        const now = code.createdAtMs;
        let evicted = 0;
        const [ofAccount] = await tx`SELECT COUNT(*) AS n FROM oauth_codes WHERE account_id = ${code.accountId} AND used_at_ms IS NULL AND expires_at_ms > ${now}` as Row[];
        const accountOver = Number(ofAccount!.n) - limits.perAccount + 1;
        if (accountOver > 0) evicted += (await tx.unsafe(`${EVICT_ACCOUNT_CODES_SQL} RETURNING 1`, [code.accountId, code.clientId, now, accountOver]) as Row[]).length;
        const overClient = async () => {
          const [ofClient] = await tx`SELECT COUNT(*) AS n FROM oauth_codes WHERE client_id = ${code.clientId} AND used_at_ms IS NULL AND expires_at_ms > ${now}` as Row[];
          return Number(ofClient!.n) - limits.perClient + 1;
        };
        let over = await overClient();
        for (let tries = over + EVICTION_RETRIES; over > 0 && tries > 0; tries--) {
          const gone = (await tx.unsafe(`${EVICT_CLIENT_CODE_SQL} RETURNING 1`, [code.clientId, now]) as Row[]).length;
          evicted += gone;
          // None deleted: the chosen code was exchanged (or another account's issuance evicted it) while this waited
          // on its row. Stopping here stored the new code past the bound; count again and go on instead.
          over = gone > 0 ? over - gone : await overClient();
        }
        await tx`INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, redirect_uri_omitted, scope, code_challenge, resource, created_at_ms, expires_at_ms)
          VALUES (${code.codeHash}, ${code.clientId}, ${code.accountId}, ${code.redirectUri}, ${code.redirectUriGiven ? null : 1}, ${code.scope}, ${code.codeChallenge}, ${code.resource}, ${code.createdAtMs}, ${code.expiresAtMs})`;
        return { evicted };
      }),
    async findCode(codeHash) {
      const [row] = await sql`SELECT * FROM oauth_codes WHERE code_hash = ${codeHash}` as Row[];
      return row === undefined ? undefined : toStoredCode(row);
    },
    exchangeCode: (codeHash, grant, refresh, now, maxGrants) =>
      sql.begin(async (tx) => {
        const used = await tx`UPDATE oauth_codes SET used_at_ms = ${now}, grant_id = ${grant.id} WHERE code_hash = ${codeHash} AND used_at_ms IS NULL RETURNING code_hash` as Row[];
        if (used.length === 0) return false;
        // One exchange of an account at a time, so two at once cannot both keep the account's newest grants.
        await tx`SELECT pg_advisory_xact_lock(hashtext(${`oauth-grants:${grant.accountId}`}))`;
        await tx`INSERT INTO oauth_grants (id, client_id, account_id, scope, resource, created_at_ms, revoked_at_ms)
          VALUES (${grant.id}, ${grant.clientId}, ${grant.accountId}, ${grant.scope}, ${grant.resource}, ${grant.createdAtMs}, NULL)`;
        if (refresh !== null) {
          await tx`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at_ms, expires_at_ms, used_at_ms)
            VALUES (${refresh.tokenHash}, ${refresh.grantId}, ${refresh.createdAtMs}, ${refresh.expiresAtMs}, NULL)`;
        }
        await tx`UPDATE oauth_clients SET granted_at_ms = ${now} WHERE client_id = ${grant.clientId} AND granted_at_ms IS NULL`;
        await tx`UPDATE oauth_grants SET revoked_at_ms = ${now} WHERE account_id = ${grant.accountId} AND revoked_at_ms IS NULL AND id <> ${grant.id}
          AND id NOT IN (SELECT id FROM oauth_grants WHERE account_id = ${grant.accountId} AND revoked_at_ms IS NULL AND id <> ${grant.id}
            ORDER BY created_at_ms DESC, id DESC LIMIT ${maxGrants - 1})`;
        return true;
      }),
    async listAuthorizations(accountId, now, max) {
      const rows = await sql`SELECT g.client_id, c.name, string_agg(DISTINCT g.scope, E'\n') AS scopes, MIN(g.created_at_ms) AS first_ms, MAX(g.created_at_ms) AS last_ms, COUNT(*) AS grants
          FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id
         WHERE g.account_id = ${accountId} AND g.revoked_at_ms IS NULL AND (g.created_at_ms > ${now - ACCESS_TOKEN_LIFE_MS} OR EXISTS (
           SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = g.id AND t.used_at_ms IS NULL AND t.expires_at_ms > ${now}))
         GROUP BY g.client_id, c.name ORDER BY last_ms DESC, g.client_id LIMIT ${max}` as Row[];
      return rows.map(toAuthorizedClient);
    },
    revokeAuthorizations: (accountId, clientId, now) =>
      sql.begin(async (tx) => {
        // The same lock as code issuance for this account: a code being stored now is either deleted here or refused after.
        await tx`SELECT pg_advisory_xact_lock(${CODES_ACCOUNT_LOCK}, hashtext(${accountId}))`;
        const codes = await tx`DELETE FROM oauth_codes WHERE account_id = ${accountId} AND client_id = ${clientId} AND used_at_ms IS NULL AND expires_at_ms > ${now} RETURNING 1` as Row[];
        const grants = await tx`UPDATE oauth_grants SET revoked_at_ms = ${now} WHERE account_id = ${accountId} AND client_id = ${clientId} AND revoked_at_ms IS NULL AND (created_at_ms > ${now - ACCESS_TOKEN_LIFE_MS} OR EXISTS (
          SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = oauth_grants.id AND t.used_at_ms IS NULL AND t.expires_at_ms > ${now})) RETURNING 1` as Row[];
        await tx`UPDATE oauth_grants SET revoked_at_ms = ${now} WHERE account_id = ${accountId} AND client_id = ${clientId} AND revoked_at_ms IS NULL`;
        return codes.length + grants.length;
      }),
  };
}

/** Refresh and access tokens, signing keys and pruning in PostgreSQL. */
function oauthTokensAndKeys(sql: SQL): Pick<OAuthStore, "rotateRefreshToken" | "findRefreshToken" | "revokeGrant" | "revokeAccessToken" | "accessTokenActive" | "signingKeys" | "addSigningKey" | "dropSigningKeys" | "retireSigningKeys" | "signerKeys" | "seeSignerKey" | "dropSignerKeys" | "revokeKey" | "revokedKeys" | "prune"> {
  const revokeGrant = (db: SQL, grantId: string, now: number) => db`UPDATE oauth_grants SET revoked_at_ms = ${now} WHERE id = ${grantId} AND revoked_at_ms IS NULL`;
  return {
    rotateRefreshToken: (tokenHash, next, now) =>
      sql.begin(async (tx) => {
        const [token] = await tx`SELECT grant_id, expires_at_ms, used_at_ms FROM oauth_refresh_tokens WHERE token_hash = ${tokenHash} FOR UPDATE` as Row[];
        if (token === undefined) return { kind: "invalid" as const };
        const grantId = String(token.grant_id);
        if (token.used_at_ms !== null) {
          await revokeGrant(tx, grantId, now);
          return { kind: "reused" as const, grantId };
        }
        const [grant] = await tx`SELECT g.* FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id WHERE g.id = ${grantId}` as Row[];
        if (grant === undefined || grant.revoked_at_ms !== null || now >= Number(token.expires_at_ms)) return { kind: "invalid" as const };
        await tx`UPDATE oauth_refresh_tokens SET used_at_ms = ${now} WHERE token_hash = ${tokenHash}`;
        await tx`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at_ms, expires_at_ms, used_at_ms)
          VALUES (${next.tokenHash}, ${next.grantId}, ${next.createdAtMs}, ${next.expiresAtMs}, NULL)`;
        return { kind: "rotated" as const, grant: toGrant(grant) };
      }),
    async findRefreshToken(tokenHash) {
      const [token] = await sql`SELECT * FROM oauth_refresh_tokens WHERE token_hash = ${tokenHash}` as Row[];
      if (token === undefined) return undefined;
      const [grant] = await sql`SELECT * FROM oauth_grants WHERE id = ${String(token.grant_id)}` as Row[];
      if (grant === undefined) return undefined;
      return {
        token: {
          tokenHash,
          grantId: String(token.grant_id),
          createdAtMs: Number(token.created_at_ms),
          expiresAtMs: Number(token.expires_at_ms),
          usedAtMs: token.used_at_ms === null ? null : Number(token.used_at_ms),
        },
        grant: toGrant(grant),
      };
    },
    async revokeGrant(grantId, now) {
      await revokeGrant(sql, grantId, now);
    },
    async revokeAccessToken(jti, clientId, expiresAtMs) {
      await sql`INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at_ms) VALUES (${jti}, ${clientId}, ${expiresAtMs}) ON CONFLICT (jti) DO NOTHING`;
    },
    async accessTokenActive({ jti, clientId, grantId, accountId }) {
      const [row] = await sql.unsafe(ACCESS_TOKEN_ACTIVE_SQL, [clientId, jti, grantId ?? "", accountId]) as Row[];
      return Number(row!.c) === 1 && Number(row!.r) === 0 && (grantId === null || Number(row!.g) === 1);
    },
    async signingKeys() {
      return (await sql.unsafe(SIGNING_KEYS_SQL) as Row[]).map(toOAuthSigningKey);
    },
    async addSigningKey(key) {
      await sql`INSERT INTO oauth_signing_keys (kid, private_jwk, public_jwk, created_at_ms) VALUES (${key.kid}, ${key.privateJwk}, ${key.publicJwk}, ${key.createdAtMs})`;
    },
    async dropSigningKeys(createdBefore, retiredBefore) {
      const rows = await sql.unsafe(`${DROP_SIGNING_KEYS_SQL} RETURNING kid`, [createdBefore, retiredBefore]) as Row[];
      return rows.length;
    },
    async retireSigningKeys(nowMs) {
      return (await sql`UPDATE oauth_signing_keys SET retired_at_ms = ${nowMs} WHERE retired_at_ms IS NULL RETURNING kid` as Row[]).length;
    },
    async signerKeys() {
      return (await sql.unsafe(SIGNER_KEYS_SQL) as Row[]).map(toSignerPublicKey);
    },
    async seeSignerKey(kid, publicJwk, nowMs) {
      await sql.unsafe(seeSignerKeySql("GREATEST"), [kid, publicJwk, nowMs]);
    },
    async dropSignerKeys(seenBefore) {
      return (await sql`DELETE FROM oauth_signer_keys WHERE seen_at_ms < ${seenBefore} RETURNING kid` as Row[]).length;
    },
    async revokeKey(kid, nowMs) {
      return (await sql.unsafe(`${REVOKE_KEY_SQL} RETURNING kid`, [kid, nowMs]) as Row[]).length > 0;
    },
    async revokedKeys() {
      return (await sql`SELECT kid, revoked_at_ms FROM oauth_revoked_keys ORDER BY revoked_at_ms DESC, kid` as Row[]).map((r) => ({ kid: String(r.kid), revokedAtMs: Number(r.revoked_at_ms) }));
    },
    prune: (now, unusedBefore) =>
      sql.begin(async (tx) => {
        let n = 0;
        const count = async (query: Promise<unknown>) => void (n += (await query as Row[]).length);
        await count(tx`DELETE FROM oauth_codes WHERE expires_at_ms < ${now} RETURNING 1`);
        await count(tx`DELETE FROM oauth_revoked_tokens WHERE expires_at_ms < ${now} RETURNING 1`);
        await count(tx`DELETE FROM oauth_refresh_tokens WHERE expires_at_ms < ${now} RETURNING 1`);
        await count(tx`DELETE FROM oauth_grants WHERE revoked_at_ms IS NOT NULL OR (created_at_ms < ${now - 3_600_000} AND NOT EXISTS (
          SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = oauth_grants.id AND t.used_at_ms IS NULL AND t.expires_at_ms >= ${now})) RETURNING 1`);
        await count(tx`DELETE FROM oauth_refresh_tokens WHERE grant_id NOT IN (SELECT id FROM oauth_grants) RETURNING 1`);
        await count(tx`DELETE FROM oauth_clients WHERE account_id IS NULL AND granted_at_ms IS NULL AND created_at_ms < ${unusedBefore} RETURNING 1`);
        return n;
      }),
  };
}

/** OAuth in PostgreSQL, shared by every instance; each multi-row change in one transaction. */
export function createPostgresOAuth(sql: SQL): OAuthStore {
  return {
    ...oauthClientsAndCodes(sql),
    ...oauthTokensAndKeys(sql),
  };
}
