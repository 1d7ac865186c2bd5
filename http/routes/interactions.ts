import { Elysia } from "elysia";
import { type InteractionStatus, readChainId, readInteractionQuery, type TxProof } from "../../domain/interactions/mod.ts";
import type { Result } from "../../domain/result.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { queryOf } from "./request.ts";
import { InteractionStatusModel, InteractionsQuery, TxProofModel, TxProofsQuery, type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";

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

/** Proof of interaction and transaction proofs (decisions §29): route declarations, gathered by http/route_docs.ts. */
export const INTERACTION_DOCS: readonly RouteDoc[] = [
  {
    method: "get",
    paths: ["/v1/interactions"],
    auth: "public",
    cache: CACHE.noStore,
    summary: "Proof of interaction (decisions §29): did the wallet send a successful transaction to the contract? Candidates from an Etherscan-compatible explorer (the operator's EXPLORER_API_URLS, else the query's explorer under the SSRF policy), each confirmed by its receipt on a chain the deployment reads; not-checked (never an error) without an explorer, on a chain not read, or when the explorer or the chain fails",
    query: InteractionsQuery,
    responses: { 200: { description: "verified, none or not-checked", schema: InteractionStatusModel }, 400: err("INVALID_INPUT: chain, wallet, contract or explorer missing, repeated or malformed") },
  },
  {
    method: "get",
    paths: ["/v1/tx-proofs"],
    auth: "public",
    cache: CACHE.static,
    summary: "One transaction's receipt on a chain the deployment reads (decisions §29): sender, recipient, status, block; read once and kept",
    query: TxProofsQuery,
    responses: {
      200: { description: "The transaction", schema: TxProofModel },
      400: err("INVALID_INPUT (chain or txHash malformed), UNSUPPORTED_CHAIN (a chain the deployment does not read)"),
      404: err("NOT_FOUND: no such transaction is mined on the chain"),
      500: err("RPC_ERROR: the chain could not be read"),
    },
  },
];
