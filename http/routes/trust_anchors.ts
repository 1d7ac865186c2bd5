import { Elysia } from "elysia";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import type { TrustPolicy } from "../../domain/identity/mod.ts";
import { stringify } from "../errors.ts";
import { withKnownBody, CACHE } from "../http_cache.ts";
import { type RouteDoc, TrustAnchorsModel } from "../models.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";
import type { ServedChains } from "../../domain/chains/mod.ts";

/** The chains a deployment serves, as `/v1/trust-anchors` lists them (decisions §30; the console's chain picker reads it). */
export const ServedChainsModel = {
  servedChains: t.Array(t.Object({
    caip2: t.String({ pattern: "^eip155:[1-9][0-9]*$" }),
    chainId: t.Integer({ minimum: 1 }),
    role: t.Union([t.Literal("attestations"), t.Literal("proofs")], { description: "attestations: EAS, the index and its reads; proofs: transaction proofs and contract ownership only" }),
    default: t.Boolean({ description: "The chain a read that names none is answered on" }),
  }), { description: "The chains this deployment serves (decisions §30), in configured order; a read takes one as ?chain=" }),
  defaultChain: t.String({ pattern: "^eip155:[1-9][0-9]*$", description: "The default chain's CAIP-2" }),
};

/** The trust anchors as served: the anchors' own record plus the chains served (decisions §30). */
export const ServedTrustAnchorsModel = t.Composite([TrustAnchorsModel, t.Object(ServedChainsModel)]);

/** The anchors' record with `servedChains` and `defaultChain` added (its `chains` map stays the anchors' own). */
export function withServedChains(anchors: TrustAnchors, served: ServedChains): TrustAnchors & { servedChains: unknown[]; defaultChain: string } {
  const servedChains = served.list.map((chain) => ({ caip2: chain.caip2, chainId: chain.chainId, role: chain.role, default: chain.chainId === served.default.chainId }));
  return { ...anchors, servedChains, defaultChain: served.default.caip2 };
}

/** The trust policy (decisions §29): what the reference SDK's widget signing bridges read. */
export const TrustPolicyModel = t.Object({
  version: t.Integer({ minimum: 1 }),
  updatedAt: t.String(),
  widgetOrigins: t.Array(t.String(), { description: "Origins a host page trusts to ask for signatures: the service's own, then WIDGET_ORIGINS and the anchors' own" }),
  chains: t.Record(t.String({ pattern: "^[0-9]+$" }), t.Object({
    name: t.String(),
    easContract: t.String({ pattern: "^0x[0-9a-fA-F]{40}$" }),
    schemas: t.Array(t.String({ pattern: "^0x[0-9a-fA-F]{64}$" })),
  }), { description: "Keyed by decimal chain id" }),
});

/** The paths of the trust-anchors record. */
export const TRUST_ANCHOR_PATHS = ["/v1/trust-anchors", "/api/public/trust-anchors"] as const;

/**
 * The path of the trust policy (decisions §29): the reference's document its widget signing bridges read, derived from
 * the anchors (domain/identity/trust_policy.ts). Until issue 46 it was a second name for the anchors, which the
 * reference SDK's `extractAllowlists` cannot read.
 */
export const TRUST_POLICY_PATH = "/v1/trust-policy";

/**
 * The trust-anchors answer: the record serialized once, served as loaded. `headers` are added to it (the app gives
 * its CORS headers, so that the same answer serves the Elysia route and the server's edge, http/edge_routes.ts).
 */
export function trustAnchorsAnswer(anchors: TrustAnchors | TrustPolicy, headers: Readonly<Record<string, string>> = {}): () => Response {
  const body = stringify(anchors);
  const init = { headers: new Headers({ "content-type": "application/json; charset=utf-8", ...headers }) };
  return () => withKnownBody(new Response(body, init), body);
}

/**
 * The trust-anchors record under its two paths and the trust policy under its own; `serve` and `policy` are the
 * answers the app shares with its edge.
 */
export function trustAnchorRoutes(anchors: TrustAnchors, serve: () => Response = trustAnchorsAnswer(anchors), policy?: () => Response) {
  const app = new Elysia({ name: "trust-anchor-routes" });
  for (const path of TRUST_ANCHOR_PATHS) app.get(path, serve);
  if (policy !== undefined) app.get(TRUST_POLICY_PATH, policy);
  return app;
}

/** The trust anchors: route declarations, gathered by http/route_docs.ts. */
export const TRUST_ANCHOR_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: TRUST_ANCHOR_PATHS,
    edge: "answer",
    auth: "public",
    cache: CACHE.static,
    summary: "Registry addresses, schema UIDs and approved issuers; servedChains and defaultChain: the chains this deployment serves (decisions §30)",
    responses: { 200: { description: "Trust anchors record, with the chains served", schema: ServedTrustAnchorsModel }, 405: err("METHOD_NOT_ALLOWED") },
  },
];

/** The trust policy (decisions §29): route declarations, gathered by http/route_docs.ts. */
export const TRUST_POLICY_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: [TRUST_POLICY_PATH],
    edge: "answer",
    auth: "public",
    cache: CACHE.static,
    summary: "The trust policy the widget signing bridges read (decisions §29): EAS contract and schema UIDs per decimal chain id, and the widget origins a host page trusts",
    responses: { 200: { description: "Trust policy", schema: TrustPolicyModel }, 405: err("METHOD_NOT_ALLOWED") },
  },
];
