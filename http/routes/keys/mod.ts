/** Routes of signing keys (private) and key status (public), decisions §17. */
export { credentialCaller, type KeysCaller, type KeysScope, sessionCaller } from "./_account.ts";
export { KEY_STATUS_DOCS, KEY_STATUS_PATHS, keyStatusKey, keyStatusLimit, keyStatusRoutes, type KeyStatusRoutesDeps } from "./key_status.ts";
export { KeyStatusModel, SigningKeyListModel, SigningKeyUpsertModel } from "./models.ts";
export { SIGNING_KEY_DOCS, signingKeyRoutes, type SigningKeyRoutesDeps } from "./signing_keys.ts";
