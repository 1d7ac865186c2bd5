/**
 * Wiring of the attestation index (decisions §11): the follower loop (one instance at a time holds the
 * lease), its backoff, progress lines, metrics and readiness, and the reads requests go through.
 */
import { hostname } from "node:os";
import { createViemAttestationIndex } from "../adapters/chain/mod.ts";
import { systemClock } from "../adapters/system/mod.ts";
import { createArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { createListAttestations } from "../domain/index/mod.ts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import type { Config } from "./config.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
import { createIndexedAttestations, createIndexFollower, type FollowStep } from "../domain/index/mod.ts";
import type { AttestationIndex, ChainHistory, IndexStore } from "../ports/attestation_index.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";
import type { PrometheusMetrics } from "../adapters/observability/mod.ts";

/** The index as `/readyz` reports it. */
export type IndexStatus = {
  readonly indexedBlock: number | null;
  readonly head: number | null;
  readonly lagBlocks: number | null;
  readonly catchingUp: boolean;
  /** Whether this instance holds the follower lease. */
  readonly follower: boolean;
};

/** A running index. */
export type IndexRunner = {
  /** What requests read: the store up to the checkpoint, the chain after it. */
  readonly reads: AttestationIndex;
  readonly status: () => IndexStatus;
  /** False once following has failed (or, seen from another instance, stood still) for longer than the stall time. */
  readonly healthy: () => boolean;
  /** Runs follower steps until the index reaches its target (tests, `ops index`); false if a step failed. */
  readonly catchUp: () => Promise<boolean>;
  readonly stop: () => Promise<void>;
};

/** Settings of the index. */
export type IndexSettings = {
  readonly startBlock: bigint;
  readonly confirmations: number;
  readonly pollMs: number;
  readonly stallSeconds: number;
  readonly leaseSeconds: number;
  readonly stepBlocks: bigint;
  /** Off: no follower loop here (reads still use whatever the store holds). */
  readonly follow?: boolean | undefined;
};

/** An index more than this many blocks short of `head - confirmations` is catching up. */
export const CATCHING_UP_BLOCKS = 64n;
const PROGRESS_EVERY_MS = 5_000;
const MAX_BACKOFF_MS = 30_000;

/** Starts the follower (unless `follow` is false) and returns the reads and the status. */
export function wireIndex(deps: {
  readonly store: IndexStore;
  readonly chain: ChainHistory;
  readonly live: AttestationIndex;
  readonly settings: IndexSettings;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics?: PrometheusMetrics | undefined;
}): IndexRunner {
  const { store, chain, settings, clock, log } = deps;
  const step = createIndexFollower({
    chain,
    store,
    startBlock: settings.startBlock,
    confirmations: settings.confirmations,
    stepBlocks: settings.stepBlocks,
  });
  const holder = `${hostname()}:${process.pid}:${crypto.randomUUID()}`;
  let indexed: bigint | undefined;
  let head: bigint | undefined;
  let target: bigint | undefined;
  let leader = false;
  let lastHealthyMs = clock.nowMs();
  let failures = 0;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;

  const behind = () => (indexed === undefined || target === undefined ? true : target - indexed > CATCHING_UP_BLOCKS);

  const progress = createBackfillProgress({ clock, log, metrics: deps.metrics });

  /** One round: follow while leading and behind; otherwise watch the store another instance writes. */
  async function round(): Promise<number> {
    leader = await store.lease(holder, clock.nowMs(), settings.leaseSeconds * 1000);
    if (!leader) {
      const [checkpoint, latest] = await Promise.all([store.checkpoint(), chain.head()]);
      const before = indexed;
      indexed = checkpoint?.blockNumber;
      if (latest.ok) {
        head = latest.value;
        target = latest.value - BigInt(settings.confirmations);
      }
      if (!behind() || (indexed !== undefined && indexed !== before)) lastHealthyMs = clock.nowMs();
      // Ready to take over as soon as the holder's lease runs out.
      return Math.min(settings.pollMs, settings.leaseSeconds * 1000);
    }
    const s = await followOnce();
    if (s === undefined) return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures - 1, 6));
    // The lease is renewed every round, so a round comes at least twice per lease.
    return moreToDo(s) ? 0 : Math.min(settings.pollMs, (settings.leaseSeconds * 1000) / 2);
  }

  /** One follower step with its bookkeeping (status, logs, metrics); undefined when it failed. */
  async function followOnce(): Promise<Extract<FollowStep, { ok: true }> | undefined> {
    const s = await step();
    if (!s.ok) {
      failures++;
      log.warn("index_follow_failed", { reason: s.reason, attempt: failures });
      return undefined;
    }
    failures = 0;
    lastHealthyMs = clock.nowMs();
    indexed = s.indexedBlock;
    head = s.head;
    target = s.target;
    if (s.rewoundTo !== undefined) log.warn("index_reorg", { rewoundTo: Number(s.rewoundTo), head: Number(s.head) });
    progress(s);
    return s;
  }
  const moreToDo = (s: Extract<FollowStep, { ok: true }>) => s.rewoundTo !== undefined || (s.indexedBlock ?? -1n) < s.target;

  const loop = () => {
    if (stopped) return;
    running = round()
      .catch((error: unknown) => {
        // A database error: the range's transaction rolled back; it is fetched again.
        failures++;
        log.warn("index_store_failed", { error: error instanceof Error ? error.message : String(error), attempt: failures });
        return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures - 1, 6));
      })
      .then((delay) => {
        if (!stopped) timer = setTimeout(loop, delay);
      });
  };
  if (settings.follow !== false) loop();

  deps.metrics?.describe("ats_index_logs_total", "counter", "EAS logs (Attested and Revoked) the index follower ingested");
  deps.metrics?.gauge("ats_index_block", "Newest block the attestation index holds", () => Promise.resolve([{ value: Number(indexed ?? -1n) }]));
  deps.metrics?.gauge("ats_index_lag_blocks", "Blocks between the chain head and the attestation index", () =>
    Promise.resolve(head === undefined ? [] : [{ value: Number(head - (indexed ?? settings.startBlock - 1n)) }]));

  return {
    reads: createIndexedAttestations({ live: deps.live, store, startBlock: settings.startBlock }),
    status: () => ({
      indexedBlock: indexed === undefined ? null : Number(indexed),
      head: head === undefined ? null : Number(head),
      lagBlocks: head === undefined ? null : Number(head - (indexed ?? settings.startBlock - 1n)),
      catchingUp: behind(),
      follower: leader,
    }),
    healthy: () => clock.nowMs() - lastHealthyMs <= settings.stallSeconds * 1000,
    async catchUp() {
      for (;;) {
        const s = await followOnce();
        if (s === undefined) return false;
        if (!moreToDo(s)) return true;
      }
    },
    async stop() {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      await running;
      // Hand the lease back (an expiry in the past), so another instance follows at once.
      if (leader) await store.lease(holder, clock.nowMs(), -1).catch(() => false);
    },
  };
}

/**
 * Reports the follower's progress: logs ingested (metric), a line every few seconds while a backfill runs (blocks
 * done, rate, time left) and one when it caught up.
 */
function createBackfillProgress(deps: { clock: Clock; log: Logger; metrics?: PrometheusMetrics | undefined }) {
  const { clock, log } = deps;
  let backfill: { startedMs: number; fromBlock: bigint; lastLogMs: number } | undefined;
  return (s: Extract<FollowStep, { ok: true }>) => {
    const now = clock.nowMs();
    if (s.ingested === undefined || s.indexedBlock === undefined) return;
    deps.metrics?.increment("ats_index_logs_total", {}, s.ingested.events);
    if (s.indexedBlock >= s.target) {
      if (backfill !== undefined) log.info("index_caught_up", { indexedBlock: Number(s.indexedBlock), seconds: Math.round((now - backfill.startedMs) / 1000) });
      backfill = undefined;
      return;
    }
    backfill ??= { startedMs: now, fromBlock: s.ingested.from, lastLogMs: now };
    if (now - backfill.lastLogMs < PROGRESS_EVERY_MS) return;
    backfill.lastLogMs = now;
    const done = Number(s.indexedBlock - backfill.fromBlock + 1n);
    const total = Number(s.target - backfill.fromBlock + 1n);
    const rate = done / Math.max(1, (now - backfill.startedMs) / 1000);
    log.info("index_backfill", {
      indexedBlock: Number(s.indexedBlock),
      target: Number(s.target),
      blocksDone: done,
      percent: Math.floor((done / Math.max(1, total)) * 1000) / 10,
      blocksPerSecond: Math.round(rate),
      etaSeconds: Math.round((total - done) / Math.max(rate, 1e-9)),
    });
  };
}

/** Builds the chain reads, the index over the storage's tables, and the attestation list read from them. */
export async function wireAttestationIndex(config: Config, f: Foundation): Promise<{ index: IndexRunner; attestationList: ReturnType<typeof createListAttestations> }> {
  const chainReads = createViemAttestationIndex({
    rpcUrl: f.rpcUrl,
    chainId: f.chainId,
    easAddress: f.easAddress,
    startBlock: f.startBlock,
    timeoutMs: config.artifactTrustRpcTimeoutMs,
    fetchFn: f.rpcFetch,
    log: (event, fields) => f.log.warn(event, fields),
  });
  const store = await f.storage.indexStore({ chainId: f.chainId, easAddress: f.easAddress });
  const index = wireIndex({
    store,
    chain: chainReads,
    live: chainReads,
    settings: {
      startBlock: f.startBlock,
      // The devnet mines on demand and never reorganizes by itself: nothing to wait for.
      confirmations: config.index.confirmations ?? (f.devnet === undefined ? 12 : 0),
      pollMs: config.index.pollMs,
      stallSeconds: config.index.stallSeconds,
      leaseSeconds: config.index.leaseSeconds,
      stepBlocks: BigInt(config.index.stepBlocks),
      follow: config.index.follow,
    },
    clock: systemClock,
    log: f.log,
    metrics: f.metrics,
  });
  const attestationList = createListAttestations({ reads: chainReads, store, schemaUids: f.chain.schemas, startBlock: f.startBlock });
  return { index, attestationList };
}

/** Builds artifact trust over the index's reads, the trust anchors and the cached discovery (decisions §7). */
export function wireArtifactTrust(f: Foundation, index: IndexRunner, discovery: WiredDiscovery): ReturnType<typeof createArtifactTrust> {
  return createArtifactTrust({
    index: index.reads,
    trustAnchors: f.trustAnchors,
    clock: systemClock,
    jws: createWebCryptoJwsVerifier(),
    discover: discovery.viewDiscover,
  });
}
