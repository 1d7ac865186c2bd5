/**
 * Discovery documents (decisions §19): the authorization server's metadata (RFC 8414) and the protected resource's
 * (RFC 9728), both derived from the service's public URL alone.
 */
import { ALL_SCOPES } from "./scopes.ts";

/** The issuer identifier of a public base URL: the URL without a trailing slash. */
export function issuerOf(publicBaseUrl: string): string {
  return publicBaseUrl.replace(/\/+$/, "");
}

/** The resources a token may be issued for (RFC 8707): the service itself and its MCP endpoint (decisions §20). */
export function tokenResources(issuer: string): readonly string[] {
  return [issuer, `${issuer}/mcp`];
}

/** Where a protected resource's metadata lives (RFC 9728 §3.1): the well-known path, with the resource's path after it. */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === "/" ? "" : url.pathname.replace(/\/+$/, "");
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/** The authorization server metadata (RFC 8414 §2). */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    registration_endpoint: `${issuer}/oauth/register`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    jwks_uri: `${issuer}/oauth/jwks.json`,
    scopes_supported: [...ALL_SCOPES],
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token", "client_credentials"],
    token_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
    revocation_endpoint_auth_methods_supported: ["none", "client_secret_basic", "client_secret_post"],
    code_challenge_methods_supported: ["S256"],
    // RFC 9207: the authorization response names the issuer, so a client talking to several servers cannot be mixed up.
    authorization_response_iss_parameter_supported: true,
    service_documentation: `${issuer}/docs`,
  };
}

/** The protected resource metadata (RFC 9728 §2) of `resource` (the service, or its `/mcp`). */
export function protectedResourceMetadata(issuer: string, resource: string = issuer) {
  return {
    resource,
    authorization_servers: [issuer],
    jwks_uri: `${issuer}/oauth/jwks.json`,
    scopes_supported: [...ALL_SCOPES],
    bearer_methods_supported: ["header"],
    resource_signing_alg_values_supported: ["ES256"],
    resource_name: "Attestation Trust Services",
    resource_documentation: `${issuer}/docs`,
  };
}

/**
 * The `WWW-Authenticate` of a refused bearer request (RFC 6750 §3, RFC 9728 §5.1): the resource metadata's URL,
 * and the error when a token was sent (`invalid_token`, or `insufficient_scope` with the scope needed).
 */
export function bearerChallenge(resource: string, error?: { readonly code: "invalid_token" | "insufficient_scope"; readonly scope?: string | undefined }): string {
  const parts = [`resource_metadata="${resourceMetadataUrl(resource)}"`];
  if (error !== undefined) {
    parts.push(`error="${error.code}"`);
    if (error.scope !== undefined) parts.push(`scope="${error.scope}"`);
  }
  return `Bearer ${parts.join(", ")}`;
}
