/**
 * The OAuth 2 endpoints (decisions §19): discovery (RFC 8414, RFC 9728), keys (JWKS), open registration (RFC 7591),
 * the authorization endpoint with its consent page, the token endpoint and revocation (RFC 7009). Failures are the
 * RFCs' error JSON `{error, error_description}` (not the service's `{error, code}`: OAuth clients read these).
 */
import { SIGNER_RETRY_AFTER_SECONDS, SignerUnavailableError } from "../../../ports/signer.ts";
import { Elysia } from "elysia";
import { CONSOLE_CSP } from "../../../console/page.ts";
import { type ConsentScope, renderConsentPage } from "../../../console/consent_page.ts";
import {
  AUTHORIZATION_FIELDS,
  authorizationServerMetadata,
  consentToken,
  consentTokenValid,
  type OAuth,
  protectedResourceMetadata,
  type Scope,
  SCOPES,
} from "../../../domain/oauth/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { AccessTokenKeys } from "../../../ports/oauth.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { clientKeyFor, jsonShapeRefusal, readBodyText } from "../request.ts";
import {
  MAX_OAUTH_BODY,
  noStore,
  oauthError,
  readBasic,
  readForm,
  OAuthAuthorizeQuery,
  OAuthConsentForm,
  OAuthRevokeForm,
  OAuthTokenForm,
} from "./_forms.ts";
import { OAuthRegisterBody, type RouteDoc } from "../../models.ts";
import { CACHE } from "../../http_cache.ts";
import { page, TOO_LARGE } from "../../route_responses.ts";

/** What the OAuth routes need. */
export type OAuthRoutesDeps = {
  readonly oauth: OAuth;
  readonly keys: Pick<AccessTokenKeys, "jwks">;
  readonly sessions: Sessions;
  /** The issuer: the public base URL without a trailing slash. */
  readonly issuer: string;
  readonly chainId: number;
  /** The console assets' version (the consent page uses its stylesheet and script). */
  readonly assetVersion: () => Promise<string>;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly log: Logger;
};

/**
 * Headers of the consent page: the console's strict policy, never framed, never cached. The referrer policy is
 * `same-origin`, not the console's `no-referrer`: under `no-referrer` a browser posts the form with `Origin: null`,
 * which the origin check must refuse; the client's origin still gets no referrer.
 */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
};

/** Caching is the routes' policy (public, with an ETag: http/route_docs.ts). */
const METADATA_HEADERS = { "content-type": "application/json; charset=utf-8" };

const SESSION_COOKIE = "ats_session";
function cookieOf(request: Request): string | undefined {
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The OAuth endpoints. */
export function oauthRoutes(deps: OAuthRoutesDeps) {
  const { oauth, issuer } = deps;
  const asMetadata = JSON.stringify(authorizationServerMetadata(issuer));
  const prMetadata = JSON.stringify(protectedResourceMetadata(issuer));
  // The MCP endpoint's own metadata (decisions §20), where RFC 9728 §3.1 puts it for the resource `{base}/mcp`.
  const mcpMetadata = JSON.stringify(protectedResourceMetadata(issuer, `${issuer}/mcp`));
  const guarded = (name: string, run: () => Promise<Response>) =>
    run().catch((error: unknown) => {
      // The OAUTH_SIGNER gave no signature (decisions §27): nothing was spent, the same request succeeds later.
      if (error instanceof SignerUnavailableError) {
        return oauthError("temporarily_unavailable", "The service's signer is unavailable; try again later", 503, {
          "retry-after": String(SIGNER_RETRY_AFTER_SECONDS),
        });
      }
      deps.log.error(`oauth_${name}_error`, { error: error instanceof Error ? error.message : String(error) });
      return oauthError("server_error", "Internal error", 500);
    });
  /**
   * A page; `redirectUri`: the consent form's answer redirects there, which the policy's `form-action` must name
   * (browsers apply it to the redirect after a form post too).
   */
  const page = async (content: Parameters<typeof renderConsentPage>[0], status = 200, redirectUri?: string) =>
    new Response(renderConsentPage(content, await deps.assetVersion()), {
      status,
      headers: redirectUri === undefined ? PAGE_HEADERS : { ...PAGE_HEADERS, "content-security-policy": consentPolicy(redirectUri) },
    });
  const scopeLines = (scopes: readonly Scope[]): ConsentScope[] => scopes.map((s) => ({ name: s, description: SCOPES[s] }));

  /** Shows the consent page (or sign-in, or the error) for the request's parameters. */
  const showAuthorization = async (request: Request, params: Record<string, string>) => {
    const checked = await oauth.authorization.check(params);
    if (!checked.ok) {
      if (checked.kind === "redirect") {
        // RFC 9700 §4.11.2: every client here registered itself (open registration), so a refused request is shown,
        // never sent back on its own: a bare link to /oauth/authorize of a client registered with
        // https://evil.example/ as its redirect URI made this service a redirector to any page, no click needed. The
        // person's Allow or Deny still goes back to the client.
        const refused = new URL(checked.location);
        const error = refused.searchParams.get("error") ?? "invalid_request";
        const description = refused.searchParams.get("error_description") ?? "The request is not valid";
        return await page({ kind: "error", title: "This authorization request cannot be used", description: `${description} (${error}); nothing was sent back to ${refused.origin}` }, 400);
      }
      return await page({ kind: "error", title: "This authorization request cannot be used", description: checked.description }, 400);
    }
    const req = checked.value;
    const common = {
      clientName: req.client.name ?? "An application",
      clientId: req.client.clientId,
      redirectOrigin: redirectOrigin(req.redirectUri),
      scopes: scopeLines(req.scopes),
    };
    const auth = await deps.sessions.authenticate(cookieOf(request));
    if (!auth.ok) return await page({ ...common, kind: "sign-in", chainId: deps.chainId });
    const fields = { ...oauth.authorization.formFields(req), csrf_token: consentToken(auth.value.session.tokenHash, req.client.clientId) };
    return await page({ ...common, kind: "consent", account: auth.value.account.address, fields }, 200, req.redirectUri);
  };

  return new Elysia({ name: "oauth-routes" })
    .get("/.well-known/oauth-authorization-server", () => new Response(asMetadata, { headers: METADATA_HEADERS }))
    .get("/.well-known/oauth-protected-resource", () => new Response(prMetadata, { headers: METADATA_HEADERS }))
    .get("/.well-known/oauth-protected-resource/mcp", () => new Response(mcpMetadata, { headers: METADATA_HEADERS }))
    .get("/oauth/jwks.json", () =>
      guarded("jwks", async () => new Response(JSON.stringify(await deps.keys.jwks()), { headers: { ...METADATA_HEADERS, "content-type": "application/jwk-set+json" } })))
    .post("/oauth/register", ({ request, body }) =>
      guarded("register", async () => {
        if (body === undefined || typeof body !== "string" || body.length > MAX_OAUTH_BODY) return oauthError("invalid_client_metadata", "The body must be a JSON object of client metadata (at most 64 KiB)");
        // A body no client metadata looks like (issue 33: nested or long past any) is refused before it is parsed.
        if (jsonShapeRefusal(body) !== undefined) return oauthError("invalid_client_metadata", "The body must be a JSON object of client metadata");
        let metadata: unknown;
        try {
          metadata = JSON.parse(body);
        } catch {
          return oauthError("invalid_client_metadata", "The body must be a JSON object of client metadata");
        }
        const result = await oauth.registration.register(metadata, clientKeyFor(deps.clientAddress, request));
        if (result.ok) return noStore(result.value, 201);
        if (result.code === "rate_limited") {
          const retry = (result as { retryAfterSeconds?: number }).retryAfterSeconds ?? 60;
          return oauthError("rate_limited", result.message, 429, { "retry-after": String(retry) });
        }
        return oauthError(result.code, result.message);
      }), { parse: readBodyText })
    .get("/oauth/authorize", ({ request }) =>
      guarded("authorize", async () => {
        const params: Record<string, string> = {};
        for (const [name, value] of new URL(request.url).searchParams) {
          if (Object.hasOwn(params, name)) return await page({ kind: "error", title: "This authorization request cannot be used", description: `The parameter ${name.slice(0, 40)} is given twice` }, 400);
          if (value !== "") params[name] = value;
        }
        return await showAuthorization(request, params);
      }))
    .post("/oauth/authorize", ({ request, body }) =>
      guarded("consent", async () => {
        // The form is posted from the page above: the browser names this origin (a form of another site is refused).
        const origin = request.headers.get("origin");
        if (origin !== null && origin !== new URL(issuer).origin) {
          return await page({ kind: "error", title: "This form was not sent from this service", description: "Open the application's link again" }, 403);
        }
        const form = readForm(body);
        if (form === undefined) return await page({ kind: "error", title: "This authorization request cannot be used", description: "The form is malformed" }, 400);
        const params: Record<string, string> = {};
        for (const name of AUTHORIZATION_FIELDS) if (form[name] !== undefined) params[name] = form[name]!;
        const checked = await oauth.authorization.check(params);
        if (!checked.ok) return await showAuthorization(request, params);
        const auth = await deps.sessions.authenticate(cookieOf(request));
        if (!auth.ok || !consentTokenValid(form.csrf_token, auth.value.session.tokenHash, checked.value.client.clientId)) {
          // Not signed in any more, or a forged form: the page again, which asks for sign-in or a fresh decision.
          return await showAuthorization(request, params);
        }
        if (form.decision === "approve") {
          const approved = await oauth.authorization.approve(checked.value, auth.value.account);
          deps.log.info("oauth_authorized", { accountId: auth.value.account.id, clientId: checked.value.client.clientId, evictedCodes: approved.evicted });
          return Response.redirect(approved.value, 303);
        }
        return Response.redirect(oauth.authorization.deny(checked.value), 303);
      }), { parse: readBodyText })
    .post("/oauth/token", ({ request, body }) =>
      guarded("token", async () => {
        const basic = readBasic(request);
        if (basic === null) return oauthError("invalid_client", "Client authentication failed", 401, { "www-authenticate": 'Basic realm="ats"' });
        const form = readForm(body);
        if (form === undefined) return oauthError("invalid_request", "The body must be application/x-www-form-urlencoded with each parameter once");
        const result = await oauth.tokens.token(form, { basic });
        if (result.ok) return noStore(result.value);
        if (result.code === "invalid_client") {
          return oauthError("invalid_client", result.message, 401, basic === undefined ? {} : { "www-authenticate": 'Basic realm="ats"' });
        }
        return oauthError(result.code, result.message);
      }), { parse: readBodyText })
    .post("/oauth/revoke", ({ request, body }) =>
      guarded("revoke", async () => {
        const basic = readBasic(request);
        if (basic === null) return oauthError("invalid_client", "Client authentication failed", 401, { "www-authenticate": 'Basic realm="ats"' });
        const form = readForm(body);
        if (form === undefined) return oauthError("invalid_request", "The body must be application/x-www-form-urlencoded with each parameter once");
        const result = await oauth.tokens.revoke(form, { basic });
        if (result.ok) return new Response(null, { status: 200, headers: { "cache-control": "no-store" } });
        return oauthError(result.code, result.message, result.code === "invalid_client" ? 401 : 400);
      }), { parse: readBodyText });
}

/** The console's policy with `form-action` also naming where the consent form's answer redirects. */
function consentPolicy(redirectUri: string): string {
  const url = new URL(redirectUri);
  const source = url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol;
  return CONSOLE_CSP.replace("form-action 'self'", `form-action 'self' ${source}`);
}

/** The origin a redirect URI goes back to, as the page shows it (a private-use scheme as itself). */
function redirectOrigin(uri: string): string {
  const url = new URL(uri);
  return url.origin === "null" ? `${url.protocol}${url.host ? `//${url.host}` : ""}` : url.origin;
}

/** OAuth 2 for registered software (decisions §19): route declarations, gathered by http/route_docs.ts. */
export const OAUTH_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/.well-known/oauth-authorization-server"],
    auth: "public",
    cache: CACHE.static,
    summary: "OAuth 2 authorization server metadata (RFC 8414): endpoints, scopes, grant types, PKCE S256, client authentication methods",
    responses: { 200: { description: "The metadata; issuer is PUBLIC_BASE_URL without a trailing slash" } },
  },
  {
    method: "get",
    paths: ["/.well-known/oauth-protected-resource"],
    auth: "public",
    cache: CACHE.static,
    summary: "OAuth 2 protected resource metadata (RFC 9728): the resource (the service), its authorization server, scopes and bearer method",
    responses: { 200: { description: "The metadata" } },
  },
  {
    method: "get",
    paths: ["/.well-known/oauth-protected-resource/mcp"],
    auth: "public",
    cache: CACHE.static,
    summary: "The protected resource metadata of the MCP endpoint (RFC 9728 §3.1 for the resource {base}/mcp; decisions §20): tokens for it are asked with resource={base}/mcp",
    responses: { 200: { description: "The metadata, resource {base}/mcp" } },
  },
  {
    method: "get",
    paths: ["/oauth/jwks.json"],
    auth: "public",
    cache: CACHE.static,
    summary: "The public keys access tokens are signed with (ES256), the same on every instance: every instance's OAUTH_SIGNER key recorded in the last two hours, then the stored keys (a replaced one two hours after its successor was made); a revoked key never (docs/signing.md#rotation)",
    responses: { 200: { description: "{keys: [JWK]} (application/jwk-set+json)" } },
  },
  {
    method: "post",
    paths: ["/oauth/register"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "Open dynamic client registration (RFC 7591): a public client of the authorization code flow with PKCE S256 (token_endpoint_auth_method none), grant_types authorization_code and refresh_token; rate-limited per client address (OAUTH_REGISTER_RATE_PER_HOUR) and per IPv6 /48 (4 times that); past OAUTH_REGISTRATIONS_PER_HOUR unused clients of the hour the oldest unused one is evicted (nobody is refused for everyone). JSON body: redirect_uris (1 to 10, HTTPS, loopback HTTP or a private-use scheme), client_name, scope, grant_types, response_types",
    body: { schema: OAuthRegisterBody },
    responses: {
      201: { description: "client_id, client_id_issued_at and the metadata registered" },
      400: { description: "{error: invalid_client_metadata | invalid_redirect_uri, error_description}" },
      413: TOO_LARGE,
      429: { description: "{error: rate_limited, error_description}; Retry-After header" },
    },
  },
  {
    method: "get",
    paths: ["/oauth/authorize"],
    auth: "public",
    cache: CACHE.noStoreCredentialed,
    summary: "Authorization endpoint (RFC 6749 §4.1, PKCE S256 required, RFC 8707 resource, RFC 9207 iss): the consent page (HTML), with wallet sign-in first when no session is present; an unknown client or a redirect_uri that is not exactly a registered one is shown, never redirected to; other errors redirect back with error and state",
    query: OAuthAuthorizeQuery,
    responses: {
      200: page("The consent page (or the sign-in step)"),
      303: { description: "Back to the client with error, state and iss" },
      400: page("The error page: client_id missing or unknown, redirect_uri not registered, a parameter given twice"),
    },
  },
  {
    method: "post",
    paths: ["/oauth/authorize"],
    auth: "session",
    cache: CACHE.private,
    summary: "The consent form posted back (application/x-www-form-urlencoded): the request's fields, csrf_token and decision=approve|deny; approve redirects with a single-use code (60 s), deny with error=access_denied",
    body: { schema: OAuthConsentForm, mediaType: "application/x-www-form-urlencoded" },
    responses: {
      303: { description: "Back to the client: code (or error), state, iss" },
      200: page("The page again (no session, or the form's CSRF token does not match)"),
      400: page("The error page: a malformed form (a parameter given twice, over 64 KiB), client_id missing or unknown, redirect_uri not registered"),
      403: page("The form came from another origin"),
      413: TOO_LARGE,
    },
  },
  {
    method: "post",
    paths: ["/oauth/token"],
    auth: "public",
    cache: CACHE.private,
    summary: "Token endpoint (application/x-www-form-urlencoded): grant_type authorization_code (code_verifier, redirect_uri), refresh_token (rotated; a reused one revokes its family) or client_credentials (client_secret_basic or client_secret_post; scope a subset of the client's). Access tokens: JWT (RFC 9068, ES256), 3,600 s, audience the service or the RFC 8707 resource ({base} or {base}/mcp)",
    body: { schema: OAuthTokenForm, mediaType: "application/x-www-form-urlencoded" },
    responses: {
      200: { description: "{access_token, token_type: Bearer, expires_in, scope, refresh_token?}" },
      400: { description: "{error: invalid_request | invalid_grant | unauthorized_client | unsupported_grant_type | invalid_scope | invalid_target, error_description}" },
      401: { description: "{error: invalid_client}; WWW-Authenticate Basic when Basic was sent" },
      413: TOO_LARGE,
      500: { description: "{error: server_error}: for one, this instance's OAUTH_SIGNER key was revoked (it signs no token; its /readyz shows checks.oauth false, not counted in ready)" },
      503: { description: "{error: temporarily_unavailable}: the OAUTH_SIGNER gave no signature; Retry-After header" },
    },
  },
  {
    method: "post",
    paths: ["/oauth/revoke"],
    auth: "public",
    cache: CACHE.private,
    summary: "Token revocation (RFC 7009, application/x-www-form-urlencoded: token, token_type_hint): a refresh token ends its grant and every token of it; an access token is refused from then on; an unknown token changes nothing",
    body: { schema: OAuthRevokeForm, mediaType: "application/x-www-form-urlencoded" },
    responses: { 200: { description: "Revoked (or nothing to revoke)" }, 400: { description: "{error: invalid_request}" }, 401: { description: "{error: invalid_client}" }, 413: TOO_LARGE },
  },
];
