import { Elysia } from "elysia";
import { type ArtifactTrust, INVALID_ARTIFACT_DID_MESSAGE } from "../../domain/artifact_trust/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import type { ClientAddressOf } from "../../ports/request_context.ts";
import { errorBody, headersOf, json, statusOf } from "../errors.ts";
import { type AnswerKey, answerOf, type IndexAnswerCache, indexAnswer } from "../index_answer_cache.ts";
import { REQUEST_MODELS, ArtifactTrustRecordModel, type RouteDoc } from "../models.ts";
import { clientKeyFor, compileRequestCheck, queryOf, requestDetail } from "./request.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { chainKey, chainMessage, type PerChain, readsFor } from "../chain_reads.ts";

/** What the artifact-trust routes need. */
export type ArtifactTrustRoutesDeps = {
  readonly artifactTrust: ArtifactTrust;
  readonly log: Logger;
  /** The client's address: its share of each party domain's lookup budget is what the live check may spend. */
  readonly clientAddress?: ClientAddressOf | undefined;
  /** Whole answers kept per index generation (http/index_answer_cache.ts); absent: every read computed. */
  readonly answers?: IndexAnswerCache | undefined;
  /** Each served chain's reads (decisions §30), picked by the request's `chain`; absent (a route built alone): the ones above. */
  readonly chains?: PerChain<ArtifactTrustReads> | undefined;
};

/** Artifact trust on one chain. */
export type ArtifactTrustReads = Pick<ArtifactTrustRoutesDeps, "artifactTrust" | "answers">;

const artifactQuery = compileRequestCheck(REQUEST_MODELS.artifactTrust.query, {
  explain: (query) =>
    Array.isArray((query as { artifactDid?: unknown }).artifactDid) ? "artifactDid must be given once" : "artifactDid is required",
});

/** The paths of artifact trust. */
export const ARTIFACT_TRUST_PATHS = ["/v1/artifact-trust", "/api/public/artifact-trust"] as const;

/** The key of a request's kept answer on chain `chainId`, as the route computes it; undefined for a query the route refuses. */
export function artifactTrustKey(request: Request, chainId?: number): AnswerKey | undefined {
  const query = queryOf(request.url);
  return artifactQuery.check(query) ? keyOf(query.artifactDid, chainId === undefined ? undefined : String(chainId)) : undefined;
}

// The answer carries live controller evidence (through the discovery cache): kept at most that long.
const keyOf = (artifactDid: string, chainId: string | undefined): AnswerKey => ({ route: "artifact-trust", query: [artifactDid, chainId], live: true });

/**
 * `GET /v1/artifact-trust` and `GET /api/public/artifact-trust`: only `artifactDid` is read; there is
 * no caller-chosen chain, RPC, schema list, block range or bypass flag, so other parameters are ignored.
 * A missing, empty or repeated (ambiguous) artifactDid is no DID at all: 400 INVALID_DID, as the contract
 * says for a missing one.
 */
export function artifactTrustRoutes(deps: ArtifactTrustRoutesDeps) {
  const own: ArtifactTrustReads = { artifactTrust: deps.artifactTrust, answers: deps.answers };
  const many = (deps.chains?.served.list.length ?? 1) > 1;
  const handler = async ({ request }: { request: Request }) => {
    // The chain first: a request for a chain not served is refused whatever else it asks.
    const picked = readsFor(request.url, own, deps.chains);
    if (!picked.ok) return picked.response;
    const query = queryOf(request.url);
    if (!artifactQuery.check(query)) {
      return json(errorBody("INVALID_DID", INVALID_ARTIFACT_DID_MESSAGE, artifactQuery.explain(query)), 400);
    }
    const { artifactTrust, answers } = picked.reads;
    const compute = async () => {
      // The record names its chain itself (the index it was read from).
      // The client's share of each party domain's lookup budget too (domain/discovery/lookup_budget.ts); a route built
      // without the client's address (tests) asks as no client.
      const client = deps.clientAddress === undefined ? undefined : clientKeyFor(deps.clientAddress, request);
      const result = await artifactTrust(query.artifactDid, { client });
      // Its ETag is weak, over the answer without asOf: the same across polls while the answer is (decisions §21).
      if (result.ok) return indexAnswer(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("artifact_trust_failed", { code: result.code, reason: result.message, chain: picked.chain?.caip2 });
      const message = picked.chain === undefined ? result.message : chainMessage(result.code, result.message, picked.chain, many);
      return { ok: false as const, response: json(errorBody(result.code, message, result.details), statusOf(result.code), headersOf(result.code)) };
    };
    try {
      if (answers !== undefined) return await answers.answer(keyOf(query.artifactDid, chainKey(picked.chain)), compute);
      return answerOf(await compute());
    } catch (error) {
      deps.log.error("artifact_trust_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error", "Artifact trust lookup failed"), 500);
    }
  };
  const detail = { detail: requestDetail(REQUEST_MODELS.artifactTrust) };
  return new Elysia({ name: "artifact-trust-routes" })
    .get(ARTIFACT_TRUST_PATHS[0], handler, detail)
    .get(ARTIFACT_TRUST_PATHS[1], handler, detail);
}

/** Artifact trust: route declarations, gathered by http/route_docs.ts. */
export const ARTIFACT_TRUST_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ARTIFACT_TRUST_PATHS,
    edge: "kept",
    auth: "public",
    cache: CACHE.indexAndDiscovery,
    summary: "Every verified claim about a did:artifact: responsibility claims, security assessments, certifications, linked identifiers",
    request: REQUEST_MODELS.artifactTrust,
    responses: {
      200: { description: "Artifact trust record (four empty groups when there is no qualifying evidence)", schema: ArtifactTrustRecordModel },
      400: err("INVALID_DID (missing, malformed or not a did:artifact), INVALID_INPUT (chain malformed or repeated), UNSUPPORTED_CHAIN (chain not served)"),
      500: err("INTERNAL_ERROR"),
      502: err("NETWORK_ERROR: the schema registry (read once per process) or a required verification lookup failed"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
];
