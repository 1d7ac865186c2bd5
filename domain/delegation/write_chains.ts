/**
 * Writes on several chains (decisions §30): a delegated attestation goes to the chain its signed typed data names.
 * `domain.chainId` and `verifyingContract` must be a served attestation chain and its EAS, else 400 UNSUPPORTED_CHAIN
 * before any RPC or quota is spent; a batch holds one chain. Each chain has its own relay (its EAS reader, delegate
 * wallet and nonces); the guard each is given is the one budget of every chain.
 */
import { isAddress } from "viem/utils";
import type { EasReader, HexString } from "../../ports/eas.ts";
import { chainForTypedData, parseChainParam, type ServedChain, servedChain, type ServedChains } from "../chains/mod.ts";
import { fail, type Fail, ok, type Result } from "../result.ts";
import type { DelegatedAttest, DelegatedAttestFailure } from "./delegated_attest.ts";
import type { DelegatedAttestBatchOutcome } from "./delegated_attest_batch.ts";
import { type DelegatedRequest, delegatedRequestOf } from "./delegated_request.ts";
import type { PrivateRelay } from "./private_relay.ts";

/** One attestation chain's use case, with the name the anchors give the chain (answers carry it). */
export type OnChain<T> = { readonly chain: ServedChain; readonly name: string; readonly value: T };

/** The use cases of every served attestation chain, by chain id. */
export type ChainSet<T> = { readonly served: ServedChains; readonly byChain: ReadonlyMap<number, OnChain<T>> };

/** The chain a request is signed for: the one its domain names, or the default chain when it names none. */
export function writeChainOf(request: DelegatedRequest, served: ServedChains): Result<ServedChain, "UNSUPPORTED_CHAIN"> {
  return request.domain === undefined ? ok(served.default) : chainForTypedData(request.domain, served);
}

/**
 * The chain's use case a body goes to. A body that does not read goes to the default chain's, which refuses it as it
 * always did (INVALID_INPUT first); a chain not served (or without a relay here) is UNSUPPORTED_CHAIN.
 */
export function pickWriteChain<T>(set: ChainSet<T>, body: unknown): Result<OnChain<T>, "UNSUPPORTED_CHAIN"> {
  const read = delegatedRequestOf(body);
  const chain = read.ok ? writeChainOf(read.value, set.served) : ok(set.served.default);
  if (!chain.ok) return chain;
  const picked = set.byChain.get(chain.value.chainId);
  return picked === undefined ? fail("UNSUPPORTED_CHAIN", `Chain ${chain.value.caip2} has no relay in this deployment`) : ok(picked);
}

/**
 * The one chain a batch's bodies are signed for, or why the batch is refused as a whole (400): a body for a chain not
 * served, or bodies for two chains ("a batch holds one chain", naming them). Bodies that do not read count for no chain.
 */
export function pickBatchChain<T>(set: ChainSet<T>, bodies: readonly unknown[]): Result<OnChain<T>, "UNSUPPORTED_CHAIN" | "INVALID_INPUT"> {
  let first: OnChain<T> | undefined;
  for (const [index, body] of bodies.entries()) {
    const read = delegatedRequestOf(body);
    if (!read.ok) continue;
    const picked = pickWriteChain(set, read.value);
    if (!picked.ok) return fail(picked.code, `requests[${index}]: ${picked.message}`);
    if (first !== undefined && first.chain.chainId !== picked.value.chain.chainId) {
      return fail("INVALID_INPUT", `A batch holds one chain: requests[${index}] is for ${picked.value.chain.caip2}, an earlier one for ${first.chain.caip2}`);
    }
    first ??= picked.value;
  }
  return ok(first ?? set.byChain.get(set.served.default.chainId)!);
}

/** A batch refused as a whole, for the routes to answer before anything is recorded; undefined when it may go. */
export type BatchRefusal = (bodies: readonly unknown[]) => Fail<"UNSUPPORTED_CHAIN" | "INVALID_INPUT"> | undefined;

/**
 * The anchors' name of the chain a write goes to, for the answers given before the relay named it (the 202 of an
 * asynchronous write, the answer of a retry whose first request died): `write` for one body, `batch` for a batch's.
 */
export type WriteChainNames = {
  readonly write: (body: unknown) => string | undefined;
  readonly batch: (bodies: readonly unknown[]) => string | undefined;
};

/** What the routed relays add to a relay: a batch's refusal as a whole, and the name of a write's chain. */
export type ChainRouting = { readonly batchRefusal: BatchRefusal; readonly chainNames: WriteChainNames };

/** The success of a write names its chain, for the answer's `chain`. */
export type ChainNamed = { readonly chainName?: string | undefined };

/**
 * One public relay over every chain's: each request goes to the chain it is signed for; `batch` to the one chain of its
 * bodies, a batch that names none or two refused whole (`batchRefusal`, which the routes ask first).
 */
export function routeDelegatedAttest(set: ChainSet<DelegatedAttest>): DelegatedAttest & ChainRouting {
  const routed: DelegatedAttest = async (body, caller) => {
    const picked = pickWriteChain(set, body);
    if (!picked.ok) return picked;
    const result = await picked.value.value(body, caller);
    return result.ok ? { ...result, value: { ...result.value, chainName: picked.value.name } } : result;
  };
  const hasBatch = [...set.byChain.values()].every((c) => c.value.batch !== undefined);
  routed.batch = !hasBatch ? undefined : async (bodies, caller) => {
    const picked = pickBatchChain(set, bodies);
    if (!picked.ok) return refusedBatch(bodies, picked);
    return { ...(await picked.value.value.batch!(bodies, caller)), chainName: picked.value.name };
  };
  return Object.assign(routed, { batchRefusal: batchRefusalOf(set), chainNames: chainNamesOf(set) });
}

/** One private relay over every chain's, routed as the public one. */
export function routePrivateRelay(set: ChainSet<PrivateRelay>): PrivateRelay & ChainRouting {
  const routed = async (body: unknown, ...rest: Parameters<PrivateRelay> extends [unknown, ...infer R] ? R : never) => {
    const picked = pickWriteChain(set, body);
    if (!picked.ok) return picked as DelegatedAttestFailure;
    const result = await picked.value.value(body, ...rest);
    return result.ok ? { ...result, value: { ...result.value, chainName: picked.value.name } } : result;
  };
  const hasBatch = [...set.byChain.values()].every((c) => c.value.batch !== undefined);
  type BatchArgs = Parameters<NonNullable<PrivateRelay["batch"]>>;
  const batch = !hasBatch ? undefined : async (bodies: BatchArgs[0], account: BatchArgs[1], hooks?: BatchArgs[2]) => {
    const picked = pickBatchChain(set, bodies);
    if (!picked.ok) return refusedBatch(bodies, picked);
    return { ...(await picked.value.value.batch!(bodies, account, hooks)), chainName: picked.value.name };
  };
  return Object.assign(routed, { batch, batchRefusal: batchRefusalOf(set), chainNames: chainNamesOf(set) }) as unknown as PrivateRelay & ChainRouting;
}

function batchRefusalOf<T>(set: ChainSet<T>): BatchRefusal {
  return (bodies) => {
    const picked = pickBatchChain(set, bodies);
    return picked.ok ? undefined : picked;
  };
}

/** The chain's name a body (or a batch's bodies) goes to; undefined for one refused for its chain. */
function chainNamesOf<T>(set: ChainSet<T>): WriteChainNames {
  return {
    write: (body) => {
      const picked = pickWriteChain(set, body);
      return picked.ok ? picked.value.name : undefined;
    },
    batch: (bodies) => {
      const picked = pickBatchChain(set, bodies);
      return picked.ok ? picked.value.name : undefined;
    },
  };
}

/** A batch refused whole, should a caller send it without asking `batchRefusal`: every request refused alike. */
function refusedBatch(bodies: readonly unknown[], refusal: DelegatedAttestFailure): DelegatedAttestBatchOutcome {
  return { txHash: null, blockNumber: null, results: bodies.map(() => refusal) };
}

/** What the nonce routes answer: the nonce, and the chain it was read on. */
export type ChainNonce = { readonly nonce: bigint; readonly chainId: number; readonly easAddress: string; readonly chainName: string };

/** Reads an attester's EAS nonce on the chain `chainId` names (absent: the default chain). */
export type ReadChainNonce = (attester: unknown, chainId?: string | undefined) => Promise<Result<ChainNonce, "INVALID_INPUT" | "RPC_ERROR" | "UNSUPPORTED_CHAIN">>;

/**
 * `GET /v1/nonce?chainId=` (decisions §30): the attester's nonce on that chain (a decimal id or CAIP-2), the default
 * chain when absent; a chain that is not a served attestation chain is UNSUPPORTED_CHAIN, with no RPC.
 */
export function createReadChainNonce(set: ChainSet<EasReader>): ReadChainNonce {
  return async function readChainNonce(attester, chainId) {
    if (typeof attester !== "string" || attester === "") return fail("INVALID_INPUT", "Missing required parameter: attester");
    if (!isAddress(attester)) return fail("INVALID_INPUT", "Invalid attester address format");
    let chain: ServedChain | undefined = set.served.default;
    if (chainId !== undefined) {
      const id = parseChainParam(chainId);
      if (id === undefined) return fail("INVALID_INPUT", "chainId must be a chain id (8453) or CAIP-2 (eip155:8453)");
      chain = servedChain(set.served, id);
    }
    const on = chain === undefined ? undefined : set.byChain.get(chain.chainId);
    if (on === undefined) return fail("UNSUPPORTED_CHAIN", `Chain eip155:${parseChainParam(chainId ?? "")} is not an attestation chain of this deployment`);
    const read = await on.value.getAttesterNonce(attester as HexString);
    if (!read.ok) return fail("RPC_ERROR", "Failed to fetch nonce from RPC");
    return ok({ nonce: read.nonce, chainId: on.chain.chainId, easAddress: on.value.easAddress, chainName: on.name });
  };
}
