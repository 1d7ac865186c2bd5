/** JOSE with the `jose` library: the service's access tokens (JWT, ES256) and their JWKS (decisions §19). */
export { createJoseAccessTokenKeys, type JoseAccessTokenKeys, type JoseAccessTokenKeysOptions, RETIRED_KEY_GRACE_MS } from "./jose_access_tokens.ts";
