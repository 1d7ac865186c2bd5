import { Elysia } from "elysia";
import { json } from "../errors.ts";

/** One readiness check and whether it passed. */
export type ReadinessReport = {
  readonly ready: boolean;
  readonly checks: Readonly<Record<string, boolean>>;
  /** Where the attestation index stands (decisions §11). */
  readonly index?: unknown;
  /** Each role's signer: up, down (its last signature failed) or unknown (decisions §27). */
  readonly signers?: Readonly<Record<string, string>> | undefined;
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
      };
      return json(body, report.ready ? 200 : 503);
    });
}
