/** `/openapi.json` and the human-readable page beside it (`/docs`), generated from the routes' declarations. */
import { Elysia } from "elysia";
import { CACHE, type CachePolicyEntry, withKnownBody } from "../http_cache.ts";
import { createHash } from "node:crypto";
import { API_PAGE_STYLE, buildOpenApi, renderApiPage } from "../openapi.ts";
import { ROUTE_DOCS } from "../route_docs.ts";

/** The cache policy of the two routes not in the route docs (they publish them): the description changes on a release. */
export const API_DOCS_CACHE: readonly CachePolicyEntry[] = [{ method: "get", paths: ["/openapi.json", "/docs"], cache: CACHE.static }];

/** The `/docs` page's headers: nothing runs, nothing loads but its own stylesheet, never framed (as the console's). */
const PAGE_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": `default-src 'none'; style-src 'sha256-${createHash("sha256").update(API_PAGE_STYLE).digest("base64")}'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** `/openapi.json` and `/docs`, describing the service at `serverUrl`. */
export function apiDocRoutes(serverUrl: string) {
  const doc = buildOpenApi(ROUTE_DOCS, { title: "Attestation Trust Services", version: "1.0.0", serverUrl });
  const body = JSON.stringify(doc);
  const page = renderApiPage(doc);
  return new Elysia({ name: "doc-routes" })
    .get("/openapi.json", () => withKnownBody(new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }), body))
    .get("/docs", () => withKnownBody(new Response(page, { headers: PAGE_HEADERS }), page));
}
