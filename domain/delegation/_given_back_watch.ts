/**
 * The reconciler's look at writes it gave back on a cause that proves nothing (ports/submissions.ts
 * `UNPROVEN_RELEASES`: no verdict on a witness's resends for `lostAfterMs`, a hash-only row the node does not know).
 * Such a transaction may still land, and decisions §15 charges a mined witness: for {@link GIVEN_BACK_WATCH_MS} after
 * its release each round asks the chain about every transaction of the write (the stored one and its fee bumps), by
 * hash, and never sends one again (its quota was given back: only what the chain did is recorded):
 * - one mined: the write is recorded mined (`SubmissionBook.mined`: charged, as if it had never been given back);
 * - one reverted: its nonce is spent with nothing written, recorded as reverted (the release now proven);
 * - every one replaced (the wallet's nonce moved past it, in no block): given back again as `replaced`, proven, unless
 *   what it spends is spent (then it landed: mined) or that cannot be told (looked at again next round);
 * - anything else (unknown to the node, held in its pool, a failed read): looked at again next round.
 * A write proven either way leaves the watch; one still unproven after it stays given back on its cause, and a retry
 * under its `Idempotency-Key` (kept 24 hours from the request, before the release) is never told it failed.
 * Before, a write released for its silence was forgotten: landing later, it was never charged.
 */
import type { HexString, SignedTx } from "../../ports/eas.ts";
import type { OpenSubmission, SubmissionBook, TxStatus, TxStatusReader } from "../../ports/submissions.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";

/** How long after its release a write given back on an unproven cause is still looked up: an Idempotency-Key's life. */
export const GIVEN_BACK_WATCH_MS = 24 * 60 * 60_000;

/** What the watch needs of its reconciler's round. */
export type GivenBackWatch = {
  readonly chainId: number;
  readonly txStatus: TxStatusReader;
  readonly replacements?: TxReplacementStore | undefined;
  /** Records an outcome as the reconciler does (the chain saved first). */
  readonly record: {
    readonly mined: (book: SubmissionBook, id: string, outcome: Parameters<SubmissionBook["mined"]>[1]) => Promise<void>;
    readonly reverted: (book: SubmissionBook, id: string, txHash: string, blockNumber: bigint) => Promise<void>;
  };
  readonly report: { mined: number; reverted: number };
};

/** The given-back rows of every book that keeps them, released at or after `sinceMs`. */
export async function givenBackRows(books: readonly SubmissionBook[], sinceMs: number) {
  return (await Promise.all(books.map(async (book) => (await book.givenBack?.(sinceMs) ?? []).map((row) => ({ book, row }))))).flat();
}

/** Looks one given-back write's transactions up, and records what the chain proves of it (see the module's comment). */
export async function watchGivenBack(watch: GivenBackWatch, book: SubmissionBook, row: OpenSubmission): Promise<void> {
  if (row.txHash === null) return;
  const bumps = row.tx === null || watch.replacements === undefined ? [] : await watch.replacements.list(book.name, watch.chainId, row.id);
  const txs: readonly (SignedTx | undefined)[] = row.tx === null ? [undefined] : [row.tx, ...bumps.map((b) => b.tx)];
  let replaced = row.tx !== null;
  for (const tx of txs) {
    const hash = (tx?.txHash ?? row.txHash) as HexString;
    const status: TxStatus = await watch.txStatus.status(hash, tx);
    if (status.status === "success") {
      await watch.record.mined(book, row.id, { txHash: hash, uid: status.uidsBySignature?.get(row.id) ?? status.uid, blockNumber: status.blockNumber, uids: status.uidsBySignature });
      watch.report.mined++;
      return;
    }
    if (status.status === "reverted") {
      await watch.record.reverted(book, row.id, hash, status.blockNumber);
      watch.report.reverted++;
      return;
    }
    if (status.status !== "replaced") replaced = false;
  }
  if (!replaced) return;
  // A node that pruned history says "replaced" of a mined transaction too: what the write spends tells them apart.
  const spent = await book.spent?.(row.id);
  if (spent === true) {
    await watch.record.mined(book, row.id, { txHash: row.txHash, uid: null, blockNumber: 0n });
    watch.report.mined++;
    return;
  }
  if (spent === undefined && book.spent !== undefined) return;
  await book.release(row.id, "replaced");
}
