/**
 * Bearer access (RFC 6750, decisions §19): a request's access token, checked for signature, issuer, audience and
 * expiry (through the AccessTokenKeys port), then against the store (client still there, grant and token not
 * revoked: one query), then for the scope the route needs. The token acts as its account, with its plan and quota.
 */
import type { Account } from "../../ports/accounts.ts";
import type { AccessTokenClaims } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import type { OAuthDeps } from "./_deps.ts";
import { type Scope, scopesOf } from "./scopes.ts";

/** An authenticated bearer request. */
export type BearerCaller = { readonly account: Account; readonly clientId: string; readonly scopes: readonly Scope[]; readonly claims: AccessTokenClaims };

/** Why a bearer token was refused: `invalid_token` (401) or `insufficient_scope` (403), as RFC 6750 §3.1 names them. */
export type BearerFailure = Result<never, "invalid_token" | "insufficient_scope">;

/** The longest token read; ours are well under 1 KiB. */
const MAX_TOKEN = 4_096;

/** Builds the bearer check. */
export function createBearerAuth(deps: Pick<OAuthDeps, "store" | "keys" | "accounts" | "issuer">) {
  /**
   * Checks `token` for `scope` on `audience` (the service's URL, or its `/mcp` for the MCP server of decisions §20).
   */
  return async function authenticateBearer(token: string, required: { readonly scope: Scope; readonly audience?: string | undefined }): Promise<Result<BearerCaller> | BearerFailure> {
    if (token.length === 0 || token.length > MAX_TOKEN) return fail("invalid_token", "The access token is malformed");
    const verified = await deps.keys.verify(token, { issuer: deps.issuer, audience: required.audience ?? deps.issuer });
    if (!verified.ok) return fail("invalid_token", verified.reason === "expired" ? "The access token expired" : "The access token is invalid");
    const claims = verified.claims;
    if (!(await deps.store.accessTokenActive({ jti: claims.jti, clientId: claims.client_id, grantId: claims.gid ?? null, accountId: claims.sub }))) {
      return fail("invalid_token", "The access token was revoked");
    }
    const account = await deps.accounts.findAccount(claims.sub);
    if (account === undefined || account.id !== claims.sub) return fail("invalid_token", "The access token's account no longer exists");
    const scopes = scopesOf(claims.scope);
    if (!scopes.includes(required.scope)) return fail("insufficient_scope", `This request needs the scope ${required.scope}`);
    return ok({ account, clientId: claims.client_id, scopes, claims });
  };
}

/** The bearer check. */
export type BearerAuth = ReturnType<typeof createBearerAuth>;
