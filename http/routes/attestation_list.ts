import { Elysia } from "elysia";
import type { CountAttestations, GetAttestation, ListAttestations } from "../../domain/index/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import type { Result } from "../../domain/result.ts";
import { errorBody, headersOf, json, statusOf } from "../errors.ts";
import { ATTESTATION_LEADING_FILTERS, REQUEST_MODELS } from "../models.ts";
import { compileRequestCheck, queryOf, requestDetail } from "./request.ts";

/** What the attestation routes need; the count and one-by-uid reads are absent in tests that exercise only the list. */
export type AttestationListRoutesDeps = {
  readonly list: ListAttestations;
  readonly queries?: { readonly count: CountAttestations; readonly get: GetAttestation } | undefined;
  readonly log: Logger;
};

const listQuery = compileRequestCheck(REQUEST_MODELS.attestationList.query);
const countQuery = compileRequestCheck(REQUEST_MODELS.attestationCount.query);

const NO_FILTER = "Give at least one of subject, attester, recipient or schema";

/** Runs a read and answers its result, or its failure with the code's status. */
function answerer(log: Logger) {
  return async (read: () => Promise<Result<unknown, string>>) => {
    try {
      const result = await read();
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) log.warn("attestation_list_failed", { code: result.code });
      return json(errorBody(result.code, result.message), statusOf(result.code), headersOf(result.code));
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

/** A route of a capability the app was built without (tests that exercise only the list). */
const NOT_SERVED = () => Promise.resolve(json(errorBody("NOT_FOUND", "Not found"), 404));

/**
 * `GET /v1/attestations`, `GET /v1/attestations/count` and `GET /v1/attestations/{uid}`, with their
 * `/api/public/attestations` twins (decisions §11, §24); other query parameters are ignored.
 */
export function attestationListRoutes(deps: AttestationListRoutesDeps) {
  const answer = answerer(deps.log);
  const { queries } = deps;
  const list = ({ request }: { request: Request }) => {
    const { query, refusal } = checked(listQuery, request);
    return refusal ?? answer(() => deps.list(query));
  };
  const count = ({ request }: { request: Request }) => {
    if (queries === undefined) return NOT_SERVED();
    const { query, refusal } = checked(countQuery, request);
    return refusal ?? answer(() => queries.count(query));
  };
  const one = ({ params }: { params: { uid: string } }) => {
    if (queries === undefined) return NOT_SERVED();
    if (!UID.test(params.uid)) return Promise.resolve(json(errorBody("INVALID_INPUT", "uid must be 0x and 64 hex digits"), 400));
    return answer(() => queries.get(params.uid));
  };
  const listDetail = { detail: requestDetail(REQUEST_MODELS.attestationList) };
  const countDetail = { detail: requestDetail(REQUEST_MODELS.attestationCount) };
  // The router prefers the static `count` to the `:uid` parameter.
  return new Elysia({ name: "attestation-list-routes" })
    .get("/v1/attestations", list, listDetail)
    .get("/api/public/attestations", list, listDetail)
    .get("/v1/attestations/count", count, countDetail)
    .get("/api/public/attestations/count", count, countDetail)
    .get("/v1/attestations/:uid", one)
    .get("/api/public/attestations/:uid", one);
}
