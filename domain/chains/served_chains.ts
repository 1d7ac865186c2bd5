/**
 * The chains one deployment serves (decisions §30): attestation chains (EAS per the trust anchors: index, relays,
 * witness, reads, webhooks) and proof chains (read only: transaction proofs and contract ownership). Without a
 * `CHAINS_FILE` the set is today's single chain. Pure: the configured entries and the anchors come in as values.
 */
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { fail, ok, type Result } from "../result.ts";

/** What a served chain is for. */
export type ChainRole = "attestations" | "proofs";

/** One chain the deployment serves. */
export type ServedChain = {
  readonly chainId: number;
  /** `eip155:<chainId>`. */
  readonly caip2: string;
  readonly role: ChainRole;
  /** The EAS contract the anchors name, lowercased; attestation chains only. */
  readonly easContract?: string | undefined;
};

/** Every served chain, the default among them. */
export type ServedChains = {
  /** The chain a request that names none is about: an attestation chain. */
  readonly default: ServedChain;
  /** In configured order, each chain id once. */
  readonly list: readonly ServedChain[];
};

/** One configured chain, as `CHAINS_FILE` (or the single-chain default) gives it; RPC details stay in the config. */
export type ChainEntry = { readonly caip2?: string | undefined; readonly chainId?: number | undefined; readonly role: ChainRole };

/** The CAIP-2 id of an EVM chain. */
export function caip2Of(chainId: number): string {
  return `eip155:${chainId}`;
}

/** Today's deployment: one attestation chain, its EAS the one the anchors name. */
export function singleChain(chainId: number, easContract: string): ServedChains {
  const chain: ServedChain = { chainId, caip2: caip2Of(chainId), role: "attestations", easContract: easContract.toLowerCase() };
  return { default: chain, list: [chain] };
}

/**
 * Builds the served set from configured entries and the trust anchors. The start stops (one line naming it) on a
 * chain written neither as a chain id nor as `eip155:<id>`, a chain named twice, no attestation chain, an
 * attestation chain the anchors do not describe, or a `defaultChain` that is not a served attestation chain.
 */
export function buildServedChains(
  entries: readonly ChainEntry[],
  anchors: Pick<TrustAnchors, "chains">,
  options: { readonly defaultChain?: number | undefined } = {},
): Result<ServedChains, "INVALID_CHAINS"> {
  const list: ServedChain[] = [];
  for (const [i, entry] of entries.entries()) {
    const chainId = entryChainId(entry);
    if (chainId === undefined) return fail("INVALID_CHAINS", `chain ${i + 1}: caip2 must be eip155:<chain id>`);
    if (entry.role !== "attestations" && entry.role !== "proofs") return fail("INVALID_CHAINS", `${caip2Of(chainId)}: role must be attestations or proofs`);
    if (list.some((c) => c.chainId === chainId)) return fail("INVALID_CHAINS", `${caip2Of(chainId)} is named twice`);
    if (entry.role === "proofs") {
      list.push({ chainId, caip2: caip2Of(chainId), role: "proofs" });
      continue;
    }
    const described = anchors.chains[caip2Of(chainId)];
    if (described === undefined) return fail("INVALID_CHAINS", `${caip2Of(chainId)} is an attestation chain the trust anchors do not describe`);
    list.push({ chainId, caip2: caip2Of(chainId), role: "attestations", easContract: described.easContract.toLowerCase() });
  }
  const attesting = list.filter((c) => c.role === "attestations");
  if (attesting.length === 0) return fail("INVALID_CHAINS", "no chain has role attestations");
  const chosen = options.defaultChain === undefined ? attesting[0] : attesting.find((c) => c.chainId === options.defaultChain);
  if (chosen === undefined) return fail("INVALID_CHAINS", `DEFAULT_CHAIN ${caip2Of(options.defaultChain!)} is not a served attestation chain`);
  return ok({ default: chosen, list });
}

function entryChainId(entry: ChainEntry): number | undefined {
  if (entry.caip2 !== undefined) {
    const match = /^eip155:([1-9][0-9]{0,15})$/.exec(entry.caip2);
    const id = match === null ? NaN : Number(match[1]);
    if (!Number.isSafeInteger(id)) return undefined;
    if (entry.chainId !== undefined && entry.chainId !== id) return undefined;
    return id;
  }
  return entry.chainId !== undefined && Number.isSafeInteger(entry.chainId) && entry.chainId > 0 ? entry.chainId : undefined;
}

/** The served chain with this id, if any. */
export function servedChain(served: ServedChains, chainId: number): ServedChain | undefined {
  return served.list.find((c) => c.chainId === chainId);
}

/** The chain ids a deployment reads transactions on: every served chain, attestation and proof chains alike. */
export function readChainIds(served: ServedChains): readonly number[] {
  return served.list.map((c) => c.chainId);
}
