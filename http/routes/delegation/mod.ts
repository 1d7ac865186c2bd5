/** Routes of delegated attestation: the public relay (nonce, delegated-attest) and the private relay. */
export { DELEGATED_ATTEST_BATCH_PATH, DELEGATED_ATTEST_PATHS, EAS_PATHS, easRoutes, type EasRoutesDeps, NONCE_PATHS } from "./eas.ts";
export { PRIVATE_RELAY_BATCH_PATH, privateRelayRoutes, type PrivateRelayRoutesDeps } from "./private_relay.ts";
export { EAS_DOCS, PAID_RELAY_DOCS, PRIVATE_RELAY_DOCS } from "./_declarations.ts";
