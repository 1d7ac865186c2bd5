/**
 * The write rule of several chains (decisions §30): a write goes to the chain its signed typed data names. The
 * domain's `chainId` must be a served attestation chain and its `verifyingContract` that chain's EAS; anything
 * else is 400 UNSUPPORTED_CHAIN, so a signature made for one chain is never sent to another.
 */
import { fail, ok, type Result } from "../result.ts";
import type { ServedChain, ServedChains } from "./served_chains.ts";
import { servedChain } from "./served_chains.ts";

/** The parts of an EIP-712 domain the rule reads (as a signer gave them: number, bigint or decimal string). */
export type TypedDataChainDomain = { readonly chainId?: unknown; readonly verifyingContract?: unknown };

/** The served attestation chain a signed write is for, or UNSUPPORTED_CHAIN naming what does not match. */
export function chainForTypedData(domain: TypedDataChainDomain, served: ServedChains): Result<ServedChain, "UNSUPPORTED_CHAIN"> {
  const chainId = domainChainId(domain.chainId);
  if (chainId === undefined) return fail("UNSUPPORTED_CHAIN", "The typed data's domain names no chain id");
  const chain = servedChain(served, chainId);
  if (chain === undefined || chain.role !== "attestations" || chain.easContract === undefined) {
    return fail("UNSUPPORTED_CHAIN", `Chain eip155:${chainId} is not an attestation chain of this deployment`);
  }
  const contract = typeof domain.verifyingContract === "string" ? domain.verifyingContract.toLowerCase() : undefined;
  if (contract !== chain.easContract) {
    return fail("UNSUPPORTED_CHAIN", `The typed data's verifyingContract is not the EAS of eip155:${chainId}`);
  }
  return ok(chain);
}

function domainChainId(value: unknown): number | undefined {
  const id = typeof value === "number" ? value : typeof value === "bigint" ? Number(value) : typeof value === "string" && /^[0-9]{1,16}$/.test(value) ? Number(value) : NaN;
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}
