/**
 * OAuth 2 for registered software (decisions §19): discovery documents, open registration and API clients,
 * the authorization endpoint with its consent, the token endpoint, revocation and bearer access. Reusable by the
 * MCP server (decisions §20): the protected-resource metadata, the bearer challenge and the bearer check.
 */
export { ACCESS_TOKEN_TTL_SECONDS, CODE_TTL_SECONDS, MAX_API_CLIENTS_PER_ACCOUNT, MAX_LISTED_AUTHORIZATIONS, type OAuthDeps, type OAuthPolicy, UNUSED_CLIENT_TTL_MS } from "./_deps.ts";
export {
  AUTHORIZATION_FIELDS,
  type Authorization,
  type AuthorizationParameters,
  type AuthorizationRequest,
  consentToken,
  consentTokenValid,
  createAuthorization,
  type RedirectError,
  type ShownError,
} from "./authorization.ts";
export { type AuthorizationView, type Authorizations, createAuthorizations } from "./authorizations.ts";
export { type BearerAuth, type BearerCaller, type BearerFailure, createBearerAuth } from "./bearer.ts";
export { acceptableRedirectUri, type ClientMetadataView, clientMetadataView, readApiClientMetadata, readPublicClientMetadata } from "./client_metadata.ts";
export { authorizationServerMetadata, bearerChallenge, issuerOf, protectedResourceMetadata, resourceMetadataUrl, tokenResources } from "./metadata.ts";
export { type CreatedApiClient, createRegistration, type Registration, type RegistrationFailure } from "./registration.ts";
export { ALL_SCOPES, isScope, parseScope, type Scope, SCOPES, scopesOf, scopeString } from "./scopes.ts";
export { type ClientCredentials, createTokens, type TokenErrorCode, type TokenResponse, type Tokens } from "./tokens.ts";
export { hashSecret, s256Challenge } from "./_secrets.ts";

import type { OAuthDeps } from "./_deps.ts";
import { createAuthorization } from "./authorization.ts";
import { createAuthorizations } from "./authorizations.ts";
import { createBearerAuth } from "./bearer.ts";
import { createRegistration } from "./registration.ts";
import { createTokens } from "./tokens.ts";

/** Every OAuth use case, built from one set of dependencies. */
export function createOAuth(deps: OAuthDeps) {
  return {
    registration: createRegistration(deps),
    authorization: createAuthorization(deps),
    authorizations: createAuthorizations(deps),
    tokens: createTokens(deps),
    authenticateBearer: createBearerAuth(deps),
  };
}

/** The OAuth use cases. */
export type OAuth = ReturnType<typeof createOAuth>;
