import { Elysia } from "elysia";
import type { Logger } from "../../ports/logger.ts";
import {
  BUILDER_CSP,
  parseEmbedParams,
  renderBuilderPage,
  REVIEW_BUILDER_PATH,
  renderParamErrorPage,
  renderReviewPage,
  REVIEW_EMBED_PATH,
  REVIEW_SCRIPT_PATH,
  REVIEW_STYLE_PATH,
  WIDGET_CSP,
  type WidgetBundle,
  type WidgetPageSettings,
} from "../../widgets/mod.ts";
import { errorBody, json } from "../errors.ts";
import { type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err, page } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** The review widget's query (decisions §29); widgets/embed_params.ts checks it and names a bad parameter on the page. */
export const WidgetEmbedQuery = t.Object({
  url: t.String({ description: "The app's domain (a bare domain or a URL); the subject is did:web of it, www. stripped" }),
  contract: t.String({ description: "The app's contract users interact with (0x and 40 hex digits)" }),
  chainId: t.String({ description: "The contract's chain id, a positive whole number" }),
  name: t.Optional(t.String({ description: "The app's name, at most 100 characters" })),
  icon: t.Optional(t.String({ description: "The app's icon, an https URL" })),
  wallet: t.Optional(t.String({ description: "The user's wallet, when the host page knows it (integrated mode needs it)" })),
  explorer: t.Optional(t.String({ description: "An Etherscan-compatible explorer API (https), for proof of interaction" })),
});

/** What the widget routes need. */
export type WidgetRoutesDeps = {
  /** The built script and stylesheet (embedded in the executable, built on first use from source). */
  readonly bundle: () => Promise<WidgetBundle>;
  /** Where reviews are written; undefined when the anchors name no user-review schema on the service's chain. */
  readonly settings: WidgetPageSettings | undefined;
  readonly log: Logger;
};

/**
 * Headers of every widget answer (decisions §29): its own strict policy with `frame-ancestors *` and no
 * `X-Frame-Options`, so any site may frame it (the console and OAuth pages keep refusing frames); no sniffing, no
 * referrer. Caching is the route's policy (`no-cache` with an ETag, http/route_docs.ts).
 */
export const WIDGET_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": WIDGET_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const HTML = "text/html; charset=utf-8";

/** Headers of the builder page: its own policy (the preview framed from the service), and never framed itself. */
const BUILDER_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": BUILDER_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
};

/** The review widget: `GET /widgets/reviews/embed`, the builder `GET /widgets/reviews/create`, their script and stylesheet. */
export function widgetRoutes(deps: WidgetRoutesDeps) {
  const built = async () => {
    try {
      return await deps.bundle();
    } catch (error) {
      deps.log.error("widget_bundle_failed", { error: error instanceof Error ? error.message : String(error) });
      return undefined;
    }
  };
  const internal = () => json(errorBody("INTERNAL_ERROR", "Internal error"), 500);
  const asset = (pick: (bundle: WidgetBundle) => string, type: string) => async () => {
    const bundle = await built();
    if (bundle === undefined) return internal();
    return new Response(pick(bundle), { headers: { ...WIDGET_HEADERS, "content-type": type } });
  };
  return new Elysia({ name: "widget-routes" })
    .get(REVIEW_EMBED_PATH, async ({ request }) => {
      const bundle = await built();
      if (bundle === undefined) return internal();
      const headers = { ...WIDGET_HEADERS, "content-type": HTML };
      const parsed = parseEmbedParams(new URL(request.url).searchParams);
      if (!parsed.ok) return new Response(renderParamErrorPage(parsed.error, bundle.version), { status: 400, headers });
      if (deps.settings === undefined) {
        const page = renderParamErrorPage({ param: "(none)", message: "this service takes no user reviews (no user-review schema in its trust anchors)" }, bundle.version);
        return new Response(page, { status: 503, headers });
      }
      return new Response(renderReviewPage(parsed.value, deps.settings, bundle.version), { headers });
    })
    .get(REVIEW_BUILDER_PATH, async () => {
      const bundle = await built();
      if (bundle === undefined) return internal();
      const chainName = deps.settings?.chainName ?? "the service's chain";
      const page = renderBuilderPage({ chainName, assetVersion: bundle.version, scriptPath: REVIEW_SCRIPT_PATH, stylePath: REVIEW_STYLE_PATH });
      return new Response(page, { headers: { ...BUILDER_HEADERS, "content-type": HTML } });
    })
    .get(REVIEW_SCRIPT_PATH, asset((bundle) => bundle.js, "text/javascript; charset=utf-8"))
    .get(REVIEW_STYLE_PATH, asset((bundle) => bundle.css, "text/css; charset=utf-8"));
}

/** The review widget (decisions §29): route declarations, gathered by http/route_docs.ts. */
export const WIDGET_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/widgets/reviews/embed"],
    auth: "public",
    cache: CACHE.revalidate,
    summary: "The review widget (decisions §29): a page any site may frame (frame-ancestors *), rating, text, confirmation, signing by the host page's wallet (the omatrust: postMessage protocol) or a wallet in the frame, sent to the public relay; strict Content-Security-Policy for its own script",
    query: WidgetEmbedQuery,
    responses: {
      200: page("The widget"),
      400: page("A parameter the widget cannot use, named on the page"),
      500: err("INTERNAL_ERROR (the widget's bundle could not be built)"),
      503: page("The service's trust anchors name no user-review schema on its chain"),
    },
  },
  {
    method: "get",
    paths: ["/widgets/reviews/create"],
    auth: "public",
    cache: CACHE.revalidate,
    summary: "The review widget's builder (decisions §29): app domain, contract, chain id, name and icon in; the iframe snippet for basic mode, or the npm install line, iframe and createSigningBridge code for integrated mode, and a live preview out; not framable",
    responses: { 200: page("The builder"), 500: err("INTERNAL_ERROR (the widget's bundle could not be built)") },
  },
  {
    method: "get",
    paths: ["/widgets/reviews/widget.js", "/widgets/reviews/widget.css"],
    auth: "public",
    cache: CACHE.revalidate,
    summary: "The review widget's script (one ES module, built from widgets/review_widget.ts) and stylesheet, embedded in the executable",
    responses: { 200: { description: "text/javascript or text/css" }, 500: err("INTERNAL_ERROR (the bundle could not be built)") },
  },
];
