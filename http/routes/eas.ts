import { Elysia } from "elysia";
import type { DelegatedAttest } from "../../domain/delegated_attest.ts";
import type { ReadNonce } from "../../domain/nonce.ts";
import type { Logger } from "../../ports/logger.ts";
import { elapsedSince, errorBody, json, statusOf } from "../errors.ts";

/** What the EAS routes need. */
export type EasRoutesDeps = {
  readonly readNonce: ReadNonce;
  readonly delegatedAttest: DelegatedAttest;
  readonly chainName: string;
  readonly chainId: number;
  readonly easAddress: string;
  readonly log: Logger;
};

/** The nonce and delegated-attest routes, under their backend and gateway paths. */
export function easRoutes(deps: EasRoutesDeps) {
  const nonce = async ({ query }: { query: Record<string, string | undefined> }) => {
    const started = performance.now();
    const result = await deps.readNonce(query.attester);
    if (!result.ok) {
      return json({ ...errorBody(result.code, result.message), elapsed: elapsedSince(started) }, statusOf(result.code));
    }
    return json({
      nonce: result.value.toString(),
      chain: deps.chainName,
      chainId: deps.chainId,
      easAddress: deps.easAddress,
      elapsed: elapsedSince(started),
    });
  };

  const delegatedAttest = async ({ body }: { body: unknown }) => {
    const started = performance.now();
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof body === "string" ? body : "");
    } catch {
      return json(
        { ...errorBody("INVALID_JSON", "Invalid JSON body"), elapsed: elapsedSince(started) },
        400,
      );
    }
    const result = await deps.delegatedAttest(parsed);
    if (!result.ok) {
      if (statusOf(result.code) >= 500) deps.log.warn("delegated_attest_failed", { code: result.code });
      return json(
        { ...errorBody(result.code, result.message, result.details), elapsed: elapsedSince(started) },
        statusOf(result.code),
      );
    }
    deps.log.info("delegated_attest", { txHash: result.value.txHash, uid: result.value.uid });
    return json({
      success: true,
      txHash: result.value.txHash,
      uid: result.value.uid,
      blockNumber: Number(result.value.blockNumber),
      chain: deps.chainName,
      elapsed: elapsedSince(started),
    });
  };

  return new Elysia({ name: "eas-routes" })
    .get("/api/eas/nonce", nonce)
    .get("/v1/nonce", nonce)
    .post("/api/eas/delegated-attest", delegatedAttest, { parse: "text" })
    .post("/v1/delegated-attest", delegatedAttest, { parse: "text" });
}
