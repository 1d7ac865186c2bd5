/**
 * x402 for Elysia on Bun (x402_offer_receipt.md §2.4–2.5, option (a)): a fetch-level wrapper around
 * `app.handle` driven by the official `x402HTTPResourceServer`, so Elysia itself is untouched and the
 * same wrapper fits any `Request → Response` handler.
 *
 * v2: `PAYMENT-SIGNATURE` in, `PAYMENT-REQUIRED` / `PAYMENT-RESPONSE` out, through core.
 * v1 (core emits v2 only): every 402 also carries the v1 JSON body (`x402Version: 1`, `maxAmountRequired`,
 * v1 network names, top-level `extensions` with the offers); an `X-PAYMENT` request is verified and
 * settled with the facilitator directly and answered with `X-PAYMENT-RESPONSE`, its receipt signed by
 * the same issuer over the same canonical URL. v2 clients read the header first, so both coexist.
 *
 * CORS (§2.5) on everything the adapter answers for a protected route, and on did.json: `Access-Control-
 * Allow-Origin` (default `*`), `PAYMENT-REQUIRED`/`PAYMENT-RESPONSE`/`X-PAYMENT-RESPONSE` exposed, and a
 * preflight that allows the `PAYMENT-SIGNATURE` and `X-PAYMENT` request headers. Free routes are the app's.
 *
 * Receipts only for a 2xx answer: any other status cancels the verified payment and nothing settles.
 * Failures answer a fixed body: facilitator trouble 502 `FACILITATOR_ERROR`, anything else 500
 * `SERVER_ERROR`; upstream text never reaches the client.
 */
import {
  FacilitatorResponseError,
  type HTTPAdapter,
  type HTTPRequestContext,
  type HTTPResponseInstructions,
  type HTTPTransportContext,
  type RouteConfig,
  withPrivateCacheControl,
  type x402HTTPResourceServer,
} from "@x402/core/server";
import type { Logger } from "../ports/logger.ts";
import { type DidDocument, DID_DOCUMENT_PATH, didDocumentResponse } from "./did_document.ts";
import { errorName, failure, type PayState, paymentRequiredOf, render, type V1Options } from "./_shared.ts";
import { payV1, v1Body } from "./_v1.ts";

/** Options of {@link createX402Fetch}. */
export type X402FetchOptions = {
  /** The official HTTP resource server: routes, schemes, facilitator, and our extension registered. */
  readonly httpServer: x402HTTPResourceServer;
  /** The application: Elysia's `app.handle`, or any fetch handler. */
  readonly handle: (request: Request) => Response | Promise<Response>;
  /** Serves this document at `/.well-known/did.json` (JWS keys). */
  readonly didDocument?: DidDocument | undefined;
  /** x402 v1 (`X-PAYMENT`): the facilitator to verify and settle with, and the receipt signer. Omit to serve v2 only. */
  readonly v1?: V1Options | undefined;
  /**
   * CORS for protected routes and did.json: the origins allowed (default `*`); `false` leaves
   * `Access-Control-Allow-Origin` and preflights to the app (the payment headers are still exposed).
   */
  readonly cors?: false | { readonly origin?: string | readonly string[] | undefined; readonly maxAgeSeconds?: number | undefined } | undefined;
  readonly log?: Logger | undefined;
};

const EXPOSED = ["PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"];

/** Request headers a paying browser client sends: v2, v1, and the JSON body of a paid POST. */
const PAYMENT_REQUEST_HEADERS = ["PAYMENT-SIGNATURE", "X-PAYMENT", "Content-Type"];

/** Wraps an Elysia app (anything with `handle`) with x402 payments and offer/receipt signing. */
export function withX402(
  app: { handle: (request: Request) => Response | Promise<Response> },
  options: Omit<X402FetchOptions, "handle">,
): (request: Request) => Promise<Response> {
  return createX402Fetch({ ...options, handle: (request) => app.handle(request) });
}

/**
 * The server's `initialize()` (it asks the facilitator what it supports) run once and shared; a failure is not kept,
 * so the next request asks again once the facilitator is back.
 */
export function initializeOnce(httpServer: { initialize: () => Promise<void> }): () => Promise<void> {
  let initialized: Promise<void> | undefined;
  return () => {
    initialized ??= httpServer.initialize().catch((error: unknown) => {
      initialized = undefined;
      throw error;
    });
    return initialized;
  };
}

/** Builds the fetch handler: free routes pass through, protected routes pay first. */
export function createX402Fetch(options: X402FetchOptions): (request: Request) => Promise<Response> {
  const { httpServer, handle, log } = options;
  // Core matches routes privately; its protected-request hook is the one place that hands us the match.
  const routeOf = new WeakMap<HTTPAdapter, RouteConfig>();
  httpServer.onProtectedRequest((context, routeConfig) => {
    routeOf.set(context.adapter, routeConfig);
    return Promise.resolve();
  });
  const state: PayState = { httpServer, handle, log, routeOf, initialize: initializeOnce(httpServer), v1: options.v1 };

  const cors = options.cors === false ? undefined : { origin: options.cors?.origin ?? "*", maxAgeSeconds: options.cors?.maxAgeSeconds ?? 600 };

  return async function x402Fetch(request) {
    const url = new URL(request.url);
    if (options.didDocument !== undefined && url.pathname === DID_DOCUMENT_PATH && (request.method === "GET" || request.method === "HEAD")) {
      return withCors(didDocumentResponse(options.didDocument), request, cors);
    }
    const adapter = requestAdapter(request, url);
    const preflightMethod = request.method === "OPTIONS" ? request.headers.get("access-control-request-method") : null;
    if (preflightMethod !== null && cors !== undefined) {
      const protectedRoute = httpServer.requiresPayment({ adapter, path: url.pathname, method: preflightMethod.toUpperCase() });
      return protectedRoute ? preflight(request, preflightMethod, cors) : await handle(request);
    }
    const v2Header = adapter.getHeader("payment-signature");
    const v1Header = options.v1 === undefined ? undefined : adapter.getHeader("x-payment");
    const context: HTTPRequestContext = { adapter, path: url.pathname, method: request.method, paymentHeader: v2Header ?? v1Header };
    if (!httpServer.requiresPayment(context)) return await handle(request);
    return withCors(await pay(state, request, url, context, v1Header, v2Header), request, cors);
  };
}

async function pay(
  state: PayState,
  request: Request,
  url: URL,
  context: HTTPRequestContext,
  v1Header: string | undefined,
  v2Header: string | undefined,
): Promise<Response> {
  try {
    await state.initialize();
  } catch (error) {
    state.log?.error("x402.initialize_failed", { error: errorName(error) });
    return failure(502, "Payment facilitator unavailable", "FACILITATOR_ERROR");
  }
  try {
    if (v2Header === undefined && v1Header !== undefined && state.v1 !== undefined) {
      return await payV1(state, request, url, context, v1Header, state.v1);
    }
    return await payV2(state, request, context);
  } catch (error) {
    state.log?.error("x402.request_failed", { error: errorName(error) });
    return error instanceof FacilitatorResponseError
      ? failure(502, "Payment facilitator error", "FACILITATOR_ERROR")
      : failure(500, "Internal server error", "SERVER_ERROR");
  }
}


/** The v2 path, through core: verify, the work, settle after a 2xx. */
async function payV2(state: PayState, request: Request, context: HTTPRequestContext): Promise<Response> {
  const result = await state.httpServer.processHTTPRequest(context);
  if (result.type === "no-payment-required") return await state.handle(request);
  if (result.type === "payment-error") return withV1Body(render(result.response), result.response);
  const { paymentPayload, paymentRequirements, declaredExtensions, cancellationDispatcher, beforeHandlerSettlement } = result;
  let response: Response;
  try {
    response = await state.handle(request);
  } catch (error) {
    await cancellationDispatcher.cancel({ reason: "handler_threw", error });
    throw error;
  }
  if (response.status < 200 || response.status >= 300) {
    await cancellationDispatcher.cancel({ reason: "handler_failed", responseStatus: response.status });
    return response;
  }
  const body = new Uint8Array(await response.arrayBuffer());
  const responseHeaders: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    responseHeaders[key] = value;
  });
  const settled = await state.httpServer.processSettlement(
    paymentPayload,
    paymentRequirements,
    declaredExtensions,
    // Core types the body as Node's Buffer but only hands it to extensions; ours (and the official ones) never
    // read it, so the plain bytes go through and the adapter needs no Node API (decisions §26).
    { request: context, responseBody: body as unknown as HTTPTransportContext["responseBody"], responseHeaders },
    undefined,
    beforeHandlerSettlement,
  );
  if (!settled.success) return render(settled.response);
  const headers = new Headers(response.headers);
  headers.delete("settlement-overrides");
  for (const [key, value] of Object.entries(settled.headers)) headers.set(key, value);
  headers.set("cache-control", withPrivateCacheControl(response.headers.get("cache-control")));
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
}

/** A Request as core's HTTPAdapter. */
function requestAdapter(request: Request, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => request.headers.get(name) ?? undefined,
    getMethod: () => request.method,
    getPath: () => url.pathname,
    getUrl: () => url.href,
    getAcceptHeader: () => request.headers.get("accept") ?? "",
    getUserAgent: () => request.headers.get("user-agent") ?? "",
    getQueryParams: () => {
      const out: Record<string, string | string[]> = {};
      for (const key of new Set(url.searchParams.keys())) {
        const all = url.searchParams.getAll(key);
        out[key] = all.length === 1 ? all[0]! : all;
      }
      return out;
    },
    getQueryParam: (name) => {
      const all = url.searchParams.getAll(name);
      return all.length === 0 ? undefined : all.length === 1 ? all[0] : all;
    },
  };
}

const isEmptyJsonBody = (instructions: HTTPResponseInstructions) =>
  !instructions.isHtml && typeof instructions.body === "object" && instructions.body !== null &&
  Object.keys(instructions.body).length === 0;

/** Adds the v1 body to a default (empty-body) 402, leaving custom bodies and the HTML paywall alone. */
function withV1Body(response: Response, instructions: HTTPResponseInstructions): Response {
  if (instructions.status !== 402 || !isEmptyJsonBody(instructions)) return response;
  const paymentRequired = paymentRequiredOf(instructions);
  if (paymentRequired === undefined) return response;
  return new Response(JSON.stringify(v1Body(paymentRequired, paymentRequired.error)), { status: 402, headers: response.headers });
}

type Cors = { readonly origin: string | readonly string[]; readonly maxAgeSeconds: number };

/** The Allow-Origin value for this request, or undefined when its origin is not allowed. */
function allowedOrigin(request: Request, cors: Cors): string | undefined {
  if (cors.origin === "*") return "*";
  const origin = request.headers.get("origin");
  if (origin === null) return undefined;
  return (typeof cors.origin === "string" ? [cors.origin] : cors.origin).includes(origin) ? origin : undefined;
}

/** Adds a header's values to a comma-separated list header, each once (case-insensitively). */
function mergeList(headers: Headers, name: string, values: readonly string[]): void {
  const current = (headers.get(name) ?? "").split(",").map((v) => v.trim()).filter((v) => v !== "");
  const seen = new Set(current.map((v) => v.toLowerCase()));
  headers.set(name, [...current, ...values.filter((v) => !seen.has(v.toLowerCase()))].join(", "));
}

/**
 * CORS on a response the adapter answers: payment headers exposed (merged with the app's), and
 * Allow-Origin unless CORS is off or the app already chose one.
 */
function withCors(response: Response, request: Request, cors: Cors | undefined): Response {
  const headers = new Headers(response.headers);
  mergeList(headers, "access-control-expose-headers", EXPOSED);
  if (cors !== undefined && !headers.has("access-control-allow-origin")) {
    const origin = allowedOrigin(request, cors);
    if (origin !== undefined) headers.set("access-control-allow-origin", origin);
    if (cors.origin !== "*") mergeList(headers, "vary", ["Origin"]);
  }
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

/** A preflight for a protected route: the payment request headers allowed besides those asked for. */
function preflight(request: Request, method: string, cors: Cors): Response {
  const headers = new Headers({ "access-control-max-age": String(cors.maxAgeSeconds) });
  const origin = allowedOrigin(request, cors);
  if (cors.origin !== "*") headers.set("vary", "Origin");
  if (origin === undefined) return new Response(null, { status: 204, headers });
  headers.set("access-control-allow-origin", origin);
  headers.set("access-control-allow-methods", method.toUpperCase());
  const asked = (request.headers.get("access-control-request-headers") ?? "").split(",").map((h) => h.trim()).filter((h) => /^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(h));
  mergeList(headers, "access-control-allow-headers", [...PAYMENT_REQUEST_HEADERS, ...asked]);
  return new Response(null, { status: 204, headers });
}
