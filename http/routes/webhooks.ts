import { Elysia } from "elysia";
import type { WebhookEndpoints } from "../../domain/webhooks/mod.ts";
import type { Sessions } from "../../domain/sessions/mod.ts";
import type { Logger } from "../../ports/logger.ts";
import { authenticateRequest, type BearerAccess } from "../credentials.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { parseJsonBody, queryOf, readBodyText } from "./request.ts";

/** What the webhook routes need; `bearer`: OAuth access tokens with the `webhooks:write` scope (decisions §19, §22). */
export type WebhookRoutesDeps = {
  readonly sessions: Sessions;
  readonly webhooks: WebhookEndpoints;
  readonly log: Logger;
  readonly bearer?: BearerAccess | undefined;
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
  const answer = <T>(result: { ok: true; value: T } | { ok: false; code: string; message: string }, status = 200) =>
    result.ok ? json(result.value, status) : failure(result);

  return new Elysia({ name: "webhook-routes" })
    .post("/api/private/webhooks", ({ request, body }) =>
      guarded(async () => {
        const parsed = objectBody(body);
        if (!parsed.ok) return failure(parsed);
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.create(auth.account, parsed.value), 201);
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
    .post("/api/private/webhooks/:id/rotate-secret", ({ request, params }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.rotate(auth.account, params.id));
      }), { parse: readBodyText })
    .post("/api/private/webhooks/:id/test", ({ request, params }) =>
      guarded(async () => {
        const auth = await caller(request);
        if (!auth.ok) return auth.response;
        return answer(await deps.webhooks.test(auth.account, params.id), 202);
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
