/**
 * The client helpers, browser-ready: nothing here imports Node modules, Bun APIs or adapters/ (architecture_test.ts
 * checks every file this entry reaches). The console page is built from it; Bun and Node programs can use it too.
 *
 * Not here, because they read the chain directly: `client/reviews.ts` (verifyReview, respondToReview),
 * `client/x402.ts` and `client/verifier.ts`.
 */
export * from "./errors.ts";
export { DEFAULT_BASE_URL, type JsonRequest, requestJson } from "./http.ts";
export * from "./session.ts";
export * from "./delegated_attest.ts";
export * from "./submissions.ts";
export * from "./trust_anchors.ts";
export * from "./artifact_trust.ts";
export * from "./api.ts";
export type { ChainAnswer, ChainNamed, ChainOption, ChainParam } from "./chain.ts";
export * from "./api_clients.ts";
export * from "./artifact.ts";
export * from "./wallet.ts";
export * from "./keys.ts";
export * from "./controller_authorization.ts";
export * from "./webhooks.ts";
export * from "./signing_bridge.ts";
export * from "./widget_protocol.ts";
export { controllerTxtRecordFor } from "../domain/discovery/mod.ts";
export { normalizeDid, parseArtifactDid } from "../domain/did/mod.ts";
export { buildReviewData, REVIEW_LIMITS } from "../domain/reviews/mod.ts";
