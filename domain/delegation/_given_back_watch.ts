/**
 * The reconciler's look at writes it gave back on a cause that proves nothing (ports/submissions.ts
 * `UNPROVEN_RELEASES`: no verdict on a witness's resends for `lostAfterMs`, a hash-only row the node does not know, a
 * resend the node refused). Such a transaction may still land, and decisions §15 charges a mined witness: for
 * {@link GIVEN_BACK_WATCH_MS} after its release the reconciler asks the chain about every transaction of the write (the
 * stored one and its fee bumps), by hash, and never sends one again (only what the chain did is recorded):
 * - one mined: the write is recorded mined (`SubmissionBook.mined`: charged, as if it had never been given back);
 * - one reverted: its nonce is spent with nothing written, recorded as reverted (the release now proven);
 * - every one replaced (the wallet's nonce moved past it, in no block), read so on two looks at least
 *   {@link REPLACED_CONFIRM_MS} apart (with none in a block between: `_replaced_readings.ts`): given back again as
 *   `replaced`, proven, unless what it spends is spent (then it landed: mined) or that cannot be told (looked at again
 *   later);
 * - anything else (unknown to the node, held in its pool, a failed read): looked at again later.
 * A write proven either way leaves the watch; one still unproven after it stays given back on its cause, and a retry
 * under its `Idempotency-Key` (kept 24 hours from the request, before the release) is never told it failed.
 *
 * What it costs the node is bounded (found in review: every such write was read every round, on every instance, for a
 * day, 2 to 5 calls a transaction): a write is looked at 1, 2, 4, … minutes after its release, then hourly
 * ({@link nextLookMs}: about 30 looks in its day), at most {@link GIVEN_BACK_PER_ROUND} a round, the longest due
 * first (the others wait for the next round); and a write whose wallet's count at the latest block is at most its
 * nonce is not asked about at all (its transactions share that nonce: none is in a block yet), that count read once a
 * round per wallet. Only when the count cannot be read are its transactions asked about one by one.
 * Before, a write released for its silence was forgotten: landing later, it was never charged.
 */
import type { HexString, SignedTx } from "../../ports/eas.ts";
import {
  GIVEN_BACK_WATCH_MS,
  type GivenBackSubmission,
  type SubmissionBook,
  type TxStatus,
  type TxStatusReader,
} from "../../ports/submissions.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import type { Clock } from "../../ports/clock.ts";
import { REPLACED_CONFIRM_MS, type ReplacedReadings, replacedReadings } from "./_replaced_readings.ts";
import { type RoundReads, roundReads } from "./_signed_deadline.ts";

export { GIVEN_BACK_WATCH_MS, REPLACED_CONFIRM_MS };

/** At most this many given-back writes are looked up a round; the others wait for the next. */
export const GIVEN_BACK_PER_ROUND = 20;

/** A write's first look, a minute after its release; each gap then doubles, up to an hour. */
const FIRST_LOOK_MS = 60_000;
const MAX_LOOK_GAP_MS = 60 * 60_000;

/** When a write released at `releasedAtMs` is next looked up: a minute after, then as long again as it has been, ≤ an hour. */
export function nextLookMs(releasedAtMs: number, lookedAtMs?: number | undefined): number {
  if (lookedAtMs === undefined) return releasedAtMs + FIRST_LOOK_MS;
  return lookedAtMs + Math.min(Math.max(lookedAtMs - releasedAtMs, FIRST_LOOK_MS), MAX_LOOK_GAP_MS);
}

/** A given-back row with its book. */
export type GivenBack = { readonly book: SubmissionBook; readonly row: GivenBackSubmission };

/** What the watch needs of its reconciler. */
export type GivenBackWatchDeps = {
  readonly chainId: number;
  readonly txStatus: TxStatusReader;
  /** Read when each write is looked at, not at the round's start: a round's rows may take minutes before it. */
  readonly clock: Clock;
  readonly replacements?: TxReplacementStore | undefined;
  /** Records an outcome as the reconciler does (the chain saved first). */
  readonly record: {
    readonly mined: (book: SubmissionBook, id: string, outcome: Parameters<SubmissionBook["mined"]>[1]) => Promise<void>;
    readonly reverted: (book: SubmissionBook, id: string, txHash: string, blockNumber: bigint) => Promise<void>;
  };
};

/**
 * One round's look: its start (which writes are due), where it counts what it recorded, and whether a newer round took
 * its place (it then looks at no more writes).
 */
export type GivenBackRound = {
  readonly nowMs: number;
  readonly report: { mined: number; reverted: number };
  readonly superseded?: (() => boolean) | undefined;
  /** The round's reads of the chain, shared with its deadline proofs; absent: the watch's own for the round. */
  readonly reads?: RoundReads | undefined;
};

/** A reconciler's watch over its given-back writes, across rounds. */
export type GivenBackWatch = {
  /** Looks up this round's share of `rows` (every given-back row of the watch's day, see {@link givenBackRows}). */
  readonly round: (rows: readonly GivenBack[], round: GivenBackRound) => Promise<void>;
};

/** The given-back rows of every book that keeps them, released at or after `sinceMs`. */
export async function givenBackRows(books: readonly SubmissionBook[], sinceMs: number): Promise<GivenBack[]> {
  return (await Promise.all(books.map(async (book) => (await book.givenBack?.(sinceMs) ?? []).map((row) => ({ book, row }))))).flat();
}

const keyOf = ({ book, row }: GivenBack) => `${book.name}/${row.id}`;

/** Builds the watch; when each row was last looked at, and its readings of "replaced", are kept between rounds. */
export function givenBackWatch(deps: GivenBackWatchDeps): GivenBackWatch {
  const lookedAt = new Map<string, number>();
  const replaced = replacedReadings(deps.clock);
  return {
    async round(rows, round) {
      const listed = new Set(rows.map(keyOf));
      for (const key of lookedAt.keys()) if (!listed.has(key)) lookedAt.delete(key);
      replaced.keepOnly(listed);
      const due = rows
        .map((given) => ({ given, dueMs: nextLookMs(given.row.releasedAtMs, lookedAt.get(keyOf(given))) }))
        .filter(({ dueMs }) => dueMs <= round.nowMs)
        .sort((a, b) => a.dueMs - b.dueMs || a.given.row.releasedAtMs - b.given.row.releasedAtMs)
        .slice(0, GIVEN_BACK_PER_ROUND);
      const look: Look = { ...deps, ...round, replaced, countOf: (round.reads ?? roundReads(deps.txStatus)).countAt };
      for (const { given } of due) {
        if (round.superseded?.() === true) return;
        // Dated when it is taken (found in review: the round's start dated a look minutes early, and the next came early).
        const askedAtMs = deps.clock.nowMs();
        lookedAt.set(keyOf(given), askedAtMs);
        await lookUp(look, given, askedAtMs);
      }
    },
  };
}

/** What one look needs: the watch's deps, the round, the readings of "replaced", and the round's wallet counts. */
type Look = GivenBackWatchDeps & GivenBackRound & {
  readonly replaced: ReplacedReadings;
  readonly countOf: (wallet: string) => Promise<bigint | undefined>;
};

/** Looks one given-back write's transactions up, and records what the chain proves of it (see the module's comment). */
async function lookUp(look: Look, { book, row }: GivenBack, askedAtMs: number): Promise<void> {
  if (row.txHash === null) return;
  const key = keyOf({ book, row });
  if (row.tx !== null) {
    // None of its transactions in a block yet: no reading of "replaced", and none that starts the readings again.
    const count = await look.countOf(row.tx.wallet);
    if (count !== undefined && count <= BigInt(row.tx.nonce)) return;
  }
  const bumps = row.tx === null || look.replacements === undefined ? [] : await look.replacements.list(book.name, look.chainId, row.id);
  const txs: readonly (SignedTx | undefined)[] = row.tx === null ? [undefined] : [row.tx, ...bumps.map((b) => b.tx)];
  let replaced = row.tx !== null;
  let unread = false;
  for (const tx of txs) {
    const hash = (tx?.txHash ?? row.txHash) as HexString;
    const status: TxStatus = await look.txStatus.status(hash, tx);
    look.replaced.read(key, status);
    if (status.status === "success") {
      await look.record.mined(book, row.id, { txHash: hash, uid: status.uidsBySignature?.get(row.id) ?? status.uid, blockNumber: status.blockNumber, uids: status.uidsBySignature });
      look.report.mined++;
      return;
    }
    if (status.status === "reverted") {
      await look.record.reverted(book, row.id, hash, status.blockNumber);
      look.report.reverted++;
      return;
    }
    if (status.status === "rpc-error") unread = true;
    else if (status.status !== "replaced") replaced = false;
  }
  // Unknown or held by the node keeps an earlier reading of "replaced" (in a block forgot it above): this is none.
  if (!replaced) return;
  // A failed read says nothing either way: an earlier reading of "replaced" still counts, and this is none.
  if (unread) return;
  // A node that pruned history says "replaced" of a mined transaction too: what the write spends tells them apart.
  const spent = await book.spent?.(row.id);
  if (spent === true) {
    await look.record.mined(book, row.id, { txHash: row.txHash, uid: null, blockNumber: 0n });
    look.report.mined++;
    return;
  }
  if (spent === undefined && book.spent !== undefined) return;
  if (look.replaced.confirmed(key, askedAtMs)) await book.release(row.id, "replaced");
}
