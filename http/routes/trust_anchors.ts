import { Elysia } from "elysia";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { stringify } from "../errors.ts";
import { withKnownBody } from "../http_cache.ts";

/** The paths of the trust-anchors record. */
export const TRUST_ANCHOR_PATHS = ["/v1/trust-anchors", "/v1/trust-policy", "/api/public/trust-anchors"] as const;

/**
 * The trust-anchors answer: the record serialized once, served as loaded. `headers` are added to it (the app gives
 * its CORS headers, so that the same answer serves the Elysia route and the server's edge, http/edge_routes.ts).
 */
export function trustAnchorsAnswer(anchors: TrustAnchors, headers: Readonly<Record<string, string>> = {}): () => Response {
  const body = stringify(anchors);
  const init = { headers: new Headers({ "content-type": "application/json; charset=utf-8", ...headers }) };
  return () => withKnownBody(new Response(body, init), body);
}

/** The trust-anchors record under its three paths; `serve` is the answer the app shares with its edge. */
export function trustAnchorRoutes(anchors: TrustAnchors, serve: () => Response = trustAnchorsAnswer(anchors)) {
  const app = new Elysia({ name: "trust-anchor-routes" });
  for (const path of TRUST_ANCHOR_PATHS) app.get(path, serve);
  return app;
}
