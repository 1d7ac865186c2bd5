import type { Elysia } from "elysia";
import { currentRequestContext, requestIdFrom, withRequestContext } from "../adapters/request_context.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";
import { ELAPSED_PATHS, isPrivatePath, pathOf, PUBLIC_CORS_HEADERS } from "./app.ts";
import { elapsedSince, errorBody, json } from "./errors.ts";
import { classifyAddress } from "../domain/ip_policy.ts";

/**
 * The answer when the app itself throws: 500 `INTERNAL_ERROR` with no error text, CORS `*` on the
 * public paths (decisions §1: every response, errors included) and `elapsed` on the EAS routes. The
 * session paths get no CORS header here: their allowlist lives in the app.
 */
function fallbackResponse(path: string, started: number): Response {
  const body = errorBody("INTERNAL_ERROR", "Internal error");
  return json(
    ELAPSED_PATHS.has(path) ? { ...body, elapsed: elapsedSince(started) } : body,
    500,
    isPrivatePath(path) ? {} : { ...PUBLIC_CORS_HEADERS },
  );
}

/** What `Bun.serve` passes as its second argument that the handler uses: the peer address of a request. */
export type PeerAddresses = { readonly requestIP: (request: Request) => { readonly address: string } | null };

/**
 * Serves the app with a request id (the caller's `X-Request-Id` when plain, else a fresh one; echoed
 * in the response and carried by every log line of the request), one access-log line at `debug` (at
 * `info` it cost a quarter of the throughput of the cheap routes in bench/load.ts), and request
 * count and latency by route and status. Unknown paths are labelled `unmatched` so a scan cannot
 * blow up the series count.
 */
export function instrumentedHandler(app: Elysia, deps: { metrics: Metrics; log: Logger; trustProxy?: number | undefined }) {
  let routes: Set<string> | undefined;
  const routeOf = (path: string) => {
    routes ??= new Set(app.routes.map((r) => r.path));
    return routes.has(path) ? path : "unmatched";
  };
  return (request: Request, server?: PeerAddresses): Promise<Response> => {
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    const clientAddress = clientAddressOf(request, server?.requestIP(request)?.address, deps.trustProxy ?? 0);
    return withRequestContext({ requestId, clientAddress }, async () => {
      const started = performance.now();
      const path = pathOf(request.url);
      let response: Response;
      try {
        response = await app.handle(routable(request));
      } catch (error) {
        deps.log.error("request_failed", { error: error instanceof Error ? error.message : String(error) });
        response = fallbackResponse(path, started);
      }
      const route = routeOf(path);
      const seconds = (performance.now() - started) / 1000;
      const status = String(response.status);
      deps.metrics.increment("ats_http_requests_total", { route, method: request.method, status });
      deps.metrics.observe("ats_http_request_duration_seconds", seconds, { route, status });
      deps.log.debug("request", { method: request.method, route, status: response.status, ms: Math.round(seconds * 1000) });
      response.headers.set("x-request-id", requestId);
      return response;
    });
  };
}

/**
 * The request with a URL Elysia reads the same path from as the app's own guards ({@link pathOf}). Elysia takes
 * the path from the first `/` at or after character 11, which assumes `http://` and a host of at least four
 * characters: with `Host: a` (or an absolute-form target naming a short host) it would route `/v1/x` as `/x`
 * while the guards saw `/v1/x`, so a guarded path could reach an unguarded route. Such a request is re-addressed
 * to `http://localhost` with the same path, query, method, headers and body.
 */
export function routable(request: Request): Request {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start >= 11) return request;
  return new Request(`http://localhost${start === -1 ? "/" : url.slice(start)}`, request);
}

/**
 * The client's address: the peer's, or behind `trustProxy` proxies (`TRUST_PROXY`), the address that many hops
 * from the right of `X-Forwarded-For` (each proxy appends the address it received from). A header shorter than
 * that, or an entry that is not an IP address, falls back to the peer: a client cannot choose its own key (skipping
 * a bad entry instead would move the count left, into what the client wrote). A port some balancers add
 * (`192.0.2.1:5678`, `[2001:db8::1]:443`) is dropped.
 */
export function clientAddressOf(request: Request, peer: string | undefined, trustProxy: number): string | undefined {
  if (trustProxy <= 0) return peer;
  const header = request.headers.get("x-forwarded-for");
  if (header === null || header.length > 4_096) return peer;
  const hops = header.split(",").map((h) => h.trim());
  const entry = hops[hops.length - trustProxy];
  if (entry === undefined) return peer;
  const candidate = /^\[[^\]]+\]:\d{1,5}$|^\d{1,3}(\.\d{1,3}){3}:\d{1,5}$/.test(entry) ? entry.slice(0, entry.lastIndexOf(":")) : entry;
  if (classifyAddress(candidate) === undefined) return peer;
  return candidate;
}

/** The fields every log line of the current request carries. */
export function requestLogContext(): Record<string, unknown> | undefined {
  const context = currentRequestContext();
  return context === undefined ? undefined : { requestId: context.requestId };
}

/** The peer address of the request being served, when it came through {@link instrumentedHandler}'s server. */
export function requestClientAddress(): string | undefined {
  return currentRequestContext()?.clientAddress;
}
