/**
 * The token endpoint (RFC 6749 §3.2: authorization code with PKCE, refresh token with rotation and reuse detection,
 * client credentials) and revocation (RFC 7009). Access tokens are JWTs (RFC 9068) signed through the
 * AccessTokenKeys port; refresh tokens and codes are random and stored hashed. Failures are RFC 6749 §5.2 codes.
 */
import type { OAuthClient, Grant, RefreshToken } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import { ACCESS_TOKEN_TTL_SECONDS, type OAuthDeps } from "./_deps.ts";
import { hashSecret, randomToken, s256Challenge, sameText } from "./_secrets.ts";
import { tokenResources } from "./metadata.ts";
import { parseScope, type Scope, scopesOf, scopeString, withinScopes } from "./scopes.ts";

/** How the client authenticated itself at the endpoint, as the transport read it. */
export type ClientCredentials = {
  /** From HTTP Basic (`client_secret_basic`), already form-decoded; absent when no Basic header came. */
  readonly basic?: { readonly clientId: string; readonly secret: string } | undefined;
};

/** The token response (RFC 6749 §5.1). */
export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  scope: string;
  refresh_token?: string | undefined;
};

/** An RFC 6749 §5.2 error code. */
export type TokenErrorCode = "invalid_request" | "invalid_client" | "invalid_grant" | "unauthorized_client" | "unsupported_grant_type" | "invalid_scope" | "invalid_target";

const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
const MAX_PARAM = 4_096;

/** Builds the token and revocation use cases. */
export function createTokens(deps: OAuthDeps) {
  const { store, keys, clock, random, issuer, policy } = deps;

  /**
   * The client a request authenticates as (RFC 6749 §2.3): Basic, or `client_id` + `client_secret` in the body
   * (never both), or a public client's bare `client_id`. Confidential clients must present their secret.
   */
  async function authenticateClient(params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<OAuthClient, "invalid_client" | "invalid_request">> {
    const basic = credentials.basic;
    if (basic !== undefined && params.client_secret !== undefined) return fail("invalid_request", "Use one way of client authentication, not two");
    if (basic !== undefined && params.client_id !== undefined && params.client_id !== basic.clientId) return fail("invalid_request", "client_id differs from the authenticated client");
    const clientId = basic?.clientId ?? params.client_id;
    const secret = basic?.secret ?? params.client_secret;
    if (clientId === undefined || clientId === "" || clientId.length > 200) return fail("invalid_client", "Client authentication failed");
    const client = await store.findClient(clientId);
    if (client === undefined) return fail("invalid_client", "Client authentication failed");
    if (client.secretHash === null) return secret === undefined ? ok(client) : fail("invalid_client", "Client authentication failed");
    if (secret === undefined || secret.length > 200 || !sameText(hashSecret(secret), client.secretHash)) return fail("invalid_client", "Client authentication failed");
    return ok(client);
  }

  /** The audience of a token: the `resource` asked for (RFC 8707) when it is the service or its /mcp. */
  const audienceOf = (resource: string | undefined | null): Result<string, "invalid_target"> =>
    resource === undefined || resource === null ? ok(issuer) : tokenResources(issuer).includes(resource) ? ok(resource) : fail("invalid_target", "Tokens are issued only for this service or its /mcp");

  async function accessToken(input: { accountId: string; clientId: string; scopes: readonly Scope[]; audience: string; grantId?: string | undefined }): Promise<{ token: string; scope: string }> {
    const iat = Math.floor(clock.nowMs() / 1000);
    const scope = scopeString(input.scopes);
    const token = await keys.sign({
      iss: issuer,
      sub: input.accountId,
      aud: input.audience,
      client_id: input.clientId,
      scope,
      jti: randomToken(random, 16),
      iat,
      exp: iat + ACCESS_TOKEN_TTL_SECONDS,
      ...(input.grantId === undefined ? {} : { gid: input.grantId }),
    });
    return { token, scope };
  }

  const newRefreshToken = (grantId: string): { token: string; row: RefreshToken } => {
    const token = randomToken(random, 32);
    const now = clock.nowMs();
    return { token, row: { tokenHash: hashSecret(token), grantId, createdAtMs: now, expiresAtMs: now + policy.refreshTokenTtlSeconds * 1000, usedAtMs: null } };
  };

  async function authorizationCode(client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
    if (!client.grantTypes.includes("authorization_code")) return fail("unauthorized_client", "This client may not use the authorization code grant");
    const { code, code_verifier: verifier, redirect_uri: redirectUri } = params;
    if (code === undefined || verifier === undefined) return fail("invalid_request", "code and code_verifier are required");
    if (!VERIFIER.test(verifier)) return fail("invalid_grant", "The code verifier does not match");
    const stored = await store.findCode(hashSecret(code));
    if (stored === undefined) return fail("invalid_grant", "The code is unknown or expired");
    const now = clock.nowMs();
    if (stored.usedAtMs !== null) {
      // A second use: whoever holds the first tokens may have stolen the code; they end now (RFC 6749 §4.1.2).
      if (stored.grantId !== null) await store.revokeGrant(stored.grantId, now);
      return fail("invalid_grant", "The code was used already");
    }
    if (now >= stored.expiresAtMs || stored.clientId !== client.clientId) return fail("invalid_grant", "The code is unknown or expired");
    // RFC 6749 §4.1.3: required, and identical, when the authorization request named it; else optional, and if given
    // it must be where the code was sent (the client's one registered redirect URI).
    if (stored.redirectUriGiven ? redirectUri !== stored.redirectUri : redirectUri !== undefined && redirectUri !== stored.redirectUri) {
      return fail("invalid_grant", "redirect_uri differs from the authorization request's");
    }
    if (!sameText(s256Challenge(verifier), stored.codeChallenge)) return fail("invalid_grant", "The code verifier does not match");
    if (params.resource !== undefined && params.resource !== (stored.resource ?? issuer)) return fail("invalid_target", "resource differs from the authorization request's");
    const audience = audienceOf(stored.resource);
    if (!audience.ok) return audience;
    const grant: Grant = { id: randomToken(random, 16), clientId: client.clientId, accountId: stored.accountId, scope: stored.scope, resource: stored.resource, createdAtMs: now, revokedAtMs: null };
    const refresh = client.grantTypes.includes("refresh_token") ? newRefreshToken(grant.id) : undefined;
    // Signed before the code is spent (decisions §27): a signer that is down leaves the code usable for a retry.
    const access = await accessToken({ accountId: stored.accountId, clientId: client.clientId, scopes: scopesOf(stored.scope), audience: audience.value, grantId: grant.id });
    if (!(await store.exchangeCode(stored.codeHash, grant, refresh?.row ?? null, now, policy.grantsPerAccount))) return fail("invalid_grant", "The code was used already");
    return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope, ...(refresh ? { refresh_token: refresh.token } : {}) });
  }

  async function refreshToken(client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
    if (!client.grantTypes.includes("refresh_token")) return fail("unauthorized_client", "This client may not use refresh tokens");
    const presented = params.refresh_token;
    if (presented === undefined) return fail("invalid_request", "refresh_token is required");
    const hash = hashSecret(presented);
    const found = await store.findRefreshToken(hash);
    if (found === undefined || found.grant.clientId !== client.clientId) return fail("invalid_grant", "The refresh token is unknown, expired or revoked");
    const granted = scopesOf(found.grant.scope);
    const asked = parseScope(params.scope, granted);
    if (asked === undefined || asked.length === 0 || !withinScopes(asked, granted)) return fail("invalid_scope", "The scope asked for is beyond the grant's");
    if (params.resource !== undefined && params.resource !== (found.grant.resource ?? issuer)) return fail("invalid_target", "resource differs from the grant's");
    const next = newRefreshToken(found.grant.id);
    const audience = audienceOf(found.grant.resource);
    if (!audience.ok) return audience;
    // Signed before the refresh token is rotated (decisions §27): a signer that is down leaves it usable for a retry.
    const access = await accessToken({ accountId: found.grant.accountId, clientId: client.clientId, scopes: asked, audience: audience.value, grantId: found.grant.id });
    const rotated = await store.rotateRefreshToken(hash, next.row, clock.nowMs());
    if (rotated.kind === "reused") return fail("invalid_grant", "The refresh token was used already; every token of this grant is revoked");
    if (rotated.kind === "invalid") return fail("invalid_grant", "The refresh token is unknown, expired or revoked");
    return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope, refresh_token: next.token });
  }

  async function clientCredentials(client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
    if (!client.grantTypes.includes("client_credentials") || client.accountId === null || client.secretHash === null) {
      return fail("unauthorized_client", "This client may not use the client credentials grant");
    }
    const allowed = scopesOf(client.scope);
    const asked = parseScope(params.scope, allowed);
    if (asked === undefined || asked.length === 0 || !withinScopes(asked, allowed)) return fail("invalid_scope", "The scope asked for is beyond the client's");
    const audience = audienceOf(params.resource);
    if (!audience.ok) return audience;
    if ((await deps.accounts.findAccount(client.accountId)) === undefined) return fail("invalid_client", "Client authentication failed");
    const access = await accessToken({ accountId: client.accountId, clientId: client.clientId, scopes: asked, audience: audience.value });
    return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope });
  }

  /** `POST /oauth/token` with its form parameters (each given once) and the client's credentials. */
  async function token(params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<TokenResponse, TokenErrorCode>> {
    if (Object.values(params).some((v) => v.length > MAX_PARAM)) return fail("invalid_request", "A parameter is too long");
    const grantType = params.grant_type;
    if (grantType === undefined) return fail("invalid_request", "grant_type is required");
    if (!["authorization_code", "refresh_token", "client_credentials"].includes(grantType)) return fail("unsupported_grant_type", "grant_type is not supported");
    const client = await authenticateClient(params, credentials);
    if (!client.ok) return client;
    if (grantType === "authorization_code") return await authorizationCode(client.value, params);
    if (grantType === "refresh_token") return await refreshToken(client.value, params);
    return await clientCredentials(client.value, params);
  }

  /**
   * `POST /oauth/revoke` (RFC 7009): a refresh token ends its grant (and so the grant's access tokens); an access
   * token is refused from then on. A token that is unknown, expired or another client's is answered as revoked
   * (§2.2) and changes nothing. `token_type_hint` only orders the search (§2.1): a token not found as the hinted
   * type is looked for as the other, so a refresh token sent with `token_type_hint=access_token` still ends its grant.
   */
  async function revoke(params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<null, "invalid_client" | "invalid_request">> {
    if (Object.values(params).some((v) => v.length > MAX_PARAM)) return fail("invalid_request", "A parameter is too long");
    const client = await authenticateClient(params, credentials);
    if (!client.ok) return client;
    const presented = params.token;
    if (presented === undefined || presented === "") return fail("invalid_request", "token is required");
    const clientId = client.value.clientId;
    const now = clock.nowMs();
    /** Whether `presented` is a refresh token (revoked when it is this client's). */
    const asRefreshToken = async () => {
      const found = await store.findRefreshToken(hashSecret(presented));
      if (found === undefined) return false;
      if (found.grant.clientId === clientId) await store.revokeGrant(found.grant.id, now);
      return true;
    };
    /** Whether `presented` is an access token of this client (then revoked). */
    const asAccessToken = async () => {
      for (const audience of tokenResources(issuer)) {
        const verified = await keys.verify(presented, { issuer, audience });
        if (verified.ok && verified.claims.client_id === clientId) {
          await store.revokeAccessToken(verified.claims.jti, clientId, verified.claims.exp * 1000);
          return true;
        }
      }
      return false;
    };
    const search = params.token_type_hint === "access_token" ? [asAccessToken, asRefreshToken] : [asRefreshToken, asAccessToken];
    for (const attempt of search) if (await attempt()) break;
    return ok(null);
  }

  return { token, revoke };
}

/** The token and revocation use cases. */
export type Tokens = ReturnType<typeof createTokens>;
