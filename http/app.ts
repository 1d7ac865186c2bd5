import { Elysia } from "elysia";
import type { Logger } from "../ports/logger.ts";
import type { TrustAnchors } from "../ports/trust_anchors.ts";
import { errorBody, json } from "./errors.ts";
import { easRoutes, type EasRoutesDeps } from "./routes/eas.ts";
import { healthRoutes, type ReadinessReport } from "./routes/health.ts";
import { controllerRoutes, type ControllerRoutesDeps } from "./routes/controller.ts";
import { artifactTrustRoutes } from "./routes/artifact_trust.ts";
import { sessionRoutes, type SessionRoutesDeps } from "./routes/session.ts";
import type { ArtifactTrust } from "../domain/artifact_trust.ts";
import { identityRoutes } from "./routes/identity.ts";
import { trustAnchorRoutes } from "./routes/trust_anchors.ts";
import { buildOpenApi, renderApiPage } from "./openapi.ts";
import { ROUTE_DOCS } from "./route_docs.ts";

/** Everything the HTTP layer is given by the composition root. */
export type AppDeps = Omit<EasRoutesDeps, "log"> & {
  readonly trustAnchors: TrustAnchors;
  readonly ready: () => Promise<ReadinessReport>;
  readonly log: Logger;
  readonly publicBaseUrl?: string | undefined;
  /** Controller discovery; absent in tests that do not exercise it. */
  readonly controller?: ControllerRoutesDeps | undefined;
  /** Artifact trust lookup; absent in tests that do not exercise it. */
  readonly artifactTrust?: ArtifactTrust | undefined;
  /** Sign-in and the controller witness; absent in tests that do not exercise them. */
  readonly session?: Omit<SessionRoutesDeps, "log"> | undefined;
  /** Origins allowed to call the session routes with credentials (CORS_ORIGINS plus the public origin). */
  readonly privateOrigins?: readonly string[] | undefined;
  /** The Prometheus exposition text of `GET /metrics`; absent: no such route. */
  readonly metricsText?: (() => Promise<string>) | undefined;
};

/** CORS headers of the session routes for an allowed origin: that origin, with credentials. */
function privateCorsHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": "Content-Type",
    "access-control-max-age": "600",
    vary: "Origin",
  };
}

/** CORS headers of every public route (decisions §1). */
export const PUBLIC_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Content-Type",
  "access-control-max-age": "600",
};

/** The path of an absolute request URL, without building a URL object on the hot path. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/** Session and private routes use an origin allowlist with credentials instead of `*` (decisions §1). */
export function isPrivatePath(path: string): boolean {
  return path.startsWith("/api/private/") || path.startsWith("/v1/session/") || path === "/v1/controller-witness";
}

/**
 * Builds the Elysia app: the route plugins plus the conventions every public route shares
 * (CORS `*`, OPTIONS 204, 405 with `Allow`, 404 `NOT_FOUND`, one error body, no upstream text).
 */
export function createApp(deps: AppDeps) {
  const app = new Elysia();
  const allowed = (path: string): string[] =>
    app.routes.filter((r) => r.path === path).map((r) => r.method.toUpperCase());
  const origins = new Set(deps.privateOrigins ?? []);

  /**
   * Session routes: CORS for allowlisted origins only, with credentials. CSRF guard on every POST:
   * a browser origin must be allowlisted, and the body must be JSON (which a cross-site form cannot
   * send without a preflight that the allowlist refuses).
   */
  const guardPrivate = (request: Request, path: string, set: { headers: Record<string, string | number> }) => {
    const origin = request.headers.get("origin");
    const trusted = origin !== null && origins.has(origin);
    const cors = trusted ? privateCorsHeaders(origin) : {};
    Object.assign(set.headers, cors);
    const methods = allowed(path);
    if (methods.length === 0) return;
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
    if (request.method !== "POST" || !methods.includes("POST")) return;
    if (origin !== null && !trusted) {
      return json(errorBody("ORIGIN_NOT_ALLOWED", "Origin not allowed"), 403);
    }
    if (!/^application\/json\s*(;|$)/i.test(request.headers.get("content-type") ?? "")) {
      return json(errorBody("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"), 415, cors);
    }
  };

  return app
    .onRequest(({ request, set }) => {
      const path = pathOf(request.url);
      if (isPrivatePath(path)) return guardPrivate(request, path, set);
      Object.assign(set.headers, PUBLIC_CORS_HEADERS);
      if (request.method === "OPTIONS" && allowed(path).length > 0) {
        return new Response(null, { status: 204, headers: PUBLIC_CORS_HEADERS });
      }
    })
    .onError(({ code, error, request }) => {
      const path = new URL(request.url).pathname;
      const cors = isPrivatePath(path) ? {} : PUBLIC_CORS_HEADERS;
      if (code === "NOT_FOUND") {
        const methods = allowed(path);
        if (methods.length > 0) {
          const allow = [...new Set([...methods, "OPTIONS"])].join(", ");
          return json(errorBody("METHOD_NOT_ALLOWED", "Method not allowed"), 405, { ...cors, allow });
        }
        return json(errorBody("NOT_FOUND", "Not found"), 404, cors);
      }
      if (code === "PARSE") return json(errorBody("INVALID_JSON", "Invalid JSON body"), 400, cors);
      if (code === "VALIDATION") return json(errorBody("INVALID_INPUT", "Invalid request"), 400, cors);
      deps.log.error("unhandled_error", {
        path,
        code: String(code),
        error: error instanceof Error ? error.message : String(error),
      });
      return json(errorBody("INTERNAL_ERROR", "Internal error"), 500, cors);
    })
    .use(healthRoutes(deps.ready))
    .use(easRoutes(deps))
    .use(trustAnchorRoutes(deps.trustAnchors))
    .use(identityRoutes())
    .use(deps.controller ? controllerRoutes(deps.controller) : new Elysia())
    .use(deps.artifactTrust ? artifactTrustRoutes({ artifactTrust: deps.artifactTrust, log: deps.log }) : new Elysia())
    .use(deps.session ? sessionRoutes({ ...deps.session, log: deps.log }) : new Elysia())
    .use(docRoutes(deps.publicBaseUrl ?? "http://127.0.0.1:8080"))
    .use(deps.metricsText ? metricsRoute(deps.metricsText) : new Elysia());
}

/** `GET /metrics` in the Prometheus text format. */
function metricsRoute(text: () => Promise<string>) {
  return new Elysia({ name: "metrics-route" }).get("/metrics", async () =>
    new Response(await text(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } }));
}

/** `/openapi.json` and the human-readable page beside it (`/docs`). */
function docRoutes(serverUrl: string) {
  const doc = buildOpenApi(ROUTE_DOCS, { title: "Attestation Trust Services", version: "1.0.0", serverUrl });
  const body = JSON.stringify(doc);
  const page = renderApiPage(doc);
  return new Elysia({ name: "doc-routes" })
    .get("/openapi.json", () => new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } }))
    .get("/docs", () => new Response(page, { headers: { "content-type": "text/html; charset=utf-8" } }));
}
