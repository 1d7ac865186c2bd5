/**
 * The chain of a public read (decisions §30): a deployment may serve several chains, and every public-read helper
 * takes an optional `chain`, CAIP-2 (`eip155:8453`) or a decimal chain id (`8453`, or the number), sent as the
 * `chain` query parameter. Absent, nothing is sent and the service answers on its default chain. Each answer names
 * its chain as `chain {chainId, caip2, easContract}`.
 */
import { type ChainAnswer, parseChainParam } from "../domain/chains/mod.ts";
import { AtsClientError } from "./errors.ts";

export type { ChainAnswer } from "../domain/chains/mod.ts";

/** A chain as a read names it: `eip155:8453`, `"8453"` or `8453`. */
export type ChainParam = string | number;

/** The option every public-read helper takes. */
export type ChainOption = {
  /** The chain to read on (CAIP-2 or a decimal chain id); default the service's default chain. */
  readonly chain?: ChainParam | undefined;
};

/** What an answer of a deployment with several chains carries besides its own fields (absent from older services). */
export type ChainNamed = {
  /** The chain the answer is about. */
  readonly chain?: ChainAnswer | undefined;
};

/**
 * The `chain` query value for `chain`: undefined when none is named (nothing is sent). A value the service would
 * refuse as malformed throws {@link AtsClientError} `INVALID_INPUT` before any request.
 */
export function chainQueryValue(chain: ChainParam | undefined): string | undefined {
  if (chain === undefined) return undefined;
  const text = String(chain);
  if (parseChainParam(text) === undefined) throw new AtsClientError("INVALID_INPUT", "chain must be a chain id (8453) or CAIP-2 (eip155:8453)");
  return text;
}

/** `params` with `chain` set when one is named. */
export function withChain(params: URLSearchParams, chain: ChainParam | undefined): URLSearchParams {
  const value = chainQueryValue(chain);
  if (value !== undefined) params.set("chain", value);
  return params;
}
