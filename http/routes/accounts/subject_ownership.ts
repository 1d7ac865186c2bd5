import { Elysia } from "elysia";
import type { VerifySubjectOwnership } from "../../../domain/accounts/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, type RouteDoc } from "../../models.ts";
import { clientKeyFor, compileRequestCheck, readBodyText, requestDetail } from "../request.ts";
import type { RateLimiter } from "../../../domain/rate_limit.ts";
import type { ClientAddressOf } from "../../../ports/request_context.ts";
import { CACHE } from "../../http_cache.ts";
import { err, TOO_LARGE } from "../../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

export const SubjectOwnershipModel = t.Object({
  ok: t.Boolean(),
  status: t.Union([t.Literal("verified"), t.Literal("failed")]),
  subjectDid: t.String(),
  connectedWalletDid: t.String(),
  method: t.Optional(t.Union(["dns", "did-document", "wallet", "contract", "minting-wallet", "transfer"].map((m) => t.Literal(m)))),
  error: t.Optional(t.String()),
  details: t.Optional(t.String({ description: "What would make the proof pass" })),
  controllingWalletDid: t.Optional(t.String()),
});

const ownershipBody = compileRequestCheck(REQUEST_MODELS.subjectOwnership.body);

/**
 * The route's per-client bound (`SUBJECT_OWNERSHIP_RATE_PER_MINUTE`, per instance): anonymous, each proof may ask the
 * chain a contract's code and `owner()` and the node's DNS and HTTPS lookups. Found by attacking it: 20 requests at once
 * for a contract whose `owner()` loops held the devnet's node (7.5 s of its CPU for 200 requests), with no bound.
 */
export type SubjectOwnershipLimit = { readonly clientRate: RateLimiter; readonly clientAddress?: ClientAddressOf | undefined };

/** `POST /api/verify/subject-ownership` (decisions §12): no session needed; a proof that fails is a 200 saying why. */
export function subjectOwnershipRoutes(deps: { readonly verify: VerifySubjectOwnership; readonly log: Logger; readonly limit?: SubjectOwnershipLimit | undefined }) {
  return new Elysia({ name: "subject-ownership-routes" }).post("/api/verify/subject-ownership", async ({ body, request }) => {
    const parsed = ownershipBody.readJson(body);
    if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
    const turn = deps.limit?.clientRate.take(clientKeyFor(deps.limit.clientAddress, request));
    if (turn !== undefined && !turn.allowed) {
      return json(errorBody("RATE_LIMITED", "Too many subject-ownership proofs; try again later"), 429, { "retry-after": String(turn.retryAfterSeconds) });
    }
    try {
      const result = await deps.verify(parsed.value);
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("subject_ownership_failed", { code: result.code });
      return json(errorBody(result.code, result.message), statusOf(result.code));
    } catch (error) {
      deps.log.error("subject_ownership_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  }, { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.subjectOwnership) });
}

/** Subject-ownership proofs (decisions §12): route declarations, gathered by http/route_docs.ts. */
export const SUBJECT_OWNERSHIP_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/api/verify/subject-ownership"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "Proves that a wallet owns a subject: did:web by DNS TXT or did.json, the wallet's own did:pkh, a contract whose owner() is the wallet, created by it (txHash) or transferred to it (txHash). No session needed",
    request: REQUEST_MODELS.subjectOwnership,
    responses: {
      200: { description: "verified, or failed with error and details saying why", schema: SubjectOwnershipModel },
      400: err("INVALID_JSON, INVALID_INPUT (field named), INVALID_DID (also a did:web whose host is an IP address: nothing is looked up)"),
      413: TOO_LARGE,
      429: err("RATE_LIMITED: SUBJECT_OWNERSHIP_RATE_PER_MINUTE per client address; Retry-After header"),
      502: err("NETWORK_ERROR: a lookup could not be made (never reported as failed)"),
    },
  },
];
