/**
 * API clients (decisions §19): a signed-in account creates confidential client-credentials clients for its own
 * software ("API keys"), lists them (never their secrets) and deletes them, which ends their tokens at once.
 * Session only: a token cannot make more tokens. Errors are the service's `{error, code}`, except a refused
 * metadata, which is RFC 7591's `invalid_client_metadata` as its code.
 */
import { Elysia } from "elysia";
import type { OAuth } from "../../../domain/oauth/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { type BearerAccess, sessionOnly } from "../../credentials.ts";
import { parseJsonBody, readBodyText } from "../request.ts";
import { ApiClientBody, type RouteDoc } from "../../models.ts";
import { CACHE } from "../../http_cache.ts";
import { err, SESSION_ONLY, SESSION_ONLY_CHANGE, TOO_LARGE } from "../../route_responses.ts";

/** What the API-client routes need. */
export type ApiClientRoutesDeps = {
  readonly oauth: OAuth;
  readonly sessions: Sessions;
  /** The resource bearer tokens are for: named in the 401's challenge (decisions §13 amended). */
  readonly bearer?: BearerAccess | undefined;
  readonly log: Logger;
};

/**
 * `GET|POST /api/private/oauth/clients`, `DELETE /api/private/oauth/clients/:client_id`, and the applications the
 * account authorised by consent: `GET /api/private/oauth/authorizations`, `DELETE /api/private/oauth/authorizations/:client_id`.
 */
export function apiClientRoutes(deps: ApiClientRoutesDeps) {
  const { registration } = deps.oauth;
  // A person's own clients and consents: a session only (an access token is 403, none 401 with the challenge).
  const signedIn = (request: Request) => sessionOnly(request, deps);
  const guarded = (run: () => Promise<Response>) =>
    run().catch((error: unknown) => {
      deps.log.error("api_clients_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  return new Elysia({ name: "api-client-routes" })
    .get("/api/private/oauth/clients", ({ request }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response;
        return json({ clients: await registration.listApiClients(auth.caller.account) });
      }))
    .post("/api/private/oauth/clients", ({ request, body }) =>
      guarded(async () => {
        const parsed = parseJsonBody(body);
        if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response;
        const created = await registration.createApiClient(auth.caller.account, parsed.value);
        if (created.ok) {
          deps.log.info("api_client_created", { accountId: auth.caller.account.id, clientId: created.value.client_id });
          return json(created.value, 201, { "cache-control": "no-store" });
        }
        return json(errorBody(created.code, created.message), created.code === "too_many_clients" ? 409 : 400);
      }), { parse: readBodyText })
    .delete("/api/private/oauth/clients/:client_id", ({ request, params }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response;
        const removed = await registration.deleteApiClient(auth.caller.account, params.client_id);
        if (!removed.ok) return json(errorBody("CLIENT_NOT_FOUND", removed.message), 404);
        deps.log.info("api_client_deleted", { accountId: auth.caller.account.id, clientId: params.client_id });
        return json({ success: true, client_id: params.client_id });
      }))
    .get("/api/private/oauth/authorizations", ({ request }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response;
        return json({ authorizations: await deps.oauth.authorizations.list(auth.caller.account) });
      }))
    .delete("/api/private/oauth/authorizations/:client_id", ({ request, params }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response;
        const revoked = await deps.oauth.authorizations.revoke(auth.caller.account, params.client_id);
        if (!revoked.ok) return json(errorBody("AUTHORIZATION_NOT_FOUND", revoked.message), 404);
        deps.log.info("oauth_authorization_revoked", { accountId: auth.caller.account.id, clientId: params.client_id });
        return json({ success: true, client_id: params.client_id });
      }));
}

/** The account's API clients and authorizations (decisions §19): route declarations, gathered by http/route_docs.ts. */
export const API_CLIENT_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/private/oauth/clients"],
    auth: "session",
    cache: CACHE.private,
    summary: "The signed-in account's API clients (client credentials), oldest first, without secrets",
    responses: { 200: { description: "{clients: [client metadata]}" }, 401: err("UNAUTHENTICATED"), 403: SESSION_ONLY },
  },
  {
    method: "post",
    paths: ["/api/private/oauth/clients"],
    auth: "session",
    cache: CACHE.private,
    summary: "Creates an API client for the signed-in account's own software: RFC 7591 metadata (client_name, scope, grant_types [client_credentials], token_endpoint_auth_method client_secret_basic|client_secret_post); answers the metadata with client_id and client_secret (shown this once, stored hashed); at most 20 per account",
    body: { schema: ApiClientBody },
    responses: {
      201: { description: "The client with client_id, client_secret, client_secret_expires_at 0" },
      400: err("INVALID_JSON, invalid_client_metadata"),
      401: err("UNAUTHENTICATED"),
      403: SESSION_ONLY_CHANGE,
      409: err("too_many_clients"),
      413: TOO_LARGE,
      415: err("UNSUPPORTED_MEDIA_TYPE"),
    },
  },
  {
    method: "delete",
    paths: ["/api/private/oauth/clients/{client_id}"],
    auth: "session",
    cache: CACHE.private,
    pathParameters: { client_id: "The client's id, as GET /api/private/oauth/clients lists it" },
    summary: "Deletes an API client of the signed-in account: its tokens are refused at once",
    responses: { 200: { description: "{success: true, client_id}" }, 401: err("UNAUTHENTICATED"), 403: SESSION_ONLY_CHANGE, 404: err("CLIENT_NOT_FOUND"), 413: TOO_LARGE },
  },
  {
    method: "get",
    paths: ["/api/private/oauth/authorizations"],
    auth: "session",
    cache: CACHE.private,
    summary: "The applications the signed-in account authorised on the consent page whose tokens can still be used, most recently authorised first (at most 200): client_id, client_name, scope (every scope of its live grants), first_authorized_at, last_authorized_at, grants",
    responses: { 200: { description: "{authorizations: [{client_id, client_name, scope, first_authorized_at, last_authorized_at, grants}]}" }, 401: err("UNAUTHENTICATED"), 403: SESSION_ONLY },
  },
  {
    method: "delete",
    paths: ["/api/private/oauth/authorizations/{client_id}"],
    auth: "session",
    cache: CACHE.private,
    pathParameters: { client_id: "The application's client_id, as GET /api/private/oauth/authorizations lists it" },
    summary: "Revokes what the signed-in account authorised an application to do: every grant of the pair ends (its refresh and access tokens are refused at once) and its codes not yet exchanged are dropped; the application must ask for consent again",
    responses: { 200: { description: "{success: true, client_id}" }, 401: err("UNAUTHENTICATED"), 403: SESSION_ONLY_CHANGE, 404: err("AUTHORIZATION_NOT_FOUND"), 413: TOO_LARGE },
  },
];
