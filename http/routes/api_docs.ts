/** `/openapi.json` and the human-readable page beside it (`/docs`), generated from the routes' declarations. */
import { Elysia } from "elysia";
import { CACHE, type CachePolicyEntry, withKnownBody } from "../http_cache.ts";
import { buildOpenApi, renderApiPage } from "../openapi.ts";
import { ROUTE_DOCS } from "../route_docs.ts";

/** The cache policy of the two routes not in the route docs (they publish them): the description changes on a release. */
export const API_DOCS_CACHE: readonly CachePolicyEntry[] = [{ method: "get", paths: ["/openapi.json", "/docs"], cache: CACHE.static }];

/** `/openapi.json` and `/docs`, describing the service at `serverUrl`. */
export function apiDocRoutes(serverUrl: string) {
  const doc = buildOpenApi(ROUTE_DOCS, { title: "Attestation Trust Services", version: "1.0.0", serverUrl });
  const body = JSON.stringify(doc);
  const page = renderApiPage(doc);
  return new Elysia({ name: "doc-routes" })
    .get("/openapi.json", () => withKnownBody(new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }), body))
    .get("/docs", () => withKnownBody(new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }), page));
}
