/**
 * Wiring of webhooks (decisions §22): the endpoints' use cases, the transport held to the discovery IP policy, and the
 * worker every instance runs: fan out the outbox the index follower wrote, then claim and send due deliveries (at most
 * `WEBHOOK_MAX_IN_FLIGHT` at once, 4 per endpoint, `WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT` per account, fairly between
 * accounts), every `WEBHOOK_POLL_MS`.
 */
import { hostname } from "node:os";
import { createDnsPacketResolver } from "../adapters/dns/mod.ts";
import { createHttpsWebhookTransport } from "../adapters/https/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import {
  createSubmissionEvents,
  createWebhookDelivery,
  createWebhookEndpoints,
  createWebhookFanOut,
  WEBHOOK_TESTS_PER_MINUTE,
  type WebhookEndpoints,
} from "../domain/webhooks/mod.ts";
import { createSharedRateLimiter, SHARED_LIMITS } from "../domain/rate_limit.ts";
import type { IndexStore } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import type { WebhookTransport } from "../ports/webhooks.ts";
import { type ChainConfig, type Config, confirmationsOf } from "./config.ts";
import type { Foundation } from "./foundation.ts";

/** Deliveries to one endpoint at once (decisions §22). */
export const PER_ENDPOINT_IN_FLIGHT = 4;
/** How long a claim holds: twice the attempt's 10 s deadline, so that only a dead worker's deliveries are taken over. */
const CLAIM_LEASE_MS = 20_000;
/** How long delivered and failed deliveries stay listed (and their event ids deduplicated). */
export const DELIVERIES_KEPT_MS = 30 * 24 * 60 * 60_000;
/** How often an instance prunes them. */
const PRUNE_EVERY_MS = 60 * 60_000;
/** Outbox rows one round fans out at most before it sends. */
const FAN_OUT_ROUNDS = 20;

/** What the webhooks give the routes and the relays. */
export type WiredWebhooks = {
  readonly endpoints: WebhookEndpoints;
  /** The submission tracker's `onSettled`: `submission.settled` to the account's endpoints. */
  readonly onSettled: ReturnType<typeof createSubmissionEvents>;
  /** Runs a round now (fan out, claim, send) instead of at the next tick. */
  readonly nudge: () => void;
  readonly stop: () => Promise<void>;
};

/**
 * A chain's webhook confirmations: `WEBHOOK_CONFIRMATIONS`, else that chain's index confirmations (0 on the embedded
 * devnet). Each chain's own: a chain with deep reorganizations served beside a fast default chain sent events at the
 * default chain's depth, for blocks that could still be reorganized away.
 */
export function webhookConfirmations(config: Pick<Config, "webhooks">, chain: ChainConfig | undefined, devnet: boolean): number | undefined {
  if (!config.webhooks.enabled) return undefined;
  return config.webhooks.confirmations ?? confirmationsOf(chain, devnet);
}

/** Builds the endpoints and starts the worker (unless `WEBHOOKS=off` or `WEBHOOK_DELIVERY=off`: the routes still manage endpoints). */
export function wireWebhooks(
  config: Pick<Config, "chains" | "discovery" | "webhooks">,
  f: Foundation,
  deps: {
    /** Each attestation chain's index store by chain id (decisions §30); an outbox row is told from its own chain's records. */
    readonly indexStores: ReadonlyMap<number, IndexStore>;
    readonly transport?: WebhookTransport | undefined;
    readonly didJsonCa?: string | undefined;
  },
): WiredWebhooks {
  const store = f.storage.webhooks;
  const transport = deps.transport ?? createHttpsWebhookTransport({
    resolver: createDnsPacketResolver({ servers: [...config.discovery.dnsServers] }),
    allowPrivateNetwork: config.discovery.allowPrivateNetwork,
    ca: deps.didJsonCa,
  });
  // Test events per endpoint, counted for the deployment (each is an outbound POST and a stored delivery).
  const testRate = createSharedRateLimiter(f.storage.rateCounter, systemClock, { scope: SHARED_LIMITS.webhookTests, capacity: WEBHOOK_TESTS_PER_MINUTE, perMinute: WEBHOOK_TESTS_PER_MINUTE });
  const endpoints = createWebhookEndpoints({ store, transport, clock: systemClock, random: cryptoRandom, allowPrivateNetwork: config.discovery.allowPrivateNetwork, testRate });
  // Schema names by UID on every anchored chain (a schema's UID is the same wherever its resolver is), the default's last.
  const schemaNames = new Map([...Object.values(f.trustAnchors.chains), f.chain].flatMap((c) =>
    Object.entries(c.schemas).map(([name, uid]) => [String(uid).toLowerCase(), name] as const)));
  const records = (uids: readonly HexString[], chain: { readonly chainId?: number | undefined }) => {
    // Only rows of the chains followed here are asked for (decisions §30): another chain's stay for an instance that follows it.
    const indexStore = deps.indexStores.get(chain.chainId ?? f.chainId);
    return indexStore === undefined ? Promise.resolve([]) : indexStore.records(uids);
  };
  const fanOut = createWebhookFanOut({ store, records, schemaNames, clock: systemClock, chainIds: [...deps.indexStores.keys()], defaultChainId: f.chainId });
  const { metrics, log } = f;
  metrics.describe("ats_webhook_deliveries_total", "counter", "Webhook delivery attempts by outcome: delivered, retry (a later attempt follows), failed (the last)");
  metrics.gauge("ats_webhook_queue_depth", "Webhook events not yet delivered: outbox rows not fanned out and pending deliveries, all instances", async () =>
    [{ value: (await store.stats(systemClock.nowMs())).pending }]);
  metrics.gauge("ats_webhook_oldest_pending_seconds", "Age of the oldest pending webhook delivery, all instances (0: none)", async () =>
    [{ value: Math.max(0, Math.round(((await store.stats(systemClock.nowMs())).oldestPendingMs ?? 0) / 1000)) }]);
  const delivery = createWebhookDelivery({
    store,
    transport,
    clock: systemClock,
    holder: `${hostname()}:${process.pid}:${crypto.randomUUID()}`,
    retrySeconds: config.webhooks.retrySeconds,
    maxInFlight: config.webhooks.maxInFlight,
    perEndpoint: PER_ENDPOINT_IN_FLIGHT,
    perAccount: config.webhooks.maxInFlightPerAccount,
    leaseMs: CLAIM_LEASE_MS,
    onAttempt(d, outcome, reason) {
      metrics.increment("ats_webhook_deliveries_total", { outcome: outcome.state });
      if (outcome.state !== "delivered") log.info("webhook_attempt_failed", { endpointId: d.endpointId, eventId: d.message.id, status: outcome.status, reason, state: outcome.state });
      // A freed slot takes the next due delivery at once.
      nudge();
    },
    onError: (d, error) => log.warn("webhook_record_failed", { endpointId: d.endpointId, eventId: d.message.id, error: error instanceof Error ? error.message : String(error) }),
  });

  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let prunedAtMs = 0;
  async function round(): Promise<void> {
    for (let i = 0; i < FAN_OUT_ROUNDS && (await fanOut()) > 0; i++);
    await delivery.run();
    if (systemClock.nowMs() - prunedAtMs > PRUNE_EVERY_MS) {
      prunedAtMs = systemClock.nowMs();
      await store.prune(prunedAtMs - DELIVERIES_KEPT_MS);
    }
  }
  function tick() {
    timer = undefined;
    if (stopped) return;
    if (running !== undefined) {
      again = true;
      return;
    }
    running = round()
      .catch((error: unknown) => log.warn("webhook_round_failed", { error: error instanceof Error ? error.message : String(error) }))
      .finally(() => {
        running = undefined;
        if (stopped) return;
        if (again) {
          again = false;
          tick();
        } else timer = setTimeout(tick, config.webhooks.pollMs);
      });
  }
  const delivering = config.webhooks.enabled && config.webhooks.delivery;
  function nudge() {
    if (stopped || !delivering) return;
    if (timer !== undefined) clearTimeout(timer);
    tick();
  }
  if (delivering) tick();

  return {
    endpoints,
    // The default chain names a settlement no relay named (decisions §30: every event carries `chain`); without it a
    // one-chain deployment's `submission.settled` carried none.
    onSettled: createSubmissionEvents({
      store,
      records: f.storage.submissions,
      clock: systemClock,
      chain: { chainId: f.chainId, caip2: `eip155:${f.chainId}`, easContract: f.easAddress.toLowerCase() },
    }),
    nudge,
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
      await delivery.idle();
    },
  };
}
