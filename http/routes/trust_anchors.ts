import { Elysia } from "elysia";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { stringify } from "../errors.ts";

/** The trust-anchors record, serialized once and served as loaded, under its three paths. */
export function trustAnchorRoutes(anchors: TrustAnchors) {
  const body = stringify(anchors);
  const serve = () => new Response(body, { headers: { "content-type": "application/json; charset=utf-8" } });
  return new Elysia({ name: "trust-anchor-routes" })
    .get("/v1/trust-anchors", serve)
    .get("/v1/trust-policy", serve)
    .get("/api/public/trust-anchors", serve);
}
