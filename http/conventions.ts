/**
 * The conventions every route shares, written once and applied by the app's hooks (and, for the public reads, by the
 * edge through {@link allowOf} and {@link declaresTooLarge}): CORS (http/cors.ts), OPTIONS 204, 405 with `Allow` for
 * any method a known path does not serve (HEAD included), 404 `NOT_FOUND`, 413 `PAYLOAD_TOO_LARGE`, the private
 * routes' origin and body-type guard, one error body, `elapsed` on the EAS paths, no upstream text.
 */
import type { Elysia } from "elysia";
import type { Logger } from "../ports/logger.ts";
import { BEARER_CORS_HEADERS, bearerOnlyRequest, bearerPreflight, isPrivatePath, pathOf, privateCorsHeaders, PUBLIC_CORS_HEADERS } from "./cors.ts";
import { elapsedSince, errorBody, json, statusOf } from "./errors.ts";
import { EAS_PATHS } from "./routes/delegation/mod.ts";
import { MCP_CORS_HEADERS, MCP_PATH } from "./routes/mcp/mod.ts";
import { MAX_BODY_BYTES, TOO_LARGE_MESSAGE } from "./routes/request.ts";

/** Paths whose every answer, errors included, carries `elapsed` (decisions §2). */
export const ELAPSED_PATHS: ReadonlySet<string> = new Set(EAS_PATHS);

/** The `Allow` header of a path serving `methods`: those methods, then OPTIONS. */
export function allowOf(methods: Iterable<string>): string {
  return [...methods, "OPTIONS"].join(", ");
}

/** Whether a request declares a body over the limit (any method but GET; a longer body is cut off as it is read). */
export function declaresTooLarge(request: Request): boolean {
  return request.method !== "GET" && Number(request.headers.get("content-length") ?? 0) > MAX_BODY_BYTES;
}

/** The app the conventions read their route table from. */
type RoutedApp = { readonly routes: readonly { readonly path: string; readonly method: string }[] };

/** What the hooks keep: the route table (read at the first request), the allowlist, when the EAS requests began. */
type Conventions = {
  readonly app: RoutedApp;
  served: Served | undefined;
  readonly origins: ReadonlySet<string>;
  readonly started: WeakMap<Request, number>;
  readonly log: Logger;
};

/** Options of {@link withConventions}. */
export type ConventionsOptions = {
  /** Origins allowed to call the session routes with credentials (CORS_ORIGINS plus the public origin). */
  readonly origins?: readonly string[] | undefined;
  readonly log: Logger;
};

/**
 * The app's route table by path: every path as written, and the paths with parameters split once into their segments
 * (in route order), so a request to such a path, or to no route, does not split the table again.
 */
type Served = {
  readonly exact: ReadonlyMap<string, ReadonlySet<string>>;
  readonly shapes: readonly { readonly segments: readonly string[]; readonly methods: ReadonlySet<string> }[];
};

/** The route table of `app` (read at the first request, when every route is mounted). */
function servedOf(app: RoutedApp): Served {
  const exact = new Map<string, Set<string>>();
  for (const route of app.routes) {
    const methods = exact.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    exact.set(route.path, methods);
  }
  const shapes = [...exact].filter(([pattern]) => pattern.includes(":")).map(([pattern, methods]) => ({ segments: pattern.split("/"), methods }));
  return { exact, shapes };
}

/** Whether the path's segments fit a route's: a parameter takes any non-empty segment, the rest are equal. */
function fits(segments: readonly string[], parts: readonly string[]): boolean {
  if (segments.length !== parts.length) return false;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment.startsWith(":") ? parts[i] === "" : segment !== parts[i]) return false;
  }
  return true;
}

/** The methods a path serves, from the app's route table; a route with parameters serves every path of its shape. */
function methodsOf(state: Conventions, path: string): ReadonlySet<string> | undefined {
  state.served ??= servedOf(state.app);
  const exact = state.served.exact.get(path);
  if (exact !== undefined) return exact;
  const parts = path.split("/");
  for (const shape of state.served.shapes) if (fits(shape.segments, parts)) return shape.methods;
  return undefined;
}

/** An error answer of the app itself: the one error body, plus `elapsed` on the EAS paths (decisions §2). */
function failure(state: Conventions, request: Request, path: string, code: string, message: string, headers: Record<string, string>): Response {
  const body = errorBody(code, message);
  const status = statusOf(code);
  if (!ELAPSED_PATHS.has(path)) return json(body, status, headers);
  return json({ ...body, elapsed: elapsedSince(state.started.get(request) ?? performance.now()) }, status, headers);
}

/** 405 with `Allow` for a method the path does not serve; 413 for a declared body over the limit. */
function refuse(state: Conventions, request: Request, path: string, methods: ReadonlySet<string>, cors: Record<string, string>) {
  if (!methods.has(request.method)) {
    return failure(state, request, path, "METHOD_NOT_ALLOWED", "Method not allowed", { ...cors, allow: allowOf(methods) });
  }
  if (declaresTooLarge(request)) return failure(state, request, path, "PAYLOAD_TOO_LARGE", TOO_LARGE_MESSAGE, cors);
}

/**
 * Session routes: CORS for allowlisted origins only, with credentials. CSRF guard on every POST:
 * a browser origin must be allowlisted, and the body must be JSON (which a cross-site form cannot
 * send without a preflight that the allowlist refuses).
 */
function guardPrivate(state: Conventions, request: Request, path: string, set: { headers: Record<string, string | number> }) {
  const origin = request.headers.get("origin");
  const trusted = origin !== null && state.origins.has(origin);
  // A bearer request carries no cookie, so it cannot be forged across sites: no origin or body-type guard,
  // and CORS for any origin without credentials (decisions §19).
  if (!trusted && (bearerOnlyRequest(request) || bearerPreflight(request))) {
    Object.assign(set.headers, BEARER_CORS_HEADERS);
    const methods = methodsOf(state, path);
    if (methods === undefined) return;
    if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: BEARER_CORS_HEADERS });
    return refuse(state, request, path, methods, BEARER_CORS_HEADERS);
  }
  const cors = trusted ? privateCorsHeaders(origin) : {};
  Object.assign(set.headers, cors);
  const methods = methodsOf(state, path);
  if (methods === undefined) return;
  const method = request.method;
  if (method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
  const refused = refuse(state, request, path, methods, cors);
  if (refused) return refused;
  // Every method that changes state (not only POST) needs an allowlisted origin and a JSON body.
  if (method === "GET" || method === "HEAD") return;
  if (origin !== null && !trusted) {
    return json(errorBody("ORIGIN_NOT_ALLOWED", "Origin not allowed"), 403);
  }
  // A DELETE carries no body: its allowlisted origin is the guard (a cross-site DELETE is always preflighted).
  if (method !== "DELETE" && !/^application\/json\s*(;|$)/i.test(request.headers.get("content-type") ?? "")) {
    return json(errorBody("UNSUPPORTED_MEDIA_TYPE", "Content-Type must be application/json"), 415, cors);
  }
}

/** Every request, before its route: the guards of its path. */
function guard(state: Conventions, request: Request, set: { headers: Record<string, string | number> }) {
  const path = pathOf(request.url);
  if (isPrivatePath(path)) return guardPrivate(state, request, path, set);
  if (ELAPSED_PATHS.has(path)) state.started.set(request, performance.now());
  // `/mcp` takes the headers of an MCP client (session id, protocol version, bearer token), never a cookie.
  const cors = path === MCP_PATH ? MCP_CORS_HEADERS : PUBLIC_CORS_HEADERS;
  Object.assign(set.headers, cors);
  const methods = methodsOf(state, path);
  if (methods === undefined) return;
  const method = request.method;
  if (method === "GET" && methods.has("GET")) return;
  if (method === "OPTIONS") return new Response(null, { status: 204, headers: cors });
  return refuse(state, request, path, methods, cors);
}

/** Elysia's errors as the one error body: 404 (405 where the path is known), a parse error, a validation error, a bug. */
function answerError(state: Conventions, code: unknown, error: unknown, request: Request): Response {
  const path = pathOf(request.url);
  const cors = isPrivatePath(path) ? {} : PUBLIC_CORS_HEADERS;
  if (code === "NOT_FOUND") {
    const methods = methodsOf(state, path);
    if (methods !== undefined) {
      return failure(state, request, path, "METHOD_NOT_ALLOWED", "Method not allowed", { ...cors, allow: allowOf(methods) });
    }
    return failure(state, request, path, "NOT_FOUND", "Not found", cors);
  }
  if (code === "PARSE") return failure(state, request, path, "INVALID_JSON", "Invalid JSON body", cors);
  if (code === "VALIDATION") return failure(state, request, path, "INVALID_INPUT", "Invalid request", cors);
  state.log.error("unhandled_error", { path, code: String(code), error: error instanceof Error ? error.message : String(error) });
  return failure(state, request, path, "INTERNAL_ERROR", "Internal error", cors);
}

/**
 * Issue 28: the CORS headers the hooks put in `set.headers` are moved onto the route's Response. Left there, Elysia
 * answers every such request with a copy: new Headers, and a new Response reading the old one's body as a stream.
 * The route's own headers win, as in Elysia's merge.
 */
function moveHeaders(responseValue: unknown, set: { status?: unknown; cookie?: unknown; headers: unknown }): void {
  if (!(responseValue instanceof Response) || set.status !== 200 || set.cookie !== undefined) return;
  const headers = set.headers as Record<string, string | number>;
  for (const name in headers) {
    if (name === "set-cookie") return;
  }
  for (const name in headers) {
    if (!responseValue.headers.has(name)) responseValue.headers.set(name, String(headers[name]));
    delete headers[name];
  }
}

/**
 * A path parameter Elysia cannot percent-decode (`%ff`, a cut `%E0%A4%A`) reaches its route as null, which no
 * route's `params` admits (a bug answered 500): it is given back as the segment as sent, which names nothing, so
 * the route answers as for any other unknown id (404 `CLIENT_NOT_FOUND`, `WEBHOOK_NOT_FOUND`, ...).
 */
function undecodedParams(params: Record<string, string | null | undefined> | undefined, route: string, request: Request): void {
  if (params === undefined) return;
  let segments: string[] | undefined;
  for (const name in params) {
    if (params[name] !== null) continue;
    segments ??= pathOf(request.url).split("/");
    params[name] = segments[route.split("/").indexOf(`:${name}`)] ?? "";
  }
}

/** Gives `app` the shared conventions' hooks; the routes mounted after it follow them. */
export function withConventions(app: Elysia, options: ConventionsOptions): Elysia {
  const state: Conventions = { app, served: undefined, origins: new Set(options.origins ?? []), started: new WeakMap(), log: options.log };
  return app
    .onRequest(({ request, set }) => guard(state, request, set))
    .onTransform({ as: "global" }, ({ params, route, request }) => undecodedParams(params, route, request))
    .onError(({ code, error, request }) => answerError(state, code, error, request))
    .onAfterHandle({ as: "global" }, ({ responseValue, set }) => moveHeaders(responseValue, set)) as unknown as Elysia;
}
