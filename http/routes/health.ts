import { Elysia } from "elysia";
import { json } from "../errors.ts";

/** One readiness check and whether it passed. */
export type ReadinessReport = { readonly ready: boolean; readonly checks: Readonly<Record<string, boolean>> };

/** `/healthz` (the process answers) and `/readyz` (database, anchors and RPC). */
export function healthRoutes(ready: () => Promise<ReadinessReport>) {
  return new Elysia({ name: "health-routes" })
    .get("/healthz", () => json({ status: "ok" }))
    .get("/readyz", async () => {
      const report = await ready();
      return json({ status: report.ready ? "ready" : "not-ready", checks: report.checks }, report.ready ? 200 : 503);
    });
}
