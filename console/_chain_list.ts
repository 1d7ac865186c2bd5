/**
 * The chains the console offers (decisions §30), read from the `/v1/trust-anchors` answer: its list of served chains
 * when it carries one (`servedChains`: CAIP-2 strings, decimal ids, or `{caip2 | chainId, name?, role?, default?}`),
 * proof chains left out (the console's reads are the index's); without such a list, the page's one chain. Pure, so
 * it is tested without a browser.
 */
import { parseChainParam } from "../domain/chains/mod.ts";

/** A chain of the picker. */
export type PickerChain = { readonly chainId: number; readonly caip2: string; readonly name: string; readonly isDefault: boolean };

/** What the picker offers: the chains, and whether they came from the service's list (then `chain` is sent on reads). */
export type PickerChains = { readonly chains: readonly PickerChain[]; readonly listed: boolean };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** The display name the anchors give a chain (keyed `eip155:<id>`, or the bare id in older records). */
function anchorName(anchors: Record<string, unknown>, chainId: number): string | undefined {
  const chains = anchors.chains;
  if (!isRecord(chains)) return undefined;
  const entry = chains[`eip155:${chainId}`] ?? chains[String(chainId)];
  return isRecord(entry) && typeof entry.name === "string" && entry.name !== "" ? entry.name : undefined;
}

/** One item of the served list as a chain id, its own name, and whether it is marked the default; undefined to skip it. */
function readItem(item: unknown): { chainId: number; name?: string; isDefault: boolean } | undefined {
  if (typeof item === "string" || typeof item === "number") {
    const chainId = parseChainParam(String(item));
    return chainId === undefined ? undefined : { chainId, isDefault: false };
  }
  if (!isRecord(item) || item.role === "proofs") return undefined;
  const id = item.caip2 ?? item.chainId;
  const chainId = typeof id === "string" || typeof id === "number" ? parseChainParam(String(id)) : undefined;
  if (chainId === undefined) return undefined;
  return { chainId, ...(typeof item.name === "string" && item.name !== "" ? { name: item.name } : {}), isDefault: item.default === true };
}

/**
 * The picker's chains from an anchors answer (anything: a failed read gives `undefined`) and the page's own chain
 * (its `<meta>`), which is the fallback and, with no default named in the list, the default when listed.
 */
export function pickerChains(anchors: unknown, page: { readonly chainId: number; readonly name: string }): PickerChains {
  const fallback: PickerChains = { chains: [{ chainId: page.chainId, caip2: `eip155:${page.chainId}`, name: page.name, isDefault: true }], listed: false };
  if (!isRecord(anchors) || !Array.isArray(anchors.servedChains)) return fallback;
  const items = anchors.servedChains.map(readItem).filter((i) => i !== undefined);
  const unique = items.filter((item, at) => items.findIndex((other) => other.chainId === item.chainId) === at);
  if (unique.length === 0) return fallback;
  const namedDefault = parseChainParam(String(anchors.defaultChain ?? ""));
  const defaultId = unique.find((i) => i.isDefault)?.chainId ?? namedDefault ?? (unique.some((i) => i.chainId === page.chainId) ? page.chainId : unique[0]!.chainId);
  const chains = unique.map((item) => ({
    chainId: item.chainId,
    caip2: `eip155:${item.chainId}`,
    name: item.name ?? anchorName(anchors, item.chainId) ?? (item.chainId === page.chainId ? page.name : `Chain ${item.chainId}`),
    isDefault: item.chainId === defaultId,
  }));
  return { chains, listed: true };
}
