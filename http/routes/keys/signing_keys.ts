import { Elysia } from "elysia";
import { readSigningKeyBody, type SigningKeys } from "../../../domain/keys/mod.ts";
import type { Logger } from "../../../ports/logger.ts";
import { errorBody, json, statusOf } from "../../errors.ts";
import { REQUEST_MODELS, type RouteDoc } from "../../models.ts";
import { compileRequestCheck, queryOf, readBodyText, requestDetail } from "../request.ts";
import type { KeysCaller } from "./_account.ts";
import { CACHE } from "../../http_cache.ts";
import { err, TOO_LARGE } from "../../route_responses.ts";
import { SigningKeyListModel, SigningKeyUpsertModel } from "./models.ts";

/** What the signing-key routes need. */
export type SigningKeyRoutesDeps = { readonly keys: SigningKeys; readonly caller: KeysCaller; readonly log: Logger };

const upsertBody = compileRequestCheck(REQUEST_MODELS.signingKeyUpsert.body, {
  // The domain's wording where it has one (`tags[1] must be a non-empty string`), the model's otherwise.
  explain: (body) => {
    const read = readSigningKeyBody(body);
    return read.ok ? undefined : read.message;
  },
});
const listQuery = compileRequestCheck(REQUEST_MODELS.signingKeyList.query, { query: true });

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

/** Signing keys (decisions §17): route declarations, gathered by http/route_docs.ts. */
export const SIGNING_KEY_DOCS: readonly RouteDoc[] = [
  {
    method: "post",
    paths: ["/api/private/signing-keys"],
    auth: "session",
    cache: CACHE.private,
    scope: "keys:write",
    request: REQUEST_MODELS.signingKeyUpsert,
    summary: "Registers a signing key of the signed-in account, or updates it (display name, tags, notes) when the account holds it already; id, createdAt and keyType are kept. Another account may register the same key. Metadata only: the service never holds a private key (decisions §17)",
    responses: {
      200: { description: "The key; created: true for a new one, false for an update", schema: SigningKeyUpsertModel },
      400: err("INVALID_JSON, INVALID_INPUT naming the field (keyDid, keyType, displayName, tags, notes)"),
      401: err("UNAUTHENTICATED"),
      403: err("SIGNING_KEY_LIMIT_EXCEEDED (SIGNING_KEYS_PER_ACCOUNT keys already; an update still works), ORIGIN_NOT_ALLOWED"),
      413: TOO_LARGE,
      415: err("UNSUPPORTED_MEDIA_TYPE"),
    },
  },
  {
    method: "get",
    paths: ["/api/private/signing-keys"],
    auth: "session",
    cache: CACHE.private,
    scope: "account:read",
    request: REQUEST_MODELS.signingKeyList,
    summary: "The signed-in account's signing keys, newest first, each with its status (registered, active, revoked, expired) and trust level (none, basic, intermediate, advanced) for every subject of the account, computed now from the attestation index and the subjects' endpoint evidence",
    responses: {
      200: { description: "{keys: [...]}; a key's subjects is null (with subjectsError) when the chain or an endpoint could not be read", schema: SigningKeyListModel },
      400: err("INVALID_INPUT (a repeated or oversized parameter)"),
      401: err("UNAUTHENTICATED"),
    },
  },
];
