/**
 * The attestation index's follower (decisions §11, §21): the loop (one instance at a time holds the lease and reads
 * the chain), its backoff, progress lines, metrics and readiness, and the store-backed reads public requests go
 * through. Its parts are in `_index_follower.ts`; `attestation_index.ts` wires it to the chain and the storage.
 */
import { hostname } from "node:os";
import type { IndexAnswers } from "../domain/index/mod.ts";
import { createIndexAnswers, isDoubted, isFresh } from "../domain/index/mod.ts";
import type { IndexHead, IndexStore, WrittenAttestation } from "../ports/attestation_index.ts";
import type { Clock } from "../ports/clock.ts";
import {
  createBackfillProgress,
  createPoll,
  createWriteCatchUp,
  describeIndexMetrics,
  type FollowerState,
  type IndexDeps,
  type IndexSettings,
  pollWithin,
  CATCHING_UP_BLOCKS,
  sightedHeads,
  createWrittenRecords,
} from "./_index_follower.ts";

export { CATCHING_UP_BLOCKS, type IndexSettings } from "./_index_follower.ts";

/** The index as `/readyz` reports it. */
export type IndexStatus = {
  readonly indexedBlock: number | null;
  /** The chain's head at the follower's last completed poll (from the store: the same on every instance). */
  readonly head: number | null;
  readonly lagBlocks: number | null;
  readonly catchingUp: boolean;
  /** Unix seconds of the follower's last completed poll; null: none yet. */
  readonly checkedAt: number | null;
  /**
   * No poll completed for `INDEX_STALL_SECONDS`, or the last one is doubted (`doubted`): public reads answer 503
   * INDEX_STALE (decisions §21).
   */
  readonly stale: boolean;
  /**
   * The follower's polls found the chain's head below the index for longer than `INDEX_BEHIND_GRACE_SECONDS` since the
   * last completed poll (a backend behind that long, or a chain rolled back to a shorter one): stale until a poll
   * completes (docs/attestation_index.md).
   */
  readonly doubted: boolean;
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
   * Runs follower steps until the index holds the chain's head (tests, the harness), as the follower would; false if
   * a step failed or found the chain's head below the index. A completed catch-up is recorded as a poll.
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
  /**
   * A block this instance saw mined (a write's receipt): the follower's next poll, within a moment, takes it for the
   * chain's head instead of reading the head (issue 43 item 5; app/_index_follower.ts `sightedHeads`). `wrote` tells it too.
   */
  readonly sighted: (blockNumber: bigint) => void;
  /** An attestation this instance wrote, mined: the follower takes its record from it (issue 43 item 5). */
  readonly attested: (written: WrittenAttestation) => void;
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


/** The header the index follower's JSON-RPC requests carry (`x-ats-reader: index-follower`). */
export const INDEX_READER_HEADER = "x-ats-reader";

const MAX_BACKOFF_MS = 30_000;
/** How long a nudge waits for its poll by default. */
const NUDGE_WAIT_MS = 5_000;

/** The status of a follower's state now. */
function statusOf(state: FollowerState, settings: IndexSettings, clock: Clock): IndexStatus {
  return {
    indexedBlock: state.indexed === undefined ? null : Number(state.indexed),
    head: state.head === undefined ? null : Number(state.head),
    lagBlocks: state.head === undefined ? null : Number(state.head - (state.indexed ?? settings.startBlock - 1n)),
    catchingUp: state.indexed === undefined || state.head === undefined ? true : state.head - state.indexed > CATCHING_UP_BLOCKS,
    checkedAt: state.checkedAtMs === null ? null : Math.floor(state.checkedAtMs / 1000),
    stale: !isFresh({ checkedAtMs: state.checkedAtMs, doubtedAtMs: state.doubtedAtMs }, { nowMs: clock.nowMs(), stallSeconds: settings.stallSeconds }),
    doubted: isDoubted({ checkedAtMs: state.checkedAtMs, doubtedAtMs: state.doubtedAtMs }),
    follower: state.leader,
  };
}

/** Starts the follower (unless `follow` is false) and returns the reads and the status. */
export function wireIndex(deps: IndexDeps): IndexRunner {
  const { store, settings, clock } = deps;
  const state: FollowerState = { indexed: undefined, head: undefined, checkedAtMs: null, doubtedAtMs: null, behind: undefined, leader: false, failures: 0, stopped: false, nextPollAt: 0, headSeen: false, moved: [], written: createWrittenRecords() };
  const sightings = sightedHeads(deps.chain, clock, () => state.indexed);
  const poll = createPoll({ ...deps, chain: sightings.chain }, state);
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

  const status = () => statusOf(state, settings, clock);
  /** Reads what the store says (another instance may be the follower). */
  async function refresh(): Promise<IndexStatus> {
    const h = await store.head();
    state.indexed = h?.blockNumber;
    if (!state.leader && h?.chainHead !== null && h?.chainHead !== undefined) state.head = h.chainHead;
    state.checkedAtMs = h?.checkedAtMs ?? null;
    state.doubtedAtMs = h?.doubtedAtMs ?? null;
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
      const outcome = await serial(() => poll("follower"));
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
  const onHead = (head: bigint | null) => {
    if (state.stopped) return;
    if (head !== null) sightings.sighted(head);
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
  const nudge = (waitMs = NUDGE_WAIT_MS) => (follows() ? pollWithin(() => serial(() => poll("nudge")), waitMs) : Promise.resolve());
  const writes = createWriteCatchUp({ follows, indexed: () => state.indexed, nudge, sighted: sightings.sighted });

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
    sighted: sightings.sighted,
    attested: state.written.add,
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

