/**
 * Client metadata (RFC 7591 §2) as the service accepts it (decisions §19): open registration makes public
 * clients for the authorization code flow with PKCE; an account makes confidential API clients for client
 * credentials. Every list and string is bounded, so nothing an unauthenticated caller sends is stored unboundedly.
 */
import type { ClientAuthMethod, OAuthClient } from "../../ports/oauth.ts";
import { fail, ok, type Result } from "../result.ts";
import { ALL_SCOPES, parseScope, type Scope, scopeString } from "./scopes.ts";
import { displayTextProblem } from "../display_text.ts";

/** At most this many redirect URIs per client, each at most {@link MAX_URI} characters. */
export const MAX_REDIRECT_URIS = 10;
export const MAX_URI = 2_000;
/** A client name's longest length. */
export const MAX_CLIENT_NAME = 200;

/** The metadata a client was registered with, as the registration answer and the client list show it. */
export type ClientMetadataView = {
  client_id: string;
  client_id_issued_at: number;
  client_name?: string | undefined;
  redirect_uris?: string[] | undefined;
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: ClientAuthMethod;
  scope: string;
};

/** What was accepted of a registration request, before ids and secrets are made. */
export type AcceptedMetadata = Pick<OAuthClient, "name" | "redirectUris" | "grantTypes" | "scope" | "authMethod">;


const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** A client name: 1 to 200 characters, no control characters (nor bidirectional ones, domain/display_text.ts); absent is null. */
function readName(value: unknown): Result<string | null, "invalid_client_metadata"> {
  if (value === undefined || value === null) return ok(null);
  if (typeof value !== "string" || value.trim() === "" || value.length > MAX_CLIENT_NAME || displayTextProblem("client_name", value) !== undefined) {
    return fail("invalid_client_metadata", `client_name must be 1 to ${MAX_CLIENT_NAME} characters without control characters`);
  }
  return ok(value.trim());
}

/**
 * A redirect URI a public client may use: absolute, no fragment, HTTPS, or HTTP on a loopback host (RFC 8252 §7.3),
 * or a private-use scheme of a native app (`com.example.app:/cb`, RFC 8252 §7.1).
 */
export function acceptableRedirectUri(uri: string): boolean {
  if (uri.length > MAX_URI || /[\s\u0000-\u001f\u007f]/.test(uri)) return false;
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (url.hash !== "" || uri.includes("#")) return false;
  if (url.protocol === "https:") return url.hostname !== "";
  if (url.protocol === "http:") return ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  // A private-use scheme names a reverse domain (RFC 8252 §7.1): it holds a dot.
  return /^[a-z][a-z0-9+.-]*\.[a-z0-9+.-]+:$/.test(url.protocol) && !["javascript:", "data:", "file:", "vbscript:"].includes(url.protocol);
}

function readGrantTypes(value: unknown, allowed: readonly string[], fallback: readonly string[]): Result<string[], "invalid_client_metadata"> {
  if (value === undefined) return ok([...fallback]);
  if (!Array.isArray(value) || value.length === 0 || value.length > allowed.length || !value.every((g) => typeof g === "string" && allowed.includes(g))) {
    return fail("invalid_client_metadata", `grant_types must be a list of ${allowed.join(", ")}`);
  }
  return ok([...new Set(value as string[])]);
}

/**
 * Reads an open registration (`POST /oauth/register`): a public client of the authorization code flow (PKCE S256
 * required later) that may also refresh. `token_endpoint_auth_method` is `none` whatever was asked (RFC 7591 §2
 * lets a server replace a value; the answer says what was registered).
 */
export function readPublicClientMetadata(body: unknown): Result<AcceptedMetadata, "invalid_client_metadata" | "invalid_redirect_uri"> {
  if (!isObject(body)) return fail("invalid_client_metadata", "The body must be a JSON object of client metadata");
  const uris = body.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    return fail("invalid_redirect_uri", `redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`);
  }
  for (const uri of uris) {
    if (typeof uri !== "string" || !acceptableRedirectUri(uri)) {
      return fail("invalid_redirect_uri", "Each redirect URI must be absolute, without a fragment, and HTTPS (HTTP only on a loopback host) or a private-use scheme");
    }
  }
  const name = readName(body.client_name);
  if (!name.ok) return name;
  const grants = readGrantTypes(body.grant_types, ["authorization_code", "refresh_token"], ["authorization_code", "refresh_token"]);
  if (!grants.ok) return grants;
  if (!grants.value.includes("authorization_code")) return fail("invalid_client_metadata", "grant_types must include authorization_code");
  const responses = body.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || responses.length !== 1 || responses[0] !== "code")) {
    return fail("invalid_client_metadata", "response_types must be [\"code\"]");
  }
  const scope = parseScope(body.scope, ALL_SCOPES);
  if (scope === undefined || scope.length === 0) return fail("invalid_client_metadata", `scope must be made of ${ALL_SCOPES.join(", ")}`);
  return ok({ name: name.value, redirectUris: [...new Set(uris as string[])], grantTypes: grants.value, scope: scopeString(scope), authMethod: "none" });
}

/**
 * Reads an API client an account creates (`POST /api/private/oauth/clients`): client credentials only,
 * authenticated with its secret (`client_secret_basic`, the default, or `client_secret_post`).
 */
export function readApiClientMetadata(body: unknown): Result<AcceptedMetadata, "invalid_client_metadata"> {
  if (!isObject(body)) return fail("invalid_client_metadata", "The body must be a JSON object of client metadata");
  const name = readName(body.client_name);
  if (!name.ok) return name;
  const grants = readGrantTypes(body.grant_types, ["client_credentials"], ["client_credentials"]);
  if (!grants.ok) return grants;
  const method = body.token_endpoint_auth_method ?? "client_secret_basic";
  if (method !== "client_secret_basic" && method !== "client_secret_post") {
    return fail("invalid_client_metadata", "token_endpoint_auth_method must be client_secret_basic or client_secret_post");
  }
  if (body.redirect_uris !== undefined && !(Array.isArray(body.redirect_uris) && body.redirect_uris.length === 0)) {
    return fail("invalid_client_metadata", "An API client uses client credentials and takes no redirect_uris");
  }
  // An empty scope is a person who ticked nothing, never "every scope" (absent, RFC 7591's default, still is).
  if (body.scope === "") return fail("invalid_client_metadata", "scope must name at least one scope");
  const scope = parseScope(body.scope, ALL_SCOPES);
  if (scope === undefined || scope.length === 0) return fail("invalid_client_metadata", `scope must be made of ${ALL_SCOPES.join(", ")}`);
  return ok({ name: name.value, redirectUris: [], grantTypes: grants.value, scope: scopeString(scope as Scope[]), authMethod: method });
}

/** The registered metadata of a client (RFC 7591 §3.2.1), without its secret. */
export function clientMetadataView(client: OAuthClient): ClientMetadataView {
  return {
    client_id: client.clientId,
    client_id_issued_at: Math.floor(client.createdAtMs / 1000),
    ...(client.name === null ? {} : { client_name: client.name }),
    ...(client.redirectUris.length === 0 ? {} : { redirect_uris: [...client.redirectUris] }),
    grant_types: [...client.grantTypes],
    response_types: client.grantTypes.includes("authorization_code") ? ["code"] : [],
    token_endpoint_auth_method: client.authMethod,
    scope: client.scope,
  };
}

