/**
 * Settles submissions (delegated attestations and witnesses) that a crash, a lost answer or a slow
 * receipt left open, from what was stored before each step (decisions §15):
 *
 * - `checked` (nothing was signed): released once older than `graceMs`;
 * - signed or sent, looked up by hash (with the stored nonce): mined → recorded with its uid (a witness
 *   is charged); reverted → recorded as such (a witness is given back); its nonce taken by another
 *   transaction → released; still held by the node → left for the next round;
 * - unknown to the node while its nonce is still free → the stored bytes are sent again (same nonce,
 *   same hash, so the intent lands at most once); the node refusing them → released, since nothing can
 *   land. A delegated transaction resent after its deadline reverts on chain and is then settled as
 *   reverted: that keeps the wallet's nonces without a gap, for the gas of one reverted call.
 * - rows written before the transaction's bytes were stored (hash only): released once older than
 *   `lostAfterMs` when the node does not know the hash, as before;
 * - an RPC failure: left for the next round.
 *
 * Rows younger than `graceMs` belong to requests still in flight and are left alone; at start-up on a
 * database no other instance uses, the grace is 0 and every open row is settled before the first request.
 */
import type { Clock } from "../ports/clock.ts";
import type { EasReader, HexString } from "../ports/eas.ts";
import type { SponsoredWriteLedger } from "../ports/accounts.ts";
import type { ReplayStore } from "../ports/replay_store.ts";
import type { OpenSubmission, SubmissionBook, TxStatusReader } from "../ports/submissions.ts";

/** What one reconciliation round did. */
export type ReconcileReport = { mined: number; reverted: number; released: number; rebroadcast: number; open: number };

/** What the reconciler needs. */
export type SubmissionReconcilerDeps = {
  readonly books: readonly SubmissionBook[];
  readonly txStatus: TxStatusReader;
  readonly clock: Clock;
  /** Rows younger than this are in flight and left alone. */
  readonly graceMs: number;
  /** Hash-only rows (no stored bytes) unknown to the node are released once older than this. */
  readonly lostAfterMs: number;
};

/** One reconciliation round; `graceMs` overrides the default (0 at start-up on a private database). */
export type Reconcile = (options?: { graceMs?: number }) => Promise<ReconcileReport>;

/** Builds the reconciler over every book of open submissions. */
export function createSubmissionReconciler(deps: SubmissionReconcilerDeps): Reconcile {
  return async function reconcile(options = {}) {
    const now = deps.clock.nowMs();
    const graceMs = options.graceMs ?? deps.graceMs;
    const report: ReconcileReport = { mined: 0, reverted: 0, released: 0, rebroadcast: 0, open: 0 };
    for (const book of deps.books) {
      for (const row of await book.open(now - graceMs + 1)) {
        await settle(book, row, now, report);
      }
    }
    return report;
  };

  async function settle(book: SubmissionBook, row: OpenSubmission, now: number, report: ReconcileReport) {
    const release = async () => {
      await book.release(row.id);
      report.released++;
    };
    if (row.txHash === null) return await release();
    const status = await deps.txStatus.status(row.txHash as HexString, row.tx ?? undefined);
    switch (status.status) {
      case "success":
        await book.mined(row.id, { txHash: row.txHash, uid: status.uid, blockNumber: status.blockNumber });
        report.mined++;
        return;
      case "reverted":
        await book.reverted(row.id, row.txHash, status.blockNumber);
        report.reverted++;
        return;
      case "replaced": {
        // A node restored from a snapshot (or one that pruned history) may no longer find a mined transaction:
        // when what it spends is spent, it landed; releasing it would let the signature look unused.
        const spent = await book.spent?.(row.id);
        if (spent === undefined && book.spent !== undefined) {
          report.open++;
          return;
        }
        if (spent === true) {
          await book.mined(row.id, { txHash: row.txHash, uid: null, blockNumber: 0n });
          report.mined++;
          return;
        }
        return await release();
      }
      case "not-found": {
        const rebroadcast = deps.txStatus.rebroadcast;
        if (row.tx === null || rebroadcast === undefined) {
          if (now - row.createdAtMs >= deps.lostAfterMs) return await release();
          report.open++;
          return;
        }
        const sent = await rebroadcast(row.tx);
        if (sent === "refused") return await release();
        if (sent === "rpc-error") {
          report.open++;
          return;
        }
        report.rebroadcast++;
        // A node that mines on arrival (a devnet) has the receipt already: settle it in this round.
        const after = await deps.txStatus.status(row.txHash as HexString, row.tx);
        if (after.status === "success" || after.status === "reverted") return await settle(book, row, now, report);
        report.open++;
        return;
      }
      case "pending":
      case "rpc-error":
        report.open++;
        return;
    }
  }
}

/**
 * The delegated attestations' replay records as a book: released rows are forgotten (the signature works again).
 * With the EAS reader, a row whose transaction is gone while the attester's EAS nonce moved past the signature's is
 * recorded as mined (uid and block unknown) instead: the signature can never be used again.
 */
export function replayBook(replay: ReplayStore, eas?: EasReader): SubmissionBook {
  return {
    spent: eas === undefined ? undefined : async (key) => {
      const record = await replay.find(key);
      if (record === undefined) return undefined;
      const nonce = await eas.getAttesterNonce(record.attester as HexString);
      return nonce.ok ? nonce.nonce > record.nonce : undefined;
    },
    name: "delegated_attestations",
    open: async (createdBeforeMs) =>
      (await replay.open(createdBeforeMs)).map((r) => ({
        id: r.key,
        state: r.state as OpenSubmission["state"],
        tx: r.tx,
        txHash: r.txHash,
        createdAtMs: r.createdAtMs,
      })),
    mined: (key, outcome) => replay.finish(key, { state: "mined", ...outcome }),
    reverted: (key, txHash, blockNumber) => replay.finish(key, { state: "reverted", txHash, blockNumber }),
    release: (key) => replay.release(key),
  };
}

/** The witnesses' sponsored writes as a book: mined is charged, reverted and released are given back. */
export function witnessBook(ledger: SponsoredWriteLedger, clock: Clock): SubmissionBook {
  const STATES = { reserved: "checked", signed: "signed", broadcast: "sent" } as const;
  return {
    name: "sponsored_writes",
    open: async (createdBeforeMs) =>
      (await ledger.unsettled(createdBeforeMs)).map((w) => ({
        id: w.id,
        state: STATES[w.state as keyof typeof STATES] ?? "sent",
        tx: w.tx,
        txHash: w.txHash,
        createdAtMs: w.createdAtMs,
      })),
    mined: (id, outcome) => ledger.commit(id, outcome, clock.nowMs()),
    reverted: (id) => ledger.release(id, clock.nowMs()),
    release: (id) => ledger.release(id, clock.nowMs()),
  };
}
