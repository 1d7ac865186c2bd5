import { Elysia } from "elysia";
import { WEBHOOK_TESTS_PER_MINUTE, type WebhookEndpoints } from "../../domain/webhooks/mod.ts";
import type { Sessions } from "../../domain/sessions/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import { authenticateRequest, type BearerAccess } from "../credentials.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { idempotent } from "../idempotency.ts";
import type { Idempotency } from "../../domain/idempotency/mod.ts";
import { parseJsonBody, queryOf, readBodyText } from "./request.ts";
import { IgnoredBody, type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err, NOT_JSON, TOO_LARGE } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** Webhooks (decisions §22): the event types an endpoint may ask for. */
const WebhookEventTypeModel = t.Union(
  [t.Literal("attestation.created"), t.Literal("attestation.revoked"), t.Literal("key.status_changed"), t.Literal("submission.settled"), t.Literal("webhook.test")],
  { description: "An event type" },
);

const WebhookUrlField = t.String({ maxLength: 2048, description: "https:// (http:// on loopback only with ALLOW_PRIVATE_NETWORK); its host must resolve to addresses the service would fetch a did.json from" });

const WebhookSubjectsField = t.Array(t.String({ maxLength: 2048 }), { maxItems: 1000, description: "Subject DIDs watched (did:web, did:pkh, did:artifact…); at most 1,000 per account, all endpoints together" });

/** The body of `POST /api/private/webhooks` (checked in the use case's own code, which names the field). */
export const WebhookCreateBody = t.Object({
  url: WebhookUrlField,
  events: t.Array(WebhookEventTypeModel, { minItems: 1 }),
  subjects: t.Optional(WebhookSubjectsField),
  ownSubjects: t.Optional(t.Boolean({ description: "Also the account's proven subjects (default true)" })),
});

/** The body of `PATCH /api/private/webhooks/{id}`. */
export const WebhookPatchBody = t.Object({
  url: t.Optional(WebhookUrlField),
  events: t.Optional(t.Array(WebhookEventTypeModel, { minItems: 1 })),
  subjects: t.Optional(WebhookSubjectsField),
  ownSubjects: t.Optional(t.Boolean()),
  disabled: t.Optional(t.Boolean({ description: "false re-enables an endpoint the service disabled after 5 days of failures" })),
});

const WebhookFields = {
  id: t.String(),
  url: t.String(),
  events: t.Array(WebhookEventTypeModel),
  subjects: t.Array(t.String()),
  ownSubjects: t.Boolean(),
  createdAt: t.String({ description: "ISO 8601" }),
  disabled: t.Boolean(),
};

/** An endpoint (never its secret). */
export const WebhookModel = t.Object(WebhookFields);

/** A new endpoint, with its secret shown this once. */
export const WebhookCreatedModel = t.Object({ ...WebhookFields, secret: t.String({ description: "whsec_ + base64: shown this once" }) });

export const WebhookListModel = t.Object({ webhooks: t.Array(WebhookModel) });

export const WebhookSecretModel = t.Object({ secret: t.String({ description: "The new whsec_ secret; the old one keeps signing beside it for 24 h" }) });

export const WebhookTestModel = t.Object({ eventId: t.String(), type: t.Literal("webhook.test") });

export const WebhookDeliveryModel = t.Object({
  eventId: t.String({ description: "The event's id: the webhook-id header of every attempt" }),
  type: WebhookEventTypeModel,
  attempts: t.Integer(),
  lastStatus: t.Union([t.Integer(), t.Null()], { description: "The last answer's status; null: none (timeout, refused connection) or no attempt yet" }),
  nextAttemptAt: t.Union([t.String(), t.Null()]),
  deliveredAt: t.Union([t.String(), t.Null()]),
  failedAt: t.Union([t.String(), t.Null()]),
});

export const WebhookDeliveryPageModel = t.Object({
  items: t.Array(WebhookDeliveryModel),
  nextCursor: t.Union([t.String(), t.Null()], { description: "Pass as cursor for the next page; null on the last" }),
});

/** The query of an endpoint's deliveries (checked in the use case's own code). */
export const WebhookDeliveriesQuery = t.Object({
  limit: t.Optional(t.String({ pattern: "^[0-9]{1,3}$", description: "Items per page, 1 to 100 (default 25)" })),
  cursor: t.Optional(t.String({ minLength: 1, maxLength: 200, description: "The nextCursor of the previous page" })),
});

/** What the webhook routes need; `bearer`: OAuth access tokens with the `webhooks:write` scope (decisions §19, §22). */
export type WebhookRoutesDeps = {
  readonly sessions: Sessions;
  readonly webhooks: WebhookEndpoints;
  readonly log: Logger;
  readonly bearer?: BearerAccess | undefined;
  /**
   * Idempotency keys of the writes that make something (create, rotate-secret, test; decisions §23, "every POST that
   * writes"); absent: `Idempotency-Key` is ignored. Found by attack: a rotation retried after a lost answer rotated
   * twice, so the receiver's secret stopped verifying at once instead of 24 h later, and a retried create made a
   * second endpoint.
   */
  readonly idempotency?: Idempotency | undefined;
};

/**
 * `POST|GET /api/private/webhooks`, `GET|PATCH|DELETE /api/private/webhooks/:id`, `POST …/:id/rotate-secret`,
 * `POST …/:id/test` and `GET …/:id/deliveries` (decisions §22), for the signed-in account or a token with
 * `webhooks:write`. A body is read and checked before the credential (a malformed request is 400 whoever sends it).
 */
export function webhookRoutes(deps: WebhookRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined; retryAfterSeconds?: number | undefined }) =>
    json(
      errorBody(result.code, result.message, result.details),
      statusOf(result.code),
      result.retryAfterSeconds === undefined ? {} : { "retry-after": String(result.retryAfterSeconds) },
    );
  const caller = async (request: Request) => {
    const auth = await authenticateRequest(request, deps, "webhooks:write");
    return auth.ok ? { ok: true as const, account: auth.caller.account } : { ok: false as const, response: auth.response() };
  };
  const objectBody = (body: unknown) => {
    const parsed = parseJsonBody(body);
    if (!parsed.ok) return parsed;
    if (typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value)) {
      return { ok: false as const, code: "INVALID_INPUT", message: "Body must be a JSON object" };
    }
    return { ok: true as const, value: parsed.value as Record<string, unknown> };
  };
  const guarded = (run: () => Promise<Response>) =>
    run().catch((error: unknown) => {
      deps.log.error("webhooks_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  /** A write run under the caller's `Idempotency-Key` (decisions §23), its keys the account's. */
  const keyed = (request: Request, account: { readonly id: string }, body: unknown, run: () => Promise<Response>) =>
    idempotent(deps.idempotency, request, { scope: `account:${account.id}`, body }, run);
  const answer = <T>(result: { ok: true; value: T } | { ok: false; code: string; message: string }, status = 200) =>
    result.ok ? json(result.value, status) : failure(result);

  return new Elysia({ name: "webhook-routes" })
    .post("/api/private/webhooks", ({ request, body }) =>
      guarded(async () => {
        const parsed = objectBody(body);
        const auth = await caller(request);
        // A malformed body is 400 whoever sends it; a signed-in caller's is kept under its key as any other answer.
        if (!auth.ok) return parsed.ok ? auth.response : failure(parsed);
        return await keyed(request, auth.account, body, async () => (parsed.ok ? answer(await deps.webhooks.create(auth.account, parsed.value), 201) : failure(parsed)));
      }), { parse: readBodyText })
    .get("/api/private/webhooks", ({ request }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return json({ webhooks: await deps.webhooks.list(auth.account) });
      }))
    .get("/api/private/webhooks/:id", ({ request, params }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.get(auth.account, params.id));
      }))
    .patch("/api/private/webhooks/:id", ({ request, params, body }) =>
      guarded(async () => {
        const parsed = objectBody(body);
        if (!parsed.ok) return failure(parsed);
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.update(auth.account, params.id, parsed.value));
      }), { parse: readBodyText })
    .delete("/api/private/webhooks/:id", ({ request, params }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.remove(auth.account, params.id));
      }))
    .post("/api/private/webhooks/:id/rotate-secret", ({ request, params, body }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return await keyed(request, auth.account, body, async () => answer(await deps.webhooks.rotate(auth.account, params.id)));
      }), { parse: readBodyText })
    .post("/api/private/webhooks/:id/test", ({ request, params, body }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return await keyed(request, auth.account, body, async () => answer(await deps.webhooks.test(auth.account, params.id), 202));
      }), { parse: readBodyText })
    .get("/api/private/webhooks/:id/deliveries", ({ request, params }) =>
      guarded(async () => {
        const query = queryOf(request.url);
        for (const [name, value] of Object.entries(query)) {
          if (name !== "limit" && name !== "cursor") return failure({ code: "INVALID_INPUT", message: `${name} is not a parameter of this list` });
          if (Array.isArray(value)) return failure({ code: "INVALID_INPUT", message: `${name} must be given once` });
        }
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.deliveries(auth.account, params.id, query as { limit?: string; cursor?: string }));
      }));
}

/** The `{id}` of the webhook routes. */
const WEBHOOK_ID = { id: "The endpoint's id, as POST /api/private/webhooks answered it" };
const WEBHOOK_NOT_FOUND = err("WEBHOOK_NOT_FOUND (unknown, or another account's)");
/** Who may manage webhooks: the session, or a bearer token with webhooks:write (decisions §22). */
const WEBHOOK_AUTH = { auth: "session", cache: CACHE.private, scope: "webhooks:write" } as const;

/** The webhook routes (decisions §22): route declarations, gathered by http/route_docs.ts. */
export const WEBHOOK_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/api/private/webhooks"],
    idempotent: true,
    ...WEBHOOK_AUTH,
    summary: "Registers a webhook endpoint {url, events, subjects?, ownSubjects?} of the account; the answer carries its secret (whsec_…), shown this once. Events: attestation.created and attestation.revoked (watched subjects, and the account's proven subjects while ownSubjects), key.status_changed, submission.settled, webhook.test; delivered with Standard Webhooks signatures",
    body: { schema: WebhookCreateBody },
    responses: {
      201: { description: "The endpoint, with its secret", schema: WebhookCreatedModel },
      400: err("INVALID_JSON, INVALID_INPUT naming the field (url: not https://, an address the service does not send to, a host that does not resolve; events; subjects; ownSubjects)"),
      401: err("UNAUTHENTICATED"),
      403: err("WEBHOOK_LIMIT_EXCEEDED (10 endpoints, 1,000 watched subjects per account), insufficient_scope, ORIGIN_NOT_ALLOWED"),
      413: TOO_LARGE,
      415: NOT_JSON,
      502: err("NETWORK_ERROR: the url's host could not be looked up now (SERVFAIL, a timeout); try again"),
    },
  },
  {
    method: "get",
    paths: ["/api/private/webhooks"],
    ...WEBHOOK_AUTH,
    summary: "The account's webhook endpoints, oldest first (no secrets)",
    responses: { 200: { description: "{webhooks: [Webhook]}", schema: WebhookListModel }, 401: err("UNAUTHENTICATED"), 403: err("insufficient_scope") },
  },
  {
    method: "get",
    paths: ["/api/private/webhooks/{id}"],
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    summary: "One webhook endpoint of the account (no secret)",
    responses: { 200: { description: "The endpoint", schema: WebhookModel }, 401: err("UNAUTHENTICATED"), 403: err("insufficient_scope"), 404: WEBHOOK_NOT_FOUND },
  },
  {
    method: "patch",
    paths: ["/api/private/webhooks/{id}"],
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    summary: "Changes url, events, subjects or ownSubjects; {disabled: false} re-enables an endpoint disabled after 5 days of failed deliveries",
    body: { schema: WebhookPatchBody },
    responses: {
      200: { description: "The endpoint", schema: WebhookModel },
      400: err("INVALID_JSON, INVALID_INPUT naming the field"),
      401: err("UNAUTHENTICATED"),
      403: err("WEBHOOK_LIMIT_EXCEEDED, insufficient_scope, ORIGIN_NOT_ALLOWED"),
      404: WEBHOOK_NOT_FOUND,
      413: TOO_LARGE,
      415: NOT_JSON,
      502: err("NETWORK_ERROR: a new url's host could not be looked up now; try again"),
    },
  },
  {
    method: "delete",
    paths: ["/api/private/webhooks/{id}"],
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    summary: "Removes an endpoint and its pending deliveries",
    responses: { 200: { description: "{success: true, id}" }, 401: err("UNAUTHENTICATED"), 403: err("insufficient_scope, ORIGIN_NOT_ALLOWED"), 404: WEBHOOK_NOT_FOUND, 413: TOO_LARGE },
  },
  {
    method: "post",
    paths: ["/api/private/webhooks/{id}/rotate-secret"],
    idempotent: true,
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    summary: "A new secret, shown this once; for 24 hours deliveries carry two signatures (new and old, space-separated)",
    body: { schema: IgnoredBody, required: false },
    responses: {
      200: { description: "{secret}", schema: WebhookSecretModel },
      401: err("UNAUTHENTICATED"),
      403: err("insufficient_scope, ORIGIN_NOT_ALLOWED"),
      404: WEBHOOK_NOT_FOUND,
      413: TOO_LARGE,
      415: NOT_JSON,
    },
  },
  {
    method: "post",
    paths: ["/api/private/webhooks/{id}/test"],
    idempotent: true,
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    summary: `Queues a webhook.test event to this endpoint's URL as it is now (delivered as any event; not sent if the URL changes first). At most ${WEBHOOK_TESTS_PER_MINUTE} a minute per account`,
    body: { schema: IgnoredBody, required: false },
    responses: {
      202: { description: "{eventId, type}: the event's id is the delivery's webhook-id", schema: WebhookTestModel },
      401: err("UNAUTHENTICATED"),
      403: err("insufficient_scope, ORIGIN_NOT_ALLOWED"),
      404: WEBHOOK_NOT_FOUND,
      409: err("WEBHOOK_DISABLED: the endpoint is disabled; enable it first"),
      413: TOO_LARGE,
      415: NOT_JSON,
      429: err(`RATE_LIMITED: more than ${WEBHOOK_TESTS_PER_MINUTE} test events a minute from this account, with Retry-After`),
    },
  },
  {
    method: "get",
    paths: ["/api/private/webhooks/{id}/deliveries"],
    ...WEBHOOK_AUTH,
    pathParameters: WEBHOOK_ID,
    query: WebhookDeliveriesQuery,
    summary: "The endpoint's deliveries, newest first: each event with its attempts, last status, next attempt, delivered or failed time",
    responses: {
      200: { description: "{items, nextCursor}", schema: WebhookDeliveryPageModel },
      400: err("INVALID_INPUT: a limit outside 1–100, a cursor not of this list, an unknown or repeated parameter"),
      401: err("UNAUTHENTICATED"),
      403: err("insufficient_scope"),
      404: WEBHOOK_NOT_FOUND,
    },
  },
];
