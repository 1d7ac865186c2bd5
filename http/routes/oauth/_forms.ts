/** Reading OAuth requests: form bodies (each parameter once, RFC 6749 §3.1), HTTP Basic client credentials, RFC error JSON. */
import { BODY_TOO_LARGE } from "../request.ts";
import { Type as t } from "@sinclair/typebox";

/** One parameter of an OAuth form body (RFC 6749 §3.1): given once; empty is as omitted; at most 4,096 characters. */
const FormParam = (description: string) => t.String({ maxLength: 4_096, description });

const ClientAuthParams = {
  client_id: t.Optional(FormParam("The client (client_secret_post, or a public client); with Basic, absent or the same")),
  client_secret: t.Optional(FormParam("client_secret_post; never together with Authorization: Basic")),
};

/** `POST /oauth/token` (application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthTokenForm = t.Object({
  grant_type: t.Union([t.Literal("authorization_code"), t.Literal("refresh_token"), t.Literal("client_credentials")]),
  code: t.Optional(FormParam("authorization_code: the code")),
  code_verifier: t.Optional(FormParam("authorization_code: the PKCE verifier (43 to 128 characters of [A-Za-z0-9-._~])")),
  redirect_uri: t.Optional(FormParam("authorization_code: required, and the same, when the authorization request named it")),
  refresh_token: t.Optional(FormParam("refresh_token: the refresh token (rotated)")),
  scope: t.Optional(FormParam("refresh_token, client_credentials: a subset of the grant's or the client's scopes")),
  resource: t.Optional(FormParam("RFC 8707: {base} or {base}/mcp")),
  ...ClientAuthParams,
}, { description: "Each parameter once" });

/** `POST /oauth/revoke` (RFC 7009; application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthRevokeForm = t.Object({
  token: FormParam("The refresh or access token"),
  token_type_hint: t.Optional(t.Union([t.Literal("refresh_token"), t.Literal("access_token")], { description: "Orders the search only" })),
  ...ClientAuthParams,
}, { description: "Each parameter once" });

/** The fields of an authorization request (RFC 6749 §4.1.1, PKCE S256, RFC 8707 resource), as `check` reads them. */
const AuthorizationRequestFields = {
  response_type: t.Literal("code"),
  client_id: t.String({ minLength: 1, maxLength: 200, description: "A client registered with POST /oauth/register" }),
  redirect_uri: t.Optional(t.String({ description: "Exactly one the client registered; may be left out when it registered only one" })),
  scope: t.Optional(t.String({ description: "Space-separated, within the client's; default the client's" })),
  state: t.Optional(t.String({ description: "Given back with the code or the error" })),
  code_challenge: t.String({ pattern: "^[A-Za-z0-9_-]{43}$", description: "PKCE S256 challenge (43 base64url characters)" }),
  code_challenge_method: t.Literal("S256"),
  resource: t.Optional(t.String({ description: "RFC 8707: {base} or {base}/mcp" })),
};

/**
 * `GET /oauth/authorize`: the authorization request; each parameter once, empty as omitted. Without a usable
 * client_id or redirect_uri the error page (400); any other fault goes back to the client (303).
 */
export const OAuthAuthorizeQuery = t.Object(AuthorizationRequestFields);

/** `POST /oauth/authorize`: the consent form the page posts back (application/x-www-form-urlencoded, at most 64 KiB). */
export const OAuthConsentForm = t.Object({
  ...AuthorizationRequestFields,
  csrf_token: t.String({ description: "The page's token for this session and client" }),
  decision: t.Union([t.Literal("approve"), t.Literal("deny")]),
}, { description: "The authorization request's fields as the page holds them, csrf_token and decision; each parameter once" });

/** An OAuth request body's longest length: every valid request is a few hundred bytes. */
export const MAX_OAUTH_BODY = 64 * 1024;

/** The parameters of a form body; undefined when a parameter repeats or the body is too large. */
export function readForm(body: unknown): Record<string, string> | undefined {
  if (body === BODY_TOO_LARGE || typeof body !== "string" || body.length > MAX_OAUTH_BODY) return undefined;
  const params: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(body)) {
    if (Object.hasOwn(params, name)) return undefined;
    // Empty parameters are treated as omitted (RFC 6749 §3.1).
    if (value !== "") params[name] = value;
  }
  return params;
}

/** The client credentials of `Authorization: Basic` (RFC 6749 §2.3.1: each part form-urlencoded); null when malformed. */
export function readBasic(request: Request): { clientId: string; secret: string } | null | undefined {
  const header = request.headers.get("authorization");
  if (header === null || !/^basic /i.test(header)) return undefined;
  try {
    const decoded = atob(header.slice(6).trim());
    const colon = decoded.indexOf(":");
    if (colon === -1) return null;
    const part = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { clientId: part(decoded.slice(0, colon)), secret: part(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}

/** An RFC 6749 §5.2 / RFC 7591 §3.2.2 error answer: `{error, error_description}`, never internal text. */
export function oauthError(error: string, description: string, status = 400, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ error, error_description: description }), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", pragma: "no-cache", ...headers },
  });
}

/** A JSON answer that must not be cached (token responses, RFC 6749 §5.1). */
export function noStore(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", pragma: "no-cache", ...headers },
  });
}
