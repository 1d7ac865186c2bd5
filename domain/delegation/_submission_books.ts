/** The books of open submissions the reconciler settles: the relays' replay records and the sponsored writes. */
import type { Clock } from "../../ports/clock.ts";
import type { EasReader } from "../../ports/eas.ts";
import type { SponsoredWriteLedger } from "../../ports/accounts.ts";
import type { ReplayStore } from "../../ports/replay_store.ts";
import type { OpenSubmission, SubmissionBook } from "../../ports/submissions.ts";
import { delegatedWriteSpent, nonceMovedPast } from "./sponsored_write_spent.ts";

/**
 * Records what the chain holds in a book, each after the chain it was read from is saved (`saveChain`, see the
 * reconciler's deps; no save for a release, which says nothing landed).
 */
export function recorder(saveChain: (() => Promise<void>) | undefined) {
  return {
    mined: async (book: SubmissionBook, id: string, outcome: Parameters<SubmissionBook["mined"]>[1]) => {
      await saveChain?.();
      await book.mined(id, outcome);
    },
    reverted: async (book: SubmissionBook, id: string, txHash: string, blockNumber: bigint) => {
      await saveChain?.();
      await book.reverted(id, txHash, blockNumber);
    },
  };
}

/** The name of the relays' book: their fee bumps are kept under it, keyed by the replay record's key. */
export const REPLAY_BOOK = "delegated_attestations";

/**
 * The delegated attestations' replay records of chain `chainId` as a book: released rows are forgotten (the signature
 * works again). With the EAS reader (that chain's), a row whose transaction is gone while the attester's EAS nonce moved
 * past the signature's is recorded as mined (uid and block unknown) instead: the signature can never be used again. A
 * record's identity is (chain, signature) (decisions §30): the book holds, reads and settles its chain's records only,
 * so each chain's are followed on that chain, and the same signature's record on another chain is never touched.
 */
export function replayBook(replay: ReplayStore, chainId: number, eas?: EasReader): SubmissionBook & { readonly chainId: number } {
  return {
    chainId,
    // Released, a record's signature is accepted again, and a paid relay write's submission reads failed.
    answersReleases: true,
    spent: eas === undefined ? undefined : async (key) => {
      const record = await replay.find(chainId, key);
      return record === undefined ? undefined : await nonceMovedPast(eas, record);
    },
    name: REPLAY_BOOK,
    open: async (createdBeforeMs) =>
      (await replay.open(createdBeforeMs)).filter((r) => r.chainId === chainId).map((r) => ({
        id: r.key,
        state: r.state as OpenSubmission["state"],
        tx: r.tx,
        txHash: r.txHash,
        createdAtMs: r.createdAtMs,
      })),
    mined: (key, { txHash, uid, blockNumber }) => replay.finish(chainId, key, { state: "mined", txHash, uid, blockNumber }),
    reverted: (key, txHash, blockNumber) => replay.finish(chainId, key, { state: "reverted", txHash, blockNumber }),
    // A released record is forgotten whatever the cause: its signature is accepted again (decisions §15). Every relay
    // record stores its bytes with a deadline (required ahead of the clock), so only `lost` (a record stored with its hash
    // only, by a version before bytes were stored) is released unproven here: silent or refused resends of bytes carrying
    // a deadline are held until the chain passed it (`deadline`, proven), never released on the silence or the refusal.
    release: (key) => replay.release(chainId, key),
  };
}

/**
 * The sponsored writes (the witness's and the private relay's) as a book: mined is charged, reverted and released are
 * given back, each with its cause (a retry under the write's `Idempotency-Key` is told it failed only on a proven one,
 * domain/witness `createWitnessResume`). A write given back on an unproven cause (`UNPROVEN_RELEASES`) is still listed
 * (`givenBack`) for the reconciler to look up: charged if it lands after all, its cause proven if it reverts or its
 * nonce is taken. With `chain` (several chains, decisions §30), the book holds the rows written on that chain only; a row
 * that names no chain (written before rows kept it) is the default chain's. With `spends` (the replay records and the
 * chain's EAS reader), a private relay write whose transaction the node cannot show while its nonce is passed is
 * charged, not given back, when the attesters' EAS nonces moved past its signatures' (as the replay book reads them).
 */
export function witnessBook(
  ledger: SponsoredWriteLedger,
  clock: Clock,
  chain?: { readonly chainId: number; readonly isDefault: boolean },
  spends?: { readonly replay: ReplayStore; readonly eas: EasReader },
): SubmissionBook {
  const STATES = { reserved: "checked", signed: "signed", broadcast: "sent" } as const;
  const ours = (w: { readonly chainId?: number | undefined }) =>
    chain === undefined || (w.chainId === undefined ? chain.isDefault : w.chainId === chain.chainId);
  return {
    spent: spends === undefined ? undefined : async (id) => {
      const tx = (await ledger.find(id))?.tx;
      return tx == null ? false : await delegatedWriteSpent(spends.replay, spends.eas, tx.raw);
    },
    // A write given back as `replaced` answers a retry "nothing written" and forgets its payment.
    answersReleases: true,
    name: "sponsored_writes",
    open: async (createdBeforeMs) =>
      (await ledger.unsettled(createdBeforeMs)).filter(ours).map((w) => ({
        id: w.id,
        state: STATES[w.state as keyof typeof STATES] ?? "sent",
        tx: w.tx,
        txHash: w.txHash,
        createdAtMs: w.createdAtMs,
      })),
    givenBack: async (releasedSinceMs) =>
      (await ledger.givenBackUnproven(releasedSinceMs)).filter(ours).map((w) => ({
        id: w.id,
        state: "sent" as const,
        tx: w.tx,
        txHash: w.txHash,
        createdAtMs: w.createdAtMs,
        releasedAtMs: w.updatedAtMs,
      })),
    mined: (id, { txHash, uid, blockNumber }) => ledger.commit(id, { txHash, uid, blockNumber }, clock.nowMs()),
    reverted: (id) => ledger.release(id, clock.nowMs(), "reverted"),
    release: (id, cause) => ledger.release(id, clock.nowMs(), cause),
  };
}
