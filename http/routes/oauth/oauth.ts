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
import { clientKeyOf, type Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { AccessTokenKeys } from "../../../ports/oauth.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { jsonShapeRefusal, readBodyText } from "../request.ts";
import { MAX_OAUTH_BODY, noStore, oauthError, readBasic, readForm } from "./_forms.ts";

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
      if (checked.kind === "redirect") return Response.redirect(checked.location, 303);
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
        const result = await oauth.registration.register(metadata, clientKeyOf(deps.clientAddress?.(request)));
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
          if (!approved.ok) {
            deps.log.warn("oauth_codes_limited", { accountId: auth.value.account.id, clientId: checked.value.client.clientId, limit: approved.limit });
            return Response.redirect(approved.location, 303);
          }
          deps.log.info("oauth_authorized", { accountId: auth.value.account.id, clientId: checked.value.client.clientId });
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
