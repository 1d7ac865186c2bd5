import { Elysia } from "elysia";
import { type InteractionQuery, type InteractionStatus, type ProofReadLimited, readChainId, readInteractionQuery, type TxProofResult } from "../../domain/interactions/mod.ts";
import type { ClientAddressOf } from "../../ports/request_context.ts";
import type { Logger } from "../../ports/logger.ts";
import { errorBody, json, statusOf } from "../errors.ts";
import { clientKeyFor, queryOf } from "./request.ts";
import { type RouteDoc } from "../models.ts";
import { CACHE } from "../http_cache.ts";
import { err } from "../route_responses.ts";
import { Type as t } from "@sinclair/typebox";

/** `GET /v1/interactions` (decisions §29). */
export const InteractionsQuery = t.Object({
  chain: t.String({ description: "The contract's chain: a decimal id or eip155:<id>" }),
  wallet: t.String({ description: "The user's wallet (0x and 40 hex digits)" }),
  contract: t.String({ description: "The app's contract (0x and 40 hex digits)" }),
  explorer: t.Optional(t.String({ description: "An Etherscan-compatible explorer API (https), used when the operator configured none for the chain; fetched under the discovery SSRF policy" })),
});

export const InteractionStatusModel = t.Object({
  status: t.Union([t.Literal("verified"), t.Literal("none"), t.Literal("not-checked")]),
  txHash: t.Optional(t.String({ description: "verified: the transaction the chain confirmed" })),
  blockNumber: t.Optional(t.Integer({ minimum: 0 })),
  reason: t.Optional(t.Union([t.Literal("no-explorer"), t.Literal("chain-not-read"), t.Literal("explorer-failed"), t.Literal("chain-failed")], { description: "not-checked: why" })),
});

/** `GET /v1/tx-proofs` (decisions §29). */
export const TxProofsQuery = t.Object({
  chain: t.String({ description: "A chain the deployment reads: a decimal id or eip155:<id>" }),
  txHash: t.String({ description: "32 bytes of hex" }),
});

export const TxProofModel = t.Object({
  chain: t.String({ description: "eip155:<id>" }),
  txHash: t.String(),
  from: t.String(),
  to: t.Union([t.String(), t.Null()], { description: "null for a contract creation" }),
  status: t.Union([t.Literal("success"), t.Literal("reverted")]),
  blockNumber: t.Integer({ minimum: 0 }),
  blockTime: t.Integer({ minimum: 0, description: "Unix seconds of its block (a review's proof must not postdate the review)" }),
});

/** What the proof-of-interaction routes need (decisions §29). */
export type InteractionRoutesDeps = {
  /** `client` is the caller's address: a lookup (not a kept answer) spends its budget of proof reads. */
  readonly findInteraction: (query: InteractionQuery, client?: string) => Promise<InteractionStatus | ProofReadLimited>;
  readonly txProof: (chainId: number, txHash: string, client?: string) => Promise<TxProofResult>;
  readonly clientAddress?: ClientAddressOf | undefined;
  readonly log: Logger;
};

/** 429 for a caller past its budget of proof reads. */
function limited(retryAfterSeconds: number): Response {
  return json(errorBody("RATE_LIMITED", "Too many proof lookups from this address; try again later"), 429, { "retry-after": String(retryAfterSeconds) });
}

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
        const answer = await deps.findInteraction(read.value, clientKeyFor(deps.clientAddress, request));
        return answer.status === "rate-limited" ? limited(answer.retryAfterSeconds) : json(answer);
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
      const result = await deps.txProof(chainId, query.txHash ?? "", clientKeyFor(deps.clientAddress, request));
      if (result.ok) return json(result.value);
      if (result.code === "RATE_LIMITED") return limited(result.retryAfterSeconds);
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
    responses: {
      200: { description: "verified, none or not-checked", schema: InteractionStatusModel },
      400: err("INVALID_INPUT: chain, wallet, contract or explorer missing, repeated or malformed"),
      429: err("RATE_LIMITED: more than PROOF_READ_RATE_PER_MINUTE lookups (answers not kept) from this address, shared with /v1/tx-proofs (Retry-After)"),
    },
  },
  {
    method: "get",
    paths: ["/v1/tx-proofs"],
    auth: "public",
    // Kept as long as an index answer: a receipt less deep than the chain's confirmations may be taken back.
    cache: CACHE.index,
    summary: "One transaction's receipt on a chain the deployment reads (decisions §29): sender, recipient, status, block; read once and kept once as deep as the chain's confirmations (nearer the head, read again at each ask)",
    query: TxProofsQuery,
    responses: {
      200: { description: "The transaction", schema: TxProofModel },
      400: err("INVALID_INPUT (chain or txHash malformed), UNSUPPORTED_CHAIN (a chain the deployment does not read)"),
      404: err("NOT_FOUND: no such transaction is mined on the chain"),
      429: err("RATE_LIMITED: more than PROOF_READ_RATE_PER_MINUTE lookups (answers not kept) from this address, shared with /v1/interactions (Retry-After)"),
      500: err("RPC_ERROR: the chain could not be read"),
    },
  },
];
