import { Elysia } from "elysia";
import type { Sessions } from "../../../domain/sessions/mod.ts";
import type { Subjects } from "../../../domain/accounts/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, type RouteDoc } from "../../models.ts";
import { compileRequestCheck, readBodyText, requestDetail } from "../request.ts";
import { authenticateRequest, type BearerAccess } from "../../credentials.ts";
import type { Scope } from "../../../domain/oauth/mod.ts";
import { CACHE } from "../../http_cache.ts";
import { err, NOT_JSON, ORIGIN, TOO_LARGE } from "../../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** A subject of the signed-in account (decisions §12). */
export const SubjectModel = t.Object({
  id: t.String(),
  canonicalDid: t.String(),
  subjectDidHash: t.String({ description: "keccak256 of the UTF-8 canonical DID" }),
  displayName: t.Union([t.String(), t.Null()]),
  isDefault: t.Boolean(),
  ownership: t.Object({
    method: t.String({ description: "How it was proven: dns, did-document, wallet, contract, minting-wallet, transfer" }),
    walletDid: t.String(),
    verifiedAt: t.String({ description: "ISO 8601" }),
  }),
  createdAt: t.String({ description: "ISO 8601" }),
});

/** `GET /api/private/subjects`. */
export const SubjectListModel = t.Object({ subjects: t.Array(SubjectModel, { description: "Default first, then oldest first" }) });

/** `GET|POST|PATCH /api/private/subjects…`. */
export const SubjectAnswerModel = t.Object({ subject: SubjectModel });

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

/** The `{id}` of the subject routes. */
const SUBJECT_ID = { id: "The subject's id, as GET /api/private/subjects lists it" };

/** The account's subjects (decisions §12): route declarations, gathered by http/route_docs.ts. */
export const SUBJECT_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/api/private/subjects"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    summary: "The signed-in account's subjects, default first (every account starts with its wallet's did:pkh)",
    responses: { 200: { description: "{subjects: [Subject]}", schema: SubjectListModel }, 401: err("UNAUTHENTICATED") },
  },
  {
    method: "post",
    paths: ["/api/private/subjects"],
    auth: "session",
    cache: CACHE.private,
    scope: "subjects:write",
    summary: "Adds {did (or subjectDid), displayName?, txHash?} once the signed-in wallet is proven to own it (as /api/verify/subject-ownership); the first replaces the bootstrap subject and becomes default. At most SUBJECTS_PER_ACCOUNT subjects; a did:pkh only on a chain the service knows",
    request: REQUEST_MODELS.subjectCreate,
    responses: {
      201: { description: "{subject}", schema: SubjectAnswerModel },
      400: err("INVALID_JSON, INVALID_INPUT, INVALID_DID (also a did:web whose host is an IP address), UNSUPPORTED_CHAIN (a did:pkh on a chain not in the trust anchors, the active chain or X402_NETWORK)"),
      401: err("UNAUTHENTICATED"),
      403: err("SUBJECT_OWNERSHIP_VERIFICATION_FAILED (details: what to publish), SUBJECT_LIMIT_EXCEEDED (SUBJECTS_PER_ACCOUNT subjects already; delete one first), ORIGIN_NOT_ALLOWED"),
      409: err("SUBJECT_ALREADY_EXISTS: the account holds this DID already"),
      413: TOO_LARGE,
      415: NOT_JSON,
      502: err("NETWORK_ERROR: the ownership lookup could not be made"),
    },
  },
  {
    method: "get",
    paths: ["/api/private/subjects/{id}"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    pathParameters: SUBJECT_ID,
    summary: "One subject of the signed-in account",
    responses: { 200: { description: "{subject}", schema: SubjectAnswerModel }, 401: err("UNAUTHENTICATED"), 404: err("SUBJECT_NOT_FOUND (unknown, or another account's)") },
  },
  {
    method: "patch",
    paths: ["/api/private/subjects/{id}"],
    auth: "session",
    cache: CACHE.private,
    scope: "subjects:write",
    pathParameters: SUBJECT_ID,
    summary: "Renames ({displayName}) or makes default ({isDefault: true}) a subject",
    request: REQUEST_MODELS.subjectPatch,
    responses: {
      200: { description: "{subject}", schema: SubjectAnswerModel },
      400: err("INVALID_JSON, INVALID_INPUT"),
      401: err("UNAUTHENTICATED"),
      403: ORIGIN,
      404: err("SUBJECT_NOT_FOUND"),
      413: TOO_LARGE,
      415: NOT_JSON,
    },
  },
  {
    method: "delete",
    paths: ["/api/private/subjects/{id}"],
    auth: "session",
    cache: CACHE.private,
    scope: "subjects:write",
    pathParameters: SUBJECT_ID,
    summary: "Removes a subject; the oldest remaining one becomes default when the default went (with none left, the wallet's did:pkh comes back on the next read)",
    responses: { 200: { description: "{success: true, id}" }, 401: err("UNAUTHENTICATED"), 403: ORIGIN, 404: err("SUBJECT_NOT_FOUND"), 413: TOO_LARGE },
  },
];
