import { Elysia } from "elysia";
import { MAX_BATCH, type PremiumRpc, requestShapeFault } from "../../../domain/accounts/mod.ts";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, PremiumRpcResponseModel, type RouteDoc } from "../../models.ts";
import { compileRequestCheck, requestDetail, readBodyText } from "../request.ts";
import { authenticateRequest, type BearerAccess } from "../../credentials.ts";
import { CACHE } from "../../http_cache.ts";
import { err, TOO_LARGE } from "../../route_responses.ts";

/** What the premium route needs; `bearer`: OAuth access tokens with `rpc:read` (decisions §19). */
export type PremiumRpcRoutesDeps = { readonly sessions: Sessions; readonly premiumRpc: PremiumRpc; readonly log: Logger; readonly bearer?: BearerAccess | undefined };

/** The body's check, in the domain's words: the field of a single request, or what is wrong with the batch. */
const premiumBody = compileRequestCheck(REQUEST_MODELS.premiumRpc.body, {
  explain(value) {
    if (Array.isArray(value)) return value.length === 0 ? "An empty batch" : `A batch holds at most ${MAX_BATCH} calls`;
    if (typeof value !== "object" || value === null) return "Body must be a JSON-RPC request object or a batch (array)";
    return requestShapeFault(value)?.message;
  },
});

/**
 * `POST /api/private/rpc-premium` (decisions §12): read-only JSON-RPC for the signed-in account, each forwarded
 * call counted as one premium read. Order: body (400) → session (401) → the proxy (429 too many waiting on the
 * node, with Retry-After; 403 limit; 502 node unreachable, timed out or its answer lost).
 * Errors of the request as a whole use the service's error body; refusals of single calls are JSON-RPC error
 * objects in the answer.
 */
export function premiumRpcRoutes(deps: PremiumRpcRoutesDeps) {
  return new Elysia({ name: "premium-rpc-routes" }).post("/api/private/rpc-premium", async ({ body, request }) => {
    const parsed = premiumBody.readJson(body);
    if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
    const auth = await authenticateRequest(request, deps, "rpc:read");
    if (!auth.ok) return auth.response();
    try {
      const result = await deps.premiumRpc(parsed.value, auth.caller.account);
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("premium_rpc_failed", { code: result.code, reason: result.message });
      const headers: Record<string, string> = result.retryAfterSeconds === undefined ? {} : { "retry-after": String(result.retryAfterSeconds) };
      return json(errorBody(result.code, result.message), statusOf(result.code), headers);
    } catch (error) {
      deps.log.error("premium_rpc_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  }, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.premiumRpc) });
}

/** Premium reads (decisions §12): route declarations, gathered by http/route_docs.ts. */
export const PREMIUM_RPC_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/api/private/rpc-premium"],
    auth: "session",
    cache: CACHE.private,
    scope: "rpc:read",
    request: REQUEST_MODELS.premiumRpc,
    summary: "Read-only JSON-RPC (one call or a batch of up to 100) forwarded to the chain for the signed-in account; each forwarded call is one premium read. Other methods (-32601), eth_getLogs ranges over PREMIUM_RPC_MAX_LOG_RANGE, extra params (an eth_call state or block override), unknown call or filter fields and malformed params (-32602), and malformed calls of a batch (-32600) are JSON-RPC error objects, never forwarded nor counted. Params are rebuilt, not passed through; an eth_call's gas is capped at PREMIUM_RPC_MAX_CALL_GAS and set to it when absent",
    responses: {
      200: { description: "The JSON-RPC response object, or an array in the batch's order", schema: PremiumRpcResponseModel },
      400: err("INVALID_JSON, INVALID_INPUT (not a JSON-RPC request object or batch, naming the field; an empty batch; over 100 calls)"),
      401: err("UNAUTHENTICATED"),
      403: err("PREMIUM_READ_LIMIT_EXCEEDED (nothing forwarded), ORIGIN_NOT_ALLOWED"),
      413: TOO_LARGE,
      415: err("UNSUPPORTED_MEDIA_TYPE"),
      429: err("RATE_LIMITED: the account (PREMIUM_RPC_MAX_IN_FLIGHT_PER_ACCOUNT) or the service (PREMIUM_RPC_MAX_IN_FLIGHT) has as many requests waiting on the node as allowed; Retry-After header"),
      502: err("NETWORK_ERROR: the node could not be reached (the reads are given back), or did not answer within PREMIUM_RPC_TIMEOUT_MS or its answer was lost (the calls were handed to it: the reads are spent)"),
    },
  },
];
