/**
 * Wiring of the limits counted once for the deployment (decisions §21): the ones that guard money or storage take
 * their tokens from buckets in the storage (SQLite for one instance, PostgreSQL shared by every instance), so N
 * instances admit what one would. Sign-in challenges and OAuth registrations are counted in their own tables already.
 * The pure read limits stay in each process and say so: key status per client address (`app/keys.ts`) and
 * discovery's budget per domain (`app/discovery.ts`).
 */
import { systemClock } from "../adapters/system/mod.ts";
import { createSharedRateLimiter, type RateLimit, SHARED_LIMITS } from "../domain/rate_limit.ts";
import type { Config } from "./config.ts";
import type { Foundation } from "./foundation.ts";

/** The deployment-wide limits, for the capabilities that take from them. */
export type WiredLimits = {
  /** `PUBLIC_RELAY_IP_RATE_PER_MINUTE`, per client address. */
  readonly publicRelayClient: RateLimit;
  /** `PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR`, per attester. */
  readonly publicRelayAttester: RateLimit;
  /** `WITNESS_USER_RATE_PER_MINUTE`, per account or paying agent. */
  readonly witnessUser: RateLimit;
  /** `WITNESS_DOMAIN_RATE_PER_MINUTE`, per registrable domain. */
  readonly witnessDomain: RateLimit;
  /** `MCP_SESSION_RATE_PER_MINUTE`, new MCP sessions per client address. */
  readonly mcpSessionsPerAddress: RateLimit;
  /** `MCP_SESSION_MESSAGES_PER_MINUTE`, JSON-RPC messages per MCP session. */
  readonly mcpSessionMessages: RateLimit;
  /** Stops the pruning of full buckets. */
  readonly stop: () => void;
};

/** Builds the limits over the storage's buckets; buckets full again are pruned every minute by every instance. */
export function wireLimits(config: Pick<Config, "discovery" | "mcp" | "relays">, f: Foundation, options: { pruneIntervalMs?: number | undefined } = {}): WiredLimits {
  const counter = f.storage.rateCounter;
  const perMinute = (scope: string, rate: number) =>
    createSharedRateLimiter(counter, systemClock, { scope, capacity: rate, perMinute: rate });
  const timer = setInterval(() => {
    counter.prune(systemClock.nowMs()).catch((error) =>
      f.log.warn("rate_prune_failed", { error: error instanceof Error ? error.message : String(error) }));
  }, options.pruneIntervalMs ?? 60_000);
  timer.unref?.();
  return {
    publicRelayClient: perMinute(SHARED_LIMITS.publicRelayClient, config.relays.publicRelay.ipPerMinute),
    publicRelayAttester: createSharedRateLimiter(counter, systemClock, {
      scope: SHARED_LIMITS.publicRelayAttester,
      capacity: config.relays.publicRelay.attesterPerHour,
      perMinute: config.relays.publicRelay.attesterPerHour / 60,
    }),
    witnessUser: perMinute(SHARED_LIMITS.witnessUser, config.discovery.witnessUserPerMinute),
    witnessDomain: perMinute(SHARED_LIMITS.witnessDomain, config.discovery.witnessDomainPerMinute),
    mcpSessionsPerAddress: perMinute(SHARED_LIMITS.mcpSessionsPerAddress, config.mcp.sessionsPerMinute),
    mcpSessionMessages: perMinute(SHARED_LIMITS.mcpSessionMessages, config.mcp.sessionMessagesPerMinute),
    stop: () => clearInterval(timer),
  };
}
