/**
 * The chains a deployment reads transactions on (decisions §30), through viem: one client per chain id (the
 * service's own client for its chain, so that chain's reads cost what they cost before), receipts read once and
 * kept once settled under the chain's confirmations, contract-ownership reads beside them. A chain not listed has no reader.
 */
import { createPublicClient, http, type PublicClient, type Transport } from "viem";
import { keptReceipts } from "../../domain/interactions/mod.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import type { ProofChains } from "../../ports/proof_chains.ts";
import type { TxReceiptReader } from "../../ports/interactions.ts";
import { createViemOwnershipChain } from "./viem_ownership_chain.ts";
import { createViemTxReceiptReader } from "./viem_receipts.ts";

/** One chain to read: an existing client (the service's own chain), or the RPC URL of a new one. */
export type ProofChainSource =
  & ({ readonly chainId: number; readonly client: PublicClient } | { readonly chainId: number; readonly rpcUrl: string })
  // Blocks under the head before a receipt is kept (domain keptReceipts); default 0, every mined receipt kept.
  & { readonly confirmations?: number | undefined };

/** How to build {@link createViemProofChains}. */
export type ViemProofChainsOptions = {
  readonly chains: readonly ProofChainSource[];
  /** Mined receipts kept per chain, oldest dropped first; default 10 000. */
  readonly keepReceipts?: number | undefined;
  /** The transport of a chain given by URL; default viem's `http` (tests pass a counting `custom`). */
  readonly transport?: ((rpcUrl: string) => Transport) | undefined;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
};

/** Builds the per-chain readers; a chain id listed twice is a bug of the caller (config refuses it first). */
export function createViemProofChains(options: ViemProofChainsOptions): ProofChains {
  const readers = new Map<number, { receipts: TxReceiptReader; ownership: OwnershipChain }>();
  for (const source of options.chains) {
    if (readers.has(source.chainId)) throw new Error(`Chain eip155:${source.chainId} is listed twice`);
    const client = "client" in source ? source.client : createPublicClient({ transport: (options.transport ?? http)(source.rpcUrl) });
    const log = (event: string, fields: Record<string, unknown>) => options.log?.(event, { chainId: source.chainId, ...fields });
    readers.set(source.chainId, {
      receipts: keptReceipts(createViemTxReceiptReader({ client, chainId: source.chainId, log }), { keep: options.keepReceipts, confirmations: source.confirmations }),
      ownership: createViemOwnershipChain({ client, chainId: source.chainId, log }),
    });
  }
  const chainIds = [...readers.keys()];
  return {
    chainIds,
    receipts: (chainId) => readers.get(chainId)?.receipts,
    ownership: (chainId) => readers.get(chainId)?.ownership,
  };
}
