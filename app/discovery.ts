/** Wiring of controller discovery, its cached views and the controller witness (decisions §8). */
import { createViemWitnessWriter } from "../adapters/chain/mod.ts";
import { witnessChains } from "./write_chains.ts";
import { createDnsPacketResolver } from "../adapters/dns/mod.ts";
import { createHttpsDidDocumentFetcher } from "../adapters/https/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import type { PlanPolicy } from "../domain/accounts/mod.ts";
import {
  clientShareOf,
  createCachedDiscovery,
  createControllerConfirm,
  createDiscoverControllers,
  createJwksLookup,
  type DiscoverControllers,
  type LookupJwks,
} from "../domain/discovery/mod.ts";
import { createControllerWitness } from "../domain/witness/mod.ts";
import { createDidUrlResolver, type ResolveDidUrl } from "../domain/controller_authorization/mod.ts";
import { createRateLimiter } from "../domain/rate_limit.ts";
import type { Config } from "./config.ts";
import type { Foundation } from "./foundation.ts";
import type { WiredLimits } from "./limits.ts";

/** What discovery gives the routes and the other capabilities. */
export type WiredDiscovery = {
  /** A fresh look every time: the witness's. */
  readonly discover: DiscoverControllers;
  /**
   * Answers kept for `DISCOVERY_CACHE_SECONDS`: artifact trust, key status, controller authorization, ownership checks;
   * a lookup asked with a `client` also takes that client's share of the domain's budget.
   */
  readonly viewDiscover: DiscoverControllers;
  /** Answers kept for `DISCOVERY_CACHE_SECONDS`, under a budget of their own: the public confirm views and ownership proofs. */
  readonly confirmDiscover: DiscoverControllers;
  /**
   * Answers kept for `DISCOVERY_CACHE_SECONDS`, under a budget of their own: the ownership a signed-in account's subjects
   * and its relay writes of subject-scoped schemas are proven by (decisions §12), which anonymous lookups cannot spend.
   */
  readonly ownershipDiscover: DiscoverControllers;
  readonly confirm: ReturnType<typeof createControllerConfirm>;
  /** The subject domain's JWK Set (decisions §25): the did.json fetcher, the same per-domain budget, kept as discovery's answers. */
  readonly jwks: LookupJwks;
  /** DID URL resolution (decisions §25): the did.json fetcher under the same budget, documents kept as discovery's answers. */
  readonly resolveDidUrl: ResolveDidUrl;
};

/** Builds discovery over real DNS and HTTPS, with one rate budget per registrable domain. */
export function wireDiscovery(config: Pick<Config, "discovery" | "server">, { trustAnchors }: Foundation, options: { didJsonCa?: string | undefined }): WiredDiscovery {
  const dns = createDnsPacketResolver({ servers: [...config.discovery.dnsServers] });
  const didDocuments = createHttpsDidDocumentFetcher({
    resolver: dns,
    allowPrivateNetwork: config.discovery.allowPrivateNetwork,
    ca: options.didJsonCa,
  });
  // A budget per registrable domain, so nobody can hammer a domain through us. It guards lookups, not money or
  // storage: each instance keeps its own (decisions §21), as it keeps its own cache of answers. Four budgets, so the
  // lookups anyone asks for cannot spend the others' (docs/endpoints.md): the confirm views and the public ownership
  // proof (any subject, no session); the verification reads (artifact trust, key status, controller authorization, JWK
  // Sets, DID URLs); the ownership a signed-in account's subjects and relay writes need; the witness (signed in, with its
  // own limits per user and per domain). Anonymous confirm views of 31 made-up subdomains used to refuse every witness
  // for the domain, a whole hosting platform's at once; anonymous ownership proofs (or key status reads) of made-up
  // subdomains refused the owner's own subject and its relay writes.
  const budget = () => createRateLimiter(systemClock, {
    capacity: config.discovery.discoveryDomainPerMinute,
    perMinute: config.discovery.discoveryDomainPerMinute,
  });
  const discoverWith = (domainRate: ReturnType<typeof budget>, clientShare?: ReturnType<typeof budget>) =>
    createDiscoverControllers({ dns, didDocuments, serviceDnsLabel: config.discovery.serviceDnsLabel, domainRate, clientShare });
  const domainRate = budget();
  // Within the verification reads' budget, each client (its address as the routes count it, the MCP tool's caller) may
  // spend at most a third of it a minute (domain/discovery/lookup_budget.ts): one anonymous client's key-status reads of
  // 30 made-up subdomains used to spend it all, and the domain's own key status and controller authorization answered
  // 502 to everyone. Calls without a client (internal) take the domain's budget alone.
  const share = clientShareOf(config.discovery.discoveryDomainPerMinute);
  const clientShare = createRateLimiter(systemClock, { capacity: share, perMinute: share });
  const freshMs = config.discovery.discoveryCacheSeconds * 1_000;
  const jwks = createJwksLookup({ didDocuments, domainRate, clientShare, clock: systemClock, freshMs, failureMs: Math.ceil(freshMs / 6) });
  const resolveDidUrl = createDidUrlResolver({ didDocuments, domainRate, clientShare, clock: systemClock, freshMs });
  // The read-only views and the verification reads keep answers for DISCOVERY_CACHE_SECONDS (each its own); the
  // witness always looks afresh.
  const cached = (discover: DiscoverControllers) => config.discovery.discoveryCacheSeconds === 0 ? discover : createCachedDiscovery(discover, { clock: systemClock }, {
    freshMs,
    failureMs: Math.ceil(freshMs / 6),
  });
  const discover = discoverWith(budget());
  const viewDiscover = cached(discoverWith(domainRate, clientShare));
  const confirmDiscover = cached(discoverWith(budget()));
  const ownershipDiscover = cached(discoverWith(budget()));
  const confirm = createControllerConfirm({
    discover: confirmDiscover,
    trustAnchors,
    clock: systemClock,
    registryUrl: `${config.server.publicBaseUrl.replace(/\/$/, "")}/v1/trust-anchors`,
  });
  return { discover, viewDiscover, confirmDiscover, ownershipDiscover, confirm, jwks, resolveDidUrl };
}

/**
 * Builds the controller witness: a fresh discovery, the sponsored-write ledger, the witness wallet's writer, and the
 * deployment's rates per user and per domain (decisions §21).
 */
export function wireWitness(
  f: Foundation,
  { discovery, plans, limits }: { discovery: WiredDiscovery; plans: PlanPolicy; limits: WiredLimits },
): ReturnType<typeof createControllerWitness> {
  return createControllerWitness({
    discover: discovery.discover,
    ledger: f.storage.ledger,
    writer: f.witnessKey === undefined ? undefined : createViemWitnessWriter({
      client: f.eas.client,
      sender: f.eas.senderFor(f.witnessKey),
      easAddress: f.easAddress,
      log: (event, fields) => f.log.warn(event, fields),
    }),
    witnessSchemaUid: f.chain.schemas["controller-witness"] as `0x${string}` | undefined,
    chainId: f.chainId,
    // Decisions §30: a witness names its chain (`chain`); each other attestation chain's writer and schema.
    otherChains: witnessChains(f),
    plans,
    clock: systemClock,
    random: cryptoRandom,
    userRate: limits.witnessUser,
    domainRate: limits.witnessDomain,
  });
}
