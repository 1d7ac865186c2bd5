/**
 * The token endpoint (RFC 6749 §3.2: authorization code with PKCE, refresh token with rotation and reuse detection,
 * client credentials) and revocation (RFC 7009). Access tokens are JWTs (RFC 9068) signed through the
 * AccessTokenKeys port; refresh tokens and codes are random and stored hashed. Failures are RFC 6749 §5.2 codes.
 */import type { OAuthClient } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import type { OAuthDeps } from "./_deps.ts";
import { authorizationCode, clientCredentials, refreshToken, type TokenErrorCode, type TokenResponse } from "./_grants.ts";
import { CLIENT_ID, hashSecret, sameText } from "./_secrets.ts";
import { tokenResources } from "./metadata.ts";

export type { TokenErrorCode, TokenResponse } from "./_grants.ts";

/** How the client authenticated itself at the endpoint, as the transport read it. */
export type ClientCredentials = {
  /** From HTTP Basic (`client_secret_basic`), already form-decoded; absent when no Basic header came. */
  readonly basic?: { readonly clientId: string; readonly secret: string } | undefined;
};

const MAX_PARAM = 4_096;

/** Builds the token and revocation use cases. */
export function createTokens(deps: OAuthDeps) {
  return {
    token: (params: Readonly<Record<string, string>>, credentials: ClientCredentials) => token(deps, params, credentials),
    revoke: (params: Readonly<Record<string, string>>, credentials: ClientCredentials) => revoke(deps, params, credentials),
  };
}

/**
 * The client a request authenticates as (RFC 6749 §2.3): Basic, or `client_id` + `client_secret` in the body
 * (never both), or a public client's bare `client_id`. Confidential clients must present their secret.
 */
async function authenticateClient(deps: OAuthDeps, params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<OAuthClient, "invalid_client" | "invalid_request">> {
  const basic = credentials.basic;
  if (basic !== undefined && params.client_secret !== undefined) return fail("invalid_request", "Use one way of client authentication, not two");
  if (basic !== undefined && params.client_id !== undefined && params.client_id !== basic.clientId) return fail("invalid_request", "client_id differs from the authenticated client");
  const clientId = basic?.clientId ?? params.client_id;
  const secret = basic?.secret ?? params.client_secret;
  // Visible ASCII only, as every client id is: a U+0000 reached PostgreSQL's text and answered 500 there.
  if (clientId === undefined || !CLIENT_ID.test(clientId)) return fail("invalid_client", "Client authentication failed");
  const client = await deps.store.findClient(clientId);
  if (client === undefined) return fail("invalid_client", "Client authentication failed");
  if (client.secretHash === null) return secret === undefined ? ok(client) : fail("invalid_client", "Client authentication failed");
  if (secret === undefined || secret.length > 200 || !sameText(hashSecret(secret), client.secretHash)) return fail("invalid_client", "Client authentication failed");
  return ok(client);
}

/** `POST /oauth/token` with its form parameters (each given once) and the client's credentials. */
async function token(deps: OAuthDeps, params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<TokenResponse, TokenErrorCode>> {
  if (Object.values(params).some((v) => v.length > MAX_PARAM)) return fail("invalid_request", "A parameter is too long");
  const grantType = params.grant_type;
  if (grantType === undefined) return fail("invalid_request", "grant_type is required");
  if (!["authorization_code", "refresh_token", "client_credentials"].includes(grantType)) return fail("unsupported_grant_type", "grant_type is not supported");
  const client = await authenticateClient(deps, params, credentials);
  if (!client.ok) return client;
  if (grantType === "authorization_code") return await authorizationCode(deps, client.value, params);
  if (grantType === "refresh_token") return await refreshToken(deps, client.value, params);
  return await clientCredentials(deps, client.value, params);
}

/**
 * `POST /oauth/revoke` (RFC 7009): a refresh token ends its grant (and so the grant's access tokens); an access
 * token is refused from then on. A token that is unknown, expired or another client's is answered as revoked
 * (§2.2) and changes nothing. `token_type_hint` only orders the search (§2.1): a token not found as the hinted
 * type is looked for as the other, so a refresh token sent with `token_type_hint=access_token` still ends its grant.
 */
async function revoke(deps: OAuthDeps, params: Readonly<Record<string, string>>, credentials: ClientCredentials): Promise<Result<null, "invalid_client" | "invalid_request">> {
  if (Object.values(params).some((v) => v.length > MAX_PARAM)) return fail("invalid_request", "A parameter is too long");
  const client = await authenticateClient(deps, params, credentials);
  if (!client.ok) return client;
  const presented = params.token;
  if (presented === undefined || presented === "") return fail("invalid_request", "token is required");
  const clientId = client.value.clientId;
  const now = deps.clock.nowMs();
  /** Whether `presented` is a refresh token (revoked when it is this client's). */
  const asRefreshToken = async () => {
    const found = await deps.store.findRefreshToken(hashSecret(presented));
    if (found === undefined) return false;
    if (found.grant.clientId === clientId) await deps.store.revokeGrant(found.grant.id, now);
    return true;
  };
  /** Whether `presented` is an access token of this client (then revoked). */
  const asAccessToken = async () => {
    for (const audience of tokenResources(deps.issuer)) {
      const verified = await deps.keys.verify(presented, { issuer: deps.issuer, audience });
      if (verified.ok && verified.claims.client_id === clientId) {
        await deps.store.revokeAccessToken(verified.claims.jti, clientId, verified.claims.exp * 1000);
        return true;
      }
    }
    return false;
  };
  const search = params.token_type_hint === "access_token" ? [asAccessToken, asRefreshToken] : [asRefreshToken, asAccessToken];
  for (const attempt of search) if (await attempt()) break;
  return ok(null);
}

/** The token and revocation use cases. */
export type Tokens = ReturnType<typeof createTokens>;
