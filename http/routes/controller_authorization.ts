import { Elysia } from "elysia";
import type { ControllerAuthorization, ResolveDidUrl } from "../../domain/controller_authorization/mod.ts";
import type { AsOf } from "../../domain/index/mod.ts";
import type { RateLimiter } from "../../domain/rate_limit.ts";
import type { Logger } from "../../ports/logger.ts";
import type { ClientAddressOf } from "../../ports/request_context.ts";
import { errorBody, headersOf, json, statusOf, stringify } from "../errors.ts";
import { answerOf, type ComputedAnswer, type IndexAnswerCache, indexAnswer } from "../index_answer_cache.ts";
import { REQUEST_MODELS, type RouteDoc, AsOfModel } from "../models.ts";
import { clientKeyFor, compileRequestCheck, queryOf, requestDetail } from "./request.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";
import { ChainAnswerModel } from "../model_fields.ts";
import { chainKey, chainMessage, type PerChain, readsFor, withChain } from "../chain_reads.ts";

/** The answer of `GET /v1/controller-authorization`: the reference's `getControllerAuthorization` shape plus `asOf`. */
export const ControllerAuthorizationModel = t.Object({
  subjectDid: t.String({ description: "As normalized" }),
  controllerDid: t.String({ description: "As normalized" }),
  at: t.Integer({ minimum: 0, description: "The time the evidence was judged at, Unix seconds" }),
  authorized: t.Boolean({ description: "No purpose mismatch, and a witness window open at at, or live evidence with no until, or a verified transfer proof with no until" }),
  requestedPurpose: t.Array(t.Union([t.Literal("authentication"), t.Literal("assertionMethod"), t.Literal("keyAgreement")])),
  keyPurposeStatus: t.Union([t.Literal("matched"), t.Literal("mismatch"), t.Literal("unknown")], { description: "From the newest matching key binding by at, revoked or not; unknown without one" }),
  anchoredFrom: t.Union([t.String({ pattern: "^[0-9]+$" }), t.Null()], { description: "Decimal Unix seconds: the first witness's EAS time (a contract subject: the verified transfer proof's binding)" }),
  until: t.Union([t.String({ pattern: "^[0-9]+$" }), t.Null()], { description: "Decimal Unix seconds: the newest matching binding's revocation, when made by at" }),
  currentlyVerified: t.Boolean({ description: "Live evidence names the controller now (only looked at when at is omitted or within DISCOVERY_CACHE_SECONDS)" }),
  liveMethod: t.Union([t.Literal("dns"), t.Literal("did-document"), t.Literal("jwks"), t.Literal("contract-ownership"), t.Null()]),
  controllerWitnesses: t.Array(t.Object({
    uid: t.String(),
    issuedAt: t.String({ pattern: "^[0-9]+$", description: "The witness's EAS time, decimal Unix seconds" }),
    attester: t.String(),
    method: t.String(),
    pinned: t.Optional(t.String({ description: "A key-pinning witness: the DID URL it ties to this did:jwk" })),
  }), { description: "Witnesses by approved controller-witness issuers naming this controller, standing at at, oldest first" }),
  keyBindingUid: t.Union([t.String(), t.Null()], { description: "The newest matching key binding by at" }),
  keyBindingUids: t.Array(t.String(), { description: "Every matching key binding by at, newest first" }),
  transferProofVerified: t.Optional(t.Boolean({ description: "did:pkh contract subjects: a binding's transfer proof shows the ownership moving to the controller" })),
  asOf: AsOfModel,
  chain: ChainAnswerModel,
});

/** The answer of `GET /v1/did-url/resolve`. */
export const DidUrlResolutionModel = t.Object({
  didUrl: t.String({ description: "As normalized" }),
  did: t.String(),
  fragment: t.String(),
  publicKeyJwk: t.Union([t.Record(t.String(), t.Unknown()), t.Null()], { description: "The key's public members (null for a blockchainAccountId)" }),
  controllerDid: t.String({ description: "The durable controller the DID URL names now: the did:jwk of the key (or the did:pkh of the account)" }),
});

// Bodies the routes read but check in their own code (the domain's parsers, the OAuth form reader, the MCP
// endpoint) rather than with a compiled request model: published as they are read (RouteDoc.body), so a generated
// client can call these routes. Each states what the code behind it accepts; that code stays the authority.

/** What the controller-authorization and DID URL routes need. */
export type ControllerAuthorizationRoutesDeps = {
  readonly authorize: ControllerAuthorization;
  readonly resolveDidUrl?: ResolveDidUrl | undefined;
  /** Lookups per client address (key status's budget: both are pure reads). */
  readonly clientRate: RateLimiter;
  /** Lookups the service runs at once. */
  readonly maxInFlight: number;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly log: Logger;
  /** Whole answers kept per index generation (http/index_answer_cache.ts); absent: every lookup computed. */
  readonly answers?: IndexAnswerCache | undefined;
  /** Each served chain's reads (decisions §30), picked by the request's `chain`, named in the answer; absent (a route built alone): the ones above. */
  readonly chains?: PerChain<ControllerAuthorizationReads> | undefined;
};

type PickedOk = Extract<ReturnType<typeof readsFor<ControllerAuthorizationReads>>, { ok: true }>;

/** Controller authorization on one chain (a DID URL's resolution reads no index: it stays the deployment's one). */
export type ControllerAuthorizationReads = Pick<ControllerAuthorizationRoutesDeps, "authorize" | "answers">;

const once = (names: readonly string[], query: Record<string, unknown>) => {
  for (const name of names) if (Array.isArray(query[name])) return `${name} must be given once`;
  return undefined;
};

const authorizationQuery = compileRequestCheck(REQUEST_MODELS.controllerAuthorization.query, {
  explain: (query) => {
    const q = query as Record<string, unknown>;
    const repeated = once(["subjectDid", "controllerDid", "purpose", "at"], q);
    if (repeated !== undefined) return repeated;
    for (const name of ["subjectDid", "controllerDid"]) if (typeof q[name] !== "string" || q[name] === "") return `${name} is required`;
    if (q.at !== undefined && !/^[0-9]{1,12}$/.test(String(q.at))) return "at must be Unix seconds (a whole number)";
    if (typeof q.purpose === "string" && q.purpose.length > 200) return "purpose must be a comma list of authentication, assertionMethod, keyAgreement";
    return undefined;
  },
});

const didUrlQuery = compileRequestCheck(REQUEST_MODELS.didUrlResolve.query, {
  explain: (query) => once(["didUrl"], query as Record<string, unknown>) ?? "didUrl is required",
});

/**
 * `GET /v1/controller-authorization` and `/api/public/controller-authorization` (decisions §25), answered from the
 * index with `asOf`, and `GET /v1/did-url/resolve` (and `/api/public/did-url/resolve`). Public, bounded before any
 * lookup as key status is (per client address and in flight: 429 `RATE_LIMITED` with `Retry-After`).
 */
export function controllerAuthorizationRoutes(deps: ControllerAuthorizationRoutesDeps) {
  let inFlight = 0;
  const own: ControllerAuthorizationReads = { authorize: deps.authorize, answers: deps.answers };
  const many = (deps.chains?.served.list.length ?? 1) > 1;
  const limited = (retryAfterSeconds: number) =>
    json(errorBody("RATE_LIMITED", "Too many controller-authorization lookups; try again later"), 429, { "retry-after": String(retryAfterSeconds) });

  /** Runs one bounded lookup and turns its result into an answer. */
  async function bounded<T extends object>(
    event: string,
    run: () => Promise<{ ok: true; value: T } | { ok: false; code: string; message: string }>,
    fromIndex?: { readonly chain: PickedOk["chain"]; readonly answer: PickedOk["answer"] },
  ): Promise<ComputedAnswer> {
    if (inFlight >= deps.maxInFlight) return { ok: false as const, response: limited(1) };
    inFlight++;
    try {
      const result = await run();
      if (result.ok) {
        // An answer of the index (controller authorization; not a DID URL's resolution): its ETag is weak, over the answer without asOf and `at` (now when the query omits
        // it): the same across polls while the answer is (decisions §21).
        const value = result.value as T & { readonly asOf?: AsOf | undefined; readonly at?: unknown };
        if (fromIndex !== undefined) return indexAnswer(withChain(value, fromIndex.answer), ({ at: _at, ...rest }) => rest);
        return { ok: true as const, text: stringify(value), asOf: undefined };
      }
      if (statusOf(result.code) >= 500) deps.log.warn(event, { code: result.code, chain: fromIndex?.chain?.caip2 });
      const chain = fromIndex?.chain;
      const message = chain === undefined ? result.message : chainMessage(result.code, result.message, chain, many);
      return { ok: false as const, response: json(errorBody(result.code, message), statusOf(result.code), headersOf(result.code)) };
    } finally {
      inFlight--;
    }
  }

  const authorization = async ({ request }: { request: Request }) => {
    // The chain first: a request for a chain not served is refused whatever else it asks.
    const picked = readsFor(request.url, own, deps.chains);
    if (!picked.ok) return picked.response;
    const { authorize, answers } = picked.reads;
    const query = queryOf(request.url);
    if (!authorizationQuery.check(query)) return json(errorBody("INVALID_INPUT", authorizationQuery.explain(query)), 400);
    const client = clientKeyFor(deps.clientAddress, request);
    const turn = deps.clientRate.take(client);
    if (!turn.allowed) return limited(turn.retryAfterSeconds);
    // The client's share of the subject domain's lookup budget too (domain/discovery/lookup_budget.ts).
    const compute = () => bounded("controller_authorization_failed", () => authorize(query, { client }), picked);
    try {
      // Live evidence may be part of the answer: kept at most a poll and DISCOVERY_CACHE_SECONDS (see the cache).
      const key = {
        route: "controller-authorization",
        query: [query.subjectDid, query.controllerDid, query.purpose, query.at === undefined ? undefined : String(query.at), chainKey(picked.chain)],
        live: true,
      };
      return answers === undefined ? answerOf(await compute()) : await answers.answer(key, compute);
    } catch (error) {
      deps.log.error("controller_authorization_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };

  const didUrl = async ({ request }: { request: Request }) => {
    const resolve = deps.resolveDidUrl;
    if (resolve === undefined) return json(errorBody("NOT_FOUND", "Not found"), 404);
    const query = queryOf(request.url);
    if (!didUrlQuery.check(query)) return json(errorBody("INVALID_INPUT", didUrlQuery.explain(query)), 400);
    const client = clientKeyFor(deps.clientAddress, request);
    const turn = deps.clientRate.take(client);
    if (!turn.allowed) return limited(turn.retryAfterSeconds);
    try {
      return answerOf(await bounded("did_url_resolve_failed", () => resolve(query.didUrl, { client })));
    } catch (error) {
      deps.log.error("did_url_resolve_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };

  const authorizationDetail = { detail: requestDetail(REQUEST_MODELS.controllerAuthorization) };
  const didUrlDetail = { detail: requestDetail(REQUEST_MODELS.didUrlResolve) };
  return new Elysia({ name: "controller-authorization-routes" })
    .get("/v1/controller-authorization", authorization, authorizationDetail)
    .get("/api/public/controller-authorization", authorization, authorizationDetail)
    .get("/v1/did-url/resolve", didUrl, didUrlDetail)
    .get("/api/public/did-url/resolve", didUrl, didUrlDetail);
}

/** Controller authorization and DID URL resolution (decisions §25): route declarations, gathered by http/route_docs.ts. */
export const CONTROLLER_AUTHORIZATION_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/v1/controller-authorization", "/api/public/controller-authorization"],
    auth: "public",
    cache: CACHE.indexAndDiscovery,
    request: REQUEST_MODELS.controllerAuthorization,
    summary: "Is controllerDid (a did:pkh or did:jwk) an authorized controller of subjectDid for the requested key purposes at `at`, in the reference SDK's getControllerAuthorization shape (decisions §25): witnesses of approved controller-witness issuers, the newest key binding's purposes and revocation, live evidence (DNS TXT controller= or jkt=S256:, did.json, /.well-known/jwks.json, contract ownership). No JSON-RPC call per lookup in steady state: answered from the attestation index, with `asOf` (decisions §21)",
    responses: {
      200: { description: "Controller authorization", schema: ControllerAuthorizationModel },
      400: err("INVALID_INPUT (a missing, repeated or malformed parameter; a purpose outside authentication, assertionMethod, keyAgreement; at in the future), INVALID_DID (subjectDid a DID URL: a key reference, not a subject; controllerDid a DID URL: resolve it with /v1/did-url/resolve; controllerDid not a did:pkh or did:jwk), UNSUPPORTED_CHAIN (chain not served)"),
      429: err("RATE_LIMITED: KEY_STATUS_RATE_PER_MINUTE per client address or KEY_STATUS_MAX_IN_FLIGHT lookups at once; Retry-After header"),
      502: err("NETWORK_ERROR: a live source (DNS, did.json, JWK Set, the contract) could not be read when nothing else authorizes; never a guess"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
  {
    method: "get",
    paths: ["/v1/did-url/resolve", "/api/public/did-url/resolve"],
    auth: "public",
    cache: CACHE.discovery,
    request: REQUEST_MODELS.didUrlResolve,
    summary: "The durable controller a DID URL (a mutable key reference such as did:web:api.example.com#key-1) names now: the did:jwk of the publicKeyJwk its DID document lists under that id (decisions §25); the document is fetched under discovery's SSRF policy, size cap and per-domain budget, and kept DISCOVERY_CACHE_SECONDS",
    responses: {
      200: { description: "The key the DID URL names now", schema: DidUrlResolutionModel },
      400: err("INVALID_INPUT (didUrl missing or repeated), INVALID_DID (no fragment, a malformed one, or not a did:web or did:jwk)"),
      404: err("NOT_FOUND: no DID document, or no verification method with that id, or one holding no usable public key (a private member is refused)"),
      429: err("RATE_LIMITED: KEY_STATUS_RATE_PER_MINUTE per client address; Retry-After header"),
      502: err("NETWORK_ERROR: the DID document could not be read now (or the domain's lookup budget is spent)"),
    },
  },
];
