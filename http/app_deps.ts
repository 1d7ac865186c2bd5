/**
 * What the app is given (http/app.ts `createApp`), grouped: the settings every route shares ({@link AppSettings}),
 * then one key per plugin holding that plugin's own dependencies ({@link PluginDeps}). A plugin whose key is absent
 * is not mounted (the EAS routes, always served, aside). Adding a route: its plugin (declarations beside it), its key
 * here and its `use` in http/app.ts, its wiring in app/http.ts.
 */
import type { Logger } from "../ports/logger.ts";
import type { ClientAddressOf } from "../ports/request_context.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import type { VerifySubjectOwnership } from "../domain/accounts/mod.ts";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import type { CountAttestations, GetAttestation, ListAttestations } from "../domain/index/mod.ts";
import type { DidDocument } from "../x402/did_document.ts";
import type { AppChains } from "./app_chains.ts";
import type { HttpCacheSettings } from "./http_cache.ts";
import type { IndexAnswerCache } from "./index_answer_cache.ts";
import type { AccountRoutesDeps, PremiumRpcRoutesDeps, SubjectOwnershipLimit, SubjectRoutesDeps, SubscriptionRoutesDeps } from "./routes/accounts/mod.ts";
import type { AttestationListRoutesDeps } from "./routes/attestation_list.ts";
import type { ConsoleRoutesDeps } from "./routes/console.ts";
import type { ControllerRoutesDeps } from "./routes/controller.ts";
import type { ControllerAuthorizationRoutesDeps } from "./routes/controller_authorization.ts";
import type { EasRoutesDeps, PrivateRelayRoutesDeps } from "./routes/delegation/mod.ts";
import type { ReadinessReport } from "./routes/health.ts";
import type { AnswerCache } from "./routes/identity.ts";
import type { InteractionRoutesDeps } from "./routes/interactions.ts";
import type { KeyStatusRoutesDeps, SigningKeyRoutesDeps } from "./routes/keys/mod.ts";
import type { McpEndpoint } from "./routes/mcp/mod.ts";
import type { ApiClientRoutesDeps, OAuthRoutesDeps } from "./routes/oauth/mod.ts";
import type { SessionRoutesDeps } from "./routes/session.ts";
import type { SubmissionRoutesDeps } from "./routes/submissions.ts";
import type { WebhookRoutesDeps } from "./routes/webhooks.ts";
import type { WidgetRoutesDeps } from "./routes/widgets.ts";

/** What every route shares: the trust anchors, the log, the chains, the caches and the service's own origin. */
export type AppSettings = AppChains & {
  readonly trustAnchors: TrustAnchors;
  readonly ready: () => Promise<ReadinessReport>;
  readonly log: Logger;
  readonly publicBaseUrl?: string | undefined;
  /** Origins allowed to call the session routes with credentials (CORS_ORIGINS plus the public origin). */
  readonly privateOrigins?: readonly string[] | undefined;
  /**
   * identity-resolve's cache of whole answers by body (http/routes/identity.ts); absent: one of the default size;
   * `null`: none, every answer assembled from the records (bench/identity_resolve.ts measures both).
   */
  readonly identityAnswers?: AnswerCache | null | undefined;
  /**
   * Whole answers of the index reads (artifact trust, key status, the attestation list) kept per index generation
   * (http/index_answer_cache.ts, decisions §21); absent or `null`: none, every read computed (bench/reads.ts measures
   * both).
   */
  readonly indexAnswers?: IndexAnswerCache | null | undefined;
  /** The ages of cacheable answers (`INDEX_POLL_MS`, `DISCOVERY_CACHE_SECONDS`); absent: the configuration's defaults. */
  readonly httpCache?: HttpCacheSettings | undefined;
};

/** Each plugin's own dependencies, by plugin; absent: the plugin is not mounted (in tests that do not exercise it). */
export type PluginDeps = {
  /** The public relay: the nonce and delegated-attest routes (decisions §2, §23), and the chain they write on. */
  readonly eas: Omit<EasRoutesDeps, "log">;
  /** Controller discovery. */
  readonly controller?: ControllerRoutesDeps | undefined;
  /** Artifact trust lookup. */
  readonly artifactTrust?: ArtifactTrust | undefined;
  /** The address of the client asking for artifact trust: its live check spends that client's share of each domain's lookup budget. */
  readonly artifactTrustClientAddress?: ClientAddressOf | undefined;
  /** The attestation list, count and one attestation by uid (decisions §11, §24). */
  readonly attestations?: AttestationsDeps | undefined;
  /** Sign-in and the controller witness. */
  readonly session?: Omit<SessionRoutesDeps, "log"> | undefined;
  /** The accounts API (decisions §12). */
  readonly accounts?: AccountRoutesDeps | undefined;
  /** Subject-ownership proofs (decisions §12). */
  readonly subjectOwnership?: VerifySubjectOwnership | undefined;
  /** Their per-client bound (`SUBJECT_OWNERSHIP_RATE_PER_MINUTE`), taken before any lookup; absent: none. */
  readonly subjectOwnershipLimit?: SubjectOwnershipLimit | undefined;
  /** The private relay (decisions §12). */
  readonly privateRelay?: Omit<PrivateRelayRoutesDeps, "log"> | undefined;
  /** Relay submissions by id and the account's list (decisions §23). */
  readonly submissions?: Omit<SubmissionRoutesDeps, "log"> | undefined;
  /** Buying the paid plan with x402 (decisions §13). */
  readonly subscriptions?: Omit<SubscriptionRoutesDeps, "log"> | undefined;
  /** The service's did:web document naming its offer/receipt signing key (decisions §18). */
  readonly didDocument?: DidDocument | undefined;
  /** Subjects (decisions §12). */
  readonly subjects?: Omit<SubjectRoutesDeps, "log"> | undefined;
  /** Premium reads (decisions §12). */
  readonly premiumRpc?: Omit<PremiumRpcRoutesDeps, "log"> | undefined;
  /** The console page and its assets (decisions §14); absent: no `/`. */
  readonly console?: Omit<ConsoleRoutesDeps, "log"> | undefined;
  /** Proof of interaction and transaction proofs (decisions §29). */
  readonly interactions?: Omit<InteractionRoutesDeps, "log"> | undefined;
  /** The review widget's built assets (decisions §29); absent: no `/widgets/` routes. */
  readonly widgets?: Pick<WidgetRoutesDeps, "bundle"> | undefined;
  /** The Prometheus exposition text of `GET /metrics`. */
  readonly metricsText?: (() => Promise<string>) | undefined;
  /** Webhook endpoints (decisions §22). */
  readonly webhooks?: Omit<WebhookRoutesDeps, "log"> | undefined;
  /** Signing keys (decisions §17). */
  readonly signingKeys?: Omit<SigningKeyRoutesDeps, "log"> | undefined;
  /** The public key status (decisions §17). */
  readonly keyStatus?: Omit<KeyStatusRoutesDeps, "log"> | undefined;
  /** Controller authorization and DID URL resolution (decisions §25). */
  readonly controllerAuthorization?: Omit<ControllerAuthorizationRoutesDeps, "log" | "answers"> | undefined;
  /** OAuth 2 for registered software (decisions §19); absent with `OAUTH=off`. */
  readonly oauth?: Omit<OAuthRoutesDeps, "log"> | undefined;
  /** The account's API clients (decisions §19); absent with `oauth`. */
  readonly apiClients?: Omit<ApiClientRoutesDeps, "log"> | undefined;
  /** The MCP endpoint (decisions §20); absent with `MCP=off`: no `/mcp`. */
  readonly mcp?: McpEndpoint | undefined;
};

/** The attestation routes' own deps: the list, and beside it the count and one attestation by uid. */
export type AttestationsDeps = {
  readonly list: ListAttestations;
  /** The count and one attestation by uid (decisions §24); absent: their routes answer 404 (none mounted). */
  readonly queries?: { readonly count: CountAttestations; readonly get: GetAttestation } | undefined;
  /** The list's and the count's computations per client address (`INDEX_QUERY_RATE_PER_MINUTE`, issue 43); absent: none. */
  readonly queryRate?: AttestationListRoutesDeps["queryRate"];
};

/** Everything the HTTP layer is given by the composition root: the shared settings and each plugin's own deps. */
export type AppDeps = AppSettings & PluginDeps;
