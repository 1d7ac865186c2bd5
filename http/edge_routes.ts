/**
 * The RPC-free public routes answered at the server's edge, ahead of Elysia (issue 28): trust anchors and
 * identity-resolve under their paths. Elysia's routing, context and hooks cost about three times the route's own
 * work on these routes; here a request of one of their exact paths (as {@link pathOf} reads it, the reading every
 * guard of the app uses) gets the answer the app would give, from the very answer functions the app's routes use,
 * behind the same guards as the app's `onRequest` hook applies to a public path (http/conventions.ts, whose
 * {@link allowOf} and {@link declaresTooLarge} it reads):
 *
 * - `OPTIONS` is 204 with the public CORS headers;
 * - a method the path does not serve (`HEAD` included) is 405 `METHOD_NOT_ALLOWED` with `Allow`;
 * - a declared body over the limit ({@link declaresTooLarge}) is 413 before a byte of it is read, and a longer body is cut off
 *   while it is read ({@link readBodyText}, the routes' own parser); a body that cannot be read is 400
 *   `INVALID_JSON` (Elysia's parse error);
 * - no content type is required (the app requires one on the session routes only).
 *
 * Every other path, trailing slashes and case variants included, goes to the app. The served methods are read from
 * the app's own route table: a path the app serves otherwise than the edge would (another method added on it) is
 * left to the app. The app builds its edge once its routes are mounted (http/app.ts `createApp`, its `edge`) and the
 * server is given it as a value (http/instrument.ts `instrumentedHandler`). `http/edge_routes_test.ts` sends the same corpus of requests to both and compares the answers,
 * the metrics and the access log.
 */
import { allowOf, declaresTooLarge } from "./conventions.ts";
import { errorBody } from "./errors.ts";
import { readBodyText, TOO_LARGE_MESSAGE } from "./routes/request.ts";

/**
 * The answer of one path at the edge. Synchronous unless it must read a body; undefined: the app answers this request
 * (a kept index answer the edge does not hold now).
 */
export type EdgeRoute = (request: Request) => Response | Promise<Response> | undefined;

/** The edge's routes, by path. */
export type EdgeRoutes = ReadonlyMap<string, EdgeRoute>;

/** What one path answers at the edge: a GET answer, or a POST answer to the body text. */
export type EdgeAnswer =
  | { readonly method: "GET"; readonly answer: () => Response }
  | { readonly method: "POST"; readonly answer: (body: unknown) => Response }
  /**
   * A GET answered at the edge only when `kept` has its answer now (decisions §21: a kept answer of the index reads,
   * http/index_answer_cache.ts); every other request of the path, other methods included, goes to the app.
   */
  | { readonly method: "GET"; readonly kept: (request: Request) => Response | undefined };

const JSON_TYPE = { "content-type": "application/json; charset=utf-8" };

/**
 * The edge routes of `answers` (path → answer) with the public route guards; `cors` goes on every answer. A path
 * is answered at the edge only when the app serves it with exactly the one method of its answer.
 */
export function publicEdgeRoutes(
  answers: ReadonlyMap<string, EdgeAnswer>,
  cors: Readonly<Record<string, string>>,
  routes: readonly { readonly path: string; readonly method: string }[],
): EdgeRoutes {
  const served = new Map<string, Set<string>>();
  for (const route of routes) {
    const methods = served.get(route.path) ?? new Set<string>();
    methods.add(route.method.toUpperCase());
    served.set(route.path, methods);
  }
  const preflight = { status: 204, headers: new Headers(cors) };
  const tooLarge = JSON.stringify(errorBody("PAYLOAD_TOO_LARGE", TOO_LARGE_MESSAGE));
  const tooLargeInit = { status: 413, headers: new Headers({ ...JSON_TYPE, ...cors }) };
  const edge = new Map<string, EdgeRoute>();
  for (const [path, route] of answers) {
    const methods = served.get(path);
    if (methods === undefined || methods.size !== 1 || !methods.has(route.method)) continue;
    // The app's 405: its body and headers, the same `Allow` (the served method, then OPTIONS).
    const notAllowed = JSON.stringify(errorBody("METHOD_NOT_ALLOWED", "Method not allowed"));
    const notAllowedInit = { status: 405, headers: new Headers({ ...JSON_TYPE, ...cors, allow: allowOf([route.method]) }) };
    const refuse = () => new Response(notAllowed, notAllowedInit);
    if ("kept" in route) {
      const kept = route.kept;
      edge.set(path, (request) => request.method === "GET" ? kept(request) : undefined);
    } else if (route.method === "GET") {
      const answer = route.answer;
      edge.set(path, (request) => {
        const method = request.method;
        if (method === "GET") return answer();
        if (method === "OPTIONS") return new Response(null, preflight);
        return refuse();
      });
    } else {
      const answer = route.answer;
      // A body that cannot be read is Elysia's parse error: 400 INVALID_JSON, as the answer gives for no body.
      const unreadable = () => answer(undefined);
      edge.set(path, (request) => {
        const method = request.method;
        if (method === "OPTIONS") return new Response(null, preflight);
        if (method !== "POST") return refuse();
        if (declaresTooLarge(request)) return new Response(tooLarge, tooLargeInit);
        return readBodyText({ request }).then(answer, unreadable);
      });
    }
  }
  return edge;
}
