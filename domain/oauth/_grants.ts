/** The three grants of the token endpoint, each turning an authenticated client's request into tokens. */
import type { Grant, OAuthClient, RefreshToken } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import { ACCESS_TOKEN_TTL_SECONDS, type OAuthDeps } from "./_deps.ts";
import { hashSecret, randomToken, s256Challenge, sameText } from "./_secrets.ts";
import { tokenResources } from "./metadata.ts";
import { parseScope, type Scope, scopesOf, scopeString, withinScopes } from "./scopes.ts";

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

/** The audience of a token: the `resource` asked for (RFC 8707) when it is the service or its /mcp. */
const audienceOf = (deps: OAuthDeps, resource: string | undefined | null): Result<string, "invalid_target"> =>
  resource === undefined || resource === null ? ok(deps.issuer) : tokenResources(deps.issuer).includes(resource) ? ok(resource) : fail("invalid_target", "Tokens are issued only for this service or its /mcp");

/** A signed access token (RFC 9068) and its scope string. */
async function accessToken(deps: OAuthDeps, input: { accountId: string; clientId: string; scopes: readonly Scope[]; audience: string; grantId?: string | undefined }): Promise<{ token: string; scope: string }> {
  const iat = Math.floor(deps.clock.nowMs() / 1000);
  const scope = scopeString(input.scopes);
  const token = await deps.keys.sign({
    iss: deps.issuer,
    sub: input.accountId,
    aud: input.audience,
    client_id: input.clientId,
    scope,
    jti: randomToken(deps.random, 16),
    iat,
    exp: iat + ACCESS_TOKEN_TTL_SECONDS,
    ...(input.grantId === undefined ? {} : { gid: input.grantId }),
  });
  return { token, scope };
}

/** A new refresh token and its stored row. */
const newRefreshToken = (deps: OAuthDeps, grantId: string): { token: string; row: RefreshToken } => {
  const token = randomToken(deps.random, 32);
  const now = deps.clock.nowMs();
  return { token, row: { tokenHash: hashSecret(token), grantId, createdAtMs: now, expiresAtMs: now + deps.policy.refreshTokenTtlSeconds * 1000, usedAtMs: null } };
};

/** The authorization code grant with PKCE (RFC 6749 §4.1.3, RFC 7636). */
export async function authorizationCode(deps: OAuthDeps, client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
  if (!client.grantTypes.includes("authorization_code")) return fail("unauthorized_client", "This client may not use the authorization code grant");
  const { code, code_verifier: verifier, redirect_uri: redirectUri } = params;
  if (code === undefined || verifier === undefined) return fail("invalid_request", "code and code_verifier are required");
  if (!VERIFIER.test(verifier)) return fail("invalid_grant", "The code verifier does not match");
  const stored = await deps.store.findCode(hashSecret(code));
  if (stored === undefined) return fail("invalid_grant", "The code is unknown or expired");
  const now = deps.clock.nowMs();
  if (stored.usedAtMs !== null) {
    // A second use by its client, with its verifier: whoever holds the first tokens may have stolen the code; they end
    // now (RFC 6749 §4.1.2). Anyone else holding a used code (from a log, a Referer, browser history: what PKCE makes
    // harmless) and any client_id ended the real client's grant with any 43 characters, and learned the code was real.
    if (stored.clientId !== client.clientId || !sameText(s256Challenge(verifier), stored.codeChallenge)) {
      return fail("invalid_grant", "The code is unknown or expired");
    }
    if (stored.grantId !== null) await deps.store.revokeGrant(stored.grantId, now);
    return fail("invalid_grant", "The code was used already");
  }
  if (now >= stored.expiresAtMs || stored.clientId !== client.clientId) return fail("invalid_grant", "The code is unknown or expired");
  // RFC 6749 §4.1.3: required, and identical, when the authorization request named it; else optional, and if given
  // it must be where the code was sent (the client's one registered redirect URI).
  if (stored.redirectUriGiven ? redirectUri !== stored.redirectUri : redirectUri !== undefined && redirectUri !== stored.redirectUri) {
    return fail("invalid_grant", "redirect_uri differs from the authorization request's");
  }
  if (!sameText(s256Challenge(verifier), stored.codeChallenge)) return fail("invalid_grant", "The code verifier does not match");
  if (params.resource !== undefined && params.resource !== (stored.resource ?? deps.issuer)) return fail("invalid_target", "resource differs from the authorization request's");
  const audience = audienceOf(deps, stored.resource);
  if (!audience.ok) return audience;
  const grant: Grant = { id: randomToken(deps.random, 16), clientId: client.clientId, accountId: stored.accountId, scope: stored.scope, resource: stored.resource, createdAtMs: now, revokedAtMs: null };
  const refresh = client.grantTypes.includes("refresh_token") ? newRefreshToken(deps, grant.id) : undefined;
  // Signed before the code is spent (decisions §27): a signer that is down leaves the code usable for a retry.
  const access = await accessToken(deps, { accountId: stored.accountId, clientId: client.clientId, scopes: scopesOf(stored.scope), audience: audience.value, grantId: grant.id });
  if (!(await deps.store.exchangeCode(stored.codeHash, grant, refresh?.row ?? null, now, deps.policy.grantsPerAccount))) {
    // Spent by a request that ran alongside this one: a second use all the same, so its tokens end too (it was only
    // refused, and the tokens of a stolen code raced against the real client's stayed good).
    const spent = await deps.store.findCode(stored.codeHash);
    if (spent?.grantId !== null && spent?.grantId !== undefined) await deps.store.revokeGrant(spent.grantId, now);
    return fail("invalid_grant", "The code was used already");
  }
  return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope, ...(refresh ? { refresh_token: refresh.token } : {}) });
}

/** The refresh token grant, rotating the token and revoking the grant on reuse (RFC 6749 §6). */
export async function refreshToken(deps: OAuthDeps, client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
  if (!client.grantTypes.includes("refresh_token")) return fail("unauthorized_client", "This client may not use refresh tokens");
  const presented = params.refresh_token;
  if (presented === undefined) return fail("invalid_request", "refresh_token is required");
  const hash = hashSecret(presented);
  const found = await deps.store.findRefreshToken(hash);
  if (found === undefined || found.grant.clientId !== client.clientId) return fail("invalid_grant", "The refresh token is unknown, expired or revoked");
  const granted = scopesOf(found.grant.scope);
  const asked = parseScope(params.scope, granted);
  if (asked === undefined || asked.length === 0 || !withinScopes(asked, granted)) return fail("invalid_scope", "The scope asked for is beyond the grant's");
  if (params.resource !== undefined && params.resource !== (found.grant.resource ?? deps.issuer)) return fail("invalid_target", "resource differs from the grant's");
  const next = newRefreshToken(deps, found.grant.id);
  const audience = audienceOf(deps, found.grant.resource);
  if (!audience.ok) return audience;
  // Signed before the refresh token is rotated (decisions §27): a signer that is down leaves it usable for a retry.
  const access = await accessToken(deps, { accountId: found.grant.accountId, clientId: client.clientId, scopes: asked, audience: audience.value, grantId: found.grant.id });
  const rotated = await deps.store.rotateRefreshToken(hash, next.row, deps.clock.nowMs());
  if (rotated.kind === "reused") return fail("invalid_grant", "The refresh token was used already; every token of this grant is revoked");
  if (rotated.kind === "invalid") return fail("invalid_grant", "The refresh token is unknown, expired or revoked");
  return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope, refresh_token: next.token });
}

/** The client credentials grant (RFC 6749 §4.4), for a confidential client tied to an account. */
export async function clientCredentials(deps: OAuthDeps, client: OAuthClient, params: Readonly<Record<string, string>>): Promise<Result<TokenResponse, TokenErrorCode>> {
  if (!client.grantTypes.includes("client_credentials") || client.accountId === null || client.secretHash === null) {
    return fail("unauthorized_client", "This client may not use the client credentials grant");
  }
  const allowed = scopesOf(client.scope);
  const asked = parseScope(params.scope, allowed);
  if (asked === undefined || asked.length === 0 || !withinScopes(asked, allowed)) return fail("invalid_scope", "The scope asked for is beyond the client's");
  const audience = audienceOf(deps, params.resource);
  if (!audience.ok) return audience;
  if ((await deps.accounts.findAccount(client.accountId)) === undefined) return fail("invalid_client", "Client authentication failed");
  const access = await accessToken(deps, { accountId: client.accountId, clientId: client.clientId, scopes: asked, audience: audience.value });
  return ok({ access_token: access.token, token_type: "Bearer", expires_in: ACCESS_TOKEN_TTL_SECONDS, scope: access.scope });
}
