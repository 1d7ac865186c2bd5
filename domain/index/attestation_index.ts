/**
 * The attestation index (decisions §11, §21): the EAS contract's `Attested` and `Revoked` events are read once,
 * block by block up to the chain's head, into a store (SQLite, or PostgreSQL shared by instances) with each new
 * attestation's full record, and followed; public reads answer from the store alone (`store_reads.ts`), so a read
 * costs no JSON-RPC call whatever the traffic. The unconfirmed tail (the last `INDEX_CONFIRMATIONS` blocks) is kept
 * block by block with its hashes and its rows marked, so a reorg rewinds to its fork point and never touches
 * confirmed rows.
 */
import type {
  AppendDetails,
  ChainHistory,
  EasEvent,
  IndexBlock,
  IndexCheckpoint,
  IndexedAttestation,
  IndexFailureReason,
  IndexRead,
  IndexStore,
  OutboxSkip,
} from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { SubjectOf } from "./record_subject.ts";
import { createSubjectRefill, type SubjectRefill } from "./_subject_refill.ts";
import { writtenRecords, type WrittenRecords } from "./written_records.ts";
import type { KeccakHex } from "../address.ts";

/** What the follower needs. */
export type IndexFollowerDeps = {
  readonly chain: ChainHistory;
  readonly store: IndexStore;
  /** The first block with EAS events (its deployment block). */
  readonly startBlock: bigint;
  /**
   * Blocks behind the head that may still be reorganized (`INDEX_CONFIRMATIONS`): the follower reads them too, but
   * keeps each one's hash and marks their rows as the tail.
   */
  readonly confirmations: number;
  /** The widest block range one step ingests (and one transaction writes). */
  readonly stepBlocks: bigint;
  /**
   * About the most events one step ingests (issue 45; default {@link STEP_EVENTS}): a range holding more is cut after
   * the block of its `stepEvents`-th event (whole blocks, so a step may hold the rest of that block), and the next
   * range is narrowed to the density seen, so a step's records, rows and transaction stay bounded however busy the
   * history is.
   */
  readonly stepEvents?: number | undefined;
  /** How many stored checkpoints to compare when the newest no longer matches the chain. */
  readonly historyDepth?: number | undefined;
  /** How many records one step fills on rows stored before records were kept; default 200. */
  readonly fillBatch?: number | undefined;
  /**
   * Webhooks (decisions §22): events are written to the outbox, in the step's transaction, for blocks this deep
   * (`WEBHOOK_CONFIRMATIONS`); undefined: no outbox.
   */
  readonly webhookConfirmations?: number | undefined;
  /**
   * The subject a record names (issue 43), stored with it so a subject's count is one index count; undefined: none
   * stored (counts decode). Rows stored before subjects were kept, or forgotten after a change of `rule`, get theirs
   * 1,000 a step, each step going on to ingest as before (domain/index/_subject_refill.ts).
   */
  readonly subjectOf?: (SubjectOf & { readonly rule?: string | undefined }) | undefined;
  /**
   * The attestations this instance wrote (issue 43 item 5), with the keccak-256 that checks them: a record the step can
   * tell from them is not read from the chain (domain/index/written_records.ts). Absent: every record is read.
   */
  readonly written?: { readonly take: WrittenRecords; readonly keccak: KeccakHex } | undefined;
};

/** What one follower step did. */
export type FollowStep =
  | SubjectRefill & {
    readonly ok: true;
    readonly head: bigint;
    /** The newest indexed block after the step (undefined: nothing yet). */
    readonly indexedBlock: bigint | undefined;
    /** The newest block the index is meant to reach now: the chain's head. */
    readonly target: bigint;
    /** Blocks up to here are confirmed: `head - confirmations`. */
    readonly confirmedTo: bigint;
    readonly ingested?: { readonly from: bigint; readonly to: bigint; readonly events: number } | undefined;
    /** Set when a reorg was found: the block the index went back to (-1: to the start). */
    readonly rewoundTo?: bigint | undefined;
    /** The reorg went deeper than the confirmations: confirmed rows had to go too. */
    readonly deepReorg?: true | undefined;
    /**
     * The chain's head is below the checkpoint, and the node's blocks agree with the index as far as they go: a backend
     * behind, or a chain rolled back to a shorter one, which one read cannot tell apart. Nothing was written, and the
     * step is no completed poll (its caller does not keep reads fresh on it).
     */
    readonly behind?: true | undefined;
    /** Records filled on rows stored before records were kept (an upgraded database). */
    readonly filled?: number | undefined;
    /** Another follower moved the checkpoint first; nothing was written. */
    readonly raced?: true | undefined;
    /** The index holds every block up to the head this step read: a completed poll. */
    readonly caughtUp: boolean;
    /** Webhook outbox rows the step's append could not write: skipped, the index went on (issue 43). */
    readonly outboxSkipped?: readonly OutboxSkip[] | undefined;
  }
  | { readonly ok: false; readonly reason: IndexFailureReason };

/**
 * Events one step ingests by default (issue 45): about one wave of record reads (`adapters/chain`: about 1,900 records
 * fit one response), a few MB of rows in one transaction. Measured on a catch-up (bench/index_catch_up.ts): as fast as
 * 5,000 a step, with a smaller heap.
 */
export const STEP_EVENTS = 2_000;

/**
 * The first range of a follower that has seen no density yet (issue 45): a history of unknown density is probed, not
 * read `stepBlocks` (10,000) at once, which on a busy chain holds every log of them in memory; then the range doubles
 * per sparse step up to `stepBlocks` (about seven steps more on a sparse chain), or narrows to the density seen.
 */
export const PROBE_BLOCKS = 64n;

/**
 * One step of the follower: check that the checkpoint's block is still canonical (else rewind to the newest stored
 * checkpoint that is, and stop there), fill missing records of an upgraded database, do a bounded share of keeping the
 * stored subjects to the rule (domain/index/_subject_refill.ts), then ingest the next range up to the head: its
 * events, the full record of every attestation they name (read at the range's last block, one batch), the hash and
 * time of each tail block, and the checkpoint, in one transaction. A failed read writes nothing; the caller retries
 * with backoff. With `subjects: false`, the step leaves the stored subjects alone (the caller keeps them to the rule at
 * most once a poll interval, app/_index_follower.ts, not at each write's poll).
 */
export function createIndexFollower(deps: IndexFollowerDeps): (options?: { readonly subjects?: boolean }) => Promise<FollowStep> {
  const depth = deps.historyDepth ?? 256;
  const fillBatch = deps.fillBatch ?? 200;
  /** Set once no row lacks its record: rows are written with theirs from then on. */
  let complete = false;
  const refill = createSubjectRefill(deps);
  const stepEvents = Math.max(1, deps.stepEvents ?? STEP_EVENTS);
  /** The range the next step reads (issue 45): from the density seen; undefined before the first range. */
  let width: bigint | undefined;
  return async function step(options: { readonly subjects?: boolean } = {}): Promise<FollowStep> {
    const checkpoint = await deps.store.checkpoint();
    // Issue 43 item 5: a step that ingests reads the block after its checkpoint anyway (a tail block, or the range's
    // last), and that block's parent hash tells whether the checkpoint is still canonical: the checkpoint's own hash is
    // read beside the head only while records are filled below (they are read at the checkpoint), and after the head
    // when nothing is new. One JSON-RPC call fewer a step that ingests.
    const filling = !complete;
    const [head, early] = await Promise.all([
      deps.chain.head(),
      checkpoint === undefined || !filling ? Promise.resolve(undefined) : deps.chain.blockHash(checkpoint.blockNumber),
    ]);
    if (!head.ok) return head;
    const confirmedTo = head.value - BigInt(deps.confirmations);
    let status: StepStatus & SubjectRefill = { ok: true as const, head: head.value, target: head.value, confirmedTo, caughtUp: false };
    if (checkpoint !== undefined && head.value < checkpoint.blockNumber) return await belowCheckpoint(deps, depth, status, checkpoint);
    const canonical = early ?? (checkpoint !== undefined && head.value <= checkpoint.blockNumber ? await deps.chain.blockHash(checkpoint.blockNumber) : undefined);
    if (checkpoint !== undefined && canonical !== undefined) {
      if (!canonical.ok) return canonical;
      if (canonical.value === null) return { ok: false, reason: "inconsistent" }; // a node behind, not a fork
      if (canonical.value !== checkpoint.blockHash) return await rewound(deps, depth, status);
    }
    if (!complete && checkpoint !== undefined) {
      const missing = await deps.store.incomplete(fillBatch);
      if (missing.length > 0) {
        const read = await deps.chain.attestations(missing, checkpoint.blockNumber);
        if (!read.ok) return read;
        await deps.store.complete(read.value);
        return { ...status, indexedBlock: checkpoint.blockNumber, filled: read.value.length };
      }
      complete = true;
    }
    // Stored subjects kept to the rule, a bounded share a step; the step goes on (a refill completes polls, ingests).
    if (options.subjects !== false) status = { ...status, ...(await refill()) };
    const from = checkpoint === undefined ? deps.startBlock : checkpoint.blockNumber + 1n;
    if (from > head.value) return { ...status, indexedBlock: checkpoint?.blockNumber, caughtUp: true };
    const span = width ?? (deps.stepBlocks < PROBE_BLOCKS ? deps.stepBlocks : PROBE_BLOCKS);
    const readTo = head.value - from + 1n > span ? from + span - 1n : head.value;
    // Each tail block before `readTo` is read for its hash and time (`readTo` comes with the events), all in one batch.
    const tailNumbers: bigint[] = [];
    for (let n = from > confirmedTo ? from : confirmedTo + 1n; n < readTo; n++) tailNumbers.push(n);
    // The block after an unchecked checkpoint, when it is neither a tail block nor the range's last, is read with them.
    const unchecked = checkpoint !== undefined && canonical === undefined ? checkpoint : undefined;
    const fromRead = unchecked !== undefined && from !== readTo && tailNumbers[0] !== from;
    const [read, ...blocksRead] = await Promise.all([
      deps.chain.events(from, readTo),
      ...(fromRead ? [from, ...tailNumbers] : tailNumbers).map((n) => deps.chain.block(n)),
    ]);
    if (!read!.ok) return read as Extract<typeof read, { ok: false }>;
    const readBlocks: IndexBlock[] = [];
    for (const b of blocksRead as IndexRead<IndexBlock | null>[]) {
      if (!b.ok) return b;
      if (b.value === null) return { ok: false, reason: "inconsistent" };
      readBlocks.push(b.value);
    }
    const value = read!.value as { events: EasEvent[]; toHash: HexString; toTimestamp?: bigint | undefined; toParentHash?: HexString | undefined };
    if (unchecked !== undefined) {
      const parent = from === readTo ? value.toParentHash : readBlocks[0]!.parentHash;
      // A chain read that does not tell parents: the checkpoint's hash, read now.
      const hash = parent !== undefined ? { ok: true as const, value: parent } : await deps.chain.blockHash(unchecked.blockNumber);
      if (!hash.ok) return hash;
      if (hash.value === null) return { ok: false, reason: "inconsistent" };
      if (hash.value !== unchecked.blockHash) return await rewound(deps, depth, status);
    }
    const tailBlocks = fromRead ? readBlocks.slice(1) : readBlocks;
    const consistent = await logsAgreeWithBlocks(deps, value, readTo, readBlocks);
    if (!consistent.ok) return consistent;
    width = nextWidth(span, readTo - from + 1n, value.events.length);
    // Too many events: the step ends with the block of the `stepEvents`-th, and that block's hash and time are read.
    let to = readTo;
    let events = value.events;
    let ends: { blockHash: HexString; timestamp?: bigint | undefined } = { blockHash: value.toHash, timestamp: value.toTimestamp };
    if (events.length > stepEvents && events[stepEvents - 1]!.blockNumber < readTo) {
      to = events[stepEvents - 1]!.blockNumber;
      events = events.filter((e) => e.blockNumber <= to);
      const known = tailBlocks.find((b) => b.blockNumber === to);
      const end = known === undefined ? await deps.chain.block(to) : { ok: true as const, value: known };
      if (!end.ok) return end;
      if (end.value === null) return { ok: false, reason: "inconsistent" };
      ends = end.value;
    }
    const blocks = tailBlocks.filter((b) => b.blockNumber < to);
    const times = new Map(tailBlocks.map((b) => [b.blockNumber, b.timestamp]));
    if (ends.timestamp !== undefined) times.set(to, ends.timestamp);
    const records = await recordsOf(deps, events, to, times);
    if (!records.ok) return records;
    // A revocation the chain's record does not show (read at `to`, after it) is a log of a block the chain dropped.
    const revokedNow = new Set(records.value.filter((r) => r.revocationTime !== 0n).map((r) => r.uid.toLowerCase()));
    if (events.some((e) => e.kind === "revoked" && !revokedNow.has(e.uid.toLowerCase()))) return { ok: false, reason: "inconsistent" };
    const next: IndexCheckpoint = { blockNumber: to, blockHash: ends.blockHash, timestamp: ends.timestamp };
    // On a chain younger than the confirmations nothing is deep enough yet: the boundary is -1, before block 0 (issue 43).
    const deepTo = deps.webhookConfirmations === undefined ? undefined : head.value - BigInt(deps.webhookConfirmations);
    const webhookConfirmedTo = deepTo === undefined ? undefined : deepTo < -1n ? -1n : deepTo;
    const skipped: OutboxSkip[] = [];
    const details: AppendDetails = {
      attestations: records.value,
      blocks,
      confirmedTo,
      ...(deps.subjectOf === undefined ? {} : { subjects: subjectsOf(records.value, deps.subjectOf) }),
      ...(webhookConfirmedTo === undefined ? {} : { webhookConfirmedTo, onOutboxSkipped: (rows) => void skipped.push(...rows) }),
    };
    if (!(await deps.store.append(checkpoint?.blockNumber, events, next, details))) {
      return { ...status, indexedBlock: (await deps.store.checkpoint())?.blockNumber, raced: true };
    }
    return {
      ...status,
      indexedBlock: to,
      ingested: { from, to, events: events.length },
      caughtUp: to === head.value,
      ...(skipped.length > 0 ? { outboxSkipped: skipped } : {}),
    };
  };

  /**
   * The range after one meant to be `span` blocks that read `read` blocks (fewer: up to the head) holding `events`
   * (issue 45): narrowed to hold about `stepEvents` when it held more, doubled (up to `stepBlocks`) when a whole range
   * held under half, else the same.
   */
  function nextWidth(span: bigint, read: bigint, events: number): bigint {
    if (events > stepEvents) {
      const narrowed = (read * BigInt(stepEvents)) / BigInt(events);
      return narrowed < 1n ? 1n : narrowed;
    }
    if (read === span && events < stepEvents / 2) return span * 2n > deps.stepBlocks ? deps.stepBlocks : span * 2n;
    return span;
  }
}

/**
 * Whether a step's logs agree with the blocks it read (a provider's log backend out of step with its block backend),
 * checked before anything is written; the step fails `inconsistent` (and is read again) when they do not:
 * - a log naming another hash for a block the step read is a log of another fork;
 * - a block whose logs bloom may hold an EAS event, with no event read for it, is asked again by its hash (EIP-234):
 *   an event there is one the range's answer left out. A lagging backend's empty answer moved the checkpoint past a
 *   revocation, and key status said `active` for a revoked binding for good. A bloom's "maybe" with nothing there is
 *   its false positive, and costs one call.
 */
async function logsAgreeWithBlocks(
  deps: Pick<IndexFollowerDeps, "chain">,
  read: { readonly events: readonly EasEvent[]; readonly toHash: HexString; readonly toMayHoldEvents?: boolean | undefined },
  readTo: bigint,
  blocks: readonly IndexBlock[],
): Promise<IndexRead<void>> {
  const known = new Map<bigint, { readonly hash: HexString; readonly mayHold: boolean | undefined }>(
    blocks.map((b) => [b.blockNumber, { hash: b.blockHash, mayHold: b.mayHoldEvents }]),
  );
  known.set(readTo, { hash: read.toHash, mayHold: read.toMayHoldEvents });
  const withEvents = new Set<bigint>();
  for (const event of read.events) {
    withEvents.add(event.blockNumber);
    const block = known.get(event.blockNumber);
    if (event.blockHash !== undefined && block !== undefined && event.blockHash !== block.hash) return { ok: false, reason: "inconsistent" };
  }
  const eventsOfBlock = deps.chain.eventsOfBlock;
  if (eventsOfBlock === undefined) return { ok: true, value: undefined };
  for (const [blockNumber, block] of known) {
    if (block.mayHold !== true || withEvents.has(blockNumber)) continue;
    const again = await eventsOfBlock(block.hash);
    if (!again.ok) return again;
    if (again.value.length > 0) return { ok: false, reason: "inconsistent" };
  }
  return { ok: true, value: undefined };
}

/** The subjects the records name (those naming one). */
function subjectsOf(records: readonly IndexedAttestation[], subjectOf: SubjectOf): ReadonlyMap<string, string> {
  const out = new Map<string, string>();
  for (const a of records) {
    const subject = subjectOf(a);
    if (subject !== null) out.set(a.uid.toLowerCase(), subject);
  }
  return out;
}

/**
 * The full record of every attestation the events name (attested or revoked), as at `block`: those this instance wrote
 * from what it sent (`times`: the blocks' times the step read), the rest read from the chain at `block`.
 */
async function recordsOf(
  deps: Pick<IndexFollowerDeps, "chain" | "written">,
  events: readonly EasEvent[],
  block: bigint,
  times: ReadonlyMap<bigint, bigint>,
): Promise<IndexRead<IndexedAttestation[]>> {
  const uids = [...new Set(events.map((e) => e.uid.toLowerCase() as HexString))];
  if (uids.length === 0) return { ok: true, value: [] };
  const known = deps.written === undefined ? undefined : writtenRecords(events, times, deps.written.take, deps.written.keccak);
  if (known === undefined || known.size === 0) return await deps.chain.attestations(uids, block);
  const unread = uids.filter((uid) => !known.has(uid));
  const read = unread.length === 0 ? { ok: true as const, value: [] } : await deps.chain.attestations(unread, block);
  if (!read.ok) return read;
  // In the order of `uids`, as the chain's read answers.
  let next = 0;
  return { ok: true, value: uids.map((uid) => known.get(uid) ?? read.value[next++]!) };
}

/** What a step knows before it reads more than the head. */
type StepStatus = { readonly ok: true; readonly head: bigint; readonly target: bigint; readonly confirmedTo: bigint; readonly caughtUp: boolean };

/**
 * The chain's head is below the checkpoint: a backend behind (a load-balanced provider's backends out of step), or a
 * chain rolled back to a shorter one (a reorg to a shorter fork, a devnet's `evm_revert`), which left the index
 * answering attestations the chain no longer has. The newest stored checkpoint at or below the head tells them apart
 * where it can: the node has another hash there, a fork, and the index rewinds to the fork point as for a block
 * changed at the checkpoint's height; the same hash (or no stored checkpoint that low) is either, and nothing is
 * rewound (a backend behind must not wipe rows it will give again), the step says `behind`.
 */
async function belowCheckpoint(deps: Pick<IndexFollowerDeps, "chain" | "store">, depth: number, status: StepStatus, checkpoint: IndexCheckpoint): Promise<FollowStep> {
  const stored = (await deps.store.history(depth)).filter((c) => c.blockNumber <= status.head);
  const nearest = stored[0];
  if (nearest !== undefined) {
    const hash = await deps.chain.blockHash(nearest.blockNumber);
    if (!hash.ok) return hash;
    // A node that does not know a block at or below its own head contradicts itself: read again.
    if (hash.value === null) return { ok: false, reason: "inconsistent" };
    if (hash.value !== nearest.blockHash) return await rewound(deps, depth, status, stored.slice(1));
  }
  return { ...status, indexedBlock: checkpoint.blockNumber, behind: true };
}

/** The checkpoint's block is not the chain's any more: back to the newest stored checkpoint (of `history`, given) that is. */
async function rewound(
  deps: Pick<IndexFollowerDeps, "chain" | "store">,
  depth: number,
  status: StepStatus,
  history?: readonly IndexCheckpoint[],
): Promise<FollowStep> {
  const forkedAt = await lastCanonical(deps.chain, history ?? await deps.store.history(depth));
  if (!forkedAt.ok) return forkedAt;
  await deps.store.rewind(forkedAt.value);
  const rewoundTo = forkedAt.value?.blockNumber ?? -1n;
  return { ...status, indexedBlock: forkedAt.value?.blockNumber, rewoundTo, ...(rewoundTo < status.confirmedTo ? { deepReorg: true as const } : {}) };
}

/** The newest stored checkpoint whose block the chain still has with the same hash; undefined: none. */
async function lastCanonical(chain: ChainHistory, history: readonly IndexCheckpoint[]): Promise<IndexRead<IndexCheckpoint | undefined>> {
  for (const stored of history) {
    const hash = await chain.blockHash(stored.blockNumber);
    if (!hash.ok) return hash;
    // Not known to the node: it is behind, and says nothing of forks (walking on wiped the whole index).
    if (hash.value === null) return { ok: false, reason: "inconsistent" };
    if (hash.value === stored.blockHash) return { ok: true, value: stored };
  }
  return { ok: true, value: undefined };
}
