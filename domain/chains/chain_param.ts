/**
 * The `chain` parameter of reads (decisions §30): CAIP-2 (`eip155:8453`) or a decimal chain id (`8453`); absent,
 * the default chain; well written but not served, 400 UNSUPPORTED_CHAIN. A caller never names an RPC.
 */
import { fail, ok, type Result } from "../result.ts";
import type { ChainRole, ServedChain, ServedChains } from "./served_chains.ts";
import { servedChain } from "./served_chains.ts";

/** A chain id written `8453` or `eip155:8453`; undefined for anything else (another namespace, zero, a sign, too long). */
export function parseChainParam(value: string): number | undefined {
  const digits = value.startsWith("eip155:") ? value.slice(7) : value;
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return undefined;
  const id = Number(digits);
  return Number.isSafeInteger(id) ? id : undefined;
}

/**
 * The chain a request names with `chain` or `chainId` (its other spelling, the one `GET /v1/nonce` documents): both
 * only when they name the same chain, else INVALID_INPUT; neither, undefined (the default chain). A read given
 * `chainId=` alone used to answer on the default chain while the nonce route answered on the one named.
 */
export function namedChain(chain: string | undefined, chainId: string | undefined): Result<string | undefined, "INVALID_INPUT"> {
  if (chain !== undefined && chainId !== undefined) {
    const same = parseChainParam(chainId) !== undefined && parseChainParam(chainId) === parseChainParam(chain);
    if (!same) return fail("INVALID_INPUT", "chainId and chain name different chains; give one");
  }
  return ok(chain ?? chainId);
}

/** Why a `chain` parameter names no chain to answer on. */
export type ResolveChainCode = "INVALID_INPUT" | "UNSUPPORTED_CHAIN";

/**
 * The served chain a request's `chain` names: undefined names the default; a malformed value is INVALID_INPUT; a
 * chain not served, or not of the `role` the read needs (the index lives on attestation chains only), is
 * UNSUPPORTED_CHAIN.
 */
export function resolveChain(
  param: string | undefined,
  served: ServedChains,
  options: { readonly role?: ChainRole | undefined } = {},
): Result<ServedChain, ResolveChainCode> {
  if (param === undefined) return ok(served.default);
  const chainId = parseChainParam(param);
  if (chainId === undefined) return fail("INVALID_INPUT", "chain must be a chain id (8453) or CAIP-2 (eip155:8453)");
  const chain = servedChain(served, chainId);
  if (chain === undefined) return fail("UNSUPPORTED_CHAIN", `Chain eip155:${chainId} is not served by this deployment`);
  if (options.role !== undefined && chain.role !== options.role) {
    return fail("UNSUPPORTED_CHAIN", `Chain eip155:${chainId} is served for ${chain.role} only`);
  }
  return ok(chain);
}

/** How every answer names its chain (decisions §30); `easContract` null on a proof chain. */
export type ChainAnswer = { readonly chainId: number; readonly caip2: string; readonly easContract: string | null };

/** The `chain` member of an answer. */
export function chainAnswer(chain: ServedChain): ChainAnswer {
  return { chainId: chain.chainId, caip2: chain.caip2, easContract: chain.easContract ?? null };
}
