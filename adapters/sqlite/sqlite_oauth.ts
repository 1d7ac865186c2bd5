import type { Database } from "bun:sqlite";
import { type Grant, MAX_EVICTIONS_PER_REGISTRATION, type OAuthClient, type OAuthStore, UNUSED_CLIENT_GRACE_MS } from "../../ports/oauth.ts";
import { addMissingColumns } from "./sqlite_database.ts";
import { ACCESS_TOKEN_LIFE_MS, type OAuthClientRow, clientValues, numOrNull, oauthTables, toAuthorizedClient, toGrant, toOAuthClient, toOAuthSigningKey, toSignerPublicKey, toStoredCode, seeSignerKeySql, DROP_SIGNING_KEYS_SQL, SIGNING_KEYS_SQL, SIGNER_KEYS_SQL, REVOKE_KEY_SQL, ACCESS_TOKEN_ACTIVE_SQL, EVICT_ACCOUNT_CODES_SQL, EVICT_CLIENT_CODE_SQL, EVICT_CLIENT_SQL, EVICTABLE_OPEN_CLIENTS_WHERE, EVICTED_CLIENT_CODES_SQL, UNUSED_OPEN_CLIENTS_WHERE, OAUTH_CLIENT_LATE_INDEXES } from "../sql/oauth.ts";

/** Shared query text (`$n`) in SQLite's numbered parameters (`?n`). */
const numbered = (text: string) => text.replaceAll("$", "?");

/** The columns added after the tables were first created (SQLite). */
const OAUTH_ADDED_COLUMNS = [["oauth_codes", "redirect_uri_omitted", "INTEGER"], ["oauth_signing_keys", "retired_at_ms", "INTEGER"], ["oauth_clients", "evicted_at_ms", "INTEGER"], ["oauth_clients", "registered_network", "TEXT"]] as const;

/** Clients, codes and authorizations in the SQLite file. */
function oauthClientsAndCodes(db: Database): Pick<OAuthStore, "registerClient" | "createClient" | "findClient" | "listClients" | "deleteClient" | "saveCode" | "findCode" | "exchangeCode" | "listAuthorizations" | "revokeAuthorizations"> {
  const insertClient = db.query(`INSERT INTO oauth_clients (client_id, account_id, secret_hash, name, redirect_uris, grant_types, scope, auth_method, registered_by, created_at_ms, registered_network)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const findClient = db.query<OAuthClientRow, [string]>("SELECT * FROM oauth_clients WHERE client_id = ? AND evicted_at_ms IS NULL");
  const oldestEvictable = db.query<{ client_id: string }, [number, number, number]>(
    `SELECT client_id FROM oauth_clients WHERE ${numbered(EVICTABLE_OPEN_CLIENTS_WHERE)} ORDER BY created_at_ms, client_id LIMIT 1`);
  const evictClient = db.query(numbered(EVICT_CLIENT_SQL));
  const deleteEvictedCodes = db.query(numbered(EVICTED_CLIENT_CODES_SQL));
  const register = db.transaction((client: OAuthClient, limits: Parameters<OAuthStore["registerClient"]>[1], now: number) => {
    const since = now - limits.windowMs;
    // Evicted clients' rows stay until pruned, so an address's evicted registrations still count against it.
    const byClient = db.query<{ n: number; oldest: number | null }, [string, number]>(
      "SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM oauth_clients WHERE registered_by = ? AND created_at_ms > ?").get(limits.client, since)!;
    if (byClient.n >= limits.perClient) return { ok: false as const, limit: "client" as const, retryAfterMs: Number(byClient.oldest) + limits.windowMs - now };
    const network = limits.network ?? null;
    if (network !== null) {
      const byNetwork = db.query<{ n: number; oldest: number | null }, [string, number]>(
        "SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM oauth_clients WHERE registered_network = ? AND created_at_ms > ?").get(network.key, since)!;
      if (byNetwork.n >= network.max) return { ok: false as const, limit: "network" as const, retryAfterMs: Number(byNetwork.oldest) + limits.windowMs - now };
    }
    const pool = db.query<{ n: number }, [number]>(`SELECT COUNT(*) AS n FROM oauth_clients WHERE ${numbered(UNUSED_OPEN_CLIENTS_WHERE)}`).get(since)!;
    const newestEvictable = now - UNUSED_CLIENT_GRACE_MS;
    let evicted = 0;
    for (let over = Math.min(MAX_EVICTIONS_PER_REGISTRATION, pool.n - limits.total + 1); over > 0; over--) {
      const oldest = oldestEvictable.get(since, newestEvictable, now);
      if (oldest === null) break; // nothing evictable: the pool is passed, nobody refused
      // The transaction holds the writer, so the client, once chosen, is evicted; its codes go only with it.
      if (evictClient.run(oldest.client_id, now, newestEvictable).changes === 0) break;
      deleteEvictedCodes.run(oldest.client_id, now);
      evicted++;
    }
    insertClient.run(...clientValues(client, limits.client, network?.key ?? null));
    return { ok: true as const, evicted };
  });
  const create = db.transaction((client: OAuthClient, max: number) => {
    const held = db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM oauth_clients WHERE account_id = ?").get(client.accountId!)!;
    if (held.n >= max) return false;
    insertClient.run(...clientValues(client, client.accountId));
    return true;
  });
  const remove = db.transaction((accountId: string, clientId: string) => {
    const found = db.query("DELETE FROM oauth_clients WHERE client_id = ? AND account_id = ?").run(clientId, accountId);
    if (found.changes === 0) return false;
    db.query("DELETE FROM oauth_refresh_tokens WHERE grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ?)").run(clientId);
    db.query("DELETE FROM oauth_grants WHERE client_id = ?").run(clientId);
    db.query("DELETE FROM oauth_codes WHERE client_id = ?").run(clientId);
    return true;
  });
  // The account's unrevoked grants beyond the new one and its `?4` newest others (the transaction holds the writer).
  const revokeOldestGrants = db.query(`UPDATE oauth_grants SET revoked_at_ms = ?1 WHERE account_id = ?2 AND revoked_at_ms IS NULL AND id <> ?3
    AND id NOT IN (SELECT id FROM oauth_grants WHERE account_id = ?2 AND revoked_at_ms IS NULL AND id <> ?3 ORDER BY created_at_ms DESC, id DESC LIMIT ?4)`);
  const exchange = db.transaction((codeHash: string, grant: Grant, refresh: Parameters<OAuthStore["exchangeCode"]>[2], now: number, maxGrants: number) => {
    const used = db.query("UPDATE oauth_codes SET used_at_ms = ?, grant_id = ? WHERE code_hash = ? AND used_at_ms IS NULL").run(now, grant.id, codeHash);
    if (used.changes === 0) return false;
    db.query("INSERT INTO oauth_grants (id, client_id, account_id, scope, resource, created_at_ms, revoked_at_ms) VALUES (?, ?, ?, ?, ?, ?, NULL)")
      .run(grant.id, grant.clientId, grant.accountId, grant.scope, grant.resource, grant.createdAtMs);
    if (refresh !== null) {
      db.query("INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at_ms, expires_at_ms, used_at_ms) VALUES (?, ?, ?, ?, NULL)")
        .run(refresh.tokenHash, refresh.grantId, refresh.createdAtMs, refresh.expiresAtMs);
    }
    db.query("UPDATE oauth_clients SET granted_at_ms = ? WHERE client_id = ? AND granted_at_ms IS NULL").run(now, grant.clientId);
    revokeOldestGrants.run(now, grant.accountId, grant.id, maxGrants - 1);
    return true;
  });
  const liveOfAccount = db.query<{ n: number }, [string, number]>("SELECT COUNT(*) AS n FROM oauth_codes WHERE account_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?");
  const liveOfClient = db.query<{ n: number }, [string, number]>("SELECT COUNT(*) AS n FROM oauth_codes WHERE client_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?");
  const evictAccountCodes = db.query(numbered(EVICT_ACCOUNT_CODES_SQL));
  const evictClientCode = db.query(numbered(EVICT_CLIENT_CODE_SQL));
  const saveCode = db.transaction((code: Parameters<OAuthStore["saveCode"]>[0], limits: Parameters<OAuthStore["saveCode"]>[1]) => {
    const now = code.createdAtMs;
    let evicted = 0;
    const ofAccount = liveOfAccount.get(code.accountId, now)!.n;
    if (ofAccount >= limits.perAccount) evicted += evictAccountCodes.run(code.accountId, code.clientId, now, ofAccount - limits.perAccount + 1).changes;
    for (let over = liveOfClient.get(code.clientId, now)!.n - limits.perClient + 1; over > 0; over--) {
      const gone = evictClientCode.run(code.clientId, now).changes;
      if (gone === 0) break;
      evicted += gone;
    }
    db.query(`INSERT INTO oauth_codes (code_hash, client_id, account_id, redirect_uri, redirect_uri_omitted, scope, code_challenge, resource, created_at_ms, expires_at_ms)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(code.codeHash, code.clientId, code.accountId, code.redirectUri, code.redirectUriGiven ? null : 1, code.scope, code.codeChallenge, code.resource, code.createdAtMs, code.expiresAtMs);
    return { evicted };
  });
  const revokeAuthorizations = db.transaction((accountId: string, clientId: string, now: number) => {
    const codes = db.query("DELETE FROM oauth_codes WHERE account_id = ? AND client_id = ? AND used_at_ms IS NULL AND expires_at_ms > ?").run(accountId, clientId, now).changes;
    const grants = db.query(`UPDATE oauth_grants SET revoked_at_ms = ?3 WHERE account_id = ?1 AND client_id = ?2 AND revoked_at_ms IS NULL AND (created_at_ms > ?4 OR EXISTS (
      SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = oauth_grants.id AND t.used_at_ms IS NULL AND t.expires_at_ms > ?3))`).run(accountId, clientId, now, now - ACCESS_TOKEN_LIFE_MS).changes;
    // Grants no longer live (past their tokens) are revoked too, so nothing of the pair can come back.
    db.query("UPDATE oauth_grants SET revoked_at_ms = ?3 WHERE account_id = ?1 AND client_id = ?2 AND revoked_at_ms IS NULL").run(accountId, clientId, now);
    return codes + grants;
  });
  return {
    registerClient: (client, limits, now) => Promise.resolve(register.immediate(client, limits, now)),
    createClient: (client, max) => Promise.resolve(create.immediate(client, max)),
    findClient(clientId) {
      const row = findClient.get(clientId);
      return Promise.resolve(row === null ? undefined : toOAuthClient(row));
    },
    listClients: (accountId) =>
      Promise.resolve(db.query<OAuthClientRow, [string]>("SELECT * FROM oauth_clients WHERE account_id = ? ORDER BY created_at_ms, client_id").all(accountId).map(toOAuthClient)),
    deleteClient: (accountId, clientId) => Promise.resolve(remove.immediate(accountId, clientId)),
    saveCode: (code, limits) => Promise.resolve(saveCode.immediate(code, limits)),
    findCode(codeHash) {
      const row = db.query<Record<string, unknown>, [string]>("SELECT * FROM oauth_codes WHERE code_hash = ?").get(codeHash);
      return Promise.resolve(row === null ? undefined : toStoredCode(row));
    },
    exchangeCode: (codeHash, grant, refresh, now, maxGrants) => Promise.resolve(exchange.immediate(codeHash, grant, refresh, now, maxGrants)),
    listAuthorizations: (accountId, now, max) =>
      Promise.resolve(db.query<Record<string, unknown>, [string, number, number, number]>(
        `SELECT g.client_id, c.name, group_concat(DISTINCT g.scope) AS scopes_csv, MIN(g.created_at_ms) AS first_ms, MAX(g.created_at_ms) AS last_ms, COUNT(*) AS grants
           FROM oauth_grants g JOIN oauth_clients c ON c.client_id = g.client_id
          WHERE g.account_id = ?1 AND g.revoked_at_ms IS NULL AND (g.created_at_ms > ?3 OR EXISTS (
            SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = g.id AND t.used_at_ms IS NULL AND t.expires_at_ms > ?2))
          GROUP BY g.client_id, c.name ORDER BY last_ms DESC, g.client_id LIMIT ?4`).all(accountId, now, now - ACCESS_TOKEN_LIFE_MS, max)
        .map((row) => toAuthorizedClient({ ...row, scopes: String(row.scopes_csv ?? "").split(",").join("\n") }))),
    revokeAuthorizations: (accountId, clientId, now) => Promise.resolve(revokeAuthorizations.immediate(accountId, clientId, now)),
  };
}

/** Refresh and access tokens, signing keys and pruning in the SQLite file. */
function oauthTokensAndKeys(db: Database): Pick<OAuthStore, "rotateRefreshToken" | "findRefreshToken" | "revokeGrant" | "revokeAccessToken" | "accessTokenActive" | "signingKeys" | "addSigningKey" | "dropSigningKeys" | "retireSigningKeys" | "signerKeys" | "seeSignerKey" | "dropSignerKeys" | "revokeKey" | "revokedKeys" | "prune"> {
  const findClient = db.query<OAuthClientRow, [string]>("SELECT * FROM oauth_clients WHERE client_id = ? AND evicted_at_ms IS NULL");
  const grantOf = db.query<Record<string, unknown>, [string]>("SELECT * FROM oauth_grants WHERE id = ?");
  const revokeGrant = db.query("UPDATE oauth_grants SET revoked_at_ms = ?2 WHERE id = ?1 AND revoked_at_ms IS NULL");

  const rotate = db.transaction((tokenHash: string, next: Parameters<OAuthStore["rotateRefreshToken"]>[1], now: number) => {
    const token = db.query<{ grant_id: string; expires_at_ms: number; used_at_ms: number | null }, [string]>(
      "SELECT grant_id, expires_at_ms, used_at_ms FROM oauth_refresh_tokens WHERE token_hash = ?").get(tokenHash);
    if (token === null) return { kind: "invalid" as const };
    if (token.used_at_ms !== null) {
      revokeGrant.run(token.grant_id, now);
      return { kind: "reused" as const, grantId: token.grant_id };
    }
    const row = grantOf.get(token.grant_id);
    if (row === null || row.revoked_at_ms !== null || now >= token.expires_at_ms || findClient.get(String(row.client_id)) === null) return { kind: "invalid" as const };
    db.query("UPDATE oauth_refresh_tokens SET used_at_ms = ? WHERE token_hash = ?").run(now, tokenHash);
    db.query("INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at_ms, expires_at_ms, used_at_ms) VALUES (?, ?, ?, ?, NULL)")
      .run(next.tokenHash, next.grantId, next.createdAtMs, next.expiresAtMs);
    return { kind: "rotated" as const, grant: toGrant(row) };
  });
  const active = db.query<{ c: number; r: number; g: number }, [string, string, string, string]>(ACCESS_TOKEN_ACTIVE_SQL.replaceAll("$", "?"));
  const prune = db.transaction((now: number, unusedBefore: number) => {
    let n = 0;
    n += db.query("DELETE FROM oauth_codes WHERE expires_at_ms < ?").run(now).changes;
    n += db.query("DELETE FROM oauth_revoked_tokens WHERE expires_at_ms < ?").run(now).changes;
    n += db.query("DELETE FROM oauth_refresh_tokens WHERE expires_at_ms < ?").run(now).changes;
    // A grant goes once it is revoked or has no live refresh token and its last access token (1 h) has expired.
    n += db.query(`DELETE FROM oauth_grants WHERE revoked_at_ms IS NOT NULL OR (created_at_ms < ?1 AND NOT EXISTS (
      SELECT 1 FROM oauth_refresh_tokens t WHERE t.grant_id = oauth_grants.id AND t.used_at_ms IS NULL AND t.expires_at_ms >= ?2))`).run(now - 3_600_000, now).changes;
    n += db.query("DELETE FROM oauth_refresh_tokens WHERE grant_id NOT IN (SELECT id FROM oauth_grants)").run().changes;
    n += db.query("DELETE FROM oauth_clients WHERE account_id IS NULL AND granted_at_ms IS NULL AND created_at_ms < ?").run(unusedBefore).changes;
    return n;
  });
  return {
    rotateRefreshToken: (tokenHash, next, now) => Promise.resolve(rotate.immediate(tokenHash, next, now)),
    findRefreshToken(tokenHash) {
      const token = db.query<Record<string, unknown>, [string]>("SELECT * FROM oauth_refresh_tokens WHERE token_hash = ?").get(tokenHash);
      if (token === null) return Promise.resolve(undefined);
      const grant = grantOf.get(String(token.grant_id));
      if (grant === null) return Promise.resolve(undefined);
      return Promise.resolve({
        token: { tokenHash, grantId: String(token.grant_id), createdAtMs: Number(token.created_at_ms), expiresAtMs: Number(token.expires_at_ms), usedAtMs: numOrNull(token.used_at_ms as number | null) },
        grant: toGrant(grant),
      });
    },
    revokeGrant(grantId, now) {
      revokeGrant.run(grantId, now);
      return Promise.resolve();
    },
    revokeAccessToken(jti, clientId, expiresAtMs) {
      db.query("INSERT INTO oauth_revoked_tokens (jti, client_id, expires_at_ms) VALUES (?, ?, ?) ON CONFLICT (jti) DO NOTHING").run(jti, clientId, expiresAtMs);
      return Promise.resolve();
    },
    accessTokenActive({ jti, clientId, grantId, accountId }) {
      const row = active.get(clientId, jti, grantId ?? "", accountId)!;
      return Promise.resolve(row.c === 1 && row.r === 0 && (grantId === null || row.g === 1));
    },
    signingKeys: () =>
      Promise.resolve(db.query<Record<string, unknown>, []>(SIGNING_KEYS_SQL).all().map(toOAuthSigningKey)),
    addSigningKey(key) {
      db.query("INSERT INTO oauth_signing_keys (kid, private_jwk, public_jwk, created_at_ms) VALUES (?, ?, ?, ?)").run(key.kid, key.privateJwk, key.publicJwk, key.createdAtMs);
      return Promise.resolve();
    },
    dropSigningKeys(createdBefore, retiredBefore) {
      const dropped = db.query(DROP_SIGNING_KEYS_SQL.replaceAll("$", "?")).run(createdBefore, retiredBefore);
      return Promise.resolve(dropped.changes);
    },
    retireSigningKeys(nowMs) {
      return Promise.resolve(db.query("UPDATE oauth_signing_keys SET retired_at_ms = ? WHERE retired_at_ms IS NULL").run(nowMs).changes);
    },
    signerKeys: () =>
      Promise.resolve(db.query<Record<string, unknown>, []>(SIGNER_KEYS_SQL).all().map(toSignerPublicKey)),
    seeSignerKey(kid, publicJwk, nowMs) {
      db.query(numbered(seeSignerKeySql("MAX"))).run(kid, publicJwk, nowMs);
      return Promise.resolve();
    },
    dropSignerKeys(seenBefore) {
      return Promise.resolve(db.query("DELETE FROM oauth_signer_keys WHERE seen_at_ms < ?").run(seenBefore).changes);
    },
    revokeKey(kid, nowMs) {
      return Promise.resolve(db.query(numbered(REVOKE_KEY_SQL)).run(kid, nowMs).changes > 0);
    },
    revokedKeys: () =>
      Promise.resolve(db.query<{ kid: string; revoked_at_ms: number }, []>("SELECT kid, revoked_at_ms FROM oauth_revoked_keys ORDER BY revoked_at_ms DESC, kid")
        .all().map((r) => ({ kid: r.kid, revokedAtMs: Number(r.revoked_at_ms) }))),
    prune: (now, unusedBefore) => Promise.resolve(prune.immediate(now, unusedBefore)),
  };
}

/** OAuth in the SQLite file; every multi-row change in one `BEGIN IMMEDIATE` transaction. */
export function createSqliteOAuth(db: Database): OAuthStore {
  db.transaction(() => {
    for (const statement of oauthTables("INTEGER")) db.exec(statement);
    addMissingColumns(db, OAUTH_ADDED_COLUMNS);
    for (const statement of OAUTH_CLIENT_LATE_INDEXES) db.exec(statement);
  }).immediate();
  return {
    ...oauthClientsAndCodes(db),
    ...oauthTokensAndKeys(db),
  };
}
