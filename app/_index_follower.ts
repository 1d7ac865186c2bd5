/** The follower's parts (app/index_follower.ts): its state, the poll, the write catch-up, metrics and progress. */
import { createIndexFollower, type FollowStep, type IndexAnswers, isFresh } from "../domain/index/mod.ts";
import type { AttestationIndex, ChainHistory, HeadSignal, IndexHead, IndexRead, IndexStore, WrittenAttestation } from "../ports/attestation_index.ts";
import type { KeccakHex } from "../domain/address.ts";
import type { HexString } from "../ports/eas.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";
import type { PrometheusMetrics } from "../adapters/observability/mod.ts";
import type { SubjectOf } from "../domain/index/mod.ts";

const PROGRESS_EVERY_MS = 5_000;

/** An index more than this many blocks short of the head is catching up. */
export const CATCHING_UP_BLOCKS = 64n;

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
  /** `INDEX_BEHIND_GRACE_SECONDS`; undefined: {@link BEHIND_GRACE_SECONDS}. */
  readonly behindGraceSeconds?: number | undefined;
};

/** What the index wiring needs. */
export type IndexDeps = {
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
  /** Checks the records of this instance's own writes (issue 43 item 5); absent: every record is read from the chain. */
  readonly keccak?: KeccakHex | undefined;
};

/** What this instance knows of the index, shared by the follower's pieces. */
export type FollowerState = {
  indexed: bigint | undefined;
  head: bigint | undefined;
  checkedAtMs: number | null;
  /** The doubted poll's `checkedAtMs` (IndexStore.doubted); null: none since the last completed poll. */
  doubtedAtMs: number | null;
  /**
   * Since when this instance's follower polls have found the chain's head below the index, and the store's last
   * completed poll then (a poll completed since, on any instance, starts the window again); undefined: not behind.
   */
  behind: { readonly sinceMs: number; readonly checkedAtMs: number | null } | undefined;
  leader: boolean;
  failures: number;
  stopped: boolean;
  nextPollAt: number;
  /** A new head was announced since the last poll began. */
  headSeen: boolean;
  /** Told after each step that wrote to the store (the answer cache's change signal). */
  moved: (() => void)[];
  /** The attestations this instance wrote, until its follower takes them in (issue 43 item 5). */
  readonly written: ReturnType<typeof createWrittenRecords>;
};

/** How many attestations an instance keeps of its own writes for its follower (issue 43 item 5); the oldest go first. */
export const WRITTEN_KEPT = 1_024;

/**
 * The attestations this instance wrote and saw mined, kept for its follower, which takes each once: the step that
 * ingests its block has its record without reading it (domain/index/written_records.ts). On PostgreSQL another
 * instance's follower may ingest it; the bound drops what is never taken.
 */
export function createWrittenRecords() {
  const kept = new Map<string, WrittenAttestation>();
  return {
    add(written: WrittenAttestation) {
      if (kept.size >= WRITTEN_KEPT) kept.delete(kept.keys().next().value!);
      kept.set(written.uid.toLowerCase(), written);
    },
    take(uid: string) {
      const written = kept.get(uid);
      if (written !== undefined) kept.delete(uid);
      return written;
    },
  };
}

/**
 * How long (by default, `INDEX_BEHIND_GRACE_SECONDS`) the follower's polls may find the chain's head below the index
 * (its blocks otherwise the index's), none completing, before reads fail closed (503 INDEX_STALE): then the doubt is
 * recorded in the store, which every instance's reads see. The index keeps the unconfirmed tail up to the head, so a
 * load-balanced provider's backend one block behind gives such a head; counted in polls, two in a row made reads 503
 * 29 % of the time on 12 s blocks with one backend a block behind. A few block times of a mainnet chain: a chain rolled
 * back that mines again is a fork at a stored tail block, rewound at once; only one that stays short relies on this,
 * and its dropped attestations are served for up to the grace and a poll (docs/attestation_index.md).
 */
export const BEHIND_GRACE_SECONDS = 30;

/** Who a poll is for: the follower's (the loop, which runs while holding the lease, or a catch-up) or a write's nudge. */
export type PollMode = "follower" | "nudge";

/** Runs `poll`, waiting for it at most `waitMs`. */
export async function pollWithin(poll: () => Promise<unknown>, waitMs: number): Promise<void> {
  let timeout: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    poll().catch(() => undefined),
    new Promise<void>((resolve) => (timeout = setTimeout(resolve, waitMs))),
  ]);
  clearTimeout(timeout);
}

/** How long a block seen mined (a write's receipt, a head announced) stands for the chain's head (issue 43 item 5). */
export const HEAD_SIGHTING_MS = 500;

/**
 * The follower's chain reads, the head taken from a sighting when one is fresh (issue 43 item 5): a block this
 * instance saw mined (its write's receipt, a head the node announced) is a head read the node already answered, so
 * the poll it sets off reaches that block without asking `eth_blockNumber` again. A sighting is used once, within
 * {@link HEAD_SIGHTING_MS} of being seen, and only when it is past every head read and the index (`indexed`): the
 * chain's head is at least that block, so the poll indexes up to it and no further, and the follower's next poll reads
 * the head as before. Anything else is read from the node.
 */
export function sightedHeads(chain: ChainHistory, clock: Clock, indexed: () => bigint | undefined) {
  let sighting: { readonly block: bigint; readonly atMs: number } | undefined;
  /** The newest head this follower has been given. */
  let known: bigint | undefined;
  const past = (block: bigint, than: bigint | undefined) => than === undefined || block > than;
  const head = async (): Promise<IndexRead<bigint>> => {
    const seen = sighting;
    sighting = undefined;
    if (seen !== undefined && clock.nowMs() - seen.atMs <= HEAD_SIGHTING_MS && past(seen.block, known) && past(seen.block, indexed())) {
      known = seen.block;
      return { ok: true, value: seen.block };
    }
    const read = await chain.head();
    if (read.ok && past(read.value, known)) known = read.value;
    return read;
  };
  return {
    chain: { ...chain, head } satisfies ChainHistory,
    /** A block seen mined now; the newest unused sighting is kept. */
    sighted(block: bigint) {
      if (sighting === undefined || block > sighting.block) sighting = { block, atMs: clock.nowMs() };
    },
  };
}

/**
 * Issue 43: a write this instance saw mined is polled for by the next read that needs it, not before the write is
 * answered. A poll per write (several JSON-RPC calls, an append, a webhook round) was about half the CPU of a delegated
 * attestation; writes in a row now share the follower's next poll, and a read after a write still lists it.
 */
export function createWriteCatchUp(deps: { follows: () => boolean; indexed: () => bigint | undefined; nudge: () => Promise<void>; sighted?: (block: bigint) => void }) {
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
      deps.sighted?.(blockNumber);
      if (written === undefined || blockNumber > written) written = blockNumber;
      for (const listener of changed) listener();
    },
  };
}

/**
 * A poll of the chain: follower steps until the index holds the head (recorded in the store as a completed poll),
 * at most about a third of the lease at a time so the lease is renewed in between; "more" while a backfill goes on, or
 * a refill of stored subjects (a poll of one step at the head); "behind" when the chain's head was below the index (no
 * completed poll; the next comes one poll interval later, not after a backoff: the node answered, and the chain
 * growing again is the moment a rollback shows as a fork).
 */
export function createPoll(deps: IndexDeps, state: FollowerState): (mode?: PollMode) => Promise<"done" | "more" | "failed" | "behind"> {
  const { store, clock, log, settings } = deps;
  const behind = createBehindWatch(deps, state);
  const step = createIndexFollower({
    chain: deps.chain,
    store,
    startBlock: settings.startBlock,
    confirmations: settings.confirmations,
    stepBlocks: settings.stepBlocks,
    webhookConfirmations: settings.webhookConfirmations,
    subjectOf: settings.subjectOf,
    written: deps.keccak === undefined ? undefined : { take: state.written.take, keccak: deps.keccak },
  });
  const progress = createBackfillProgress({ clock, log, metrics: deps.metrics });
  /**
   * When a step last kept the stored subjects to the rule (two statements: the rule row, a row without a subject), and
   * whether it left more to do. Checked again once a poll interval, or at once while a refill goes on: checked at every
   * step, a write's poll paid them for a rule that changes with the trust anchors (found in review: 2 statements a write).
   */
  const subjects = { atMs: undefined as number | undefined, pending: false };

  /** One follower step with its bookkeeping (status, logs, metrics); undefined when it failed. */
  async function followOnce(): Promise<Extract<FollowStep, { ok: true }> | undefined> {
    const now = clock.nowMs();
    const keep = subjects.pending || subjects.atMs === undefined || now - subjects.atMs >= settings.pollMs;
    const s = await step({ subjects: keep });
    if (!s.ok) {
      state.failures++;
      log.warn("index_follow_failed", { reason: s.reason, attempt: state.failures });
      return undefined;
    }
    // A step that found the head behind, or rewound, stopped before the subjects: they are due again.
    if (keep && s.behind !== true && s.rewoundTo === undefined) {
      subjects.atMs = now;
      subjects.pending = s.subjectsPending === true;
    }
    state.failures = 0;
    state.indexed = s.indexedBlock;
    // A head below the index is no head of a completed poll (`/readyz` and the lag gauge keep the last one's).
    if (s.behind !== true) state.head = s.head;
    if (s.rewoundTo !== undefined) {
      log.warn(s.deepReorg ? "index_deep_reorg" : "index_reorg", { rewoundTo: Number(s.rewoundTo), head: Number(s.head), confirmedTo: Number(s.confirmedTo) });
    }
    if (s.filled !== undefined) log.info("index_records_filled", { attestations: s.filled });
    if (s.subjectsForgotten !== undefined) log.info("index_subjects_forgotten", { attestations: s.subjectsForgotten });
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

  return async function poll(mode: PollMode = "follower") {
    const startedMs = clock.nowMs();
    /** The store's head read after a step found the chain's head below the index, before the head is read again. */
    let before: IndexHead | undefined | null = null;
    for (;;) {
      const s = await followOnce();
      if (s === undefined) return "failed";
      if (s.behind === true) {
        // Read once more before it counts (a load-balanced provider's next call often reaches a backend caught up).
        // This step set `indexed` to the store's checkpoint, so the next one takes no sighting at or below it for the
        // head (sightedHeads): a block this instance saw mined is never evidence of a head behind.
        if (before === null) {
          before = await store.head();
          continue;
        }
        await behind(s, before, mode === "follower" || state.leader);
        state.nextPollAt = clock.nowMs() + settings.pollMs;
        return "behind";
      }
      before = null;
      if (s.caughtUp) {
        const now = clock.nowMs();
        state.behind = undefined;
        // A refill of stored subjects (issue 43) goes on at once, a step at the head after another, each a completed
        // poll: recorded once a poll interval (and whenever blocks came), so reads stay fresh and kept answers live as
        // long as on any day. Before, no poll completed until the last row was filled (reads 503 INDEX_STALE).
        const refilling = s.subjectsPending === true;
        if (!refilling || s.ingested !== undefined || s.rewoundTo !== undefined || now - (state.checkedAtMs ?? 0) >= settings.pollMs) {
          await store.checked(now, s.head);
          state.checkedAtMs = Math.max(state.checkedAtMs ?? 0, now);
          state.doubtedAtMs = null;
          for (const listener of state.moved) listener();
        }
        state.nextPollAt = refilling ? now : now + settings.pollMs;
        return refilling ? "more" : "done";
      }
      if (state.stopped || clock.nowMs() - startedMs > (settings.leaseSeconds * 1000) / 3) return "more";
    }
  };
}

/**
 * A follower poll found the chain's head below the index twice (read again at once): the window of {@link
 * BEHIND_GRACE_SECONDS} starts, or goes on while no poll completed since it started (the store's last completed poll,
 * `before`, read before the second look, is still the one it started with); past the grace, that poll is doubted in
 * the store. Only the follower's own polls count (`counts`): a nudge of an instance that does not hold the lease
 * (after its own write, PostgreSQL) compares a head with an index it may not have read for a while.
 */
function createBehindWatch(deps: Pick<IndexDeps, "store" | "clock" | "log" | "settings">, state: FollowerState) {
  const { store, clock, log } = deps;
  const graceMs = (deps.settings.behindGraceSeconds ?? BEHIND_GRACE_SECONDS) * 1000;
  return async (s: Extract<FollowStep, { ok: true }>, before: IndexHead | undefined, counts: boolean): Promise<void> => {
    const now = clock.nowMs();
    const fields = { head: Number(s.head), indexedBlock: s.indexedBlock === undefined ? null : Number(s.indexedBlock) };
    if (!counts) {
      log.debug("index_head_behind", { ...fields, counted: false });
      return;
    }
    const checkedAtMs = before?.checkedAtMs ?? null;
    if (state.behind === undefined || state.behind.checkedAtMs !== checkedAtMs) state.behind = { sinceMs: now, checkedAtMs };
    const behindMs = now - state.behind.sinceMs;
    // A warning once the head has stayed behind for half the grace; before that, debug: a load-balanced provider's
    // lagging backend is read behind many times an hour, each a line at warn level otherwise.
    const level = behindMs * 2 >= graceMs && graceMs > 0 ? "warn" : "debug";
    log[level]("index_head_behind", { ...fields, seconds: Math.floor(behindMs / 1000) });
    // Nothing to doubt before a first completed poll (reads are stale then anyway), or twice.
    if (behindMs < graceMs || checkedAtMs === null || before?.doubtedAtMs === checkedAtMs) return;
    if (!(await store.doubted(checkedAtMs))) return;
    log.error("index_head_doubted", { ...fields, seconds: Math.floor(behindMs / 1000), checkedAt: new Date(checkedAtMs).toISOString() });
    state.checkedAtMs = checkedAtMs;
    state.doubtedAtMs = checkedAtMs;
    for (const listener of state.moved) listener();
  };
}

/** The index's gauges and counter. */
export function describeIndexMetrics(deps: IndexDeps, state: FollowerState): void {
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
export function createBackfillProgress(deps: { clock: Clock; log: Logger; metrics?: PrometheusMetrics | undefined }) {
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

