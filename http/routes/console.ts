import { Elysia } from "elysia";
import type { ConsoleBundle } from "../../console/assets.ts";
import { CONSOLE_CSP, type ConsolePageSettings, renderConsolePage } from "../../console/page.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json } from "../errors.ts";
import { type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err, page } from "../route_responses.ts";

/** What the console routes need. */
export type ConsoleRoutesDeps = {
  /** The built script and stylesheet (embedded in the executable, built on first use from source). */
  readonly bundle: () => Promise<ConsoleBundle>;
  readonly settings: ConsolePageSettings;
  readonly log: Logger;
};

/**
 * Headers of every console answer: the strict policy, no sniffing, no referrer, no framing. Caching is the route's
 * policy (`no-cache` with an ETag, http/route_docs.ts).
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": CONSOLE_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** The console (decisions §14): `GET /` (the page), `/console/app.js` and `/console/app.css`. */
export function consoleRoutes(deps: ConsoleRoutesDeps) {
  const asset = (pick: (bundle: ConsoleBundle) => string, type: string) => async () => {
    try {
      return new Response(pick(await deps.bundle()), { headers: { ...CONSOLE_HEADERS, "content-type": type } });
    } catch (error) {
      deps.log.error("console_bundle_failed", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
    }
  };
  return new Elysia({ name: "console-routes" })
    .get("/", asset((bundle) => renderConsolePage(deps.settings, bundle.version), "text/html; charset=utf-8"))
    .get("/console/app.js", asset((bundle) => bundle.js, "text/javascript; charset=utf-8"))
    .get("/console/app.css", asset((bundle) => bundle.css, "text/css; charset=utf-8"));
}

/** The console (decisions §14): route declarations, gathered by http/route_docs.ts. */
export const CONSOLE_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/"],
    auth: "public",
    cache: CACHE.revalidate,
    summary: "The console (decisions §14): a web page to check a domain's controller records and an artifact's trust, list a subject's attestations, sign in with a wallet, manage subjects, request a witness and write a review; strict Content-Security-Policy",
    responses: { 200: page("The page"), 500: err("INTERNAL_ERROR (the page's bundle could not be built)") },
  },
  {
    method: "get",
    paths: ["/console/app.js", "/console/app.css"],
    auth: "public",
    cache: CACHE.revalidate,
    summary: "The console's script (one ES module, built from console/app.ts) and stylesheet, embedded in the executable",
    responses: { 200: { description: "text/javascript or text/css" }, 500: err("INTERNAL_ERROR (the bundle could not be built)") },
  },
];
