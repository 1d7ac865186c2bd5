import { Elysia } from "elysia";
import type { VerifySubjectOwnership } from "../../../domain/accounts/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, type RouteDoc } from "../../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "../request.ts";
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

/** `POST /api/verify/subject-ownership` (decisions §12): no session needed; a proof that fails is a 200 saying why. */
export function subjectOwnershipRoutes(deps: { readonly verify: VerifySubjectOwnership; readonly log: Logger }) {
  return new Elysia({ name: "subject-ownership-routes" }).post("/api/verify/subject-ownership", async ({ body }) => {
    const parsed = ownershipBody.readJson(body);
    if (!parsed.ok) return json(errorBody(parsed.code, parsed.message), statusOf(parsed.code));
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
      502: err("NETWORK_ERROR: a lookup could not be made (never reported as failed)"),
    },
  },
];
