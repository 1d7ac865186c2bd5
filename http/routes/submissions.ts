import { Elysia } from "elysia";
import { isSubmissionId, type SubmissionStatus } from "../../domain/submissions/mod.ts";
import type { Sessions } from "../../domain/sessions/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import { authenticateRequest, type BearerAccess } from "../credentials.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { queryOf } from "./request.ts";
import { type RouteDoc, Bytes32 } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** A relay submission as GET /v1/submissions/{id} answers it (decisions §23). */
export const SubmissionModel = t.Object({
  submissionId: t.String({ description: "128 random bits, base64url: whoever holds it may read the submission" }),
  state: t.Union(["pending", "sent", "mined", "confirmed", "failed", "replaced"].map((s) => t.Literal(s)), {
    description:
      "pending: recorded, nothing signed yet; sent: its transaction may be at the node; replaced: a fee bump superseded the transaction first sent (txHash the newest), none mined yet; mined; confirmed: at least INDEX_CONFIRMATIONS blocks deep; failed: reverted, or given back with nothing on chain (error says why)",
  }),
  txHash: t.Union([Bytes32, t.Null()]),
  uid: t.Union([Bytes32, t.Null()]),
  blockNumber: t.Union([t.Integer(), t.Null()]),
  confirmations: t.Integer({ minimum: 0 }),
  feeBumps: t.Integer({ minimum: 0, description: "Replacements signed with higher fees for this submission" }),
  error: t.Optional(t.String({ description: "The failure's code, e.g. SUBMISSION_FAILED" })),
  items: t.Optional(t.Array(t.Union([
    t.Object({
      index: t.Integer({ minimum: 0 }),
      state: t.Union(["pending", "sent", "mined", "confirmed", "failed", "replaced"].map((s) => t.Literal(s))),
      uid: t.Union([Bytes32, t.Null()], { description: "Its own uid once mined" }),
    }, { description: "Sent in the batch's transaction: the submission's state" }),
    t.Object({
      index: t.Integer({ minimum: 0 }),
      state: t.Literal("refused"),
      uid: t.Null(),
      status: t.Integer(),
      error: t.String({ description: "The code" }),
      message: t.String(),
      details: t.Optional(t.String()),
    }, { description: "Refused by its checks before sending (nothing charged): the status and error the single route would have answered" }),
  ]), { description: "A batch's requests, in order (absent for a single send; uid above is then the first sent request's)" })),
  createdAt: t.String({ format: "date-time" }),
  updatedAt: t.String({ format: "date-time" }),
});

/** A page of the account's submissions, newest first. */
export const SubmissionPageModel = t.Object({
  submissions: t.Array(SubmissionModel),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Pass as cursor for the next page; null on the last" }),
});

/** The query of the account's submission list (checked in the route's own code). */
export const SubmissionListQuery = t.Object({
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", description: "Items per page, 1 to 100 (default 20)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "The nextCursor of the previous page" })),
});

/** What the submission routes need. */
export type SubmissionRoutesDeps = {
  readonly status: SubmissionStatus;
  readonly sessions: Sessions;
  readonly log: Logger;
  /** OAuth access tokens with `relay:write` (decisions §19); absent: sessions only. */
  readonly bearer?: BearerAccess | undefined;
};

/** The path of the account's list. */
export const SUBMISSION_LIST_PATH = "/api/private/relay/submissions";

/**
 * `GET /v1/submissions/:id` (anyone holding the unguessable id, decisions §23) and `GET /api/private/relay/submissions`
 * (the signed-in account's, newest first, `limit` 1–100 and `cursor`).
 */
export function submissionRoutes(deps: SubmissionRoutesDeps) {
  const failure = (result: { code: string; message: string }) => json(errorBody(result.code, result.message), statusOf(result.code));
  const guarded = <T>(name: string, run: () => Promise<T>) =>
    run().catch((error: unknown) => {
      deps.log.error(`${name}_error`, { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  return new Elysia({ name: "submission-routes" })
    .get("/v1/submissions/:id", ({ params }) =>
      guarded("submission", async () => {
        // An id of another shape names no submission: answered without a lookup.
        if (!isSubmissionId(params.id)) return failure({ code: "NOT_FOUND", message: "Submission not found" });
        const found = await deps.status.read(params.id);
        return found.ok ? json(found.value) : failure(found);
      }))
    .get(SUBMISSION_LIST_PATH, ({ request }) =>
      guarded("submission_list", async () => {
        const auth = await authenticateRequest(request, deps, "relay:write");
        if (!auth.ok) return auth.response();
        const query = queryOf(request.url);
        const { limit, cursor } = query;
        if (Array.isArray(limit) || Array.isArray(cursor)) return failure({ code: "INVALID_INPUT", message: "limit and cursor may each be given once" });
        if (limit !== undefined && !/^[0-9]{1,3}$/.test(limit)) return failure({ code: "INVALID_INPUT", message: "limit must be an integer from 1 to 100" });
        const page = await deps.status.list(`account:${auth.caller.account.id}`, { limit: limit === undefined ? undefined : Number(limit), cursor });
        return page.ok ? json(page.value) : failure(page);
      }));
}

/** Relay submissions (decisions §23): route declarations, gathered by http/route_docs.ts. */
export const SUBMISSION_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/v1/submissions/{id}"],
    auth: "public",
    cache: CACHE.noStore,
    pathParameters: { id: "The submissionId a relay answer (or its 202) carried" },
    summary: "Where a relay submission stands (decisions §23): anyone holding its unguessable id may read it; a batch's shows each of its requests in order (items: its own uid once mined, or its refusal)",
    responses: { 200: { description: "The submission", schema: SubmissionModel }, 404: err("NOT_FOUND: no submission has this id") },
  },
  {
    method: "get",
    paths: ["/api/private/relay/submissions"],
    auth: "session",
    cache: CACHE.private,
    scope: "relay:write",
    query: SubmissionListQuery,
    summary: "The signed-in account's relay submissions, newest first (decisions §23)",
    responses: {
      200: { description: "{submissions: [Submission], nextCursor}", schema: SubmissionPageModel },
      400: err("INVALID_INPUT: a limit outside 1–100, a cursor not of this list, or either given twice"),
      401: err("UNAUTHENTICATED"),
    },
  },
];
