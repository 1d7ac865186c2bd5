/** Wiring of proof of interaction and transaction proofs (decisions §29). */
import { createViemTxReceiptReader } from "../adapters/chain/mod.ts";
import { createDnsPacketResolver } from "../adapters/dns/mod.ts";
import { createExplorerTxList, createHttpsDidDocumentFetcher } from "../adapters/https/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { createFindInteraction, createTxProofs, keptReceipts } from "../domain/interactions/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import type { ExplorerTxList } from "../ports/interactions.ts";
import type { Config } from "./config.ts";
import type { Foundation } from "./foundation.ts";

/** What the routes get. */
export type WiredInteractions = {
  readonly findInteraction: ReturnType<typeof createFindInteraction>;
  readonly txProof: ReturnType<typeof createTxProofs>;
};

/**
 * Receipts of the chain the deployment reads (read once and kept); explorers from `EXPLORER_API_URLS` (trusted as configured) or the
 * embed's (https, under the discovery SSRF policy: the did.json fetcher's checks with a 1 MiB cap, and the per-domain
 * budget `DISCOVERY_DOMAIN_RATE_PER_MINUTE` per explorer host; past it, not-checked).
 */
export function wireInteractions(config: Pick<Config, "discovery" | "widgets">, f: Foundation, options: { didJsonCa?: string | undefined } = {}): WiredInteractions {
  // A mined receipt is read once and kept, for both routes (decisions §29).
  const receipts = keptReceipts(createViemTxReceiptReader({ client: f.eas.client, chainId: f.chainId, log: (event, fields) => f.log.warn(event, fields) }));
  const readerFor = (chainId: number) => (chainId === f.chainId ? receipts : undefined);
  const pinned = createHttpsDidDocumentFetcher({
    resolver: createDnsPacketResolver({ servers: [...config.discovery.dnsServers] }),
    allowPrivateNetwork: config.discovery.allowPrivateNetwork,
    ca: options.didJsonCa,
    maxBytes: 1024 * 1024,
  });
  const explorers = createExplorerTxList({ pinned: (url) => pinned.fetchJsonUrl(url) });
  const hostRate = createRateLimiter(systemClock, { capacity: config.discovery.discoveryDomainPerMinute, perMinute: config.discovery.discoveryDomainPerMinute });
  const budgeted: ExplorerTxList = {
    txlist(apiUrl, address, source) {
      if (source === "embed") {
        let host: string;
        try {
          host = new URL(apiUrl).hostname;
        } catch {
          return Promise.resolve({ ok: false, reason: "invalid" });
        }
        if (!hostRate.take(`explorer:${host}`).allowed) return Promise.resolve({ ok: false, reason: "unavailable" });
      }
      return explorers.txlist(apiUrl, address, source);
    },
  };
  return {
    findInteraction: createFindInteraction({
      readerFor,
      operatorExplorer: (chainId) => config.widgets.explorerApiUrls.get(chainId),
      explorers: budgeted,
      // Answers kept as discovery's are (DISCOVERY_CACHE_SECONDS), so asking again spends no explorer quota.
      keep: { clock: systemClock, freshMs: config.discovery.discoveryCacheSeconds * 1_000 },
    }),
    txProof: createTxProofs({ readerFor }),
  };
}
