/**
 * The CORS rules of every route, written once (decisions §1, §19): `*` on the public routes, an origin allowlist with
 * credentials on the session and private routes, any origin without credentials for a bearer-only request. The app's
 * hooks (http/conventions.ts) and the edge (http/edge_routes.ts) read them here.
 */

/** CORS headers of every public route (decisions §1). */
export const PUBLIC_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "Content-Type, Idempotency-Key, Prefer",
  "access-control-expose-headers": "Idempotent-Replayed, Retry-After, Location",
  "access-control-max-age": "600",
};

/** CORS headers of the session routes for an allowed origin: that origin, with credentials. */
export function privateCorsHeaders(origin: string): Record<string, string> {
  return {
    "access-control-allow-origin": origin,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "GET, POST, PATCH, DELETE, OPTIONS",
    // x402 (decisions §13): a browser client may pay, and must read the terms and the settlement; OAuth (§19):
    // a browser client may send its access token and must read the challenge.
    // Decisions §23: a write may carry an idempotency key and ask to be answered at once; a client reads whether an
    // answer is a replay, when to retry, and where its submission is.
    "access-control-allow-headers": "Content-Type, PAYMENT-SIGNATURE, Authorization, Idempotency-Key, Prefer",
    "access-control-expose-headers": "PAYMENT-REQUIRED, PAYMENT-RESPONSE, WWW-Authenticate, Idempotent-Replayed, Retry-After, Location",
    "access-control-max-age": "600",
    vary: "Origin",
  };
}

/**
 * CORS of a private route called with a bearer token and no cookie (decisions §19): any origin, never with
 * credentials, so a page of any site can use a token it holds but never the person's session.
 */
export const BEARER_CORS_HEADERS: Readonly<Record<string, string>> = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, PATCH, DELETE, OPTIONS",
  "access-control-allow-headers": "Content-Type, Authorization, Idempotency-Key, Prefer",
  "access-control-expose-headers": "WWW-Authenticate, Idempotent-Replayed, Retry-After, Location",
  "access-control-max-age": "600",
};

/** Whether a request is bearer-only: an `Authorization: Bearer` header and no cookie at all. */
export function bearerOnlyRequest(request: Request): boolean {
  return /^bearer\b/i.test(request.headers.get("authorization") ?? "") && !request.headers.has("cookie");
}

/** Whether a preflight asks to send `Authorization` (a bearer client) from an origin not on the allowlist. */
export function bearerPreflight(request: Request): boolean {
  return request.method === "OPTIONS" && /(^|,)\s*authorization\s*(,|$)/i.test(request.headers.get("access-control-request-headers") ?? "");
}

/**
 * The path of a request URL, without building a URL object on the hot path. A request without a `Host` (HTTP/1.0, as
 * a balancer's health check sends it) has a URL that is the path alone: `/readyz`, not `/` (the console's page answered
 * HAProxy's check of /readyz with 200, whatever the instance's readiness).
 */
export function pathOf(url: string): string {
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/** Session and private routes use an origin allowlist with credentials instead of `*` (decisions §1). */
export function isPrivatePath(path: string): boolean {
  return path.startsWith("/api/private/") || path.startsWith("/v1/session/") || path === "/v1/controller-witness" || path.startsWith("/v1/paid/");
}
