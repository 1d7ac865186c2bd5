/**
 * The `chain` of a public read (decisions §30): each served attestation chain has its own index reads, and a request
 * names the one it reads with `?chain=` (CAIP-2 or a decimal id; absent, the default chain). The routes pick that
 * chain's reads here and name it in their answer (`chain {chainId, caip2, easContract}`); a caller never names an RPC.
 */
import { type ChainAnswer, chainAnswer, namedChain, resolveChain, type ServedChain, type ServedChains } from "../domain/chains/mod.ts";
import { fail, ok, type Result } from "../domain/result.ts";
import { errorBody, json } from "./errors.ts";

/** One capability's reads on each served chain: `on(chainId)` is undefined for a chain it is not read on. */
export type PerChain<T> = {
  readonly served: ServedChains;
  readonly on: (chainId: number) => T | undefined;
};

/** One capability read on the one chain a deployment serves (or on its default chain only). */
export function oneChain<T>(served: ServedChains, reads: T): PerChain<T> {
  return { served, on: (chainId) => (chainId === served.default.chainId ? reads : undefined) };
}

/** A chain's reads as a request named them, or the 400 that refuses the name. */
export type PickedChain<T> =
  | { readonly ok: true; readonly chain: ServedChain; readonly answer: ChainAnswer; readonly reads: T }
  | { readonly ok: false; readonly response: Response };

/**
 * The chain a URL names (`chain`, or `chainId` as `GET /v1/nonce` takes it: both only for the same chain); undefined
 * when it names none; INVALID_INPUT when either is repeated or the two differ.
 */
function chainParamOf(url: string): Result<string | undefined, "INVALID_INPUT"> {
  const start = url.indexOf("?");
  if (start === -1) return ok(undefined);
  const params = new URLSearchParams(url.slice(start + 1).split("#", 1)[0]);
  const chain = params.getAll("chain");
  const chainId = params.getAll("chainId");
  if (chain.length > 1 || chainId.length > 1) return fail("INVALID_INPUT", "chain must be given once");
  return namedChain(chain[0], chainId[0]);
}

/**
 * The chain a request reads (`resolveChain`): absent, the default; repeated, malformed or named twice as two chains,
 * 400 INVALID_INPUT; not served, or served without these reads (a proof chain has no index), 400 UNSUPPORTED_CHAIN.
 */
export function pickChain<T>(url: string, reads: PerChain<T>): PickedChain<T> {
  const param = chainParamOf(url);
  if (!param.ok) return refuse(param.code, param.message);
  const resolved = resolveChain(param.value, reads.served, { role: "attestations" });
  if (!resolved.ok) return refuse(resolved.code, resolved.message);
  const chainReads = reads.on(resolved.value.chainId);
  if (chainReads === undefined) return refuse("UNSUPPORTED_CHAIN", `Chain ${resolved.value.caip2} is not read here`);
  return { ok: true, chain: resolved.value, answer: chainAnswer(resolved.value), reads: chainReads };
}

/** The chain id a request names for the edge's kept answers; undefined when it names none it could read. */
export function edgeChainId<T>(url: string, reads: PerChain<T>): number | undefined {
  const picked = pickChain(url, reads);
  return picked.ok ? picked.chain.chainId : undefined;
}

/** A failed read's message, naming the chain when it is the chain's own state (503 INDEX_STALE on that chain only). */
export function chainMessage(code: string, message: string, chain: ServedChain, many: boolean): string {
  return code === "INDEX_STALE" && many ? `${message} (chain ${chain.caip2})` : message;
}

function refuse(code: "INVALID_INPUT" | "UNSUPPORTED_CHAIN", message: string): PickedChain<never> {
  return { ok: false, response: json(errorBody(code, message), 400) };
}

/** The chain a route reads: the one a request names among `chains`, or (no `chains`: a route built alone) its own reads. */
export function readsFor<T>(
  url: string,
  own: T,
  chains: PerChain<T> | undefined,
): PickedChain<T> | { readonly ok: true; readonly chain: undefined; readonly answer: undefined; readonly reads: T } {
  return chains === undefined ? { ok: true, chain: undefined, answer: undefined, reads: own } : pickChain(url, chains);
}

/** An answer's value with its `chain` added (none for a route built alone). */
export function withChain<V extends object>(value: V, answer: ChainAnswer | undefined): V {
  return answer === undefined ? value : { ...value, chain: answer };
}

/** The chain part of an answer's cache key. */
export function chainKey(chain: ServedChain | undefined): string | undefined {
  return chain === undefined ? undefined : String(chain.chainId);
}
