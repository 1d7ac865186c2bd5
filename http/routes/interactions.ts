import { Elysia } from "elysia";
import { type InteractionStatus, readChainId, readInteractionQuery, type TxProof } from "../../domain/interactions/mod.ts";
import type { Result } from "../../domain/result.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { queryOf } from "./request.ts";

/** What the proof-of-interaction routes need (decisions §29). */
export type InteractionRoutesDeps = {
  readonly findInteraction: (query: { chainId: number; wallet: string; contract: string; explorer?: string | undefined }) => Promise<InteractionStatus>;
  readonly txProof: (chainId: number, txHash: string) => Promise<Result<TxProof, string>>;
  readonly log: Logger;
};

/** A query with each parameter given once; a repeated one is ambiguous and refused. */
function single(url: string): Record<string, string | undefined> | string {
  const query = queryOf(url);
  const out: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(query)) {
    if (Array.isArray(value)) return `${name} must be given once`;
    out[name] = value;
  }
  return out;
}

/**
 * `GET /v1/interactions?chain=&wallet=&contract=&explorer=`: whether the wallet sent a successful transaction to the
 * contract, confirmed on a chain the deployment reads: `verified` (with `txHash`, `blockNumber`), `none`, or
 * `not-checked` (no explorer, a chain not read, an explorer or the chain failing: never an error).
 * `GET /v1/tx-proofs?chain=&txHash=`: one transaction's receipt (sender, recipient, status, block), read once and kept.
 */
export function interactionRoutes(deps: InteractionRoutesDeps) {
  return new Elysia({ name: "interaction-routes" })
    .get("/v1/interactions", async ({ request }) => {
      const query = single(request.url);
      if (typeof query === "string") return json(errorBody("INVALID_INPUT", query), 400);
      const read = readInteractionQuery(query);
      if (!read.ok) return json(errorBody(read.code, read.message), 400);
      try {
        return json(await deps.findInteraction(read.value));
      } catch (error) {
        deps.log.error("interactions_error", { error: error instanceof Error ? error.message : String(error) });
        return json({ status: "not-checked", reason: "chain-failed" });
      }
    })
    .get("/v1/tx-proofs", async ({ request }) => {
      const query = single(request.url);
      if (typeof query === "string") return json(errorBody("INVALID_INPUT", query), 400);
      const chainId = readChainId(query.chain);
      if (chainId === undefined) return json(errorBody("INVALID_INPUT", "chain must be a chain id (8453 or eip155:8453)"), 400);
      const result = await deps.txProof(chainId, query.txHash ?? "");
      if (result.ok) return json(result.value);
      if (statusOf(result.code) >= 500) deps.log.warn("tx_proof_failed", { code: result.code });
      return json(errorBody(result.code, result.message), statusOf(result.code));
    });
}
