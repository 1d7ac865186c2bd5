import { Elysia } from "elysia";
import type { createControllerConfirm, DiscoverControllers } from "../../domain/discovery/mod.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { REQUEST_MODELS, type RouteDoc, IdentityRecordModel } from "../models.ts";
import { compileRequestCheck, queryOf, requestDetail } from "./request.ts";
import { CACHE, MAX_AGE_HEADER } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

const EvidenceItemModel = t.Object({
  kind: t.Union([t.Literal("dns-txt"), t.Literal("did-json"), t.Literal("account-wallet")]),
  status: t.Union([t.Literal("found"), t.Literal("not-found"), t.Literal("unavailable"), t.Literal("unsupported")]),
  location: t.String(),
  keys: t.Array(t.String()),
  error: t.Optional(t.String()),
  lasting: t.Optional(t.Literal(true, {
    description: "On an unavailable source only: it was read and cannot be used (not JSON, not the subject's DID document, too large, a redirect, a did:web naming no usable host), and reading it again will not change that; absent when it could not be read now",
  })),
  records: t.Optional(t.Array(t.String(), { description: "DNS TXT: the records the name answered with, as published (strings joined; at most 16)" })),
  notes: t.Optional(t.Array(t.String(), { description: "Why a looked-up source gave no key, or which published values were ignored and why" })),
});

const ControllerKeyModel = t.Object({
  id: t.String(),
  canonicalId: t.String(),
  label: t.String(),
  sources: t.Array(t.String()),
  basic: t.Boolean({ description: "true when an endpoint source (DNS TXT or did.json) publishes the key" }),
});

export const ControllerEndpointConfirmModel = t.Object({
  subject: IdentityRecordModel,
  domain: t.Union([t.String(), t.Null()]),
  controllerKeys: t.Array(ControllerKeyModel),
  evidence: t.Array(EvidenceItemModel),
  warnings: t.Array(t.String()),
});

export const ControllerConfirmModel = t.Intersect([
  ControllerEndpointConfirmModel,
  t.Object({
    approvedIssuer: t.Object({
      status: t.Union([t.Literal("approved"), t.Literal("not-approved"), t.Literal("unavailable"), t.Literal("not-configured")]),
      checkedIdentifiers: t.Array(t.String()),
      registryUrl: t.Union([t.String(), t.Null()]),
    }),
  }),
]);

/** What the confirm routes need. */
export type ControllerRoutesDeps = {
  readonly discover: DiscoverControllers;
  readonly confirm: ReturnType<typeof createControllerConfirm>;
};

/** The domain's wording: `subjectDid is required`, `walletDid must not be empty`. */
function explainQuery(query: unknown): string | undefined {
  const { subjectDid, walletDid } = query as { subjectDid?: unknown; walletDid?: unknown };
  if (typeof subjectDid !== "string" || subjectDid.trim() === "") {
    return Array.isArray(subjectDid) ? "subjectDid must be given once" : "subjectDid is required";
  }
  if (walletDid !== undefined) return Array.isArray(walletDid) ? "walletDid must be given once" : "walletDid must not be empty";
  return undefined;
}

const endpointQuery = compileRequestCheck(REQUEST_MODELS.controllerEndpointConfirm.query, { explain: explainQuery });
const confirmQuery = compileRequestCheck(REQUEST_MODELS.controllerConfirm.query, { explain: explainQuery });

/**
 * A confirm view: kept for the discovery cache's time, unless a lookup behind it failed (an evidence source or the
 * issuer registry `unavailable`, a lookup refused by the domain's budget). The service keeps such an answer a sixth of
 * that time; a shared cache then revalidates it at every use rather than holding the outage for its whole max-age.
 */
function answer(view: { readonly evidence: readonly { readonly status: string }[]; readonly approvedIssuer?: { readonly status: string } }): Response {
  const failed = view.evidence.some((e) => e.status === "unavailable") || view.approvedIssuer?.status === "unavailable";
  return json(view, 200, failed ? { [MAX_AGE_HEADER]: "0" } : {});
}

/**
 * controller-endpoint-confirm (endpoint evidence only) and controller-confirm (plus the wallet and
 * the approved-issuer registry), under their gateway and backend paths. Current, mutable evidence.
 */
export function controllerRoutes(deps: ControllerRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined }) =>
    json(errorBody(result.code, result.message, result.details), statusOf(result.code));
  const invalid = (message: string) => json(errorBody("INVALID_INPUT", message), 400);

  const endpointConfirm = async ({ request }: { request: Request }) => {
    const query = queryOf(request.url);
    if (!endpointQuery.check(query)) return invalid(endpointQuery.explain(query));
    const result = await deps.discover(query.subjectDid);
    return result.ok ? answer(result.value) : failure(result);
  };
  const confirm = async ({ request }: { request: Request }) => {
    const query = queryOf(request.url);
    if (!confirmQuery.check(query)) return invalid(confirmQuery.explain(query));
    const result = await deps.confirm(query.subjectDid, query.walletDid);
    return result.ok ? answer(result.value) : failure(result);
  };

  const endpointDetail = { detail: requestDetail(REQUEST_MODELS.controllerEndpointConfirm) };
  const confirmDetail = { detail: requestDetail(REQUEST_MODELS.controllerConfirm) };
  return new Elysia({ name: "controller-routes" })
    .get("/v1/controller-endpoint-confirm", endpointConfirm, endpointDetail)
    .get("/api/public/controller-endpoint-confirm", endpointConfirm, endpointDetail)
    .get("/v1/controller-confirm", confirm, confirmDetail)
    .get("/api/public/controller-confirm", confirm, confirmDetail);
}

/** Controller discovery: route declarations, gathered by http/route_docs.ts. */
export const CONTROLLER_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/v1/controller-endpoint-confirm", "/api/public/controller-endpoint-confirm"],
    auth: "public",
    cache: CACHE.discovery,
    summary: "Controller keys a did:web publishes through DNS TXT and did.json (current, mutable evidence)",
    request: REQUEST_MODELS.controllerEndpointConfirm,
    responses: {
      200: { description: "Endpoint evidence", schema: ControllerEndpointConfirmModel },
      400: err("INVALID_INPUT (subjectDid missing), INVALID_DID (also a did:web whose host is an IP address: nothing is looked up)"),
    },
  },
  {
    method: "get",
    paths: ["/v1/controller-confirm", "/api/public/controller-confirm"],
    auth: "public",
    cache: CACHE.discovery,
    summary: "Endpoint evidence plus the connected wallet and the approved-issuer registry",
    request: REQUEST_MODELS.controllerConfirm,
    responses: {
      200: { description: "Evidence with approvedIssuer", schema: ControllerConfirmModel },
      400: err("INVALID_INPUT, INVALID_DID (also a did:web whose host is an IP address: nothing is looked up)"),
    },
  },
];
