import { Elysia } from "elysia";
import type { createControllerConfirm, DiscoverControllers } from "../../domain/controller_discovery.ts";
import { errorBody, json, statusOf } from "../errors.ts";

/** What the confirm routes need. */
export type ControllerRoutesDeps = {
  readonly discover: DiscoverControllers;
  readonly confirm: ReturnType<typeof createControllerConfirm>;
};

/**
 * controller-endpoint-confirm (endpoint evidence only) and controller-confirm (plus the wallet and
 * the approved-issuer registry), under their gateway and backend paths. Current, mutable evidence.
 */
export function controllerRoutes(deps: ControllerRoutesDeps) {
  const failure = (result: { code: string; message: string; details?: string | undefined }) =>
    json(errorBody(result.code, result.message, result.details), statusOf(result.code));

  const endpointConfirm = async ({ query }: { query: Record<string, string | undefined> }) => {
    if (!query.subjectDid) return json(errorBody("INVALID_INPUT", "subjectDid is required"), 400);
    const result = await deps.discover(query.subjectDid);
    return result.ok ? json(result.value) : failure(result);
  };
  const confirm = async ({ query }: { query: Record<string, string | undefined> }) => {
    if (!query.subjectDid) return json(errorBody("INVALID_INPUT", "subjectDid is required"), 400);
    const result = await deps.confirm(query.subjectDid, query.walletDid);
    return result.ok ? json(result.value) : failure(result);
  };

  return new Elysia({ name: "controller-routes" })
    .get("/v1/controller-endpoint-confirm", endpointConfirm)
    .get("/api/public/controller-endpoint-confirm", endpointConfirm)
    .get("/v1/controller-confirm", confirm)
    .get("/api/public/controller-confirm", confirm);
}
