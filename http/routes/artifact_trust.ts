import { Elysia } from "elysia";
import type { ArtifactTrust } from "../../domain/artifact_trust.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json, statusOf } from "../errors.ts";

/** What the artifact-trust routes need. */
export type ArtifactTrustRoutesDeps = {
  readonly artifactTrust: ArtifactTrust;
  readonly log: Logger;
};

/**
 * `GET /v1/artifact-trust` and `GET /api/public/artifact-trust`: only `artifactDid` is read; there is
 * no caller-chosen chain, RPC, schema list, block range or bypass flag, so other parameters are ignored.
 */
export function artifactTrustRoutes(deps: ArtifactTrustRoutesDeps) {
  const handler = async ({ request }: { request: Request }) => {
    // A repeated artifactDid is ambiguous, so it is no DID at all.
    const values = new URL(request.url).searchParams.getAll("artifactDid");
    const artifactDid = values.length === 1 ? values[0] : undefined;
    try {
      const result = await deps.artifactTrust(artifactDid);
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("artifact_trust_failed", { code: result.code, reason: result.message });
      return json(errorBody(result.code, result.message, result.details), statusOf(result.code));
    } catch (error) {
      deps.log.error("artifact_trust_error", { error: error instanceof Error ? error.message : String(error) });
      return json(errorBody("INTERNAL_ERROR", "Internal error", "Artifact trust lookup failed"), 500);
    }
  };
  return new Elysia({ name: "artifact-trust-routes" })
    .get("/v1/artifact-trust", handler)
    .get("/api/public/artifact-trust", handler);
}
