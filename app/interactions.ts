/** Wiring of proof of interaction and transaction proofs (decisions §29), on every chain the deployment reads (§30). */
import { http } from "viem";
import { createViemProofChains, type ProofChainSource } from "../adapters/chain/mod.ts";
import { createDnsPacketResolver } from "../adapters/dns/mod.ts";
import { createExplorerTxList, createHttpsDidDocumentFetcher } from "../adapters/https/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { clientShareOf } from "../domain/discovery/mod.ts";
import { budgetedExplorers, createChainProofs, type createFindInteraction, type createTxProofs } from "../domain/interactions/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import type { ProofChains } from "../ports/proof_chains.ts";
import { type Config, confirmationsOf, defaultChain } from "./config.ts";
import type { Foundation } from "./foundation.ts";

/** What the routes get. */
export type WiredInteractions = {
  readonly findInteraction: ReturnType<typeof createFindInteraction>;
  readonly txProof: ReturnType<typeof createTxProofs>;
};

const built = new WeakMap<Foundation, ProofChains>();

/**
 * The chains the deployment reads proofs on (decisions §30): every chain of the `chains` section, attestation and proof
 * chains, and only those. The service's own chain goes through its own client (its reads cost what they cost before);
 * each other chain gets one client of its own. Built once per foundation, so interactions, transaction proofs and
 * contract ownership share each chain's client and its kept receipts.
 */
export function proofChainsOf(config: Pick<Config, "chains">, f: Foundation): ProofChains {
  const known = built.get(f);
  if (known !== undefined) return known;
  // A receipt is kept once it is as deep as the chain's index counts confirmed (decisions §21, §30).
  const devnet = f.devnet !== undefined;
  const own = config.chains.list.find((c) => c.chainId === f.chainId) ?? defaultChain(config.chains);
  const sources: ProofChainSource[] = [{ chainId: f.chainId, client: f.eas.client, confirmations: confirmationsOf(own, devnet) }];
  for (const chain of config.chains.list) {
    // RPC_URL's one chain has no id before the node answers: it is the service's own chain.
    if (chain.chainId === undefined || sources.some((s) => s.chainId === chain.chainId)) continue;
    const rpcUrl = chain.rpcUrl ?? f.devnet?.chains.find((c) => c.chainId === chain.chainId)?.rpcUrl;
    if (rpcUrl !== undefined) sources.push({ chainId: chain.chainId, rpcUrl, confirmations: confirmationsOf(chain, devnet) });
  }
  const chains = createViemProofChains({
    chains: sources,
    // Metered like the service's other JSON-RPC calls.
    transport: (rpcUrl) => http(rpcUrl, { fetchFn: f.rpcFetch }),
    log: (event, fields) => f.log.warn(event, fields),
  });
  built.set(f, chains);
  return chains;
}

/**
 * Receipts of every chain the deployment reads (each read once and kept); explorers from `EXPLORER_API_URLS` (trusted as configured) or the
 * embed's (https, under the discovery SSRF policy: the did.json fetcher's checks with a 1 MiB cap, and the budget
 * `DISCOVERY_DOMAIN_RATE_PER_MINUTE` per explorer's registrable domain, as discovery counts, of which each client address
 * may spend a third a minute, as discovery's verification reads; past either, not-checked for that client).
 * `didJsonCa`: an extra trusted root for the embed's explorers, as for did.json (tests).
 */
export function wireInteractions(config: Pick<Config, "chains" | "discovery" | "widgets">, f: Foundation, options: { didJsonCa?: string | undefined } = {}): WiredInteractions {
  const pinned = createHttpsDidDocumentFetcher({
    resolver: createDnsPacketResolver({ servers: [...config.discovery.dnsServers] }),
    allowPrivateNetwork: config.discovery.allowPrivateNetwork,
    ca: options.didJsonCa,
    maxBytes: 1024 * 1024,
  });
  const explorers = createExplorerTxList({ pinned: (url) => pinned.fetchJsonUrl(url) });
  const domainPerMinute = config.discovery.discoveryDomainPerMinute;
  const domainRate = createRateLimiter(systemClock, { capacity: domainPerMinute, perMinute: domainPerMinute });
  // Each client address (the route's key: an IPv6 client by its /64) may spend at most a third of a domain's budget a
  // minute (domain/discovery/lookup_budget.ts): one client's lookups of made-up wallets at made-up subdomains used to
  // spend a real explorer's whole budget, and every other user's check was not-checked.
  const share = clientShareOf(domainPerMinute);
  const clientShare = createRateLimiter(systemClock, { capacity: share, perMinute: share });
  const budgeted = budgetedExplorers(explorers, { domainRate, clientShare });

  // A mined receipt is read once and kept per chain, for both routes (decisions §29, §30).
  // One instance's count per client address, shared by both routes (as the attestation queries' limit counts).
  const perMinute = config.widgets.proofReadsPerMinute;
  const proofReads = createRateLimiter(systemClock, { capacity: perMinute, perMinute });
  return createChainProofs(proofChainsOf(config, f), {
    admit: (client) => proofReads.take(client),
    operatorExplorer: (chainId) => config.widgets.explorerApiUrls.get(chainId),
    explorers: budgeted,
    // Answers kept as discovery's are (DISCOVERY_CACHE_SECONDS), so asking again spends no explorer quota.
    keep: { clock: systemClock, freshMs: config.discovery.discoveryCacheSeconds * 1_000 },
  });
}
