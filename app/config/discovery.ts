/** Controller discovery, artifact trust's live check and the witness (decisions §7, §9): the `discovery` section. */
import { type Static, Type } from "@sinclair/typebox";
import { bool, int, list, readSection, type ReadContext, text } from "./_declare.ts";

/** The `discovery` section's variables. */
export const DiscoverySection = Type.Object({
  dnsServers: list("DNS_SERVERS", { default: ["1.1.1.1", "8.8.8.8"], description: "resolvers for controller discovery" }),
  allowPrivateNetwork: bool("ALLOW_PRIVATE_NETWORK", { default: false, description: "let did.json and webhook fetches reach private addresses (tests only)" }),
  serviceDnsLabel: text("SERVICE_DNS_LABEL", { default: "omatrust", description: "the _<label>.<domain> compatibility TXT name" }),
  discoveryDomainPerMinute: int("DISCOVERY_DOMAIN_RATE_PER_MINUTE", { default: 30, minimum: 1, description: "discoveries per minute for one registrable domain" }),
  discoveryCacheSeconds: int("DISCOVERY_CACHE_SECONDS", { default: 60, maximum: 3_600, description: "how long the read-only views reuse a discovery answer (0: off)" }),
  witnessUserPerMinute: int("WITNESS_USER_RATE_PER_MINUTE", { default: 20, minimum: 1, description: "witness requests per user a minute" }),
  witnessDomainPerMinute: int("WITNESS_DOMAIN_RATE_PER_MINUTE", { default: 6, minimum: 1, description: "witness requests per subject domain a minute" }),
}, { title: "discovery" });

/** Controller discovery, its cache and rates, and the witness's rates. */
export type DiscoveryConfig = Static<typeof DiscoverySection>;

/** Reads the `discovery` section. */
export function readDiscovery(ctx: Omit<ReadContext, "values">): DiscoveryConfig {
  return readSection(DiscoverySection, ctx);
}
