import { Elysia } from "elysia";
import type { ConsoleBundle } from "../../console/assets.ts";
import { CONSOLE_CSP, type ConsolePageSettings, renderConsolePage } from "../../console/page.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json } from "../errors.ts";

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
