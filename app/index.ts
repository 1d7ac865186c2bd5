/**
 * Wiring of the attestation index (decisions §11, §21): the follower loop (one instance at a time holds the
 * lease and reads the chain), its backoff, progress lines, metrics and readiness, and the store-backed reads
 * public requests go through.
 */
import { hostname } from "node:os";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import { createViemAttestationIndex, createWsNewHeads } from "../adapters/chain/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { createArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import type { Config } from "./config.ts";
import { webhookConfirmations } from "./webhooks.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
import {
  createIndexAnswers,
  createIndexFollower,
  createSubjectOf,
  type SubjectOf,
  type CountAttestations,
  createCountAttestations,
  createGetAttestation,
  createListAttestations,
  type GetAttestation,
  type FollowStep,
  type IndexAnswers,
  isFresh,
  type ListAttestations,
} from "../domain/index/mod.ts";
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import type { AttestationIndex, ChainHistory, HeadSignal, IndexHead, IndexStore } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";
import type { PrometheusMetrics } from "../adapters/observability/mod.ts";

/** The name of the query cursors' key among the deployment's secrets. */
const CURSOR_SECRET = "attestation-cursors";

/** The index as `/readyz` reports it. */
export type IndexStatus = {
  readonly indexedBlock: number | null;
  /** The chain's head at the follower's last completed poll (from the store: the same on every instance). */
  readonly head: number | null;
  readonly lagBlocks: number | null;
  readonly catchingUp: boolean;
  /** Unix seconds of the follower's last completed poll; null: none yet. */
  readonly checkedAt: number | null;
  /** No poll completed for `INDEX_STALL_SECONDS`: public reads answer 503 INDEX_STALE (decisions §21). */
  readonly stale: boolean;
  /** Whether this instance holds the follower lease. */
  readonly follower: boolean;
};

/** A running index. */
export type IndexRunner = {
  /** What public reads go through: the store alone, pinned to the index head, with `asOf` (decisions §21). */
  readonly answers: IndexAnswers;
  /** The shared index's head as the store holds it now (what the answer cache keys its answers by). */
  readonly head: () => Promise<IndexHead | undefined>;
  /** The status as of the last round; `refresh` reads the store first. */
  readonly status: () => IndexStatus;
  /** Reads the shared store's head and returns the status. */
  readonly refresh: () => Promise<IndexStatus>;
  /** True while a poll of the chain completed within the stall time (any instance's, through the shared store). */
  readonly healthy: () => Promise<boolean>;
  /**
   * Runs follower steps until the index holds the chain's head (tests, `ops index`, a nudge); false if a step failed.
   * A completed catch-up is recorded as a poll.
   */
  readonly catchUp: () => Promise<boolean>;
  /**
   * Polls now, after a write this instance saw mined, and waits for that poll (at most `waitMs`), so the writer's
   * next read sees its write, whichever instance holds the lease. Does nothing on an instance that does not follow.
   */
  readonly nudge: (waitMs?: number) => Promise<void>;
  /**
   * A write of this instance was mined in `blockNumber` (issue 43): the next read that needs the index (an answer, the
   * head) polls first unless a poll got there meanwhile, so the writer's next read sees its write; writes in a row
   * share that poll. Tells the answer cache's change signal, so no answer kept from before is reused for that read.
   */
  readonly wrote: (blockNumber: bigint) => void;
  /** Calls `listener` whenever a step of this instance's follower has moved the store's index head or poll time. */
  readonly onMoved: (listener: () => void) => void;
  /**
   * Calls `listener` after each follower step that stored or rewound blocks short of the head, and once when a poll
   * completes (webhooks fan out the outbox).
   */
  readonly onIngested: (listener: () => void) => void;
  /** The store the follower writes (webhooks read the records of what it wrote to the outbox). */
  readonly store: IndexStore;
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
  /** Webhooks (decisions §22): outbox rows for blocks this deep; undefined: none. */
  readonly webhookConfirmations?: number | undefined;
  /** The subject a record names, stored with it for the subject's count (issue 43); undefined: none stored. */
  readonly subjectOf?: SubjectOf | undefined;
};

/** The header the index follower's JSON-RPC requests carry (`x-ats-reader: index-follower`). */
export const INDEX_READER_HEADER = "x-ats-reader";

/** An index more than this many blocks short of the head is catching up. */
export const CATCHING_UP_BLOCKS = 64n;
const PROGRESS_EVERY_MS = 5_000;
const MAX_BACKOFF_MS = 30_000;
/** How long a nudge waits for its poll by default. */
const NUDGE_WAIT_MS = 5_000;

/** What the index wiring needs. */
type IndexDeps = {
  readonly store: IndexStore;
  readonly chain: ChainHistory;
  /** Where schema strings are read, once per run. */
  readonly schemas: Pick<AttestationIndex, "schemaRecords">;
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly settings: IndexSettings;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics?: PrometheusMetrics | undefined;
  /** New heads announced by the node (`RPC_WS_URL`): each makes the follower poll at once. */
  readonly heads?: HeadSignal | undefined;
};

/** What this instance knows of the index, shared by the follower's pieces. */
type FollowerState = {
  indexed: bigint | undefined;
  head: bigint | undefined;
  checkedAtMs: number | null;
  leader: boolean;
  failures: number;
  stopped: boolean;
  nextPollAt: number;
  /** A new head was announced since the last poll began. */
  headSeen: boolean;
  /** Told after each step that wrote to the store (the answer cache's change signal). */
  moved: (() => void)[];
};

/** Starts the follower (unless `follow` is false) and returns the reads and the status. */
export function wireIndex(deps: IndexDeps): IndexRunner {
  const { store, settings, clock } = deps;
  const state: FollowerState = { indexed: undefined, head: undefined, checkedAtMs: null, leader: false, failures: 0, stopped: false, nextPollAt: 0, headSeen: false, moved: [] };
  const poll = createPoll(deps, state);
  const holder = `${hostname()}:${process.pid}:${crypto.randomUUID()}`;
  const leaseMs = settings.leaseSeconds * 1000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  /** One poll at a time: the loop's and the nudges'. */
  let polling: Promise<unknown> = Promise.resolve();
  const serial = <T>(run: () => Promise<T>): Promise<T> => {
    const next = polling.then(run, run);
    polling = next.catch(() => undefined);
    return next;
  };
  const backoff = () => Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(state.failures - 1, 6));

  const status = (): IndexStatus => ({
    indexedBlock: state.indexed === undefined ? null : Number(state.indexed),
    head: state.head === undefined ? null : Number(state.head),
    lagBlocks: state.head === undefined ? null : Number(state.head - (state.indexed ?? settings.startBlock - 1n)),
    catchingUp: state.indexed === undefined || state.head === undefined ? true : state.head - state.indexed > CATCHING_UP_BLOCKS,
    checkedAt: state.checkedAtMs === null ? null : Math.floor(state.checkedAtMs / 1000),
    stale: !isFresh({ checkedAtMs: state.checkedAtMs }, { nowMs: clock.nowMs(), stallSeconds: settings.stallSeconds }),
    follower: state.leader,
  });
  /** Reads what the store says (another instance may be the follower). */
  async function refresh(): Promise<IndexStatus> {
    const h = await store.head();
    state.indexed = h?.blockNumber;
    if (!state.leader && h?.chainHead !== null && h?.chainHead !== undefined) state.head = h.chainHead;
    state.checkedAtMs = h?.checkedAtMs ?? null;
    return status();
  }

  /** One round: renew the lease; poll when due while leading; otherwise watch the store another instance writes. */
  async function round(): Promise<number> {
    state.leader = await store.lease(holder, clock.nowMs(), leaseMs);
    if (!state.leader) {
      await refresh();
      // Ready to take over as soon as the holder's lease runs out.
      return Math.min(settings.pollMs, leaseMs);
    }
    if (clock.nowMs() >= state.nextPollAt || state.headSeen) {
      state.headSeen = false;
      const outcome = await serial(poll);
      if (outcome === "failed") return backoff();
      if (outcome === "more") return 0;
    }
    // The lease is renewed every round, so a round comes at least twice per lease.
    return state.headSeen ? 0 : Math.max(0, Math.min(state.nextPollAt - clock.nowMs(), leaseMs / 2));
  }

  const loop = () => {
    if (state.stopped) return;
    timer = undefined;
    running = round()
      .catch((error: unknown) => {
        // A database error: the range's transaction rolled back; it is fetched again.
        state.failures++;
        deps.log.warn("index_store_failed", { error: error instanceof Error ? error.message : String(error), attempt: state.failures });
        return backoff();
      })
      .then((delay) => {
        if (!state.stopped) timer = setTimeout(loop, delay);
      });
  };
  /** A new head announced: the next round comes now (a round under way polls again right after). */
  const onHead = () => {
    if (state.stopped) return;
    state.headSeen = true;
    if (timer !== undefined) {
      clearTimeout(timer);
      loop();
    }
  };
  let unsubscribe: (() => void) | undefined;
  if (settings.follow !== false) {
    loop();
    unsubscribe = deps.heads?.subscribe(onHead);
  }
  describeIndexMetrics(deps, state);

  const follows = () => settings.follow !== false && !state.stopped;
  // The writer polls itself, leader or not (the store takes one append per range), so its next read sees the write.
  const nudge = (waitMs = NUDGE_WAIT_MS) => (follows() ? pollWithin(() => serial(poll), waitMs) : Promise.resolve());
  const writes = createWriteCatchUp({ follows, indexed: () => state.indexed, nudge });

  return {
    answers: writes.first(createIndexAnswers({ ...deps, startBlock: settings.startBlock, stallSeconds: settings.stallSeconds })),
    head: () => writes.indexed().then(() => store.head()),
    status,
    refresh,
    healthy: async () => !(await refresh()).stale,
    onIngested: (listener) => void state.moved.push(listener),
    store,
    catchUp: () =>
      serial(async () => {
        for (;;) {
          const outcome = await poll();
          if (outcome !== "more") return outcome === "done";
        }
      }),
    nudge,
    wrote: writes.wrote,
    onMoved(listener) {
      state.moved.push(listener);
      writes.changed.push(listener);
    },
    async stop() {
      state.stopped = true;
      unsubscribe?.();
      if (timer !== undefined) clearTimeout(timer);
      await running;
      await polling;
      // Hand the lease back (an expiry in the past), so another instance follows at once.
      if (state.leader) await store.lease(holder, clock.nowMs(), -1).catch(() => false);
    },
  };
}

/** Runs `poll`, waiting for it at most `waitMs`. */
async function pollWithin(poll: () => Promise<unknown>, waitMs: number): Promise<void> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    poll().catch(() => undefined),
    new Promise<void>((resolve) => (timeout = setTimeout(resolve, waitMs))),
  ]);
  clearTimeout(timeout);
}

/**
 * Issue 43: a write this instance saw mined is polled for by the next read that needs it, not before the write is
 * answered. A poll per write (several JSON-RPC calls, an append, a webhook round) was about half the CPU of a delegated
 * attestation; writes in a row now share the follower's next poll, and a read after a write still lists it.
 */
function createWriteCatchUp(deps: { follows: () => boolean; indexed: () => bigint | undefined; nudge: () => Promise<void> }) {
  /** The newest block of a write of this instance that no poll has been asked for yet. */
  let written: bigint | undefined;
  let catching: Promise<void> | undefined;
  const held = (block: bigint) => {
    const indexed = deps.indexed();
    return indexed !== undefined && indexed >= block;
  };
  /** The answer cache's change signal: told after each step and after each write. */
  const changed: (() => void)[] = [];
  const indexed = async (): Promise<void> => {
    for (let round = 0; round < 2 && written !== undefined; round++) {
      if (!deps.follows() || held(written)) {
        written = undefined;
        return;
      }
      const target = written;
      catching ??= deps.nudge().finally(() => (catching = undefined));
      await catching;
      // Asked for once, whatever came of it: a read after a failed poll is not held again for the same write.
      if (written === target) written = undefined;
    }
  };
  return {
    changed,
    /** Polls (once, shared by the reads that arrive meanwhile) when a write of this instance is not in the index yet. */
    indexed,
    /** The reads, each after {@link indexed}. */
    first: (answers: IndexAnswers): IndexAnswers => ({
      pin: answers.pin,
      answer: ((read) => indexed().then(() => answers.answer(read))) as IndexAnswers["answer"],
      run: ((read) => indexed().then(() => answers.run(read))) as IndexAnswers["run"],
    }),
    wrote(blockNumber: bigint) {
      if (!deps.follows() || held(blockNumber)) return;
      if (written === undefined || blockNumber > written) written = blockNumber;
      for (const listener of changed) listener();
    },
  };
}

/**
 * A poll of the chain: follower steps until the index holds the head (recorded in the store as a completed poll),
 * at most about a third of the lease at a time so the lease is renewed in between; "more" while a backfill goes on.
 */
function createPoll(deps: IndexDeps, state: FollowerState): () => Promise<"done" | "more" | "failed"> {
  const { store, clock, log, settings } = deps;
  const step = createIndexFollower({
    chain: deps.chain,
    store,
    startBlock: settings.startBlock,
    confirmations: settings.confirmations,
    stepBlocks: settings.stepBlocks,
    webhookConfirmations: settings.webhookConfirmations,
    subjectOf: settings.subjectOf,
  });
  const progress = createBackfillProgress({ clock, log, metrics: deps.metrics });

  /** One follower step with its bookkeeping (status, logs, metrics); undefined when it failed. */
  async function followOnce(): Promise<Extract<FollowStep, { ok: true }> | undefined> {
    const s = await step();
    if (!s.ok) {
      state.failures++;
      log.warn("index_follow_failed", { reason: s.reason, attempt: state.failures });
      return undefined;
    }
    state.failures = 0;
    state.indexed = s.indexedBlock;
    state.head = s.head;
    if (s.rewoundTo !== undefined) {
      log.warn(s.deepReorg ? "index_deep_reorg" : "index_reorg", { rewoundTo: Number(s.rewoundTo), head: Number(s.head), confirmedTo: Number(s.confirmedTo) });
    }
    if (s.filled !== undefined) log.info("index_records_filled", { attestations: s.filled });
    if (s.subjectsFilled !== undefined) log.info("index_subjects_filled", { attestations: s.subjectsFilled });
    for (const row of s.outboxSkipped ?? []) {
      // Issue 43: an event that could not be queued is told, and the index goes on.
      log.error("webhook_outbox_skipped", { kind: row.kind, uid: row.uid, block: row.blockNumber === null ? null : Number(row.blockNumber), error: row.error });
    }
    progress(s);
    // A step that reaches the head is told once, by the poll it completes (below): a write taken in used to set off two
    // webhook rounds, the second finding nothing (issue 43).
    if (!s.caughtUp && (s.ingested !== undefined || s.rewoundTo !== undefined)) for (const listener of state.moved) listener();
    return s;
  }

  return async function poll() {
    const startedMs = clock.nowMs();
    for (;;) {
      const s = await followOnce();
      if (s === undefined) return "failed";
      if (s.caughtUp) {
        const now = clock.nowMs();
        await store.checked(now, s.head);
        state.checkedAtMs = Math.max(state.checkedAtMs ?? 0, now);
        state.nextPollAt = now + settings.pollMs;
        for (const listener of state.moved) listener();
        return "done";
      }
      if (state.stopped || clock.nowMs() - startedMs > (settings.leaseSeconds * 1000) / 3) return "more";
    }
  };
}

/** The index's gauges and counter. */
function describeIndexMetrics(deps: IndexDeps, state: FollowerState): void {
  const start = deps.settings.startBlock;
  deps.metrics?.describe("ats_index_logs_total", "counter", "EAS logs (Attested and Revoked) the index follower ingested");
  deps.metrics?.gauge("ats_index_block", "Newest block the attestation index holds", () => Promise.resolve([{ value: Number(state.indexed ?? -1n) }]));
  deps.metrics?.gauge("ats_index_lag_blocks", "Blocks between the chain head and the attestation index", () =>
    Promise.resolve(state.head === undefined ? [] : [{ value: Number(state.head - (state.indexed ?? start - 1n)) }]));
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

/** Builds the chain reads, the index over the storage's tables, and the attestation list read from it. */
export async function wireAttestationIndex(
  config: Config,
  f: Foundation,
): Promise<{
  index: IndexRunner;
  attestationList: ListAttestations;
  attestationQueries: { count: CountAttestations; get: GetAttestation };
  /** The list's and the count's computations per client address (`INDEX_QUERY_RATE_PER_MINUTE`), for the routes and the MCP tool alike. */
  attestationQueryRate: RateLimiter;
}> {
  const reads = (fetchFn: typeof fetch) =>
    createViemAttestationIndex({
      rpcUrl: f.rpcUrl,
      chainId: f.chainId,
      easAddress: f.easAddress,
      startBlock: f.startBlock,
      timeoutMs: config.artifactTrustRpcTimeoutMs,
      fetchFn,
      log: (event, fields) => f.log.warn(event, fields),
    });
  // The one reader of the chain names itself, so a provider's logs (and the tests' counters) tell its calls apart.
  const chainReads = reads(Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set(INDEX_READER_HEADER, "index-follower");
    return f.rpcFetch(input, { ...init, headers });
  }, { preconnect: fetch.preconnect }) as typeof fetch);
  // Schema strings, read once per run when a request first needs them.
  const schemaReads = reads(f.rpcFetch);
  const store = await f.storage.indexStore({ chainId: f.chainId, easAddress: f.easAddress });
  const index = wireIndex({
    store,
    chain: chainReads,
    schemas: schemaReads,
    chainId: f.chainId,
    easAddress: f.easAddress,
    settings: {
      startBlock: f.startBlock,
      // The devnet mines on demand and never reorganizes by itself: nothing to wait for.
      confirmations: config.index.confirmations ?? (f.devnet === undefined ? 12 : 0),
      pollMs: config.index.pollMs,
      stallSeconds: config.index.stallSeconds,
      leaseSeconds: config.index.leaseSeconds,
      stepBlocks: BigInt(config.index.stepBlocks),
      follow: config.index.follow,
      webhookConfirmations: webhookConfirmations(config, f.devnet !== undefined),
      subjectOf: createSubjectOf(f.chain.schemas),
    },
    clock: systemClock,
    log: f.log,
    metrics: f.metrics,
    heads: config.index.wsUrl === undefined
      ? undefined
      : createWsNewHeads({ url: config.index.wsUrl, log: (event, fields) => (event === "index_ws_subscribed" ? f.log.info(event, fields) : f.log.warn(event, fields)) }),
  });
  // One instance (SQLite): the writer's next read polls for the write first (issue 43), unless the follower got there
  // meanwhile. Several on one PostgreSQL: the writer polls before the write is answered, so a read at any instance
  // lists it (the balancer may send the next read elsewhere); not when the follower already holds the write's block.
  f.afterMined.listener = f.storage.kind === "postgres"
    ? async (blockNumber) => {
      const indexed = index.status().indexedBlock;
      if (indexed === null || BigInt(indexed) < blockNumber) await index.nudge();
    }
    : (blockNumber) => Promise.resolve(index.wrote(blockNumber));
  // Each read gets its own pin of the index head; the queries' own state is none, so one is built per read.
  // The key of the list's cursors (issue 43): one secret of the deployment, made once and kept in the shared store, so a
  // cursor one instance gave another accepts, and nobody without it can mint one (docs/configuration.md).
  const cursorKey = await f.storage.secrets.secret(CURSOR_SECRET, cryptoRandom.bytes(32));
  const deps = (reads: AttestationIndex) => ({ reads, store, schemaUids: f.chain.schemas, startBlock: f.startBlock, cursorKey });
  const attestationList: ListAttestations = (query) => index.answers.answer((reads) => createListAttestations(deps(reads))(query));
  const count: CountAttestations = (query) => index.answers.answer((reads) => createCountAttestations(deps(reads))(query));
  const get: GetAttestation = (uid) => index.answers.answer((reads) => createGetAttestation(deps(reads))(uid));
  const attestationQueryRate = createRateLimiter(systemClock, { capacity: config.index.queryPerMinute, perMinute: config.index.queryPerMinute });
  return { index, attestationList, attestationQueries: { count, get }, attestationQueryRate };
}

/** Builds artifact trust over the index's store-backed reads, the trust anchors and the cached discovery (decisions §7, §21). */
export function wireArtifactTrust(f: Foundation, index: IndexRunner, discovery: WiredDiscovery): ArtifactTrust {
  const jws = createWebCryptoJwsVerifier();
  return (artifactDid) =>
    index.answers.answer((reads) =>
      createArtifactTrust({ index: reads, trustAnchors: f.trustAnchors, clock: systemClock, jws, discover: discovery.viewDiscover })(artifactDid)
    );
}
