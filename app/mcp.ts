/** Wiring of the MCP endpoint (decisions §20): the tools over the routes' use cases, the session bounds, upkeep. */
import { systemClock } from "../adapters/system/mod.ts";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import type { ListAttestations } from "../domain/index/mod.ts";
import { createWitnessResume } from "../domain/witness/mod.ts";
import type { RateLimiter } from "../domain/rate_limit.ts";
import { subscriptionReader } from "../http/routes/accounts/mod.ts";
import { requestClientAddress } from "../http/instrument.ts";
import { createMcpEndpoint, type McpEndpoint } from "../http/routes/mcp/mod.ts";
import type { WiredAccounts } from "./accounts.ts";
import type { Config } from "./config.ts";
import type { WiredDiscovery, wireWitness } from "./discovery.ts";
import { type Foundation, servedTrustAnchors } from "./foundation.ts";
import type { WiredKeys } from "./keys.ts";
import type { WiredLimits } from "./limits.ts";
import type { WiredSubmissions } from "./submissions.ts";
import type { WiredOAuth } from "./oauth.ts";
import type { ChainIndex } from "./attestation_index.ts";
import { wireChainReads } from "./chain_reads.ts";
import type { ServedChains } from "../domain/chains/mod.ts";

/** The endpoint and its upkeep. */
export type WiredMcp = { readonly endpoint: McpEndpoint; readonly stop: () => void };

/** The capabilities whose use cases the tools call. */
export type McpCapabilities = {
  readonly discovery: WiredDiscovery;
  readonly witness: ReturnType<typeof wireWitness>;
  readonly artifactTrust: ArtifactTrust;
  readonly attestationList: ListAttestations;
  /** The routes' per-address query rate (`INDEX_QUERY_RATE_PER_MINUTE`), which the list tool shares. */
  readonly attestationQueryRate: RateLimiter;
  readonly accounts: WiredAccounts;
  readonly keys: WiredKeys;
  readonly oauth: WiredOAuth | undefined;
  /** The deployment's limits: new sessions per address and messages per session (decisions §21). */
  readonly limits: WiredLimits;
  /** The writes' idempotency keys (decisions §23): the witness tool shares them with the routes. */
  readonly submissions: Pick<WiredSubmissions, "idempotency">;
  /** The chains served (decisions §30); absent: the one chain, answers without `chain`. */
  readonly served?: ServedChains | undefined;
  /** Every attestation chain's index but the default chain's: a tool's `chain` reads one of them. */
  readonly otherChains?: readonly ChainIndex[] | undefined;
};

/**
 * Builds the endpoint unless `MCP=off`, its sessions in the storage (any instance answers any session, decisions §21);
 * idle sessions are swept every minute (or every idle period, if shorter) by every instance.
 */
export function wireMcp(
  config: Pick<Config, "accounts" | "chains" | "discovery" | "index" | "keys" | "mcp" | "server" | "widgets">,
  f: Foundation,
  c: McpCapabilities,
): WiredMcp | undefined {
  if (!config.mcp.enabled) return undefined;
  const { storage, metrics, log } = f;
  const subscription = subscriptionReader({
    clock: systemClock,
    plans: c.accounts.plans,
    ledger: storage.ledger,
    paidPeriod: (accountId, nowMs) => storage.payments.paidPeriod(accountId, nowMs),
    premiumReads: { ledger: storage.premiumReads, limits: { free: config.accounts.premiumReads.free, paid: config.accounts.premiumReads.paid } },
  });
  const endpoint = createMcpEndpoint({
    tools: {
      artifactTrust: c.artifactTrust,
      confirm: c.discovery.confirm,
      trustAnchors: servedTrustAnchors(config, f.trustAnchors),
      attestationList: c.attestationList,
      attestationQueryRate: c.attestationQueryRate,
      keyStatus: c.keys.keyStatus,
      keyStatusRate: c.keys.clientRate,
      controllerAuthorization: c.keys.controllerAuthorization,
      witness: c.witness,
      witnessResume: createWitnessResume({ ledger: storage.ledger, nowMs: () => systemClock.nowMs() }),
      subscription: async (account) => await subscription(account) as unknown as Record<string, unknown>,
      metrics,
      log,
      idempotency: c.submissions.idempotency,
      chains: c.served === undefined ? undefined : { served: c.served, reads: wireChainReads(config, f, c) },
    },
    sessions: storage.mcpSessions,
    maxSessions: config.mcp.maxSessions,
    sessionIdleSeconds: config.mcp.sessionIdleSeconds,
    maxInFlight: config.mcp.maxInFlight,
    sessionRate: c.limits.mcpSessionsPerAddress,
    sessionMessages: c.limits.mcpSessionMessages,
    bearer: c.oauth?.bearer,
    clock: systemClock,
    clientAddress: requestClientAddress,
    metrics,
    log,
  });
  metrics.describe("ats_mcp_tool_calls_total", "counter", "MCP tool calls by tool and outcome: ok or the error code in lower case");
  metrics.describe("ats_mcp_sessions_closed_total", "counter", "MCP sessions ended by this instance, by reason: idle (past MCP_SESSION_IDLE_SECONDS), full (the least recently used, past MCP_MAX_SESSIONS), closed (by the client)");
  metrics.gauge("ats_mcp_sessions", "MCP sessions open, all instances together (at most MCP_MAX_SESSIONS)", async () => [{ value: await endpoint.sessions() }]);
  const timer = setInterval(() => {
    endpoint.sweep().catch((error) => log.warn("mcp_sweep_failed", { error: error instanceof Error ? error.message : String(error) }));
  }, Math.min(60_000, config.mcp.sessionIdleSeconds * 1000));
  timer.unref?.();
  // Sessions outlive the instance (they are the deployment's): stopping ends only the sweep.
  return { endpoint, stop: () => clearInterval(timer) };
}
