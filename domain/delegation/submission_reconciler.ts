/**
 * Settles submissions (delegated attestations and witnesses) that a crash, a lost answer or a slow
 * receipt left open, from what was stored before each step (decisions §15):
 *
 * - `checked` (nothing was signed): released once older than `graceMs`;
 * - signed or sent, looked up by hash (with the stored nonce): mined → recorded with its uid (a batch's item with
 *   its own, decisions §23; a witness is charged); reverted → recorded as such (a witness is given back); its nonce
 *   taken by another transaction → released, unless what the submission spends is spent (then it landed: recorded
 *   mined, charged); in a book whose releases are answered to clients (both are), only once read so on two rounds
 *   `REPLACED_CONFIRM_MS` apart, each dated when taken, none between in a block (one reading rests on a missing
 *   receipt, which a load-balanced provider's backend behind the head also gives; `_replaced_readings.ts`);
 *   still held by the node → left for the next round; in a block whose receipt the node does not give yet (a
 *   provider's backend behind the head) → left for the next round too, never released: the receipt settles it;
 * - unknown to the node while its nonce is still free → the stored bytes are sent again (same nonce,
 *   same hash, so the intent lands at most once); the node refusing them proves nothing (`settleRefused`: found in
 *   review, released as proven a write that landed was never charged). A delegated transaction resent after its
 *   deadline reverts on chain and is then settled as reverted: that keeps the wallet's nonces without a gap.
 * - rows written before the transaction's bytes were stored (hash only): released once older than
 *   `lostAfterMs` when the node does not know the hash, as before;
 * - unknown to the node while every resend of its bytes gets no verdict (-32603, a rate limit, no answer): left for
 *   the next round, and released once that has lasted `lostAfterMs` without a break (counted by this reconciler from
 *   the first such round; a restart counts again, the safe way); one whose signatures carry a deadline, only once the
 *   chain proves it can never land (`_signed_deadline.ts`: a block past the deadline with its nonce still free; on a
 *   chain that mines on demand, its node's next block once the head stood still);
 * - each release says why (`ReleaseCause`): the silence, a refused resend and a hash-only row the node does not know
 *   prove nothing, and a book that keeps such rows (the sponsored writes) has them looked up for a day after, a
 *   bounded number a round (`_given_back_watch.ts`): charged if mined after all, proven if reverted or replaced;
 * - an RPC failure: left for the next round;
 * - still pending (held by the node, nonce free) after `bumpAfterMs` since it (or its last replacement) was
 *   signed: a replacement with the same nonce and fees raised at least 12.5% (and to the market's) is signed,
 *   stored, then sent (performance_reliability §b row 24), at most `maxBumps` times. Every transaction of a
 *   submission counts: whichever is mined settles it, and one still held by the node keeps it open.
 *
 * Rows younger than `graceMs` belong to requests still in flight and are left alone; at start-up on a
 * database no other instance uses, the grace is 0 and every open row is settled before the first request.
 */
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import type { OpenSubmission, ReleaseCause, SignedTx, SubmissionBook, TxStatus, TxStatusReader } from "../../ports/submissions.ts";
import type { TxReplacement, TxReplacementStore } from "../../ports/tx_replacements.ts";
import type { Logger } from "../../ports/logger.ts";
import { type DeadlinePassed, deadlineWatch, signedDeadline } from "./_signed_deadline.ts";
import { GIVEN_BACK_WATCH_MS, givenBackRows, givenBackWatch } from "./_given_back_watch.ts";
import { forgetReleased, oneRoundAtATime, type ReplacedReadings, replacedReadings } from "./_replaced_readings.ts";
import { recorder } from "./_submission_books.ts";

// The books the reconciler settles, kept beside it so this file keeps to the reconciling.
export { REPLAY_BOOK, replayBook, witnessBook } from "./_submission_books.ts";

/** What one reconciliation round did. */
export type ReconcileReport = { mined: number; reverted: number; released: number; rebroadcast: number; bumped: number; open: number };

/** What the reconciler needs. */
export type SubmissionReconcilerDeps = {
  /**
   * The chain this reconciler follows (decisions §30: each served chain has its own), the one `txStatus` reads: its fee
   * bumps are stored and read under it, so a signature live on two chains never takes the other chain's for its own.
   */
  readonly chainId: number;
  readonly books: readonly SubmissionBook[];
  readonly txStatus: TxStatusReader;
  readonly clock: Clock;
  /** Rows younger than this are in flight and left alone. */
  readonly graceMs: number;
  /**
   * Hash-only rows (no stored bytes) unknown to the node are released once older than this; rows whose resends get no
   * verdict and whose transaction carries no deadline, once that has lasted this long.
   */
  readonly lostAfterMs: number;
  /**
   * The chain mines only on demand (the embedded devnet, or a chain its operator declares so): its node's `pending`
   * block may then prove a deadline passed once the head stood still (`_signed_deadline.ts`). Absent: never, since a
   * stalled node's still head and `pending` block look the same.
   */
  readonly minesOnDemand?: boolean | undefined;
  /** Where a record held past its deadline by the wall clock is told, once. */
  readonly log?: Logger | undefined;
  /** Fee bumps: where replacements are kept, and how long a transaction may stay pending before one. Absent: none. */
  readonly replacements?: TxReplacementStore | undefined;
  readonly bumpAfterMs?: number | undefined;
  /** At most this many replacements per submission (default 5: fees up to 1.8× the first's, or the market's). */
  readonly maxBumps?: number | undefined;
  /**
   * Makes what the chain holds durable before an outcome read from it is recorded, as a send does before its caller
   * hears of it (the embedded devnet saves its state: a record must never outlive the chain it was read from, or a
   * crash right after leaves a write charged that the restarted chain lacks, and the wallet's next nonces behind a
   * gap). When it throws, nothing is recorded and the round ends there: its rows stay open for the next. Absent: a
   * real chain, durable by itself.
   */
  readonly saveChain?: (() => Promise<void>) | undefined;
};

/** Replacements are forgotten a week after they were signed; every submission is settled long before. */
const REPLACEMENTS_KEPT_MS = 7 * 86_400_000;

/** One round's state: its report, and the fee bumps it signed, by book and the transaction they replace. */
type Round = { readonly report: ReconcileReport; readonly bumped: Map<string, SignedTx> };

/** One reconciliation round; `graceMs` overrides the default (0 at start-up on a private database). */
export type Reconcile = (options?: { graceMs?: number }) => Promise<ReconcileReport>;

/**
 * What a round's steps share: the deps, how outcomes are recorded, the round's report and bumps, since when each row
 * (by book and id) has been silent (unknown, no verdict on its resends), and its deadline proofs (reads shared). No
 * round's start is kept for its steps: each reads the clock when it reads the chain (found in review: a slow round
 * dated its last rows' readings minutes early).
 */
type Reconciling = Round & {
  readonly deps: SubmissionReconcilerDeps;
  readonly record: ReturnType<typeof recorder>;
  readonly silentSince: Map<string, number>;
  readonly deadlinePassed: DeadlinePassed;
  /** The readings of "replaced" of the books answering releases, across rounds: one is released so only on a second. */
  readonly replaced: ReplacedReadings;
};

/** Builds the reconciler over every book of open submissions. */
export function createSubmissionReconciler(deps: SubmissionReconcilerDeps): Reconcile {
  // A release needs no save: it says nothing landed, which a chain restored to an earlier state cannot contradict.
  const record = recorder(deps.saveChain);
  // Since when each open row has been unknown to the node with no verdict on its resends, across rounds (found in
  // review: counted from the row's creation, one rate-limited resend of an old row's evicted bytes released it).
  const silentSince = new Map<string, number>();
  const deadlines = deadlineWatch({ ...deps, minesOnDemand: deps.minesOnDemand === true });
  const replaced = replacedReadings(deps.clock);
  const watch = givenBackWatch({ ...deps, record });
  // One round at a time, unless one has run ROUND_SHARED_MS: it then stops at its next row (`oneRoundAtATime`).
  return oneRoundAtATime(deps.clock, reconcileOnce);
  async function reconcileOnce(options: { graceMs?: number } = {}, superseded: () => boolean) {
    const now = deps.clock.nowMs();
    const graceMs = options.graceMs ?? deps.graceMs;
    const report: ReconcileReport = { mined: 0, reverted: 0, released: 0, rebroadcast: 0, bumped: 0, open: 0 };
    // Lowest wallet nonce first, across books: a transaction resent ahead of a lower one of the same wallet would
    // wait in the node's pool behind the gap (and be left open this round) while the lower one is settled.
    const rows = (await Promise.all(deps.books.map(async (book) => (await book.open(now - graceMs + 1)).map((row) => ({ book, row }))))).flat();
    rows.sort((a, b) => (a.row.tx?.nonce ?? Number.MAX_SAFE_INTEGER) - (b.row.tx?.nonce ?? Number.MAX_SAFE_INTEGER));
    // Listed before this round releases anything: a row it gives back is looked up from the next round on.
    const givenBack = await givenBackRows(deps.books, now - GIVEN_BACK_WATCH_MS);
    const deadlinePassed = deadlines.round(now);
    const round: Reconciling = { report, bumped: new Map(), deps, record, silentSince, deadlinePassed, replaced };
    try {
      for (const { book, row } of rows) {
        // A newer round took its place (this one ran ROUND_SHARED_MS): it settles nothing more on what it listed then.
        if (superseded()) return report;
        await settle(round, book, row);
      }
      if (!superseded()) await watch.round(givenBack, { nowMs: now, report, superseded, reads: deadlinePassed.reads });
    } finally {
      // Rows no longer listed (settled by another instance, or in an earlier round) are forgotten, also after a round
      // that failed part way: a row it did not reach counts again from its next silent round. A superseded round's list
      // is old: what is kept across rounds is left to the round that took its place.
      if (!superseded()) {
        const listed = new Set(rows.map(({ book, row }) => silentKey(book, row)));
        for (const key of silentSince.keys()) if (!listed.has(key)) silentSince.delete(key);
        deadlines.keepOnly(listed);
        replaced.keepOnly(listed);
      }
    }
    await deps.replacements?.prune(now - REPLACEMENTS_KEPT_MS);
    return report;
  }
}

/**
 * What the submission's earlier transactions (those a replacement superseded) say: one mined settles the
 * submission; one the node still holds keeps it open.
 */
async function earlier(round: Reconciling, book: SubmissionBook, row: OpenSubmission, txs: readonly SignedTx[]) {
  const { deps, report } = round;
  for (const tx of txs) {
    const status = await statusOf(round, book, row, tx);
    if (status.status === "success" || status.status === "reverted") {
      await landed(round, book, row, { hash: tx.txHash, status });
      return "settled" as const;
    }
    if (status.status === "pending" || status.status === "included" || status.status === "rpc-error") {
      report.open++;
      return "open" as const;
    }
  }
  return "none" as const;
}

/**
 * Signs, stores, then sends a fee bump of `latest` when it has been pending long enough; true when one was sent. The
 * items of one batch (decisions §23) are rows sharing one transaction: the first of them bumped in a round signs and
 * sends the replacement, the others keep that same replacement, so the batch has one bump per round, counted on
 * each item, and whichever transaction is mined settles them all.
 */
async function bump(round: Reconciling, book: SubmissionBook, row: OpenSubmission, latest: SignedTx, replacements: readonly TxReplacement[]) {
  const { deps, report } = round;
  const now = deps.clock.nowMs();
  const store = deps.replacements;
  const sign = deps.txStatus.replacement;
  if (store === undefined || sign === undefined || deps.bumpAfterMs === undefined) return false;
  // Another item of the batch replaced this transaction in this round: this item keeps that replacement, whatever
  // its own count says (the node holds the replacement now, not the transaction this item knew).
  const shared = round.bumped.get(`${book.name}/${latest.txHash}`);
  const since = replacements.at(-1)?.createdAtMs ?? row.createdAtMs;
  if (shared === undefined && (now - since < deps.bumpAfterMs || replacements.length >= (deps.maxBumps ?? 5))) return false;
  const next = shared ?? await sign(latest);
  if (next === undefined) return false;
  // Stored before it is sent, like every transaction of ours: whichever of them lands is known for this submission's.
  await store.add(book.name, deps.chainId, row.id, { tx: next, createdAtMs: now });
  if (shared === undefined) {
    round.bumped.set(`${book.name}/${latest.txHash}`, next);
    report.bumped++;
  }
  if (shared !== undefined || (await deps.txStatus.rebroadcast?.(next)) === "accepted") {
    // A node that mines on arrival has the receipt already: settle it in this round.
    const after = await statusOf(round, book, row, next);
    if (after.status === "success" || after.status === "reverted") {
      await settle(round, book, row);
      return true;
    }
  }
  report.open++;
  return true;
}

/**
 * Where one open submission's transactions stand: the newest the node should hold, and those it superseded; and when
 * the newest was last asked about (the clock before the call).
 */
type Txs = {
  readonly latest: SignedTx | null;
  readonly latestHash: string;
  readonly superseded: readonly SignedTx[];
  readonly replacements: readonly TxReplacement[];
  readonly askedAtMs: number;
};

/** A row's key in {@link Reconciling.silentSince}. */
const silentKey = (book: SubmissionBook, row: OpenSubmission) => `${book.name}/${row.id}`;

/** Asks the node about one of the row's transactions (`hash`, else `tx`'s), the answer kept as a reading of the row. */
async function statusOf(round: Reconciling, book: SubmissionBook, row: OpenSubmission, tx: SignedTx | null, hash?: string) {
  const status = await round.deps.txStatus.status((hash ?? tx!.txHash) as HexString, tx ?? undefined);
  round.replaced.read(silentKey(book, row), status);
  return status;
}

/** Gives a row back with why (a proven cause, or one of `UNPROVEN_RELEASES`, which prove nothing: see `givenBack`). */
async function release(round: Reconciling, book: SubmissionBook, row: OpenSubmission, cause: ReleaseCause) {
  forgetReleased(round, silentKey(book, row));
  await book.release(row.id, cause);
  round.report.released++;
}

/** Settles one open submission as the chain finds its transactions (mined, reverted, gone, pending). */
async function settle(round: Reconciling, book: SubmissionBook, row: OpenSubmission): Promise<void> {
  const { deps, report } = round;
  if (row.txHash === null) return await release(round, book, row, "unsent");
  const replacements = row.tx === null || deps.replacements === undefined ? [] : await deps.replacements.list(book.name, deps.chainId, row.id);
  // The newest replacement is the transaction the node should hold; the ones before it may still be the one mined.
  const latest = replacements.at(-1)?.tx ?? row.tx;
  const latestHash = latest?.txHash ?? row.txHash;
  const superseded = row.tx === null ? [] : [row.tx, ...replacements.slice(0, -1).map((r) => r.tx)].slice(0, replacements.length);
  // An earlier item of the same batch found this transaction pending and replaced it in this round: the node now
  // holds the replacement in its place, so this transaction reads as gone with its nonce free ("not-found"); sending
  // its bytes again is refused as underpriced and would release this item while its batch is on its way. It keeps
  // the round's replacement instead, as the first item did.
  if (latest !== null && round.bumped.has(`${book.name}/${latest.txHash}`)) {
    // The first item found the shared transaction pending: a break in every item's silence (found in review: this one
    // kept its count, and was released while the node had just held its batch's transaction).
    round.silentSince.delete(silentKey(book, row));
    if (await bump(round, book, row, latest, replacements)) return;
  }
  const askedAtMs = deps.clock.nowMs();
  const status = await statusOf(round, book, row, latest, latestHash);
  // Only an answer about the transaction breaks its silence: a status read that failed says nothing either way (it
  // restarted the count, and a provider failing one read in five kept the record open for good).
  if (status.status !== "not-found" && status.status !== "rpc-error") round.silentSince.delete(silentKey(book, row));
  const txs: Txs = { latest, latestHash, superseded, replacements, askedAtMs };
  switch (status.status) {
    case "success":
    case "reverted":
      return await landed(round, book, row, { hash: latestHash, status });
    case "replaced":
      return await settleReplaced(round, book, row, txs);
    case "not-found":
      return await settleNotFound(round, book, row, txs);
    case "pending":
      if (latest !== null && (await bump(round, book, row, latest, replacements))) return;
      report.open++;
      return;
    case "included":
    // Mined, its receipt still to come: nothing to bump or give back; the receipt settles it in a later round.
    case "rpc-error":
      report.open++;
      return;
  }
}

/** Records the newest transaction found in a block: mined (charged, with its uid), or reverted. */
async function landed(round: Reconciling, book: SubmissionBook, row: OpenSubmission, found: { hash: string; status: TxStatus & { status: "success" | "reverted" } }) {
  const { hash, status } = found;
  if (status.status === "reverted") {
    await round.record.reverted(book, row.id, hash, status.blockNumber);
    round.report.reverted++;
    return;
  }
  await round.record.mined(book, row.id, { txHash: hash, uid: status.uidsBySignature?.get(row.id) ?? status.uid, blockNumber: status.blockNumber, uids: status.uidsBySignature });
  round.report.mined++;
}

/** The nonce of the newest transaction was taken by another: an earlier one of ours, or what the book spent, says which. */
async function settleReplaced(round: Reconciling, book: SubmissionBook, row: OpenSubmission, txs: Txs): Promise<void> {
  if ((await earlier(round, book, row, txs.superseded)) !== "none") return;
  return await takenByAnother(round, book, row, txs);
}

/** No earlier transaction of ours took the nonce: landed if what it spends is spent, else released once proven. */
async function takenByAnother(round: Reconciling, book: SubmissionBook, row: OpenSubmission, txs: Txs): Promise<void> {
  // A node restored from a snapshot (or one that pruned history) may no longer find a mined transaction:
  // when what it spends is spent, it landed; releasing it would let the signature look unused.
  const spent = await book.spent?.(row.id);
  if (spent === undefined && book.spent !== undefined) {
    round.report.open++;
    return;
  }
  if (spent === true) {
    await round.record.mined(book, row.id, { txHash: txs.latestHash, uid: null, blockNumber: 0n });
    round.report.mined++;
    return;
  }
  // A book whose releases are answered to clients (a retry told "nothing written", a relay write's submission failed,
  // its payment forgotten) needs a second reading, REPLACED_CONFIRM_MS after the first, before it calls that proven.
  if (book.answersReleases === true && !round.replaced.confirmed(silentKey(book, row), txs.askedAtMs)) {
    round.report.open++;
    return;
  }
  return await release(round, book, row, "replaced");
}

/** The node does not know the newest transaction: it is sent again, or released once lost for long enough. */
async function settleNotFound(round: Reconciling, book: SubmissionBook, row: OpenSubmission, txs: Txs): Promise<void> {
  const { deps, report } = round;
  const { latest, latestHash } = txs;
  const rebroadcast = deps.txStatus.rebroadcast;
  if (latest === null || rebroadcast === undefined) {
    if (txs.askedAtMs - row.createdAtMs >= deps.lostAfterMs) return await release(round, book, row, "lost");
    report.open++;
    return;
  }
  const sentAtMs = deps.clock.nowMs();
  const sent = await rebroadcast(latest);
  if (sent === "refused") return await settleRefused(round, book, row, txs);
  const key = silentKey(book, row);
  if (sent === "rpc-error") {
    // No verdict on the bytes: asked again next round, not for ever. A node whose reads work and whose every send answers
    // -32603, -32005 or 429 kept the record open (409 DUPLICATE, the bytes sent each round, found in review): once that
    // lasted `lostAfterMs` without a break, it is released as one without a rebroadcast is, after an earlier one of ours.
    // Timed by the clock around each resend, never the round's start (a slow round's would count time never watched).
    const since = round.silentSince.get(key) ?? deps.clock.nowMs();
    round.silentSince.set(key, since);
    // One whose signatures carry a deadline: once the chain passed it, never on the silence alone (decisions §15).
    const deadline = signedDeadline(latest.raw);
    if (deadline === undefined ? sentAtMs - since >= deps.lostAfterMs : await round.deadlinePassed({ key, tx: latest, deadline })) {
      if ((await earlier(round, book, row, txs.superseded)) !== "none") return;
      return await release(round, book, row, deadline === undefined ? "silence" : "deadline");
    }
    report.open++;
    return;
  }
  round.silentSince.delete(key);
  report.rebroadcast++;
  // A node that mines on arrival (a devnet) has the receipt already: settle it in this round.
  const after = await statusOf(round, book, row, latest, latestHash);
  if (after.status === "success" || after.status === "reverted") return await settle(round, book, row);
  report.open++;
}

/**
 * The node refused bytes sent before, which proves nothing: the first copy may be mined, or in another node's pool
 * (adapters/chain/_tx_delivery.ts). An earlier transaction of ours, or the chain asked again (its nonce taken, the
 * transaction in a block), settles it; still unknown with its nonce free, it is released unproven (`resend-refused`,
 * looked up for a day), or, carrying a deadline, held until the chain passed it (`deadline`), as a silent one is.
 */
async function settleRefused(round: Reconciling, book: SubmissionBook, row: OpenSubmission, txs: Txs): Promise<void> {
  const { deps, report } = round;
  const latest = txs.latest!;
  // A replacement the node refused may leave an earlier transaction of ours in its pool, or mined.
  if ((await earlier(round, book, row, txs.superseded)) !== "none") return;
  const askedAtMs = deps.clock.nowMs();
  const after = await statusOf(round, book, row, latest, txs.latestHash);
  if (after.status === "success" || after.status === "reverted") return await landed(round, book, row, { hash: txs.latestHash, status: after });
  if (after.status === "replaced") return await takenByAnother(round, book, row, { ...txs, askedAtMs });
  if (after.status !== "not-found") {
    report.open++;
    return;
  }
  const deadline = signedDeadline(latest.raw);
  if (deadline !== undefined && !(await round.deadlinePassed({ key: silentKey(book, row), tx: latest, deadline }))) {
    report.open++;
    return;
  }
  return await release(round, book, row, deadline === undefined ? "resend-refused" : "deadline");
}
