/**
 * The client helpers, browser-ready: nothing here imports Node modules, Bun APIs or adapters/ (architecture_test.ts
 * checks every file this entry reaches). The console page is built from it; Bun and Node programs can use it too.
 *
 * Not here, because they read the chain directly or verify JWS through an adapter: `http/client/reviews.ts`
 * (verifyReview, respondToReview), `http/client/x402.ts` and `http/client/verifier.ts`.
 */
export * from "../http/client/errors.ts";
export { DEFAULT_BASE_URL, type JsonRequest, requestJson } from "../http/client/http.ts";
export * from "../http/client/session.ts";
export * from "../http/client/delegated_attest.ts";
export * from "../http/client/trust_anchors.ts";
export * from "../http/client/artifact_trust.ts";
export * from "./api.ts";
export * from "./artifact.ts";
export * from "./wallet.ts";
export { controllerTxtRecordFor } from "../domain/controller_discovery.ts";
export { normalizeDid, parseArtifactDid } from "../domain/did.ts";
export { buildReviewData, REVIEW_LIMITS } from "../domain/reviews.ts";
