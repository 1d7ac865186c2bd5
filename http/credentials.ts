/**
 * Who a request acts for (decisions §8, §19): the session cookie, or an OAuth access token in
 * `Authorization: Bearer`. Every route that needs a credential asks here, so a request that carries none is
 * answered the same way everywhere: 401 `UNAUTHENTICATED` with `WWW-Authenticate` naming the protected-resource
 * metadata (RFC 9728 §5.1); a bad token is 401 with `error="invalid_token"`; a token without the route's scope is
 * 403 `insufficient_scope`. Reusable by the MCP server (decisions §20): `bearerOnly` checks a token for its
 * `{base}/mcp` audience.
 */
import { type BearerAuth, bearerChallenge, type Scope } from "../domain/oauth/mod.ts";
import type { Sessions } from "../domain/sessions/mod.ts";
import type { Account, Session } from "../ports/accounts.ts";
import type { AccessTokenClaims } from "../ports/oauth.ts";
import { errorBody, json } from "./errors.ts";

/** The session cookie's name (see routes/session.ts). */
const SESSION_COOKIE = "ats_session";

/** Bearer access for the routes: the check, and the resource (the service's URL) tokens are for. */
export type BearerAccess = { readonly authenticate: BearerAuth; readonly resource: string };

/** A request's caller: signed in with a session, or software with an access token. */
export type Caller =
  | { readonly via: "session"; readonly account: Account; readonly session: Session }
  | { readonly via: "bearer"; readonly account: Account; readonly clientId: string; readonly claims: AccessTokenClaims };

/**
 * Why a request has no caller: `response` is its answer, `carried` whether it brought a bearer token (a session
 * cookie that is no longer valid counts as none), `message` the sentence of the 401, `challenge` its
 * `WWW-Authenticate` (when bearer tokens are taken).
 */
export type NoCaller = {
  readonly ok: false;
  readonly carried: boolean;
  readonly message: string;
  readonly challenge: Record<string, string>;
  readonly response: (extraHeaders?: Record<string, string>) => Response;
};

/** The bearer token of an `Authorization` header (RFC 6750 §2.1); undefined when there is none or it is another scheme. */
export function bearerTokenOf(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  const match = header === null ? null : /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)\s*$/i.exec(header);
  return match?.[1];
}

/** Whether the request carries an Authorization header of the Bearer scheme, well formed or not. */
export function carriesBearer(request: Request): boolean {
  return /^bearer\b/i.test(request.headers.get("authorization") ?? "");
}

function sessionTokenOf(request: Request): string | undefined {
  const header = request.headers.get("cookie");
  if (header === null) return undefined;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq !== -1 && part.slice(0, eq).trim() === SESSION_COOKIE) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** The 401 of a request without a usable credential (decisions §13 amended, §19). */
export function unauthenticated(resource: string | undefined, message: string, error?: "invalid_token", extra: Record<string, string> = {}): Response {
  const headers: Record<string, string> = { ...extra };
  if (resource !== undefined) headers["www-authenticate"] = bearerChallenge(resource, error === undefined ? undefined : { code: error });
  return json(errorBody("UNAUTHENTICATED", message), 401, headers);
}

/** The 403 of a token without the scope a route needs (RFC 6750 §3.1). */
export function insufficientScope(resource: string, scope: Scope): Response {
  return json(errorBody("insufficient_scope", `This request needs the scope ${scope}`), 403, {
    "www-authenticate": bearerChallenge(resource, { code: "insufficient_scope", scope }),
  });
}

/**
 * Authenticates a request for `scope`: a valid session first (a browser), then a bearer token. A request with
 * a bearer token is judged by it alone (a session cookie beside a bad token does not rescue it, and is not needed).
 */
export async function authenticateRequest(
  request: Request,
  deps: { readonly sessions: Sessions; readonly bearer?: BearerAccess | undefined },
  scope: Scope,
): Promise<{ readonly ok: true; readonly caller: Caller } | NoCaller> {
  const resource = deps.bearer?.resource;
  const refused = (message: string, error?: "invalid_token"): NoCaller => ({
    ok: false,
    carried: error !== undefined,
    message,
    challenge: resource === undefined ? {} : { "www-authenticate": bearerChallenge(resource, error === undefined ? undefined : { code: error }) },
    response: (extra) => unauthenticated(resource, message, error, extra),
  });
  if (deps.bearer !== undefined && carriesBearer(request)) {
    const token = bearerTokenOf(request);
    if (token === undefined) return refused("The access token is malformed", "invalid_token");
    const checked = await deps.bearer.authenticate(token, { scope });
    if (checked.ok) return { ok: true, caller: { via: "bearer", account: checked.value.account, clientId: checked.value.clientId, claims: checked.value.claims } };
    if (checked.code === "insufficient_scope") {
      const challenge = { "www-authenticate": bearerChallenge(deps.bearer.resource, { code: "insufficient_scope", scope }) };
      return { ok: false, carried: true, message: checked.message, challenge, response: () => insufficientScope(deps.bearer!.resource, scope) };
    }
    return refused(checked.message, "invalid_token");
  }
  const cookie = sessionTokenOf(request);
  const auth = await deps.sessions.authenticate(cookie);
  if (auth.ok) return { ok: true, caller: { via: "session", account: auth.value.account, session: auth.value.session } };
  return refused(auth.message);
}

/**
 * The 403 `insufficient_scope` of a route for a signed-in person only, to a request carrying a bearer token: no scope
 * of an access token grants it (with the challenge naming `resource`, when bearer tokens are served).
 */
export function sessionOnlyRefusal(resource: string | undefined): Response {
  const message = "This route is for a signed-in person: no access token scope grants it; sign in with a wallet (a session)";
  const headers: Record<string, string> = resource === undefined ? {} : { "www-authenticate": bearerChallenge(resource, { code: "insufficient_scope" }) };
  return json(errorBody("insufficient_scope", message), 403, headers);
}

/**
 * A route for a signed-in person only (the account's API clients and consents, the plan's purchase, the display name):
 * the session's caller; a request with no session is 401 `UNAUTHENTICATED` with the `WWW-Authenticate` challenge every
 * 401 carries (decisions §13 amended, §19), and one carrying a bearer token is 403 `insufficient_scope`: no scope of an
 * access token grants the route, so the token is not taken for no credential at all.
 */
export async function sessionOnly(
  request: Request,
  deps: { readonly sessions: Sessions; readonly bearer?: BearerAccess | undefined },
): Promise<{ readonly ok: true; readonly caller: Caller & { readonly via: "session" } } | { readonly ok: false; readonly response: Response }> {
  const resource = deps.bearer?.resource;
  if (carriesBearer(request)) return { ok: false, response: sessionOnlyRefusal(resource) };
  const auth = await deps.sessions.authenticate(sessionTokenOf(request));
  if (auth.ok) return { ok: true, caller: { via: "session", account: auth.value.account, session: auth.value.session } };
  return { ok: false, response: unauthenticated(resource, auth.message) };
}

/**
 * A bearer-only check for another resource of the service (the MCP endpoint, `audience` `{base}/mcp`): the caller,
 * or the 401/403 answer with the challenge naming that resource's metadata.
 */
export async function bearerOnly(
  request: Request,
  bearer: BearerAccess,
  required: { readonly scope: Scope; readonly audience: string },
): Promise<{ readonly ok: true; readonly account: Account; readonly clientId: string } | { readonly ok: false; readonly response: Response }> {
  const token = bearerTokenOf(request);
  if (token === undefined) return { ok: false, response: unauthenticated(required.audience, "A bearer token is required") };
  const checked = await bearer.authenticate(token, required);
  if (checked.ok) return { ok: true, account: checked.value.account, clientId: checked.value.clientId };
  if (checked.code === "insufficient_scope") return { ok: false, response: insufficientScope(required.audience, required.scope) };
  return { ok: false, response: unauthenticated(required.audience, checked.message, "invalid_token") };
}
