import { Elysia } from "elysia";
import { errorBody, json } from "../errors.ts";
import { type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { Type as t } from "@sinclair/typebox";

export const HealthModel = t.Object({ status: t.Literal("ok") });

/** A served chain's node: checked (it answered its chain id), unchecked (not since the start, or since a failed exchange: the chain is held closed), wrong (another chain's id, or another EAS version or a revert at the anchored address: closed until a restart; an empty answer there keeps it unchecked). */
const NodeState = t.Union([t.Literal("checked"), t.Literal("unchecked"), t.Literal("wrong")]);

export const ReadyModel = t.Object({
  status: t.Union([t.Literal("ready"), t.Literal("not-ready")]),
  checks: t.Record(t.String(), t.Boolean()),
  index: t.Optional(t.Object({
    indexedBlock: t.Union([t.Integer(), t.Null()], { description: "The attestation index's checkpoint" }),
    head: t.Union([t.Integer(), t.Null()]),
    lagBlocks: t.Union([t.Integer(), t.Null()], { description: "head - indexedBlock" }),
    catchingUp: t.Boolean({ description: "More than 64 blocks short of head - INDEX_CONFIRMATIONS (still 200)" }),
  })),
  chains: t.Optional(t.Record(t.String(), t.Object({
    index: t.Boolean({ description: "This chain's index is fresh (its reads answer) and its node checked; never true while the chain is held" }),
    node: t.Optional(NodeState),
  }, { additionalProperties: true }), { description: "Decisions §30: each other attestation chain's index by CAIP-2 id. A stale chain fails only its own reads; the instance is ready while the default chain (checks) or any of these serves" })),
  nodes: t.Optional(t.Record(t.String(), NodeState, {
    description: "Decisions §30, with more than one chain served: each chain's node by CAIP-2 id. A held chain (unchecked or wrong) fails closed on its own routes; it is shown, not counted in ready",
  })),
});

/** One readiness check and whether it passed. */
export type ReadinessReport = {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, boolean>>;
  /** Where the attestation index stands (decisions §11). */
  readonly index?: unknown;
  /** Each role's signer: up, down (its last signature failed) or unknown (decisions §27). */
  readonly signers?: Readonly<Record<string, string>> | undefined;
  /** Each other attestation chain's index by CAIP-2 id (decisions §30): ready while the default or any of these serves. */
  readonly chains?: Readonly<Record<string, unknown>> | undefined;
  /** Each served chain's node by CAIP-2 id, with more than one chain served (decisions §30): checked, unchecked or wrong. */
  readonly nodes?: Readonly<Record<string, string>> | undefined;
};

/** `/healthz` (the process answers) and `/readyz` (database, anchors and RPC). */
export function healthRoutes(ready: () => Promise<ReadinessReport>) {
  return new Elysia({ name: "health-routes" })
    .get("/healthz", () => json({ status: "ok" }))
    .get("/readyz", async () => {
      const report = await ready();
      const body = {
        status: report.ready ? "ready" : "not-ready",
        checks: report.checks,
        ...(report.index === undefined ? {} : { index: report.index }),
        ...(report.signers === undefined ? {} : { signers: report.signers }),
        ...(report.chains === undefined ? {} : { chains: report.chains }),
        ...(report.nodes === undefined ? {} : { nodes: report.nodes }),
      };
      return json(body, report.ready ? 200 : 503);
    });
}

/** The Prometheus metrics: route declarations, gathered by http/route_docs.ts. */
export const METRICS_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/metrics"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "Prometheus metrics: requests and latency by route and status, RPC calls and failures, wallet balances and pending transactions, sponsored writes. For scraping each instance directly: a request a proxy forwarded (X-Forwarded-For or Forwarded) is 404",
    responses: { 200: { description: "text/plain; version=0.0.4" }, 404: { description: "NOT_FOUND: a request a proxy forwarded" } },
  },
];

/** Liveness and readiness: route declarations, gathered by http/route_docs.ts. */
export const HEALTH_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/healthz"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "The process is alive",
    responses: { 200: { description: "Alive", schema: HealthModel } },
  },
  {
    method: "get",
    paths: ["/readyz"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "Database open, anchors loaded, RPC answering",
    responses: { 200: { description: "Ready", schema: ReadyModel }, 503: { description: "Not ready", schema: ReadyModel } },
  },
];

/**
 * `GET /metrics` in the Prometheus text format, for operators scraping each instance directly. A request a proxy
 * forwarded (`X-Forwarded-For` or `Forwarded`, as the compose balancer and any ingress add) came from the public
 * side: answered as an unknown path. The balancer's own rule on the path was passed by `/./metrics` and
 * `/%2e/metrics`, which the server reads as `/metrics`; the wallets' balances, the gas budget left and whether a raw
 * key is in use are the operator's.
 */
export function metricsRoute(text: () => Promise<string>) {
  return new Elysia({ name: "metrics-route" }).get("/metrics", async ({ request }) => {
    if (request.headers.has("x-forwarded-for") || request.headers.has("forwarded")) return json(errorBody("NOT_FOUND", "Not found"), 404);
    return new Response(await text(), { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
  });
}
