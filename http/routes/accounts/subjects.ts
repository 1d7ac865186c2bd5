import { Elysia } from "elysia";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Subjects } from "../../../domain/accounts/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "../request.ts";
import { authenticateRequest, type BearerAccess } from "../../credentials.ts";
import type { Scope } from "../../../domain/oauth/mod.ts";

/** What the subject routes need; `bearer`: OAuth access tokens (`account:read` to read, `subjects:write` to change). */
export type SubjectRoutesDeps = { readonly sessions: Sessions; readonly subjects: Subjects; readonly log: Logger; readonly bearer?: BearerAccess | undefined };

/** `GET|POST /api/private/subjects` and `GET|PATCH|DELETE /api/private/subjects/:id` (decisions §12), for the signed-in account. */
export function subjectRoutes(deps: SubjectRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined }) =>
    json(errorBody(result.code, result.message, result.details), statusOf(result.code));
  const account = async (request: Request, scope: Scope) => {
    const auth = await authenticateRequest(request, deps, scope);
    return auth.ok ? { ok: true as const, value: { account: auth.caller.account } } : auth;
  };
  // The published models, checked before the session (a malformed request is 400 whoever sends it); the use case
  // then applies its own rules (trimming, control characters) to what the model lets through.
  const createBody = compileRequestCheck(REQUEST_MODELS.subjectCreate.body);
  const patchBody = compileRequestCheck(REQUEST_MODELS.subjectPatch.body);
  const guarded = <T>(run: () => Promise<T>) =>
    run().catch((error: unknown) => {
      deps.log.error("subjects_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });

  return new Elysia({ name: "subject-routes" })
    .get("/api/private/subjects", ({ request }) =>
      guarded(async () => {
        const auth = await account(request, "account:read");
        if (!auth.ok) return auth.response();
        return json({ subjects: await deps.subjects.list(auth.value.account) });
      }))
    .post("/api/private/subjects", ({ request, body }) =>
      guarded(async () => {
        const parsed = createBody.readJson(body);
        if (!parsed.ok) return failure(parsed);
        const auth = await account(request, "subjects:write");
        if (!auth.ok) return auth.response();
        const added = await deps.subjects.add(auth.value.account, parsed.value as Record<string, unknown>);
        return added.ok ? json({ subject: added.value }, 201) : failure(added);
      }), { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.subjectCreate) })
    .get("/api/private/subjects/:id", ({ request, params }) =>
      guarded(async () => {
        const auth = await account(request, "account:read");
        if (!auth.ok) return auth.response();
        const found = await deps.subjects.get(auth.value.account, params.id);
        return found.ok ? json({ subject: found.value }) : failure(found);
      }))
    .patch("/api/private/subjects/:id", ({ request, params, body }) =>
      guarded(async () => {
        const parsed = patchBody.readJson(body);
        if (!parsed.ok) return failure(parsed);
        const auth = await account(request, "subjects:write");
        if (!auth.ok) return auth.response();
        const updated = await deps.subjects.update(auth.value.account, params.id, parsed.value as Record<string, unknown>);
        return updated.ok ? json({ subject: updated.value }) : failure(updated);
      }), { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.subjectPatch) })
    .delete("/api/private/subjects/:id", ({ request, params }) =>
      guarded(async () => {
        const auth = await account(request, "subjects:write");
        if (!auth.ok) return auth.response();
        const removed = await deps.subjects.remove(auth.value.account, params.id);
        return removed.ok ? json({ success: true, id: params.id }) : failure(removed);
      }));
}
