import { Elysia } from "elysia";
import type { ListAttestations } from "../../domain/index/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, headersOf, json, statusOf } from "../errors.ts";
import { REQUEST_MODELS } from "../models.ts";
import { compileRequestCheck, queryOf, requestDetail } from "./request.ts";

/** What the attestation-list routes need. */
export type AttestationListRoutesDeps = { readonly list: ListAttestations; readonly log: Logger };

const listQuery = compileRequestCheck(REQUEST_MODELS.attestationList.query);

/** `GET /v1/attestations` and `GET /api/public/attestations` (decisions §11); other query parameters are ignored. */
export function attestationListRoutes(deps: AttestationListRoutesDeps) {
  const handler = async ({ request }: { request: Request }) => {
    const query = queryOf(request.url);
    // A missing, repeated or oversized parameter is INVALID_INPUT naming it; a subject that is no DID is the domain's INVALID_DID.
    if (!listQuery.check(query)) return json(errorBody("INVALID_INPUT", listQuery.explain(query)), 400);
    try {
      const result = await deps.list(query);
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("attestation_list_failed", { code: result.code });
      return json(errorBody(result.code, result.message), statusOf(result.code), headersOf(result.code));
    } catch (error) {
      deps.log.error("attestation_list_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };
  const detail = { detail: requestDetail(REQUEST_MODELS.attestationList) };
  return new Elysia({ name: "attestation-list-routes" })
    .get("/v1/attestations", handler, detail)
    .get("/api/public/attestations", handler, detail);
}
