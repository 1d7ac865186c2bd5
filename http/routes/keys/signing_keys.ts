import { Elysia } from "elysia";
import { readSigningKeyBody, type SigningKeys } from "../../../domain/keys/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS } from "../../models.ts";
import { compileRequestCheck, queryOf, readBodyText, requestDetail } from "../request.ts";
import type { KeysCaller } from "./_account.ts";

/** What the signing-key routes need. */
export type SigningKeyRoutesDeps = { readonly keys: SigningKeys; readonly caller: KeysCaller; readonly log: Logger };

const upsertBody = compileRequestCheck(REQUEST_MODELS.signingKeyUpsert.body, {
  // The domain's wording where it has one (`tags[1] must be a non-empty string`), the model's otherwise.
  explain: (body) => {
    const read = readSigningKeyBody(body);
    return read.ok ? undefined : read.message;
  },
});
const listQuery = compileRequestCheck(REQUEST_MODELS.signingKeyList.query, {
  explain: (query) => {
    for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
      if (Array.isArray(value)) return `${name} must be given once`;
    }
    return undefined;
  },
});

/**
 * `POST|GET /api/private/signing-keys` (decisions §17), for the signed-in account: upsert a key (the body is read
 * and checked first, as on every route: a malformed request is 400 whoever sends it), list the keys newest first
 * with their status and trust level per subject.
 */
export function signingKeyRoutes(deps: SigningKeyRoutesDeps) {
  const failure = (result: { code: string; message: string }) => json(errorBody(result.code, result.message), statusOf(result.code));
  const guarded = (run: () => Promise<Response>) =>
    run().catch((error: unknown) => {
      deps.log.error("signing_keys_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    });
  return new Elysia({ name: "signing-key-routes" })
    .post("/api/private/signing-keys", ({ request, body }) =>
      guarded(async () => {
        const parsed = upsertBody.readJson(body);
        if (!parsed.ok) return failure(parsed);
        const caller = await deps.caller(request, "keys:write");
        if (!caller.ok) return "response" in caller ? caller.response : failure(caller);
        const written = await deps.keys.upsert(caller.value, parsed.value);
        // 200 for a create as for an update, as the reference answers; `created` tells them apart.
        if (written.ok) return json(written.value);
        return failure(written);
      }), { parse: readBodyText, detail: requestDetail(REQUEST_MODELS.signingKeyUpsert) })
    .get("/api/private/signing-keys", ({ request }) =>
      guarded(async () => {
        const query = queryOf(request.url);
        if (!listQuery.check(query)) return json(errorBody("INVALID_INPUT", listQuery.explain(query)), 400);
        const caller = await deps.caller(request, "account:read");
        if (!caller.ok) return "response" in caller ? caller.response : failure(caller);
        const keys = await deps.keys.list(caller.value, query);
        for (const key of keys) {
          if (key.subjectsError !== undefined) {
            deps.log.warn("signing_keys_trust_unavailable", { code: key.subjectsError.code });
            break;
          }
        }
        return json({ keys });
      }), { detail: requestDetail(REQUEST_MODELS.signingKeyList) });
}
