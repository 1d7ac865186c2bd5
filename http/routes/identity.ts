import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Elysia } from "elysia";
import { resolveIdentity } from "../../domain/identity.ts";
import { errorBody, json } from "../errors.ts";
import { IdentityResolveBody } from "../models.ts";

const PATHS = ["/v1/identity-resolve", "/v1/identity/resolve", "/api/public/identity-resolve"] as const;
const checkBody = TypeCompiler.Compile(IdentityResolveBody);
const CACHE_LIMIT = 20_000;

/**
 * identity-resolve under its three paths: display labels only, never used for authorization.
 * Resolution is a pure function of the string, so each identifier's serialized record is kept in a
 * bounded cache (oldest dropped first): clients ask for the same identifiers again and again.
 */
export function identityRoutes() {
  const cache = new Map<string, string>();
  const recordJson = (identifier: string): string => {
    let cached = cache.get(identifier);
    if (cached === undefined) {
      cached = JSON.stringify(resolveIdentity(identifier));
      if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
      cache.set(identifier, cached);
    }
    return cached;
  };
  const handler = ({ body }: { body: unknown }) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof body === "string" ? body : "");
    } catch {
      return json(errorBody("INVALID_JSON", "Invalid JSON body"), 400);
    }
    if (!checkBody.Check(parsed)) {
      const identifiers = (parsed as { identifiers?: unknown } | null)?.identifiers;
      const message = Array.isArray(identifiers) && identifiers.length > 100
        ? "identifiers must contain at most 100 entries"
        : "identifiers must be an array of strings";
      return json(errorBody("INVALID_INPUT", message), 400);
    }
    const out = `{"identities":[${parsed.identifiers.map(recordJson).join(",")}]}`;
    return new Response(out, { headers: { "content-type": "application/json; charset=utf-8" } });
  };
  const app = new Elysia({ name: "identity-routes" });
  for (const path of PATHS) app.post(path, handler, { parse: "text" });
  return app;
}
