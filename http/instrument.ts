import type { Elysia } from "elysia";
import { currentRequestContext, requestIdFrom, withRequestContext } from "../adapters/request_context.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";

/**
 * Serves the app with a request id (the caller's `X-Request-Id` when plain, else a fresh one; echoed
 * in the response and carried by every log line of the request), one access-log line at `debug` (at
 * `info` it cost a quarter of the throughput of the cheap routes in bench/load.ts), and request
 * count and latency by route and status. Unknown paths are labelled `unmatched` so a scan cannot
 * blow up the series count.
 */
export function instrumentedHandler(app: Elysia, deps: { metrics: Metrics; log: Logger }) {
  let routes: Set<string> | undefined;
  const routeOf = (path: string) => {
    routes ??= new Set(app.routes.map((r) => r.path));
    return routes.has(path) ? path : "unmatched";
  };
  return (request: Request): Promise<Response> => {
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    return withRequestContext({ requestId }, async () => {
      const started = performance.now();
      let response: Response;
      try {
        response = await app.handle(request);
      } catch (error) {
        deps.log.error("request_failed", { error: error instanceof Error ? error.message : String(error) });
        response = Response.json({ error: "Internal error", code: "INTERNAL_ERROR" }, { status: 500 });
      }
      const url = request.url;
      const start = url.indexOf("/", url.indexOf("//") + 2);
      const query = url.indexOf("?", start);
      const route = routeOf(start === -1 ? "/" : query === -1 ? url.slice(start) : url.slice(start, query));
      const seconds = (performance.now() - started) / 1000;
      const labels = { route, method: request.method, status: String(response.status) };
      deps.metrics.increment("ats_http_requests_total", labels);
      deps.metrics.observe("ats_http_request_duration_seconds", seconds, { route });
      deps.log.debug("request", { method: request.method, route, status: response.status, ms: Math.round(seconds * 1000) });
      response.headers.set("x-request-id", requestId);
      return response;
    });
  };
}

/** The fields every log line of the current request carries. */
export function requestLogContext(): Record<string, unknown> | undefined {
  return currentRequestContext();
}
