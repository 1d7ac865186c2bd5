import { Elysia } from "elysia";
import { json } from "../errors.ts";

/** One readiness check and whether it passed. */
export type ReadinessReport = {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, boolean>>;
  /** Where the attestation index stands (decisions §11). */
  readonly index?: unknown;
};

/** `/healthz` (the process answers) and `/readyz` (database, anchors and RPC). */
export function healthRoutes(ready: () => Promise<ReadinessReport>) {
  return new Elysia({ name: "health-routes" })
    .get("/healthz", () => json({ status: "ok" }))
    .get("/readyz", async () => {
      const report = await ready();
      const body = { status: report.ready ? "ready" : "not-ready", checks: report.checks };
      return json(report.index === undefined ? body : { ...body, index: report.index }, report.ready ? 200 : 503);
    });
}
