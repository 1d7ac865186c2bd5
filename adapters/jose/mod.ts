/** JOSE with the `jose` library: the service's access tokens (JWT, ES256) and their JWKS (decisions §19). */
export { createJoseAccessTokenKeys, type JoseAccessTokenKeys, type JoseAccessTokenKeysOptions, KEY_RELOAD_MS, RETIRED_KEY_GRACE_MS, SIGNER_RECORD_MS, SignerKeyRevokedError } from "./jose_access_tokens.ts";
