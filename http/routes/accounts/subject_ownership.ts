import { Elysia } from "elysia";
import type { VerifySubjectOwnership } from "../../../domain/accounts/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "../request.ts";

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
