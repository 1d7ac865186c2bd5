import { Elysia } from "elysia";
import type { CountAttestations, GetAttestation, ListAttestations } from "../../domain/index/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import type { RateLimiter } from "../../domain/rate_limit.ts";
import type { AsOf } from "../../domain/index/mod.ts";
import type { Result } from "../../domain/result.ts";
import { errorBody, headersOf, json, statusOf } from "../errors.ts";
import { answerOf, type AnswerKey, type IndexAnswerCache, indexAnswer } from "../index_answer_cache.ts";
import { ATTESTATION_LEADING_FILTERS, REQUEST_MODELS, type RouteDoc, Address, Bytes32, Uint, AsOfModel } from "../models.ts";
import { clientKeyFor, compileRequestCheck, queryOf, requestDetail } from "./request.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";
import { chainKey, chainMessage, type PerChain, type PickedChain, readsFor, withChain } from "../chain_reads.ts";
import { ChainAnswerModel } from "../model_fields.ts";

/** One attestation as the queries list it (decisions §11, §24). */
const ListedAttestationModel = t.Object({
  attestation: t.Object({
    uid: Bytes32,
    schema: Bytes32,
    schemaName: t.Union([t.String(), t.Null()], { description: "The schema's name in the trust anchors; null for another schema (its data is then {})" }),
    attester: Address,
    recipient: Address,
    time: Uint,
    expirationTime: Uint,
    revocationTime: Uint,
    data: t.Record(t.String(), t.Unknown(), { description: "Decoded payload; big integers as base-10 strings" }),
  }),
  revoked: t.Boolean(),
});

/** A page of the attestation list. */
export const AttestationPageModel = t.Object({
  asOf: AsOfModel,
  chain: ChainAnswerModel,
  subject: t.Optional(t.String({ description: "The subject as normalized, when the query gave one" })),
  schema: t.Optional(t.String({ description: "The schema as the query gave it, when it did" })),
  items: t.Array(ListedAttestationModel, {
    description: "Newest (or oldest) first; with subject a page may hold fewer than limit items (attestations whose decoded subject is another DID are left out)",
  }),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Give it back as cursor for the next page; null on the last one" }),
});

/** The count of the attestations matching the filters (decisions §24). */
export const AttestationCountModel = t.Object({ asOf: AsOfModel, count: t.Integer({ minimum: 0 }), chain: ChainAnswerModel });

/** One attestation by uid (decisions §24). */
export const AttestationItemModel = t.Composite([t.Object({ asOf: AsOfModel, chain: ChainAnswerModel }), ListedAttestationModel]);

/** What the attestation routes need; the count and one-by-uid reads are absent in tests that exercise only the list. */
export type AttestationListRoutesDeps = {
  readonly list: ListAttestations;
  readonly queries?: { readonly count: CountAttestations; readonly get: GetAttestation } | undefined;
  readonly log: Logger;
  /** Whole answers kept per index generation (http/index_answer_cache.ts); absent: every read computed. */
  readonly answers?: IndexAnswerCache | undefined;
  /**
   * Issue 43: the list and the count computed per client address (`INDEX_QUERY_RATE_PER_MINUTE`): each query a client
   * varies (another `since`, another cursor) is computed, so each computation takes a turn; a kept answer (another
   * client's identical read of this index generation) takes none. Past it, 429 RATE_LIMITED with Retry-After. Absent: none.
   */
  readonly queryRate?: { readonly rate: RateLimiter; readonly clientAddress?: ((request: Request) => string | undefined) | undefined } | undefined;
  /**
   * Each served chain's reads (decisions §30), picked by the request's `chain` and named in the answer; absent (a
   * route built alone): `list`, `queries` and `answers` above, no `chain` in the answer.
   */
  readonly chains?: PerChain<AttestationReads> | undefined;
};

/** The index reads of one chain. */
export type AttestationReads = Pick<AttestationListRoutesDeps, "list" | "queries" | "answers">;

/** The chain a request reads, as {@link readsFor} picks it. */
type Picked = Extract<PickedChain<AttestationReads>, { ok: true }> | { readonly ok: true; readonly chain: undefined; readonly answer: undefined; readonly reads: AttestationReads };

/** The parameters the list reads, in the order its cache key names them. */
const LIST_PARAMETERS = [...ATTESTATION_LEADING_FILTERS, "revoked", "since", "until", "order", "limit", "cursor"] as const;
/** The parameters the count reads. */
const COUNT_PARAMETERS = [...ATTESTATION_LEADING_FILTERS, "revoked", "since", "until"] as const;

const listQuery = compileRequestCheck(REQUEST_MODELS.attestationList.query, { query: true });
const countQuery = compileRequestCheck(REQUEST_MODELS.attestationCount.query, { query: true });

const NO_FILTER = "Give at least one of subject, attester, recipient or schema";

/**
 * Runs a read and answers its result, or its failure with the code's status; with a cache and a key, a 200 that names
 * the index generation it was computed at is kept for identical reads of that generation.
 */
function answerer(log: Logger, many: boolean, admit: (request: Request) => Response | undefined = () => undefined) {
  return async (picked: Picked, read: () => Promise<Result<{ readonly asOf?: AsOf | undefined }, string>>, key?: AnswerKey, charged?: Request) => {
    const answers = picked.reads.answers;
    const compute = async () => {
      // Only a computed answer takes a turn of the caller's rate; a refusal is never kept, so a request that waited on
      // this one computes (and is charged) for itself.
      const refused = charged === undefined ? undefined : admit(charged);
      if (refused !== undefined) return { ok: false as const, response: refused };
      const result = await read();
      // Its ETag is weak, over the answer without asOf: the same across polls while the answer is (decisions §21).
      if (result.ok) return indexAnswer(withChain(result.value, picked.answer));
      if (statusOf(result.code) >= 500) log.warn("attestation_list_failed", { code: result.code, chain: picked.chain?.caip2 });
      const message = picked.chain === undefined ? result.message : chainMessage(result.code, result.message, picked.chain, many);
      return { ok: false as const, response: json(errorBody(result.code, message), statusOf(result.code), headersOf(result.code)) };
    };
    try {
      return answers === undefined || key === undefined ? answerOf(await compute()) : await answers.answer(key, compute);
    } catch (error) {
      log.error("attestation_list_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };
}

/**
 * The query checked against its model: a repeated, oversized or malformed parameter is INVALID_INPUT naming it, and so
 * is a query with none of the four leading filters; a subject that is no DID is the domain's INVALID_DID.
 */
function checked(check: typeof listQuery | typeof countQuery, request: Request): { query: Record<string, string>; refusal: Response | undefined } {
  const query = queryOf(request.url);
  if (!check.check(query)) return { query: {}, refusal: json(errorBody("INVALID_INPUT", check.explain(query)), 400) };
  if (ATTESTATION_LEADING_FILTERS.every((name) => query[name] === undefined)) return { query: {}, refusal: json(errorBody("INVALID_INPUT", NO_FILTER), 400) };
  // Checked against the model: every parameter given is one string.
  return { query: query as Record<string, string>, refusal: undefined };
}

const UID = /^0x[0-9a-fA-F]{64}$/;

const keyOf = (route: string, names: readonly string[], query: Record<string, string>, chainId: string | undefined): AnswerKey =>
  ({ route, query: [...names.map((n) => query[n]), chainId] });

/** The paths of the attestation list. */
export const ATTESTATION_LIST_PATHS = ["/v1/attestations", "/api/public/attestations"] as const;

/** The key of a list request's kept answer on chain `chainId`, as the route computes it; undefined for a query the route refuses. */
export function attestationListKey(request: Request, chainId?: number): AnswerKey | undefined {
  const { query, refusal } = checked(listQuery, request);
  return refusal === undefined ? keyOf("attestations", LIST_PARAMETERS, query, chainId === undefined ? undefined : String(chainId)) : undefined;
}

/** A route of a capability the app was built without (tests that exercise only the list). */
const NOT_SERVED = () => Promise.resolve(json(errorBody("NOT_FOUND", "Not found"), 404));

/**
 * `GET /v1/attestations`, `GET /v1/attestations/count` and `GET /v1/attestations/{uid}`, with their
 * `/api/public/attestations` twins (decisions §11, §24); other query parameters are ignored.
 */
export function attestationListRoutes(deps: AttestationListRoutesDeps) {
  const rate = deps.queryRate;
  const admit = rate === undefined ? undefined : (request: Request) => {
    const turn = rate.rate.take(clientKeyFor(rate.clientAddress, request));
    return turn.allowed
      ? undefined
      : json(errorBody("RATE_LIMITED", "Too many attestation queries from this address; try again later"), 429, { "retry-after": String(turn.retryAfterSeconds) });
  };
  const answer = answerer(deps.log, (deps.chains?.served.list.length ?? 1) > 1, admit);
  const own: AttestationReads = { list: deps.list, queries: deps.queries, answers: deps.answers };
  // The chain first: a request for a chain not served is refused whatever else it asks.
  const chainOf = (request: Request) => readsFor(request.url, own, deps.chains);
  const list = ({ request }: { request: Request }) => {
    const picked = chainOf(request);
    if (!picked.ok) return Promise.resolve(picked.response);
    const { query, refusal } = checked(listQuery, request);
    return refusal ?? answer(picked, () => picked.reads.list(query), keyOf("attestations", LIST_PARAMETERS, query, chainKey(picked.chain)), request);
  };
  const count = ({ request }: { request: Request }) => {
    const picked = chainOf(request);
    if (!picked.ok) return Promise.resolve(picked.response);
    const queries = picked.reads.queries;
    if (queries === undefined) return NOT_SERVED();
    const { query, refusal } = checked(countQuery, request);
    return refusal ?? answer(picked, () => queries.count(query), keyOf("attestations-count", COUNT_PARAMETERS, query, chainKey(picked.chain)), request);
  };
  const one = ({ params, request }: { params: { uid: string }; request: Request }) => {
    const picked = chainOf(request);
    if (!picked.ok) return Promise.resolve(picked.response);
    const queries = picked.reads.queries;
    if (queries === undefined) return NOT_SERVED();
    if (!UID.test(params.uid)) return Promise.resolve(json(errorBody("INVALID_INPUT", "uid must be 0x and 64 hex digits"), 400));
    return answer(picked, () => queries.get(params.uid), { route: "attestation", query: [params.uid.toLowerCase(), chainKey(picked.chain)] });
  };
  const listDetail = { detail: requestDetail(REQUEST_MODELS.attestationList) };
  const countDetail = { detail: requestDetail(REQUEST_MODELS.attestationCount) };
  // The router prefers the static `count` to the `:uid` parameter.
  return new Elysia({ name: "attestation-list-routes" })
    .get(ATTESTATION_LIST_PATHS[0], list, listDetail)
    .get(ATTESTATION_LIST_PATHS[1], list, listDetail)
    .get("/v1/attestations/count", count, countDetail)
    .get("/api/public/attestations/count", count, countDetail)
    .get("/v1/attestations/:uid", one)
    .get("/api/public/attestations/:uid", one);
}

/** The attestation list, its count and one attestation by uid (decisions §11, §24): route declarations, gathered by http/route_docs.ts. */
export const ATTESTATION_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ATTESTATION_LIST_PATHS,
    edge: "kept",
    auth: "public",
    cache: CACHE.index,
    summary:
      "The attestations matching any combination of subject, attester, recipient and schema (at least one), revoked, since and until; newest or oldest first, in keyset pages; read from the attestation index",
    request: REQUEST_MODELS.attestationList,
    responses: {
      200: { description: "A page; follow nextCursor until it is null", schema: AttestationPageModel },
      400: err(
        "INVALID_DID (subject), INVALID_INPUT naming the parameter (none of subject, attester, recipient or schema; schema neither a trust-anchor name nor a UID; an address, revoked, since, until, order or limit malformed; a cursor not ours, tampered with, or of a query with other filters or order or of another chain; a repeated parameter; chain malformed), UNSUPPORTED_CHAIN (chain not served)",
      ),
      405: err("METHOD_NOT_ALLOWED"),
      429: err("RATE_LIMITED: INDEX_QUERY_RATE_PER_MINUTE computed answers per client address (a kept answer takes no turn); Retry-After header"),
      502: err("NETWORK_ERROR: the index could not be read"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
  {
    method: "get",
    paths: ["/v1/attestations/count", "/api/public/attestations/count"],
    auth: "public",
    cache: CACHE.index,
    summary: "How many attestations match the list's filters (decisions §24); read from the attestation index",
    request: REQUEST_MODELS.attestationCount,
    responses: {
      200: { description: "{count, asOf}", schema: AttestationCountModel },
      400: err("INVALID_DID (subject), INVALID_INPUT naming the parameter (as the list), UNSUPPORTED_CHAIN (chain not served)"),
      405: err("METHOD_NOT_ALLOWED"),
      429: err("RATE_LIMITED: INDEX_QUERY_RATE_PER_MINUTE computed answers per client address (a kept answer takes no turn); Retry-After header"),
      502: err("NETWORK_ERROR: the index could not be read"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
  {
    method: "get",
    paths: ["/v1/attestations/{uid}", "/api/public/attestations/{uid}"],
    auth: "public",
    cache: CACHE.index,
    pathParameters: { uid: "The attestation's uid: 0x and 64 hex digits" },
    summary: "One attestation by uid, in the list's item shape (decisions §24); read from the attestation index",
    responses: {
      200: { description: "{attestation, revoked, asOf}", schema: AttestationItemModel },
      400: err("INVALID_INPUT: uid is not 0x and 64 hex digits, or chain malformed; UNSUPPORTED_CHAIN: chain not served"),
      404: err("NOT_FOUND: the index holds no attestation with this uid"),
      405: err("METHOD_NOT_ALLOWED"),
      502: err("NETWORK_ERROR: the index could not be read"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
];
