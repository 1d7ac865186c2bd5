import { Elysia } from "elysia";
import type { Logger } from "../ports/logger.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { elapsedSince, errorBody, json, statusOf } from "./errors.ts";
import { EAS_PATHS, easRoutes, type EasRoutesDeps } from "./routes/delegation/mod.ts";
import { healthRoutes, type ReadinessReport } from "./routes/health.ts";
import { controllerRoutes, type ControllerRoutesDeps } from "./routes/controller.ts";
import { ARTIFACT_TRUST_PATHS, artifactTrustKey, artifactTrustRoutes } from "./routes/artifact_trust.ts";
import { ATTESTATION_LIST_PATHS, attestationListKey, attestationListRoutes, type AttestationListRoutesDeps } from "./routes/attestation_list.ts";
import { type AccountRoutesDeps, accountRoutes } from "./routes/accounts/mod.ts";
import { type PremiumRpcRoutesDeps, premiumRpcRoutes } from "./routes/accounts/mod.ts";
import { subjectOwnershipRoutes } from "./routes/accounts/mod.ts";
import { type SubjectRoutesDeps, subjectRoutes } from "./routes/accounts/mod.ts";
import { type PrivateRelayRoutesDeps, privateRelayRoutes } from "./routes/delegation/mod.ts";
import { type SubscriptionRoutesDeps, subscriptionRoutes } from "./routes/accounts/mod.ts";
import { consoleRoutes, type ConsoleRoutesDeps } from "./routes/console.ts";
import { keyStatusRoutes, type KeyStatusRoutesDeps, signingKeyRoutes, type SigningKeyRoutesDeps } from "./routes/keys/mod.ts";
import { controllerAuthorizationRoutes, type ControllerAuthorizationRoutesDeps } from "./routes/controller_authorization.ts";
import type { DidDocument } from "../x402/did_document.ts";
import { didDocumentRoutes } from "../x402/elysia.ts";
import { apiClientRoutes, type ApiClientRoutesDeps, oauthRoutes, type OAuthRoutesDeps } from "./routes/oauth/mod.ts";
import { MCP_CORS_HEADERS, MCP_PATH, type McpEndpoint, mcpRoutes } from "./routes/mcp/mod.ts";
import type { VerifySubjectOwnership } from "../domain/accounts/mod.ts";
import type { CountAttestations, GetAttestation, ListAttestations } from "../domain/index/mod.ts";
import { sessionRoutes, type SessionRoutesDeps } from "./routes/session.ts";
import { submissionRoutes, type SubmissionRoutesDeps } from "./routes/submissions.ts";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { type AnswerCache, createIdentityResolve, IDENTITY_RESOLVE_PATHS, identityRoutes } from "./routes/identity.ts";
import { TRUST_ANCHOR_PATHS, TRUST_POLICY_PATH, trustAnchorRoutes, trustAnchorsAnswer } from "./routes/trust_anchors.ts";
import { trustPolicyOf } from "../domain/identity/mod.ts";
import { type EdgeAnswer, type EdgeRoutes, publicEdgeRoutes, registerEdgeRoutes } from "./edge_routes.ts";
import {
  applyCachePolicy,
  CACHE,
  type CachePolicyEntry,
  createEtagMemo,
  createPolicyLookup,
  DEFAULT_HTTP_CACHE_SETTINGS,
  type HttpCacheSettings,
  withKnownBody,
} from "./http_cache.ts";
import type { AnswerKey, IndexAnswerCache } from "./index_answer_cache.ts";
import { buildOpenApi, renderApiPage } from "./openapi.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import { MAX_BODY_BYTES, TOO_LARGE_MESSAGE } from "./routes/request.ts";
import { webhookRoutes, type WebhookRoutesDeps } from "./routes/webhooks.ts";
import { widgetRoutes, type WidgetRoutesDeps } from "./routes/widgets.ts";
import { interactionRoutes, type InteractionRoutesDeps } from "./routes/interactions.ts";

/** Everything the HTTP layer is given by the composition root. */
export type AppDeps = Omit<EasRoutesDeps, "log"> & {
  readonly trustAnchors: TrustAnchors;
  readonly ready: () => Promise<ReadinessReport>;
  readonly log: Logger;
  readonly publicBaseUrl?: string | undefined;
  /** Controller discovery; absent in tests that do not exercise it. */
  readonly controller?: ControllerRoutesDeps | undefined;
  /** Artifact trust lookup; absent in tests that do not exercise it. */
  readonly artifactTrust?: ArtifactTrust | undefined;
  /** The attestation list (decisions §11, §24); absent in tests that do not exercise it. */
  readonly attestationList?: ListAttestations | undefined;
  /** The attestation count and one attestation by uid (decisions §24); absent in tests that do not exercise them. */
  readonly attestationQueries?: { readonly count: CountAttestations; readonly get: GetAttestation } | undefined;
  /** The list's and the count's computations per client address (`INDEX_QUERY_RATE_PER_MINUTE`, issue 43); absent: none. */
  readonly attestationQueryRate?: AttestationListRoutesDeps["queryRate"];
  /** Sign-in and the controller witness; absent in tests that do not exercise them. */
  readonly session?: Omit<SessionRoutesDeps, "log"> | undefined;
  /** The accounts API (decisions §12); absent in tests that do not exercise it. */
  readonly accounts?: AccountRoutesDeps | undefined;
  /** Subject-ownership proofs (decisions §12); absent in tests that do not exercise them. */
  readonly subjectOwnership?: VerifySubjectOwnership | undefined;
  /** The private relay (decisions §12); absent in tests that do not exercise it. */
  readonly privateRelay?: Omit<PrivateRelayRoutesDeps, "log"> | undefined;
  /** Relay submissions by id and the account's list (decisions §23); absent in tests that do not exercise them. */
  readonly submissions?: Omit<SubmissionRoutesDeps, "log"> | undefined;
  /** Buying the paid plan with x402 (decisions §13); absent: no such route. */
  readonly subscriptions?: Omit<SubscriptionRoutesDeps, "log"> | undefined;
  /** The service's did:web document naming its offer/receipt signing key (decisions §18); absent: no such route. */
  readonly didDocument?: DidDocument | undefined;
  /** Subjects (decisions §12); absent in tests that do not exercise them. */
  readonly subjects?: Omit<SubjectRoutesDeps, "log"> | undefined;
  /** Premium reads (decisions §12); absent in tests that do not exercise them. */
  readonly premiumRpc?: Omit<PremiumRpcRoutesDeps, "log"> | undefined;
  /** Origins allowed to call the session routes with credentials (CORS_ORIGINS plus the public origin). */
  readonly privateOrigins?: readonly string[] | undefined;
  /** The console page and its assets (decisions §14); absent: no `/`. */
  readonly console?: Omit<ConsoleRoutesDeps, "log"> | undefined;
  /** Proof of interaction and transaction proofs (decisions §29); absent: no such routes. */
  readonly interactions?: Omit<InteractionRoutesDeps, "log"> | undefined;
  /** The review widget's built assets (decisions §29); absent: no `/widgets/` routes. */
  readonly widgets?: Pick<WidgetRoutesDeps, "bundle"> | undefined;
  /** The Prometheus exposition text of `GET /metrics`; absent: no such route. */
  readonly metricsText?: (() => Promise<string>) | undefined;
  /** Webhook endpoints (decisions §22); absent in tests that do not exercise them. */
  readonly webhooks?: Omit<WebhookRoutesDeps, "log"> | undefined;
  /** Signing keys (decisions §17); absent in tests that do not exercise them. */
  readonly signingKeys?: Omit<SigningKeyRoutesDeps, "log"> | undefined;
  /** The public key status (decisions §17); absent in tests that do not exercise it. */
  readonly keyStatus?: Omit<KeyStatusRoutesDeps, "log"> | undefined;
  /** Controller authorization and DID URL resolution (decisions §25); absent in tests that do not exercise them. */
  readonly controllerAuthorization?: Omit<ControllerAuthorizationRoutesDeps, "log" | "answers"> | undefined;
  /** OAuth 2 for registered software (decisions §19); absent (`OAUTH=off`, tests): no such routes. */
  readonly oauth?: Omit<OAuthRoutesDeps, "log"> | undefined;
  /** The account's API clients (decisions §19); absent with `oauth`. */
  readonly apiClients?: Omit<ApiClientRoutesDeps, "log"> | undefined;
  /** The MCP endpoint (decisions §20); absent (`MCP=off`, tests): no `/mcp`. */
  readonly mcp?: McpEndpoint | undefined;
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

/** CORS headers of the session routes for an allowed origin: that origin, with credentials. */
function privateCorsHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "GET, POST, PATCH, DELETE, OPTIONS",
    // x402 (decisions §13): a browser client may pay, and must read the terms and the settlement; OAuth (§19):
    // a browser client may send its access token and must read the challenge.
    // Decisions §23: a write may carry an idempotency key and ask to be answered at once; a client reads whether an
    // answer is a replay, when to retry, and where its submission is.
    "access-control-allow-headers": "Content-Type, PAYMENT-SIGNATURE, Authorization, Idempotency-Key, Prefer",
    "access-control-expose-headers": "PAYMENT-REQUIRED, PAYMENT-RESPONSE, WWW-Authenticate, Idempotent-Replayed, Retry-After, Location",
    "access-control-max-age": "600",
    vary: "Origin",
  };
}

/**
 * CORS of a private route called with a bearer token and no cookie (decisions §19): any origin, never with
 * credentials, so a page of any site can use a token it holds but never the person's session.
 */
const BEARER_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, PATCH, DELETE, OPTIONS",
  "access-control-allow-headers": "Content-Type, Authorization, Idempotency-Key, Prefer",
  "access-control-expose-headers": "WWW-Authenticate, Idempotent-Replayed, Retry-After, Location",
  "access-control-max-age": "600",
};

/** Whether a request is bearer-only: an `Authorization: Bearer` header and no cookie at all. */
function bearerOnlyRequest(request: Request): boolean {
  return /^bearer\b/i.test(request.headers.get("authorization") ?? "") && !request.headers.has("cookie");
}

/** Whether a preflight asks to send `Authorization` (a bearer client) from an origin not on the allowlist. */
function bearerPreflight(request: Request): boolean {
  return request.method === "OPTIONS" && /(^|,)\s*authorization\s*(,|$)/i.test(request.headers.get("access-control-request-headers") ?? "");
}

/** CORS headers of every public route (decisions §1). */
export const PUBLIC_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Content-Type, Idempotency-Key, Prefer",
  "access-control-expose-headers": "Idempotent-Replayed, Retry-After, Location",
  "access-control-max-age": "600",
};

/** The path of an absolute request URL, without building a URL object on the hot path. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/** Session and private routes use an origin allowlist with credentials instead of `*` (decisions §1). */
export function isPrivatePath(path: string): boolean {
  return path.startsWith("/api/private/") || path.startsWith("/v1/session/") || path === "/v1/controller-witness" || path.startsWith("/v1/paid/");
}

/** Paths whose every answer, errors included, carries `elapsed` (decisions §2). */
export const ELAPSED_PATHS: ReadonlySet<string> = new Set(EAS_PATHS);

/**
 * Builds the Elysia app: the route plugins plus the conventions every public route shares
 * (CORS `*`, OPTIONS 204, 405 with `Allow` for any method a known path does not serve, HEAD included,
 * 404 `NOT_FOUND`, 413 `PAYLOAD_TOO_LARGE`, one error body, `elapsed` on the EAS paths, no upstream text).
 */
export function createApp(deps: AppDeps) {
  // One path, one route: without strictPath Elysia also routes `/v1/controller-witness/` to the witness while
  // every guard here reads the path as written, so a trailing slash skipped the CSRF and origin checks (issue 15).
  const app = new Elysia({ strictPath: true });
  // The methods each path serves, read once the routes are all registered (at the first request).
  let served: Map<string, ReadonlySet<string>> | undefined;
  const methodsOf = (path: string): ReadonlySet<string> | undefined => {
    if (served === undefined) {
      served = new Map();
      for (const route of app.routes) {
        const methods = served.get(route.path) ?? new Set<string>();
        (methods as Set<string>).add(route.method.toUpperCase());
        served.set(route.path, methods);
      }
    }
    const exact = served.get(path);
    if (exact !== undefined) return exact;
    // A route with parameters (`/api/private/subjects/:id`) serves every path of its shape.
    const parts = path.split("/");
    for (const [pattern, methods] of served) {
      if (!pattern.includes(":")) continue;
      const shape = pattern.split("/");
      if (shape.length === parts.length && shape.every((p, i) => p.startsWith(":") ? parts[i] !== "" : p === parts[i])) return methods;
    }
    return undefined;
  };
  const allowHeader = (methods: ReadonlySet<string>) => [...methods, "OPTIONS"].join(", ");
  const origins = new Set(deps.privateOrigins ?? []);
  // When each nonce and delegated-attest request started, for the `elapsed` of the answers the app gives itself.
  const started = new WeakMap<Request, number>();

  /** An error answer of the app itself: the one error body, plus `elapsed` on the EAS paths (decisions §2). */
  const failure = (request: Request, path: string, code: string, message: string, headers: Record<string, string>) => {
    const body = errorBody(code, message);
    const status = statusOf(code);
    if (!ELAPSED_PATHS.has(path)) return json(body, status, headers);
    return json({ ...body, elapsed: elapsedSince(started.get(request) ?? performance.now()) }, status, headers);
  };

  /** 405 with `Allow` for a method the path does not serve; 413 for a declared body over the limit. */
  const refuse = (request: Request, method: string, path: string, methods: ReadonlySet<string>, cors: Record<string, string>) => {
    if (!methods.has(method)) {
      return failure(request, path, "METHOD_NOT_ALLOWED", "Method not allowed", { ...cors, allow: allowHeader(methods) });
    }
    if (method !== "GET" && Number(request.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) {
      return failure(request, path, "PAYLOAD_TOO_LARGE", TOO_LARGE_MESSAGE, cors);
    }
  };

  /**
   * Session routes: CORS for allowlisted origins only, with credentials. CSRF guard on every POST:
   * a browser origin must be allowlisted, and the body must be JSON (which a cross-site form cannot
   * send without a preflight that the allowlist refuses).
   */
  const guardPrivate = (request: Request, path: string, set: { headers: Record<string, string | number> }) => {
    const origin = request.headers.get("origin");
    const trusted = origin !== null && origins.has(origin);
    // A bearer request carries no cookie, so it cannot be forged across sites: no origin or body-type guard,
    // and CORS for any origin without credentials (decisions §19).
    if (!trusted && (bearerOnlyRequest(request) || bearerPreflight(request))) {
      Object.assign(set.headers, BEARER_CORS_HEADERS);
      const methods = methodsOf(path);
      if (methods === undefined) return;
      if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: BEARER_CORS_HEADERS });
      return refuse(request, request.method, path, methods, BEARER_CORS_HEADERS);
    }
    const cors = trusted ? privateCorsHeaders(origin) : {};
    Object.assign(set.headers, cors);
    const methods = methodsOf(path);
    if (methods === undefined) return;
    const method = request.method;
    if (method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
    const refused = refuse(request, method, path, methods, cors);
    if (refused) return refused;
    // Every method that changes state (not only POST) needs an allowlisted origin and a JSON body.
    if (method === "GET" || method === "HEAD") return;
    if (origin !== null && !trusted) {
      return json(errorBody("ORIGIN_NOT_ALLOWED", "Origin not allowed"), 403);
    }
    // A DELETE carries no body: its allowlisted origin is the guard (a cross-site DELETE is always preflighted).
    if (method !== "DELETE" && !/^application\/json\s*(;|$)/i.test(request.headers.get("content-type") ?? "")) {
      return json(errorBody("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"), 415, cors);
    }
  };

  // Issue 28: trust anchors and identity-resolve are answered at the server's edge ahead of Elysia, behind the same
  // guards (http/edge_routes.ts), with the very answers their routes here give, CORS headers included.
  const anchorsAnswer = trustAnchorsAnswer(deps.trustAnchors, PUBLIC_CORS_HEADERS);
  // Decisions §29: the trust policy the reference's signing bridges read, its widget origins led by the service's own.
  const ownOrigin = deps.publicBaseUrl === undefined ? [] : [new URL(deps.publicBaseUrl).origin];
  const policyAnswer = trustAnchorsAnswer(trustPolicyOf(deps.trustAnchors, ownOrigin), PUBLIC_CORS_HEADERS);
  const resolveAnswer = createIdentityResolve({ headers: PUBLIC_CORS_HEADERS, answers: deps.identityAnswers });
  const edgeAnswers = new Map<string, EdgeAnswer>();
  for (const path of TRUST_ANCHOR_PATHS) edgeAnswers.set(path, { method: "GET", answer: anchorsAnswer });
  edgeAnswers.set(TRUST_POLICY_PATH, { method: "GET", answer: policyAnswer });
  for (const path of IDENTITY_RESOLVE_PATHS) edgeAnswers.set(path, { method: "POST", answer: resolveAnswer });
  // Issue 34: a kept answer of artifact trust or the attestation list, current with nothing to read first, is answered
  // at the edge too; any other request of those paths (a miss, a refused query, another method) goes to Elysia.
  const keptAnswers = deps.indexAnswers ?? undefined;
  if (keptAnswers !== undefined) {
    const headers = { "content-type": "application/json; charset=utf-8", ...PUBLIC_CORS_HEADERS };
    const kept = (keyOf: (request: Request) => AnswerKey | undefined) => {
      // A key is a function of the request's URL alone: the last few thousand URLs' keys are remembered.
      const keys = new Map<string, AnswerKey | undefined>();
      return (request: Request) => {
        const url = request.url;
        let key = keys.get(url);
        if (key === undefined && !keys.has(url)) {
          if (keys.size >= 4_096) keys.clear();
          key = keyOf(request);
          keys.set(url, key);
        }
        return key === undefined ? undefined : keptAnswers.peek(key, headers);
      };
    };
    if (deps.artifactTrust) for (const path of ARTIFACT_TRUST_PATHS) edgeAnswers.set(path, { method: "GET", kept: kept(artifactTrustKey) });
    if (deps.attestationList) for (const path of ATTESTATION_LIST_PATHS) edgeAnswers.set(path, { method: "GET", kept: kept(attestationListKey) });
  }
  // Decisions §21: every answer, the edge's and Elysia's, gets its route's cache policy (http/http_cache.ts), declared
  // with the route in http/route_docs.ts.
  const cacheSettings = deps.httpCache ?? DEFAULT_HTTP_CACHE_SETTINGS;
  const policyOf = createPolicyLookup([...ROUTE_DOCS, ...DOC_ROUTES_CACHE], isPrivatePath);
  const memo = createEtagMemo();
  const cached = (request: Request, response: Response) => {
    const method = request.method;
    const path = pathOf(request.url);
    return applyCachePolicy(request, response, { policy: policyOf(method, path), settings: cacheSettings, memo, route: path });
  };
  registerEdgeRoutes(app, (routes) => cachedEdgeRoutes(publicEdgeRoutes(edgeAnswers, PUBLIC_CORS_HEADERS, routes), cached));

  const indexAnswers = deps.indexAnswers ?? undefined;
  const routed = app
    .onRequest(({ request, set }) => {
      const path = pathOf(request.url);
      if (isPrivatePath(path)) return guardPrivate(request, path, set);
      if (ELAPSED_PATHS.has(path)) started.set(request, performance.now());
      // `/mcp` takes the headers of an MCP client (session id, protocol version, bearer token), never a cookie.
      const cors = path === MCP_PATH ? MCP_CORS_HEADERS : PUBLIC_CORS_HEADERS;
      Object.assign(set.headers, cors);
      const methods = methodsOf(path);
      if (methods === undefined) return;
      const method = request.method;
      if (method === "GET" && methods.has("GET")) return;
      if (method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
      return refuse(request, method, path, methods, cors);
    })
    .onError(({ code, error, request }) => {
      const path = pathOf(request.url);
      const cors = isPrivatePath(path) ? {} : PUBLIC_CORS_HEADERS;
      if (code === "NOT_FOUND") {
        const methods = methodsOf(path);
        if (methods !== undefined) {
          return failure(request, path, "METHOD_NOT_ALLOWED", "Method not allowed", { ...cors, allow: allowHeader(methods) });
        }
        return failure(request, path, "NOT_FOUND", "Not found", cors);
      }
      if (code === "PARSE") return failure(request, path, "INVALID_JSON", "Invalid JSON body", cors);
      if (code === "VALIDATION") return failure(request, path, "INVALID_INPUT", "Invalid request", cors);
      deps.log.error("unhandled_error", {
        path,
        code: String(code),
        error: error instanceof Error ? error.message : String(error),
      });
      return failure(request, path, "INTERNAL_ERROR", "Internal error", cors);
    })
    // Issue 28: the CORS headers the hooks above put in `set.headers` are moved onto the route's Response. Left there,
    // Elysia answers every such request with a copy: new Headers, and a new Response reading the old one's body as a
    // stream. The route's own headers win, as in Elysia's merge.
    .onAfterHandle({ as: "global" }, ({ responseValue, set }) => {
      if (!(responseValue instanceof Response) || set.status !== 200 || set.cookie !== undefined) return;
      const headers = set.headers as Record<string, string | number>;
      for (const name in headers) {
        if (name === "set-cookie") return;
      }
      for (const name in headers) {
        if (!responseValue.headers.has(name)) responseValue.headers.set(name, String(headers[name]));
        delete headers[name];
      }
    })
    .use(healthRoutes(deps.ready))
    .use(easRoutes(deps))
    .use(trustAnchorRoutes(deps.trustAnchors, anchorsAnswer, policyAnswer))
    .use(identityRoutes({ resolve: resolveAnswer }))
    .use(deps.controller ? controllerRoutes(deps.controller) : new Elysia())
    .use(deps.artifactTrust ? artifactTrustRoutes({ artifactTrust: deps.artifactTrust, log: deps.log, answers: indexAnswers }) : new Elysia())
    .use(deps.attestationList ? attestationListRoutes({ list: deps.attestationList, queries: deps.attestationQueries, log: deps.log, answers: indexAnswers, queryRate: deps.attestationQueryRate }) : new Elysia())
    .use(deps.session ? sessionRoutes({ ...deps.session, log: deps.log }) : new Elysia())
    .use(deps.accounts ? accountRoutes(deps.accounts) : new Elysia())
    .use(deps.premiumRpc ? premiumRpcRoutes({ ...deps.premiumRpc, log: deps.log }) : new Elysia())
    .use(deps.subjectOwnership ? subjectOwnershipRoutes({ verify: deps.subjectOwnership, log: deps.log }) : new Elysia())
    .use(deps.subjects ? subjectRoutes({ ...deps.subjects, log: deps.log }) : new Elysia())
    .use(deps.privateRelay ? privateRelayRoutes({ ...deps.privateRelay, log: deps.log }) : new Elysia())
    .use(deps.subscriptions ? subscriptionRoutes({ ...deps.subscriptions, log: deps.log }) : new Elysia())
    .use((deps.submissions ? submissionRoutes({ ...deps.submissions, log: deps.log }) : new Elysia()) as Elysia)
    // Typed as a plain plugin: one more route type in this chain is past what tsc represents.
    .use((deps.didDocument ? didDocumentRoutes(deps.didDocument) : new Elysia()) as Elysia)
    .use(deps.signingKeys ? signingKeyRoutes({ ...deps.signingKeys, log: deps.log }) : new Elysia())
    .use((deps.webhooks ? webhookRoutes({ ...deps.webhooks, log: deps.log }) : new Elysia()) as Elysia)
    .use(deps.keyStatus ? keyStatusRoutes({ ...deps.keyStatus, log: deps.log, answers: indexAnswers }) : new Elysia())
    .use((deps.controllerAuthorization ? controllerAuthorizationRoutes({ ...deps.controllerAuthorization, log: deps.log, answers: indexAnswers }) : new Elysia()) as Elysia)
    .use(deps.oauth ? oauthRoutes({ ...deps.oauth, log: deps.log }) : new Elysia())
    .use(deps.apiClients ? apiClientRoutes({ ...deps.apiClients, log: deps.log }) : new Elysia())
    .use((deps.mcp ? mcpRoutes(deps.mcp) : new Elysia()) as Elysia)
    .use(docRoutes(deps.publicBaseUrl ?? "http://127.0.0.1:8080"))
    .use(deps.metricsText ? metricsRoute(deps.metricsText) : new Elysia())
    .use(deps.console ? consoleRoutes({ ...deps.console, log: deps.log }) : new Elysia())
    .use((deps.interactions ? interactionRoutes({ ...deps.interactions, log: deps.log }) : new Elysia()) as Elysia)
    .use((deps.widgets ? widgetRoutes({ bundle: deps.widgets.bundle, settings: widgetSettings(deps), log: deps.log }) : new Elysia()) as Elysia);
  // The app's one way in for every request Elysia answers (tests, and the server through http/instrument.ts): the
  // answer leaves with its cache policy applied, whichever hook or route gave it (a 405 of `onRequest`, a 404 of
  // `onError`, a route's own answer).
  const handle = routed.handle;
  routed.handle = async (request: Request) => await cached(request, await handle(request));
  return routed;
}

/** Where the review widget writes (decisions §29): the service's chain and its anchored user-review schema. */
function widgetSettings(deps: AppDeps): WidgetRoutesDeps["settings"] {
  const chain = deps.trustAnchors.chains[`eip155:${deps.chainId}`];
  const reviewSchemaUid = chain?.schemas["user-review"];
  if (reviewSchemaUid === undefined) return undefined;
  return { chainId: deps.chainId, chainName: deps.chainName, easAddress: deps.easAddress, reviewSchemaUid };
}

/** The edge's answers with the cache policy applied, as the app's ({@link createApp}). */
function cachedEdgeRoutes(edge: EdgeRoutes, cached: (request: Request, response: Response) => Response | Promise<Response>): EdgeRoutes {
  const wrapped = new Map<string, (request: Request) => Response | Promise<Response> | undefined>();
  for (const [path, route] of edge) {
    wrapped.set(path, (request) => {
      const answer = route(request);
      if (answer === undefined) return undefined;
      return answer instanceof Response ? cached(request, answer) : answer.then((response) => cached(request, response));
    });
  }
  return wrapped;
}

/** The cache policy of the two routes not in the route docs (they publish them): the description changes on a release. */
const DOC_ROUTES_CACHE: readonly CachePolicyEntry[] = [{ method: "get", paths: ["/openapi.json", "/docs"], cache: CACHE.static }];

/** `GET /metrics` in the Prometheus text format. */
function metricsRoute(text: () => Promise<string>) {
  return new Elysia({ name: "metrics-route" }).get("/metrics", async () =>
    new Response(await text(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } }));
}

/** `/openapi.json` and the human-readable page beside it (`/docs`). */
function docRoutes(serverUrl: string) {
  const doc = buildOpenApi(ROUTE_DOCS, { title: "Attestation Trust Services", version: "1.0.0", serverUrl });
  const body = JSON.stringify(doc);
  const page = renderApiPage(doc);
  return new Elysia({ name: "doc-routes" })
    .get("/openapi.json", () => withKnownBody(new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }), body))
    .get("/docs", () => withKnownBody(new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }), page));
}
