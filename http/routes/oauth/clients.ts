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
import { authenticateRequest } from "../../credentials.ts";
import { parseJsonBody, readBodyText } from "../request.ts";

/** What the API-client routes need. */
export type ApiClientRoutesDeps = { readonly oauth: OAuth; readonly sessions: Sessions; readonly log: Logger };

/**
 * `GET|POST /api/private/oauth/clients`, `DELETE /api/private/oauth/clients/:client_id`, and the applications the
 * account authorised by consent: `GET /api/private/oauth/authorizations`, `DELETE /api/private/oauth/authorizations/:client_id`.
 */
export function apiClientRoutes(deps: ApiClientRoutesDeps) {
  const { registration } = deps.oauth;
  const signedIn = (request: Request) => authenticateRequest(request, { sessions: deps.sessions }, "account:read");
  const guarded = (run: () => Promise<Response>) =>
    run().catch((error: unknown) => {
      deps.log.error("api_clients_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  return new Elysia({ name: "api-client-routes" })
    .get("/api/private/oauth/clients", ({ request }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response();
        return json({ clients: await registration.listApiClients(auth.caller.account) });
      }))
    .post("/api/private/oauth/clients", ({ request, body }) =>
      guarded(async () => {
        const parsed = parseJsonBody(body);
        if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response();
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
        if (!auth.ok) return auth.response();
        const removed = await registration.deleteApiClient(auth.caller.account, params.client_id);
        if (!removed.ok) return json(errorBody("CLIENT_NOT_FOUND", removed.message), 404);
        deps.log.info("api_client_deleted", { accountId: auth.caller.account.id, clientId: params.client_id });
        return json({ success: true, client_id: params.client_id });
      }))
    .get("/api/private/oauth/authorizations", ({ request }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response();
        return json({ authorizations: await deps.oauth.authorizations.list(auth.caller.account) });
      }))
    .delete("/api/private/oauth/authorizations/:client_id", ({ request, params }) =>
      guarded(async () => {
        const auth = await signedIn(request);
        if (!auth.ok) return auth.response();
        const revoked = await deps.oauth.authorizations.revoke(auth.caller.account, params.client_id);
        if (!revoked.ok) return json(errorBody("AUTHORIZATION_NOT_FOUND", revoked.message), 404);
        deps.log.info("oauth_authorization_revoked", { accountId: auth.caller.account.id, clientId: params.client_id });
        return json({ success: true, client_id: params.client_id });
      }));
}
