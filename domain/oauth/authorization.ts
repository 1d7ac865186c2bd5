/**
 * The authorization endpoint (RFC 6749 §4.1, PKCE S256 required: RFC 7636; the issuer in the response: RFC 9207):
 * a request is checked before the consent page is shown and again when the page is posted back (the page carries
 * the request in hidden fields, so nothing is stored until the person approves). Errors about the client or its
 * redirect URI are shown, never redirected (§4.1.2.1); every other error goes back to the client.
 */
import { sha256, stringToBytes } from "viem/utils";
import type { Account } from "../../ports/accounts.ts";
import type { OAuthClient } from "../../ports/oauth.ts";
import { ok, type Ok } from "../result.ts";
import { CLIENT_ID, hashSecret, randomToken, sameText } from "./_secrets.ts";
import { CODE_TTL_SECONDS, type OAuthDeps } from "./_deps.ts";
import { tokenResources } from "./metadata.ts";
import { parseScope, type Scope, scopesOf, scopeString } from "./scopes.ts";

/** A checked authorization request: what the consent page shows and posts back. */
export type AuthorizationRequest = {
  readonly client: OAuthClient;
  /** The request's `redirect_uri`, or the client's only registered one when the request named none. */
  readonly redirectUri: string;
  /** Whether the request named `redirect_uri` (the token request must then name it too: RFC 6749 §4.1.3). */
  readonly redirectUriGiven: boolean;
  readonly scopes: readonly Scope[];
  readonly state: string | undefined;
  readonly codeChallenge: string;
  readonly resource: string | undefined;
};

/** The request's parameters as the consent form carries them (hidden fields). */
export type AuthorizationParameters = Readonly<Record<string, string>>;

/** A request that cannot go back to the client: shown to the person on the service's page. */
export type ShownError = { readonly ok: false; readonly kind: "show"; readonly error: "invalid_request" | "invalid_client"; readonly description: string };
/** A request refused back to the client: where the browser goes. */
export type RedirectError = { readonly ok: false; readonly kind: "redirect"; readonly location: string };

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
const MAX_STATE = 1_000;

/** The fields the consent page posts back, in order. */
export const AUTHORIZATION_FIELDS = ["response_type", "client_id", "redirect_uri", "scope", "state", "code_challenge", "code_challenge_method", "resource"] as const;

/** Builds the authorization use cases. */
export function createAuthorization(deps: OAuthDeps) {
  const { store, clock, random, issuer } = deps;

  /** Where the browser goes with `params` added to the client's redirect URI (its own query kept). */
  const redirectTo = (redirectUri: string, params: Record<string, string | undefined>) => {
    const url = new URL(redirectUri);
    for (const [name, value] of Object.entries(params)) if (value !== undefined) url.searchParams.append(name, value);
    url.searchParams.append("iss", issuer);
    return url.href;
  };

  /** Checks an authorization request; the checked request, or where its error goes. */
  async function check(params: AuthorizationParameters): Promise<Ok<AuthorizationRequest> | ShownError | RedirectError> {
    const clientId = params.client_id;
    if (clientId === undefined || clientId === "") return { ok: false, kind: "show", error: "invalid_request", description: "client_id is missing" };
    if (!CLIENT_ID.test(clientId)) return { ok: false, kind: "show", error: "invalid_client", description: "This application is not registered here (unknown client_id)" };
    const client = await store.findClient(clientId);
    if (client === undefined || !client.grantTypes.includes("authorization_code")) {
      return { ok: false, kind: "show", error: "invalid_client", description: "This application is not registered here (unknown client_id)" };
    }
    // Exact match (string equality), never a prefix or a pattern.
    const redirectUri = params.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
    if (redirectUri === undefined || !client.redirectUris.includes(redirectUri)) {
      return { ok: false, kind: "show", error: "invalid_request", description: "The redirect_uri is not one the application registered" };
    }
    const state = params.state;
    const back = (error: string, description: string): RedirectError =>
      ({ ok: false, kind: "redirect", location: redirectTo(redirectUri, { error, error_description: description, state }) });
    if (state !== undefined && state.length > MAX_STATE) return back("invalid_request", "state is too long");
    if (params.response_type !== "code") return back("unsupported_response_type", "Only response_type=code is supported");
    if (params.code_challenge_method !== "S256" || params.code_challenge === undefined || !CHALLENGE.test(params.code_challenge)) {
      return back("invalid_request", "PKCE is required: code_challenge (43 base64url characters) with code_challenge_method=S256");
    }
    const scopes = parseScope(params.scope, scopesOf(client.scope));
    if (scopes === undefined || scopes.length === 0 || !scopes.every((s) => scopesOf(client.scope).includes(s))) {
      return back("invalid_scope", "The scope asked for is unknown or beyond what the application registered");
    }
    const resource = params.resource;
    if (resource !== undefined && !tokenResources(issuer).includes(resource)) return back("invalid_target", "Tokens are issued only for this service or its /mcp");
    return ok({ client, redirectUri, redirectUriGiven: params.redirect_uri !== undefined, scopes, state, codeChallenge: params.code_challenge, resource });
  }

  /**
   * The hidden fields of the consent form for a checked request: `redirect_uri` only when the request named it, so
   * the posted form is the same request (and its code exchanged without `redirect_uri`, RFC 6749 §4.1.3).
   */
  function formFields(request: AuthorizationRequest): Record<string, string> {
    const fields: Record<string, string> = {
      response_type: "code",
      client_id: request.client.clientId,
      scope: scopeString(request.scopes),
      code_challenge: request.codeChallenge,
      code_challenge_method: "S256",
    };
    if (request.redirectUriGiven) fields.redirect_uri = request.redirectUri;
    if (request.state !== undefined) fields.state = request.state;
    if (request.resource !== undefined) fields.resource = request.resource;
    return fields;
  }

  /**
   * The person approved: a code (stored hashed, single use, 60 s) and where the browser goes with it, always. The
   * bounds on live codes never refuse (attack review, finding 2: throwaway accounts filling a popular client's shared
   * bound sent every real user back with `temporarily_unavailable`): past `liveCodesPerAccount` the account's own
   * oldest unexchanged code goes (the same client's first), past `liveCodesPerClient` (a row bound) the oldest of
   * the account holding the most live codes of the client. `evicted`: how many codes went to make room.
   */
  async function approve(request: AuthorizationRequest, account: Account): Promise<Ok<string> & { readonly evicted: number }> {
    const code = randomToken(random, 32);
    const now = clock.nowMs();
    const saved = await store.saveCode({
      codeHash: hashSecret(code),
      clientId: request.client.clientId,
      accountId: account.id,
      redirectUri: request.redirectUri,
      redirectUriGiven: request.redirectUriGiven,
      scope: scopeString(request.scopes),
      codeChallenge: request.codeChallenge,
      resource: request.resource ?? null,
      createdAtMs: now,
      expiresAtMs: now + CODE_TTL_SECONDS * 1000,
    }, { perAccount: deps.policy.liveCodesPerAccount, perClient: deps.policy.liveCodesPerClient });
    return { ...ok(redirectTo(request.redirectUri, { code, state: request.state })), evicted: saved.evicted };
  }

  /** The person refused: `access_denied` back to the client (RFC 6749 §4.1.2.1). */
  function deny(request: AuthorizationRequest): string {
    return redirectTo(request.redirectUri, { error: "access_denied", error_description: "The person did not authorize the application", state: request.state });
  }

  return { check, formFields, approve, deny };
}

/** The authorization use cases. */
export type Authorization = ReturnType<typeof createAuthorization>;

/**
 * The consent form's CSRF token: bound to the signed-in session (by its stored hash, which never leaves the
 * service) and to the client, so a page of another site can neither read nor forge it.
 */
export function consentToken(sessionTokenHash: string, clientId: string): string {
  return sha256(stringToBytes(`ats-oauth-consent\n${sessionTokenHash}\n${clientId}`)).slice(2);
}

/** Whether a posted CSRF token is the session's for this client. */
export function consentTokenValid(posted: string | undefined, sessionTokenHash: string, clientId: string): boolean {
  return posted !== undefined && sameText(posted, consentToken(sessionTokenHash, clientId));
}

