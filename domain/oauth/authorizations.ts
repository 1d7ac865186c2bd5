/**
 * The applications a person authorised through the consent page (decisions §19): listed with what they may do, and
 * revoked, which ends every grant the account gave the client (refresh tokens and access tokens alike, at once) and
 * drops its codes not yet exchanged. Only what was authorised by consent is here: the account's own API clients are
 * listed and deleted with `/api/private/oauth/clients`.
 */
import type { Account } from "../../ports/accounts.ts";
import { fail, ok, type Result } from "../result.ts";
import { MAX_LISTED_AUTHORIZATIONS, type OAuthDeps } from "./_deps.ts";
import { ALL_SCOPES, scopesOf, scopeString } from "./scopes.ts";

/** One authorised application as `GET /api/private/oauth/authorizations` shows it. */
export type AuthorizationView = {
  client_id: string;
  client_name?: string | undefined;
  /** Every scope any of its live grants holds, space-separated, in the canonical order. */
  scope: string;
  /** When the person first and last approved it (ISO 8601), among its live grants. */
  first_authorized_at: string;
  last_authorized_at: string;
  /** Live grants: one per approval whose tokens can still be used. */
  grants: number;
};

/** Builds the authorizations use cases. */
export function createAuthorizations(deps: Pick<OAuthDeps, "store" | "clock">) {
  const { store, clock } = deps;

  /** The account's authorised applications, most recently authorised first (at most {@link MAX_LISTED_AUTHORIZATIONS}). */
  async function list(account: Account): Promise<AuthorizationView[]> {
    const found = await store.listAuthorizations(account.id, clock.nowMs(), MAX_LISTED_AUTHORIZATIONS);
    return found.map((a) => {
      const scopes = new Set(a.scopes.flatMap(scopesOf));
      return {
        client_id: a.clientId,
        ...(a.clientName === null ? {} : { client_name: a.clientName }),
        scope: scopeString(ALL_SCOPES.filter((s) => scopes.has(s))),
        first_authorized_at: new Date(a.firstAuthorizedAtMs).toISOString(),
        last_authorized_at: new Date(a.lastAuthorizedAtMs).toISOString(),
        grants: a.grants,
      };
    });
  }

  /** Ends everything the account authorised `clientId` to do; `authorization_not_found` when nothing was live. */
  async function revoke(account: Account, clientId: string): Promise<Result<{ client_id: string }, "authorization_not_found">> {
    if (clientId.length === 0 || clientId.length > 200 || (await store.revokeAuthorizations(account.id, clientId, clock.nowMs())) === 0) {
      return fail("authorization_not_found", "This account has not authorised that application (or already revoked it)");
    }
    return ok({ client_id: clientId });
  }

  return { list, revoke };
}

/** The authorizations use cases. */
export type Authorizations = ReturnType<typeof createAuthorizations>;
