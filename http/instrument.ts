import { currentRequestContext, type RequestContext, requestIdFrom, withRequestContext } from "./request_context.ts";
import type { EdgeRoute, EdgeRoutes } from "./edge_routes.ts";
import type { Logger } from "../ports/logger.ts";
import type { Metrics } from "../ports/metrics.ts";
import { ELAPSED_PATHS } from "./conventions.ts";
import { isPrivatePath, pathOf, PUBLIC_CORS_HEADERS } from "./cors.ts";
import { elapsedSince, errorBody, json, statusOf } from "./errors.ts";
import { DELEGATED_ATTEST_BATCH_PATH, DELEGATED_ATTEST_PATHS, NONCE_PATHS, PRIVATE_RELAY_BATCH_PATH } from "./routes/delegation/mod.ts";
import { PAID_ALIASES } from "./x402_gate.ts";
import { classifyAddress } from "../domain/discovery/mod.ts";
import { arrivedBody, hasBody, routable, UNREAD, UNREADABLE } from "./arriving_body.ts";
import { createDeadlines } from "./deadlines.ts";

export { routable } from "./arriving_body.ts";
export { createDeadlines, CUT_FLUSH_MS, drainServer } from "./deadlines.ts";

/** The edge's own answers are 5xx: never kept by a cache (decisions §21). */
const NOT_KEPT: Readonly<Record<string, string>> = { "cache-control": "no-store" };

/**
 * The answer when the app itself throws: 500 `INTERNAL_ERROR` with no error text, CORS `*` on the
 * public paths (decisions §1: every response, errors included) and `elapsed` on the EAS routes. The
 * session paths get no CORS header here: their allowlist lives in the app.
 */
function fallbackResponse(path: string, started: number, now: number): Response {
  const body = errorBody("INTERNAL_ERROR", "Internal error");
  return json(
    ELAPSED_PATHS.has(path) ? { ...body, elapsed: elapsedSince(started, now) } : body,
    500,
    isPrivatePath(path) ? NOT_KEPT : { ...PUBLIC_CORS_HEADERS, ...NOT_KEPT },
  );
}

/** 404 NOT_FOUND for a path no route has, with CORS as {@link fallbackResponse}. */
function notFoundResponse(path: string): Response {
  return json(errorBody("NOT_FOUND", "Not found"), 404, isPrivatePath(path) ? NOT_KEPT : { ...PUBLIC_CORS_HEADERS, ...NOT_KEPT });
}

/**
 * How long a request may go unanswered before the server answers for its route (issue 15): below the server's
 * idle timeout (main.ts SERVER_IDLE_TIMEOUT_SECONDS, 255 s, Bun's maximum), which otherwise cuts the connection
 * with no answer at all, and above every lookup whose worst case is bounded with the default settings (artifact
 * trust about 170 s, a nonce read 20 s, discovery 6 s; README, "Timeouts"). Only a submission can wait longer
 * (its receipt alone for two minutes, after up to eight RPC exchanges of 20 s), and a node answering slowly but
 * in time stretches any scan: those get the deadline's answer.
 */
export const ROUTE_DEADLINE_MS = 245_000;

/**
 * How long a request's body may take to arrive, from its headers to its last byte (issue 33: one client dripping a
 * byte every 2 s kept a draining instance alive for four minutes, as the idle timeout restarts with every byte). Far
 * below {@link ROUTE_DEADLINE_MS}: the largest valid body (8 MiB) arrives in it at about 7 Mbit/s. `BODY_TIMEOUT_MS`.
 */
export const BODY_TIMEOUT_MS = 10_000;

/**
 * Routes that broadcast a transaction: past the deadline their outcome is not known yet. The batches and the paid
 * aliases too (found by review): they answered 502 `NETWORK_ERROR`, "nothing was done", for a batch maybe broadcast.
 */
const SUBMISSION_PATHS: ReadonlySet<string> = new Set([
  ...DELEGATED_ATTEST_PATHS,
  DELEGATED_ATTEST_BATCH_PATH,
  "/api/private/relay/eas/delegated-attest",
  PRIVATE_RELAY_BATCH_PATH,
  "/v1/controller-witness",
  "/api/private/controller-witness",
  PAID_ALIASES.relay,
  PAID_ALIASES.witness,
]);

/** Routes whose only dependency is the chain (decisions §2: 500 `RPC_ERROR` when it does not answer). */
const CHAIN_READ_PATHS: ReadonlySet<string> = new Set([...NONCE_PATHS, "/api/private/relay/eas/nonce"]);

/**
 * The answer for a route still working at the deadline, in the route's own terms: a submission 503
 * `OUTCOME_UNKNOWN` (the same request again says what became of it: 409 with the transaction, or accepted anew once
 * released), a nonce read 500 `RPC_ERROR`, any other lookup 502 `NETWORK_ERROR` (decisions §7). CORS and `elapsed`
 * as {@link fallbackResponse}; `now` on the clock `started` was read from.
 */
export function deadlineResponse(path: string, started: number, now: number): Response {
  const [code, message] = SUBMISSION_PATHS.has(path)
    ? ["OUTCOME_UNKNOWN", "The submission did not complete in time; its outcome is not known yet"]
    : CHAIN_READ_PATHS.has(path)
    ? ["RPC_ERROR", "The chain did not answer in time"]
    : ["NETWORK_ERROR", "A dependency did not answer in time"];
  const body = errorBody(code, message);
  return json(
    ELAPSED_PATHS.has(path) ? { ...body, elapsed: elapsedSince(started, now) } : body,
    statusOf(code),
    isPrivatePath(path) ? NOT_KEPT : { ...PUBLIC_CORS_HEADERS, ...NOT_KEPT },
  );
}

/**
 * The answer to a request whose body was still arriving when {@link BODY_TIMEOUT_MS} passed (408 `REQUEST_TIMEOUT`)
 * or the service began to drain (503 `SHUTTING_DOWN`, as every request that comes while it drains), or whose body
 * could not be read (400 `INVALID_JSON`, the routes' own answer to that). CORS and `elapsed` as
 * {@link fallbackResponse}; `Connection: close`, since the rest of the body is never read (Bun reads a body nobody
 * reads to its end before it closes the connection or serves the next request on it).
 */
function unreadBodyResponse(path: string, started: number, now: number, code: "REQUEST_TIMEOUT" | "SHUTTING_DOWN" | "INVALID_JSON"): Response {
  const message = code === "REQUEST_TIMEOUT"
    ? "The request body did not arrive in time"
    : code === "SHUTTING_DOWN"
    ? "The service is shutting down; send the request again"
    : "Request body could not be read";
  const body = errorBody(code, message);
  const headers: Record<string, string> = isPrivatePath(path)
    ? { ...NOT_KEPT, connection: "close" }
    : { ...PUBLIC_CORS_HEADERS, ...NOT_KEPT, connection: "close" };
  if (code === "SHUTTING_DOWN") headers["retry-after"] = "1";
  return json(ELAPSED_PATHS.has(path) ? { ...body, elapsed: elapsedSince(started, now) } : body, statusOf(code), headers);
}

/** The request handler of `Bun.serve`, and how the server drains (see {@link drainServer}). */
export type InstrumentedHandler = {
  (request: Request, server?: PeerAddresses): Response | Promise<Response>;
  /**
   * The service is stopping (SIGTERM): every answer from now on carries `Connection: close`, so that its client opens
   * a new connection for its next request (to another instance, once a balancer has taken this one out) rather than
   * reuse one the stop will close, perhaps as its next request is on the way (a bare reset, no answer).
   */
  readonly quiesce: () => void;
  /**
   * Starts draining (and {@link quiesce}): every request that comes from now on, and every one whose body is still
   * arriving, is answered 503 `SHUTTING_DOWN` with `Connection: close`; the requests under way go on.
   */
  readonly drain: () => void;
  /** Answers every request still under way now with its route's deadline answer ({@link deadlineResponse}). */
  readonly cut: () => void;
};

/**
 * What the server serves: the app's route table (for the metrics' route labels), its way in, and its edge
 * (http/app.ts `HttpApp`); an app without `edge` has every request answered by `handle`.
 */
export type ServedApp = {
  readonly routes: readonly { readonly path: string; readonly method: string }[];
  readonly handle: (request: Request) => Promise<Response>;
  readonly edge?: EdgeRoutes | undefined;
};

/** What `Bun.serve` passes as its second argument that the handler uses: the peer address of a request. */
export type PeerAddresses = { readonly requestIP: (request: Request) => { readonly address: string } | null };

/**
 * Serves the app with a request id (the caller's `X-Request-Id` when plain, else a fresh one; echoed
 * in the response and carried by every log line of the request), one access-log line at `debug` (at
 * `info` it cost a quarter of the throughput of the cheap routes in bench/load.ts), and request
 * count and latency by route and status. Unknown paths are labelled `unmatched` so a scan cannot
 * blow up the series count. A request the app has not answered after `deadlineMs` (default
 * {@link ROUTE_DEADLINE_MS}) is answered with {@link deadlineResponse}; its work goes on unobserved.
 * The paths of the app's edge routes (its `edge`, http/edge_routes.ts: trust anchors, identity-resolve, kept index
 * answers) are answered here without Elysia, with the same answers and the same bookkeeping (issue 28).
 */
export function instrumentedHandler(
  app: ServedApp,
  deps: {
    metrics: Metrics;
    log: Logger;
    trustProxy?: number | undefined;
    deadlineMs?: number | undefined;
    /** Default {@link BODY_TIMEOUT_MS}; never longer than the deadline. */
    bodyTimeoutMs?: number | undefined;
    /** The clock of the elapsed times (the metrics, the log lines, `elapsed`), in ms; default `performance.now`. */
    nowMs?: (() => number) | undefined;
  },
): InstrumentedHandler {
  const deadlineMs = deps.deadlineMs ?? ROUTE_DEADLINE_MS;
  const bodyTimeoutMs = Math.min(deps.bodyTimeoutMs ?? BODY_TIMEOUT_MS, deadlineMs);
  const now = deps.nowMs ?? (() => performance.now());
  let quiescing = false;
  let draining = false;
  let cutting = false;
  // The label objects of each (route, method, status), made once: the registry keeps their text by identity
  // (issue 28: sorting and joining labels on every request cost more than the rest of the bookkeeping).
  const labelSets = new Map<string, { readonly count: Record<string, string>; readonly duration: Record<string, string> }>();
  const labelsOf = (route: string, method: string, status: string) => {
    const key = `${route} ${method} ${status}`;
    let labels = labelSets.get(key);
    if (labels === undefined) {
      // Bounded: routes are the app's own (or `unmatched`), methods and statuses few.
      if (labelSets.size >= 4_096) labelSets.clear();
      labels = { count: { route, method, status }, duration: { route, status } };
      labelSets.set(key, labels);
    }
    return labels;
  };
  let routes: Set<string> | undefined;
  const routeOf = (path: string) => {
    routes ??= new Set(app.routes.map((r) => r.path));
    return routes.has(path) ? path : "unmatched";
  };
  /** The bookkeeping of every answer: metrics, the access-log line, the request id header. */
  const finish = (request: Request, requestId: string, route: string, started: number, response: Response) => {
    const seconds = (now() - started) / 1000;
    const status = String(response.status);
    const labels = labelsOf(route, request.method, status);
    deps.metrics.increment("ats_http_requests_total", labels.count);
    deps.metrics.observe("ats_http_request_duration_seconds", seconds, labels.duration);
    deps.log.debug("request", { method: request.method, route, status: response.status, ms: Math.round(seconds * 1000) });
    response.headers.set("x-request-id", requestId);
    // Every answer is what its Content-Type says (JSON bodies carry chain data anyone can write): never sniffed.
    response.headers.set("x-content-type-options", "nosniff");
    // A body refused as too large is not read to its end (arrivedBody): the connection is closed rather than drained;
    // stopping, it is closed after every answer (Bun closes it once written): the next request goes on a new one.
    if (quiescing || response.status === 413) response.headers.set("connection", "close");
    return response;
  };
  const deadlines = createDeadlines(deadlineMs);
  /** The bodies still arriving, each until {@link BODY_TIMEOUT_MS}; all cut at once when the service drains. */
  const bodies = createDeadlines(bodyTimeoutMs);
  const unread = (path: string, started: number) => unreadBodyResponse(path, started, now(), draining ? "SHUTTING_DOWN" : "REQUEST_TIMEOUT");
  /**
   * The answer, or the deadline's ({@link deadlineResponse}) when it has not come after `deadlineMs`. The deadline's
   * log line names its request itself (the shared timer runs in another's context) and the time it ran, as `elapsed`.
   */
  const withDeadline = (request: Request, requestId: string, path: string, started: number, answer: Promise<Response>): Promise<Response> =>
    deadlines.race(answer, () => {
      const at = now();
      deps.log.warn(cutting ? "request_cut_at_shutdown" : "request_deadline", { requestId, method: request.method, path, ms: Math.max(0, Math.round(at - started)) });
      return deadlineResponse(path, started, at);
    });
  /**
   * A request for the app: its body read first, within {@link BODY_TIMEOUT_MS} ({@link arrivedBody}), then Elysia
   * routes the path the guards read ({@link routable}).
   */
  const serveByApp = async (request: Request, requestId: string): Promise<Response> => {
    const started = now();
    const path = pathOf(request.url);
    let response: Response;
    try {
      const routed = hasBody(request) ? await bodies.race<Request | typeof UNREAD | typeof UNREADABLE>(arrivedBody(request), () => UNREAD) : routable(request);
      if (routed === UNREAD) response = unread(path, started);
      else if (routed === UNREADABLE) response = unreadBodyResponse(path, started, now(), "INVALID_JSON");
      else {
        response = await withDeadline(request, requestId, path, started, app.handle(routed));
      }
    } catch (error) {
      deps.log.error("request_failed", { error: error instanceof Error ? error.message : String(error) });
      response = fallbackResponse(path, started, now());
    }
    return finish(request, requestId, routeOf(path), started, response);
  };
  /**
   * A request of a path the edge answers (http/edge_routes.ts): the same bookkeeping, the body's deadline
   * ({@link BODY_TIMEOUT_MS}) only while a body is read (the rest of the answer is synchronous), no Elysia. Its path is an app route, so its own label. A
   * synchronous answer is given back as it is, not behind a promise of it (issue 28: a promise and its reaction per
   * request, on the cheapest routes).
   */
  const serveAtEdge = (request: Request, requestId: string, path: string, edgeRoute: EdgeRoute): Response | Promise<Response> => {
    const started = now();
    let answer: Response | Promise<Response> | undefined;
    try {
      answer = edgeRoute(request);
    } catch (error) {
      return failedAtEdge(request, requestId, path, started, error);
    }
    // Not the edge's to answer now (a kept index answer it does not hold): the app's way, as any other path.
    if (answer === undefined) return serveByApp(request, requestId);
    if (answer instanceof Response) return finish(request, requestId, path, started, answer);
    return bodies.race(answer, () => unread(path, started)).then(
      (response) => finish(request, requestId, path, started, response),
      (error: unknown) => failedAtEdge(request, requestId, path, started, error),
    );
  };
  /** An edge answer that threw: logged, and the app's 500 in its place. */
  const failedAtEdge = (request: Request, requestId: string, path: string, started: number, error: unknown): Response => {
    deps.log.error("request_failed", { error: error instanceof Error ? error.message : String(error) });
    return finish(request, requestId, path, started, fallbackResponse(path, started, now()));
  };
  const edge = app.edge;
  const handler = (request: Request, server?: PeerAddresses): Response | Promise<Response> => {
    const requestId = requestIdFrom(request.headers.get("x-request-id"));
    if (draining) {
      const path = pathOf(request.url);
      const at = now();
      return finish(request, requestId, routeOf(path), at, unreadBodyResponse(path, at, at, "SHUTTING_DOWN"));
    }
    // No path of this service holds U+0000 (`%00`): such an id in a path reached PostgreSQL's text, which cannot hold it,
    // and answered 500 there (404 on SQLite). 404, as any path no route has.
    if (request.url.includes("%00")) {
      const path = pathOf(request.url);
      if (path.includes("%00")) return finish(request, requestId, "unmatched", now(), notFoundResponse(path));
    }
    const context = new ServedRequest(requestId, request, server, deps.trustProxy ?? 0);
    if (edge !== undefined) {
      const path = pathOf(request.url);
      const edgeRoute = edge.get(path);
      if (edgeRoute !== undefined) return withRequestContext(context, serveAtEdge, request, requestId, path, edgeRoute);
    }
    return withRequestContext(context, serveByApp, request, requestId);
  };
  return Object.assign(handler, {
    quiesce: () => void (quiescing = true),
    drain: () => {
      draining = quiescing = true;
      bodies.expireAll();
    },
    cut: () => {
      cutting = true;
      deadlines.expireAll();
    },
  });
}

/** The context of a request served by {@link instrumentedHandler}; the client address worked out when a route asks. */
class ServedRequest implements RequestContext {
  #address: { readonly value: string | undefined } | undefined;
  constructor(
    readonly requestId: string,
    private readonly request: Request,
    private readonly server: PeerAddresses | undefined,
    private readonly trustProxy: number,
  ) {}
  // Most routes never ask (the relays' per-address limits do): it costs a native lookup.
  get clientAddress(): string | undefined {
    this.#address ??= { value: clientAddressOf(this.request, this.server?.requestIP(this.request)?.address, this.trustProxy) };
    return this.#address.value;
  }
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
