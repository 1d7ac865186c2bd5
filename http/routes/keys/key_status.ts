import { Elysia } from "elysia";
import type { KeyStatus } from "../../../domain/keys/mod.ts";
import type { RateLimiter } from "../../../domain/rate_limit.ts";
import type { Logger } from "../../../ports/logger.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { errorBody, headersOf, json, statusOf } from "../../errors.ts";
import { type AnswerKey, answerOf, type IndexAnswerCache, indexAnswer } from "../../index_answer_cache.ts";
import { REQUEST_MODELS, type RouteDoc } from "../../models.ts";
import { clientKeyFor, compileRequestCheck, queryOf, requestDetail } from "../request.ts";
import { CACHE } from "../../http_cache.ts";
import { err } from "../../route_responses.ts";
import { KeyStatusModel } from "./models.ts";
import { chainKey, chainMessage, type PerChain, readsFor, withChain } from "../../chain_reads.ts";

/** What the key-status routes need. */
export type KeyStatusRoutesDeps = {
  readonly keyStatus: KeyStatus;
  /** Lookups per client address (`KEY_STATUS_RATE_PER_MINUTE`). */
  readonly clientRate: RateLimiter;
  /** Lookups the service runs at once (`KEY_STATUS_MAX_IN_FLIGHT`). */
  readonly maxInFlight: number;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly log: Logger;
  /** Whole answers kept per index generation (http/index_answer_cache.ts); absent: every lookup computed. */
  readonly answers?: IndexAnswerCache | undefined;
  /** Each served chain's reads (decisions §30), picked by the request's `chain`, named in the answer; absent (a route built alone): the ones above. */
  readonly chains?: PerChain<KeyStatusReads> | undefined;
};

/** Key status on one chain. */
export type KeyStatusReads = Pick<KeyStatusRoutesDeps, "keyStatus" | "answers">;

const statusQuery = compileRequestCheck(REQUEST_MODELS.keyStatus.query, {
  explain: (query) => {
    const q = query as Record<string, unknown>;
    for (const name of ["subjectDid", "keyDid", "at"]) if (Array.isArray(q[name])) return `${name} must be given once`;
    for (const name of ["subjectDid", "keyDid"]) if (typeof q[name] !== "string" || q[name] === "") return `${name} is required`;
    if (q.at !== undefined && !/^[0-9]{1,12}$/.test(String(q.at))) return "at must be Unix seconds (a whole number)";
    return undefined;
  },
});

/** The paths of the key status. */
export const KEY_STATUS_PATHS = ["/v1/key-status", "/api/public/key-status"] as const;

/** The key of a request's kept answer, as the route computes it; undefined for a query the route refuses. */
export function keyStatusKey(request: Request, chainId?: number): AnswerKey | undefined {
  const query = queryOf(request.url);
  return statusQuery.check(query) ? keyOf(query, chainId === undefined ? undefined : String(chainId)) : undefined;
}

// The answer may carry live endpoint evidence, and `at` omitted is now: kept at most a poll (see the cache).
const keyOf = (query: { subjectDid: string; keyDid: string; at?: number | string | undefined }, chainId: string | undefined): AnswerKey =>
  ({ route: "key-status", query: [query.subjectDid, query.keyDid, query.at === undefined ? undefined : String(query.at), chainId], live: true });

/** The 429 of a client past its lookups per minute (`KEY_STATUS_RATE_PER_MINUTE`). */
function limited(retryAfterSeconds: number, headers: Readonly<Record<string, string>> = {}): Response {
  return json(errorBody("RATE_LIMITED", "Too many key-status lookups; try again later"), 429, { ...headers, "retry-after": String(retryAfterSeconds) });
}

/**
 * The per-client limit of a lookup the edge answers from a kept answer (issue 47 item 1): the route's own turn, taken
 * only when the edge answers (a miss goes to the route, which takes it there); its 429 carries `headers` (the public
 * CORS headers the app's hooks add).
 */
export function keyStatusLimit(
  deps: Pick<KeyStatusRoutesDeps, "clientRate" | "clientAddress">,
  headers: Readonly<Record<string, string>>,
): (request: Request) => Response | undefined {
  return (request) => {
    const turn = deps.clientRate.take(clientKeyFor(deps.clientAddress, request));
    return turn.allowed ? undefined : limited(turn.retryAfterSeconds, headers);
  };
}

/** Endpoint evidence without when it was read (undefined stays undefined: a test's partial answer). */
const timeless = (evidence: { readonly checkedAt?: number } | undefined) => evidence === undefined ? undefined : { ...evidence, checkedAt: undefined };

/**
 * `GET /v1/key-status` and `GET /api/public/key-status` (decisions §17): public, no session. Bounded before any
 * lookup: per client address, and in total in flight (429 `RATE_LIMITED` with `Retry-After`), so a flood of
 * lookups cannot turn into a flood of JSON-RPC calls and DNS/HTTPS fetches.
 */
export function keyStatusRoutes(deps: KeyStatusRoutesDeps) {
  let inFlight = 0;
  const own: KeyStatusReads = { keyStatus: deps.keyStatus, answers: deps.answers };
  const many = (deps.chains?.served.list.length ?? 1) > 1;
  const handler = async ({ request }: { request: Request }) => {
    // The chain first: a request for a chain not served is refused whatever else it asks.
    const picked = readsFor(request.url, own, deps.chains);
    if (!picked.ok) return picked.response;
    const { keyStatus, answers } = picked.reads;
    const query = queryOf(request.url);
    if (!statusQuery.check(query)) return json(errorBody("INVALID_INPUT", statusQuery.explain(query)), 400);
    const client = clientKeyFor(deps.clientAddress, request);
    const turn = deps.clientRate.take(client);
    if (!turn.allowed) return limited(turn.retryAfterSeconds);
    // The in-flight bound counts lookups (a kept answer is none): it is taken only when one runs.
    const compute = async () => {
      if (inFlight >= deps.maxInFlight) return { ok: false as const, response: limited(1) };
      inFlight++;
      try {
        // The client's share of the subject domain's lookup budget too (domain/discovery/lookup_budget.ts).
        const result = await keyStatus(query.subjectDid, query.keyDid, query.at, { client });
        // Its ETag is weak, over the answer without asOf and the times it was evaluated at (`at`, now when the query
        // omits it; when the endpoints were read): the same across polls while the answer is (decisions §21).
        if (result.ok) {
          return indexAnswer(withChain(result.value, picked.answer), ({ at: _at, endpointEvidence, ...rest }) => ({ ...rest, endpointEvidence: timeless(endpointEvidence) }));
        }
        if (statusOf(result.code) >= 500) deps.log.warn("key_status_failed", { code: result.code, chain: picked.chain?.caip2 });
        const message = picked.chain === undefined ? result.message : chainMessage(result.code, result.message, picked.chain, many);
        return { ok: false as const, response: json(errorBody(result.code, message), statusOf(result.code), headersOf(result.code)) };
      } finally {
        inFlight--;
      }
    };
    try {
      return answers === undefined ? answerOf(await compute()) : await answers.answer(keyOf(query, chainKey(picked.chain)), compute);
    } catch (error) {
      deps.log.error("key_status_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };
  const detail = { detail: requestDetail(REQUEST_MODELS.keyStatus) };
  return new Elysia({ name: "key-status-routes" })
    .get(KEY_STATUS_PATHS[0], handler, detail)
    .get(KEY_STATUS_PATHS[1], handler, detail);
}

/** The public key status (decisions §17): route declarations, gathered by http/route_docs.ts. */
export const KEY_STATUS_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: KEY_STATUS_PATHS,
    edge: "kept",
    auth: "public",
    cache: CACHE.indexAndDiscovery,
    request: REQUEST_MODELS.keyStatus,
    summary: "Is keyDid authorised for subjectDid, how strongly, and was it at `at`: the status and trust level with the evidence behind them (today's endpoint evidence; the controller witness of an approved issuer and the key binding written by a controller of the subject, as they stood at `at`). No JSON-RPC call per lookup in steady state: answered from the attestation index, with `asOf` (decisions §21)",
    responses: {
      200: { description: "Key status", schema: KeyStatusModel },
      400: err("INVALID_INPUT (a missing, repeated or malformed parameter; at in the future), INVALID_DID (subjectDid not a DID; keyDid not a did:pkh, did:key, did:jwk or did:ethr), UNSUPPORTED_CHAIN (chain not served)"),
      429: err("RATE_LIMITED: KEY_STATUS_RATE_PER_MINUTE per client address or KEY_STATUS_MAX_IN_FLIGHT lookups at once; Retry-After header"),
      502: err("NETWORK_ERROR: the subject's endpoints (or the schema registry, once per process) could not be read; never a guess"),
      503: err("INDEX_STALE: no poll of the chain read completed for INDEX_STALL_SECONDS (decisions §21, per chain §30: the message names it); Retry-After header; never an old answer"),
    },
  },
];
