import { Elysia } from "elysia";
import { easRoutes, privateRelayRoutes } from "./routes/delegation/mod.ts";
import { healthRoutes, metricsRoute } from "./routes/health.ts";
import { controllerRoutes } from "./routes/controller.ts";
import { ARTIFACT_TRUST_DOCS, artifactTrustKey, artifactTrustRoutes } from "./routes/artifact_trust.ts";
import { ATTESTATION_DOCS, attestationListKey, attestationListRoutes } from "./routes/attestation_list.ts";
import {
  accountRoutes,
  premiumRpcRoutes,
  subjectOwnershipRoutes,
  subjectRoutes,
  subscriptionRoutes,
} from "./routes/accounts/mod.ts";
import { consoleRoutes } from "./routes/console.ts";
import { KEY_STATUS_DOCS, keyStatusKey, keyStatusLimit, keyStatusRoutes, signingKeyRoutes } from "./routes/keys/mod.ts";
import { controllerAuthorizationRoutes } from "./routes/controller_authorization.ts";
import { didDocumentRoutes } from "./routes/did_document.ts";
import { apiClientRoutes, oauthRoutes } from "./routes/oauth/mod.ts";
import { mcpRoutes } from "./routes/mcp/mod.ts";
import { sessionRoutes } from "./routes/session.ts";
import { witnessRoutes } from "./routes/witness.ts";
import { submissionRoutes } from "./routes/submissions.ts";
import { createIdentityResolve, IDENTITY_DOCS, identityRoutes } from "./routes/identity.ts";
import {
  TRUST_ANCHOR_DOCS,
  TRUST_POLICY_DOCS,
  trustAnchorRoutes,
  trustAnchorsAnswer,
  withServedChains,
} from "./routes/trust_anchors.ts";
import { trustPolicyOf } from "../domain/identity/mod.ts";
import type { AppDeps } from "./app_deps.ts";
import { type EdgeAnswer, type EdgeRoutes, publicEdgeRoutes } from "./edge_routes.ts";
import { applyCachePolicy, createEtagMemo, createPolicyLookup, DEFAULT_HTTP_CACHE_SETTINGS } from "./http_cache.ts";
import type { AnswerKey, IndexAnswerCache } from "./index_answer_cache.ts";
import { ROUTE_DOCS } from "./route_docs.ts";
import type { RouteDoc } from "./models.ts";
import { API_DOCS_CACHE, apiDocRoutes } from "./routes/api_docs.ts";
import { webhookRoutes } from "./routes/webhooks.ts";
import { widgetRoutes, type WidgetRoutesDeps } from "./routes/widgets.ts";
import { interactionRoutes } from "./routes/interactions.ts";
import { isPrivatePath, pathOf, PUBLIC_CORS_HEADERS } from "./cors.ts";
import { withConventions } from "./conventions.ts";
import { type AppChains, type ChainIndexReads, perChain, servedOf } from "./app_chains.ts";
import { edgeChainId, type PerChain } from "./chain_reads.ts";
import type { ServedChains } from "../domain/chains/mod.ts";

export { isPrivatePath, pathOf, PUBLIC_CORS_HEADERS } from "./cors.ts";
export { ELAPSED_PATHS } from "./conventions.ts";

export type { AppChains, ChainIndexReads } from "./app_chains.ts";
export type { AppDeps, AppSettings, AttestationsDeps, PluginDeps } from "./app_deps.ts";

/** The answers the app's routes and the edge share (issue 28): the trust anchors, the trust policy, identity-resolve. */
type SharedAnswers = {
  readonly anchors: () => Response;
  readonly policy: () => Response;
  readonly resolve: (body: unknown) => Response;
};

/** The shared answers of {@link SharedAnswers}, with the public CORS headers. */
function sharedAnswers(deps: AppDeps): SharedAnswers {
  // Decisions §29: the trust policy the reference's signing bridges read, its widget origins led by the service's own.
  const ownOrigin = deps.publicBaseUrl === undefined ? [] : [new URL(deps.publicBaseUrl).origin];
  return {
    // Decisions §30: the anchors' record plus the chains served, which the console's picker reads.
    anchors: trustAnchorsAnswer(withServedChains(deps.trustAnchors, servedOf({ ...deps.eas, servedChains: deps.servedChains })), PUBLIC_CORS_HEADERS),
    policy: trustAnchorsAnswer(trustPolicyOf(deps.trustAnchors, ownOrigin), PUBLIC_CORS_HEADERS),
    resolve: createIdentityResolve({ headers: PUBLIC_CORS_HEADERS, answers: deps.identityAnswers }),
  };
}

/** Each chain's index reads (decisions §30): the default chain's are the app's own fields. */
type Chains = { readonly served: ServedChains; readonly of: <T>(pick: (reads: ChainIndexReads) => T | undefined) => PerChain<T> };

/** The chains of the app's reads, {@link Chains}. */
function chainsOf(deps: AppDeps): Chains {
  const served = servedOf({ ...deps.eas, servedChains: deps.servedChains });
  const own: ChainIndexReads = {
    artifactTrust: deps.artifactTrust,
    attestationList: deps.attestations?.list,
    attestationQueries: deps.attestations?.queries,
    keyStatus: deps.keyStatus?.keyStatus,
    controllerAuthorization: deps.controllerAuthorization?.authorize,
    indexAnswers: deps.indexAnswers,
  };
  return { served, of: (pick) => perChain(served, own, deps.chainReads, pick) };
}

/** The paths a capability's declarations mark as answered at the edge (`edge` of {@link RouteDoc}). */
function edgePaths(docs: readonly RouteDoc[], edge: NonNullable<RouteDoc["edge"]>): readonly string[] {
  return docs.filter((doc) => doc.edge === edge).flatMap((doc) => doc.paths);
}

/**
 * What the edge answers ahead of Elysia (issue 28, http/edge_routes.ts): trust anchors and identity-resolve, with the
 * very answers their routes give; and (issue 34) a kept answer of artifact trust, the attestation list or key status
 * (behind its per-client limit), current with nothing to read first. Any other request of those paths (a miss, a refused query, another method) goes to Elysia.
 */
function edgeAnswersOf(deps: AppDeps, shared: SharedAnswers, chains: Chains): Map<string, EdgeAnswer> {
  const edgeAnswers = new Map<string, EdgeAnswer>();
  for (const path of edgePaths(TRUST_ANCHOR_DOCS, "answer")) edgeAnswers.set(path, { method: "GET", answer: shared.anchors });
  for (const path of edgePaths(TRUST_POLICY_DOCS, "answer")) edgeAnswers.set(path, { method: "GET", answer: shared.policy });
  for (const path of edgePaths(IDENTITY_DOCS, "answer")) edgeAnswers.set(path, { method: "POST", answer: shared.resolve });
  if ((deps.indexAnswers ?? undefined) === undefined) return edgeAnswers;
  // Each chain's answers are kept by its own index head (decisions §30): the request's chain picks the cache.
  const keptAnswers = chains.of((reads) => reads.indexAnswers ?? undefined);
  const headers = { "content-type": "application/json; charset=utf-8", ...PUBLIC_CORS_HEADERS };
  type Keyed = { readonly cache: IndexAnswerCache; readonly key: AnswerKey };
  /** A kept answer by the request's chain and key; `limit`: the route's per-client limit, taken only when the edge answers. */
  const kept = (keyOf: (request: Request, chainId: number) => AnswerKey | undefined, limit?: (request: Request) => Response | undefined) => {
    // A key is a function of the request's URL alone: the last few thousand URLs' keys are remembered.
    const keys = new Map<string, Keyed | undefined>();
    const keyed = (request: Request): Keyed | undefined => {
      const chainId = edgeChainId(request.url, keptAnswers);
      const cache = chainId === undefined ? undefined : keptAnswers.on(chainId);
      const key = cache === undefined ? undefined : keyOf(request, chainId!);
      return key === undefined ? undefined : { cache: cache!, key };
    };
    return (request: Request) => {
      const url = request.url;
      let entry = keys.get(url);
      if (entry === undefined && !keys.has(url)) {
        if (keys.size >= 4_096) keys.clear();
        entry = keyed(request);
        keys.set(url, entry);
      }
      const answer = entry === undefined ? undefined : entry.cache.peek(entry.key, headers);
      return answer === undefined || limit === undefined ? answer : limit(request) ?? answer;
    };
  };
  if (deps.artifactTrust) for (const path of edgePaths(ARTIFACT_TRUST_DOCS, "kept")) edgeAnswers.set(path, { method: "GET", kept: kept(artifactTrustKey) });
  if (deps.attestations) for (const path of edgePaths(ATTESTATION_DOCS, "kept")) edgeAnswers.set(path, { method: "GET", kept: kept(attestationListKey) });
  // Key status with its per-client rate (`KEY_STATUS_RATE_PER_MINUTE`): one turn a lookup, at the edge or the route.
  if (deps.keyStatus) {
    const limit = keyStatusLimit(deps.keyStatus, PUBLIC_CORS_HEADERS);
    for (const path of edgePaths(KEY_STATUS_DOCS, "kept")) edgeAnswers.set(path, { method: "GET", kept: kept(keyStatusKey, limit) });
  }
  return edgeAnswers;
}

/** Applies each route's cache policy (decisions §21, http/http_cache.ts), declared with the route, to an answer. */
type CacheAnswer = (request: Request, response: Response) => Response | Promise<Response>;

/** The cache policy of every answer, the edge's and Elysia's. */
function cachePolicyOf(deps: AppDeps): CacheAnswer {
  const settings = deps.httpCache ?? DEFAULT_HTTP_CACHE_SETTINGS;
  const policyOf = createPolicyLookup([...ROUTE_DOCS, ...API_DOCS_CACHE], isPrivatePath);
  const memo = createEtagMemo();
  return (request, response) => {
    const path = pathOf(request.url);
    return applyCachePolicy(request, response, { policy: policyOf(request.method, path), settings, memo, route: path });
  };
}

/** An optional plugin: built when its dependencies are given, else an empty one. */
function optional<T>(value: T | undefined, build: (value: T) => unknown): Elysia {
  return (value === undefined ? new Elysia() : build(value)) as Elysia;
}

/** The public reads and relay: each plugin given only its own dependencies. */
function mountPublic(app: Elysia, deps: AppDeps, shared: SharedAnswers, chains: Chains): Elysia {
  const log = deps.log;
  const answers = deps.indexAnswers ?? undefined;
  return app
    .use(healthRoutes(deps.ready))
    .use(easRoutes({ ...deps.eas, log }))
    .use(trustAnchorRoutes(deps.trustAnchors, shared.anchors, shared.policy))
    .use(identityRoutes({ resolve: shared.resolve }))
    .use(optional(deps.controller, controllerRoutes))
    .use(optional(deps.artifactTrust, (artifactTrust) => {
      const perChain = chains.of((r) => r.artifactTrust && { artifactTrust: r.artifactTrust, answers: r.indexAnswers ?? undefined });
      return artifactTrustRoutes({ artifactTrust, log, answers, chains: perChain, clientAddress: deps.artifactTrustClientAddress });
    }))
    .use(optional(deps.attestations, ({ list, queries, queryRate }) => {
      const perChain = chains.of((r) => r.attestationList && { list: r.attestationList, queries: r.attestationQueries, answers: r.indexAnswers ?? undefined });
      return attestationListRoutes({ list, queries, log, answers, queryRate, chains: perChain });
    })) as unknown as Elysia;
}

/** The session, the account and its private routes. */
function mountPrivate(app: Elysia, deps: AppDeps): Elysia {
  const log = deps.log;
  return app
    .use(optional(deps.session, (session) => sessionRoutes({ ...session, log })))
    .use(optional(deps.session, (session) => witnessRoutes({ ...session, log })))
    .use(optional(deps.accounts, accountRoutes))
    .use(optional(deps.premiumRpc, (premiumRpc) => premiumRpcRoutes({ ...premiumRpc, log })))
    .use(optional(deps.subjectOwnership, (verify) => subjectOwnershipRoutes({ verify, log, limit: deps.subjectOwnershipLimit })))
    .use(optional(deps.subjects, (subjects) => subjectRoutes({ ...subjects, log })))
    .use(optional(deps.privateRelay, (privateRelay) => privateRelayRoutes({ ...privateRelay, log })))
    .use(optional(deps.subscriptions, (subscriptions) => subscriptionRoutes({ ...subscriptions, log })))
    .use(optional(deps.submissions, (submissions) => submissionRoutes({ ...submissions, log })))
    .use(optional(deps.didDocument, didDocumentRoutes))
    .use(optional(deps.signingKeys, (signingKeys) => signingKeyRoutes({ ...signingKeys, log })))
    .use(optional(deps.webhooks, (webhooks) => webhookRoutes({ ...webhooks, log }))) as unknown as Elysia;
}

/** Key status, controller authorization, OAuth, MCP, the documents about the service, the console and the widgets. */
function mountRest(app: Elysia, deps: AppDeps, chains: Chains): Elysia {
  const log = deps.log;
  const answers = deps.indexAnswers ?? undefined;
  const keyStatusChains = chains.of((r) => r.keyStatus && { keyStatus: r.keyStatus, answers: r.indexAnswers ?? undefined });
  const authorizationChains = chains.of((r) => r.controllerAuthorization && { authorize: r.controllerAuthorization, answers: r.indexAnswers ?? undefined });
  return app
    .use(optional(deps.keyStatus, (keyStatus) => keyStatusRoutes({ ...keyStatus, log, answers, chains: keyStatusChains })))
    .use(optional(deps.controllerAuthorization, (authorization) => controllerAuthorizationRoutes({ ...authorization, log, answers, chains: authorizationChains })))
    .use(optional(deps.oauth, (oauth) => oauthRoutes({ ...oauth, log })))
    .use(optional(deps.apiClients, (apiClients) => apiClientRoutes({ ...apiClients, log })))
    .use(optional(deps.mcp, mcpRoutes))
    .use(apiDocRoutes(deps.publicBaseUrl ?? "http://127.0.0.1:8080"))
    .use(optional(deps.metricsText, metricsRoute))
    .use(optional(deps.console, (console) => consoleRoutes({ ...console, log })))
    .use(optional(deps.interactions, (interactions) => interactionRoutes({ ...interactions, log })))
    .use(optional(deps.widgets, (widgets) => widgetRoutes({ bundle: widgets.bundle, settings: widgetSettings(deps), log }))) as unknown as Elysia;
}

/**
 * The HTTP app: Elysia's routes, the way in for a request Elysia answers, and the edge answering some public reads
 * ahead of Elysia (http/edge_routes.ts). Every answer, Elysia's and the edge's, leaves with its route's cache policy
 * applied (decisions §21, http/http_cache.ts). The server (http/instrument.ts `instrumentedHandler`) is given it as
 * is.
 */
export type HttpApp = {
  /** The Elysia app, its routes mounted. */
  readonly elysia: Elysia;
  /** Elysia's route table. */
  readonly routes: Elysia["routes"];
  /**
   * The app's one way in for every request Elysia answers (tests, and the server): the answer leaves with its cache
   * policy applied, whichever hook or route gave it (a 405 of `onRequest`, a 404 of `onError`, a route's own answer).
   */
  readonly handle: (request: Request) => Promise<Response>;
  /** What the edge answers, by path, built from the routes' declarations (`edge` of {@link RouteDoc}). */
  readonly edge: EdgeRoutes;
};

/**
 * Builds the app: the route plugins plus the conventions every route shares (http/conventions.ts: CORS, OPTIONS 204,
 * 405 with `Allow`, 404, 413, the private routes' guard, one error body, `elapsed` on the EAS paths), then the edge
 * from the same declarations and the mounted route table, and the cache policy as the last step of both.
 */
export function createApp(deps: AppDeps): HttpApp {
  // One path, one route: without strictPath Elysia also routes `/v1/controller-witness/` to the witness while
  // every guard here reads the path as written, so a trailing slash skipped the CSRF and origin checks (issue 15).
  const app = withConventions(new Elysia({ strictPath: true }), { origins: deps.privateOrigins, log: deps.log });
  const shared = sharedAnswers(deps);
  const cached = cachePolicyOf(deps);
  const chains = chainsOf(deps);
  const elysia = mountRest(mountPrivate(mountPublic(app, deps, shared, chains), deps), deps, chains);
  const edge = cachedEdgeRoutes(publicEdgeRoutes(edgeAnswersOf(deps, shared, chains), PUBLIC_CORS_HEADERS, elysia.routes), cached);
  const handle = async (request: Request) => await cached(request, await elysia.handle(request));
  return { elysia, routes: elysia.routes, handle, edge };
}

/** Where the review widget writes (decisions §29): the service's chain and its anchored user-review schema. */
function widgetSettings(deps: AppDeps): WidgetRoutesDeps["settings"] {
  const chain = deps.trustAnchors.chains[`eip155:${deps.eas.chainId}`];
  const reviewSchemaUid = chain?.schemas["user-review"];
  if (reviewSchemaUid === undefined) return undefined;
  const { chainId, chainName, easAddress } = deps.eas;
  return { chainId, chainName, easAddress, reviewSchemaUid };
}

/** The edge's answers with the cache policy applied, as the app's ({@link createApp}). */
function cachedEdgeRoutes(edge: EdgeRoutes, cached: CacheAnswer): EdgeRoutes {
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
