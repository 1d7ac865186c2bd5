/** Routes of OAuth 2 for registered software (decisions §19): the endpoints and the account's API clients. */
export { API_CLIENT_DOCS, apiClientRoutes, type ApiClientRoutesDeps } from "./clients.ts";
export { OAUTH_DOCS, oauthRoutes, type OAuthRoutesDeps } from "./oauth.ts";
export { MAX_OAUTH_BODY } from "./_forms.ts";
