/** The follower's parts (app/index_follower.ts): its state, the poll, the write catch-up, metrics and progress. */
import { createIndexFollower, type FollowStep, type IndexAnswers, isFresh } from "../domain/index/mod.ts";
import type { AttestationIndex, ChainHistory, HeadSignal, IndexRead, IndexStore, WrittenAttestation } from "../ports/attestation_index.ts";
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
  /** When a poll last recorded the chain's head below the index (IndexStore.doubted); null: never seen. */
  doubtedAtMs: number | null;
  /** Polls in a row that found the chain's head below the index (see {@link BEHIND_POLLS}). */
  behindPolls: number;
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
 * How many polls in a row may find the chain's head below the index (its blocks otherwise the index's) before reads
 * fail closed (503 INDEX_STALE): the second such poll, one `INDEX_POLL_MS` after the first, records it in the store,
 * which every instance's reads see. A load-balanced provider's backend behind is usually caught up, or another
 * backend answers, by the next poll, and one slow backend should not flap every read to 503; a chain rolled back to a
 * shorter one stays below, and its dropped attestations are then served for at most about one poll interval, no
 * longer than a same-height reorg is served until the next poll sees it (docs/attestation_index.md).
 */
export const BEHIND_POLLS = 2;

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
export function createPoll(deps: IndexDeps, state: FollowerState): () => Promise<"done" | "more" | "failed" | "behind"> {
  const { store, clock, log, settings } = deps;
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

  return async function poll() {
    const startedMs = clock.nowMs();
    for (;;) {
      const s = await followOnce();
      if (s === undefined) return "failed";
      if (s.behind === true) {
        const now = clock.nowMs();
        state.behindPolls++;
        log.warn("index_head_behind", { head: Number(s.head), indexedBlock: s.indexedBlock === undefined ? null : Number(s.indexedBlock), polls: state.behindPolls });
        if (state.behindPolls >= BEHIND_POLLS) {
          await store.doubted(now);
          state.doubtedAtMs = Math.max(state.doubtedAtMs ?? 0, now);
          for (const listener of state.moved) listener();
        }
        state.nextPollAt = now + settings.pollMs;
        return "behind";
      }
      if (s.caughtUp) {
        const now = clock.nowMs();
        state.behindPolls = 0;
        // A refill of stored subjects (issue 43) goes on at once, a step at the head after another, each a completed
        // poll: recorded once a poll interval (and whenever blocks came), so reads stay fresh and kept answers live as
        // long as on any day. Before, no poll completed until the last row was filled (reads 503 INDEX_STALE).
        const refilling = s.subjectsPending === true;
        if (!refilling || s.ingested !== undefined || s.rewoundTo !== undefined || now - (state.checkedAtMs ?? 0) >= settings.pollMs) {
          await store.checked(now, s.head);
          state.checkedAtMs = Math.max(state.checkedAtMs ?? 0, now);
          for (const listener of state.moved) listener();
        }
        state.nextPollAt = refilling ? now : now + settings.pollMs;
        return refilling ? "more" : "done";
      }
      if (state.stopped || clock.nowMs() - startedMs > (settings.leaseSeconds * 1000) / 3) return "more";
    }
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

