/**
 * The deadline a stored delegated attestation carries, read from its calldata, and whether the chain passed it with
 * the transaction nowhere (decisions §15: the reconciler releases rows whose deadline passed with nothing on chain).
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { Clock } from "../../ports/clock.ts";
import type { HexString, SignedTx } from "../../ports/eas.ts";
import type { Logger } from "../../ports/logger.ts";
import type { BlockStamp, PendingBlock, TxStatusReader } from "../../ports/submissions.ts";
import { EAS_ABI } from "../eas_abi.ts";

/**
 * The earliest deadline (Unix seconds) the signatures of a signed `attestByDelegation` or `multiAttestByDelegation`
 * carry: EAS refuses the call in a block whose timestamp is past any of them (`deadline < block.timestamp` reverts),
 * so the transaction can attest nothing once the chain's clock passed it. Undefined when it carries none: a deadline
 * of 0 is none in EAS, a witness's own `attest` has none, and bytes that do not decode tell nothing.
 */
export function signedDeadline(raw: HexString): bigint | undefined {
  let deadlines: readonly bigint[];
  try {
    const call = decodeFunctionData({ abi: EAS_ABI, data: parseTransaction(raw).data as HexString });
    if (call.functionName === "attestByDelegation") deadlines = [call.args[0].deadline];
    else if (call.functionName === "multiAttestByDelegation") deadlines = call.args[0].map((group) => group.deadline);
    else return undefined;
  } catch {
    return undefined;
  }
  const set = deadlines.filter((deadline) => deadline !== 0n);
  return set.length === 0 ? undefined : set.reduce((least, deadline) => (deadline < least ? deadline : least));
}

/**
 * How far ahead of the wall clock a deadline may lie and still have the chain's blocks read for it. Skipping the reads
 * only delays a release (the proof is the chain's, never our clock's): the margin covers a chain whose clock runs ahead
 * of ours by seconds; one further ahead (a devnet moved forward by hand) waits until our clock is this close.
 */
export const DEADLINE_READ_MARGIN_MS = 15 * 60_000;

/**
 * How long the chain's latest block must stand still in the reconciler's reads before, on a chain that mines on
 * demand, its node's `pending` block counts for the next block. Its own constant, not the silence release's
 * `lostAfterMs`: the two bound different things (how long a head stands on a chain with blocks to add, how long resends
 * may go unanswered), and shortening one must not shorten the other.
 */
export const QUIET_HEAD_MS = 10 * 60_000;

const same = (a: string | undefined, b: string) => a?.toLowerCase() === b.toLowerCase();

/**
 * One reconciler round's reads of the chain, shared by the deadline proofs and the given-back watch: the node's latest
 * block read once, and each wallet's transaction count at that block's number once (never at a tag: a backend without
 * the block fails the call rather than answer for its own). Undefined: not read.
 */
export type RoundReads = {
  readonly latest: () => Promise<BlockStamp | undefined>;
  readonly countAt: (wallet: string) => Promise<bigint | undefined>;
};

/** {@link RoundReads} of one round. */
export function roundReads(txStatus: TxStatusReader): RoundReads {
  let head: Promise<BlockStamp | undefined> | undefined;
  const counts = new Map<string, Promise<bigint | undefined>>();
  const latest = () => head ??= txStatus.latestBlock();
  return {
    latest,
    async countAt(wallet) {
      const block = await latest();
      if (block === undefined) return undefined;
      const key = wallet.toLowerCase();
      let count = counts.get(key);
      if (count === undefined) counts.set(key, count = txStatus.nonceAt(wallet, block.number));
      return await count;
    },
  };
}

/**
 * Whether a lost transaction carrying `deadline` can never land; one round's, with that round's reads of the chain
 * (`reads`, which the round's given-back watch shares).
 */
export type DeadlinePassed = ((lost: { readonly key: string; readonly tx: SignedTx; readonly deadline: bigint }) => Promise<boolean>) & {
  readonly reads: RoundReads;
};

/** What the deadline proofs need, across a reconciler's rounds. */
export type DeadlineWatchDeps = {
  readonly chainId: number;
  readonly txStatus: TxStatusReader;
  /** Read when a block read resolves, not at the round's start: a round's rows may take minutes before the read. */
  readonly clock: Clock;
  /** The chain mines only on demand (the embedded devnet, or a chain its operator declares so): see below. */
  readonly minesOnDemand: boolean;
  readonly log?: Logger | undefined;
};

/** A reconciler's deadline proofs: one round's at a time, and the rows it told were held past their deadline. */
export type DeadlineWatch = {
  readonly round: (nowMs: number) => DeadlinePassed;
  /** Forgets the rows not in `listed` (settled, or no longer open). */
  readonly keepOnly: (listed: ReadonlySet<string>) => void;
};

/**
 * Proofs that transactions carrying a deadline, unknown to the node with no verdict on their resends, can never land
 * (decisions §15). Such a transaction is released on that proof, never on the silence alone: released on the silence,
 * it could still land (sent through a backend that did not answer), `submission.settled` told `failed` and the
 * signature accepted again for an attestation mined later.
 *
 * The proof holds at one block H, the node's latest, whose number and timestamp come from one answer:
 * - the wallet's transaction count at H (asked at H's number) is at most the transaction's nonce, so no block up to H
 *   holds it; a backend without block H (behind the head) fails that call, and nothing is released. Reading the
 *   latest block's timestamp and the transaction's status apart proved nothing behind a load-balanced provider: one
 *   backend's head past the deadline, another's "unknown" though the first had mined it at the deadline (found in
 *   review);
 * - every block after H is stamped past the deadline, where EAS refuses the call (`deadline < block.timestamp`
 *   reverts): H's timestamp is past it (no block's timestamp is below its parent's), or the chain is quiet (below).
 * The chain's clock, not ours: a chain whose blocks run behind the wall clock (a devnet, a sequencer's skew) may still
 * mine it after our clock passed the deadline, and no margin on ours would bound that. The transaction is then asked
 * about again: one the node holds or mined is left for the next round, which records it, never released.
 *
 * A chain that mines only when it has transactions (the embedded Anvil devnet, a quiet app chain) may add no block
 * for hours, its latest timestamp standing before the deadline. There the node's `pending` block stands for the next
 * block: when it builds on H (its parent hash is H's) and its timestamp, the node's own clock, is past the deadline,
 * the block the node mines next is stamped at least that (its clock only moves on, unless set back by hand), so past
 * it too. That holds only where the answering node is the one that mines, and the chain mines on demand, so the rule
 * applies only on a chain known to (`minesOnDemand`: the embedded devnet, or a chain the operator declares so). On any
 * other chain a still head says nothing: a node that stopped following (a geth whose consensus client died) keeps H
 * as its latest and builds its `pending` on H stamped by its own clock, past the deadline, while the chain it lost
 * may have mined the transaction since (found in review); a backend behind the head builds its `pending` on an old
 * block stamped now. There such a record waits for a block stamped past the deadline. Even on a declared chain it
 * counts only once H has been the latest block for `QUIET_HEAD_MS` in this reconciler's reads, timed by the clock
 * when each read resolved (from the round's start, a slow round counted time it never watched), and never on our wall
 * clock, which says nothing of a node's (an Anvil started at a past timestamp runs behind). A node that only follows
 * a quiet chain stamps its `pending` by its own clock, not the producer's: a producer whose clock runs behind the
 * follower's by more than that stamp's lead on the deadline is this rule's blind spot. A node that gives no `pending`
 * block, or answers `pending` with its latest (Besu: its parent hash is H's parent's, never H's), leaves such a record
 * held until the chain's next block; a record held past its deadline by the wall clock is logged once
 * (`submission_held_past_deadline`), so that wait is seen.
 *
 * Each block is read at most once a round, shared by its rows (a batch of N rows read the latest block N times), the
 * wallet's count at H once per wallet, and nothing for a row whose deadline is more than `DEADLINE_READ_MARGIN_MS`
 * ahead of the wall clock.
 */
export function deadlineWatch(deps: DeadlineWatchDeps): DeadlineWatch {
  const { txStatus, clock } = deps;
  // The chain's latest block as last seen, and since when (our clock when the read that first saw it resolved).
  let seen: { readonly hash: string; readonly sinceMs: number } | undefined;
  const told = new Set<string>();
  const round = (nowMs: number): DeadlinePassed => {
    const reads = roundReads(txStatus);
    let latest: Promise<{ readonly head: BlockStamp; readonly atMs: number } | undefined> | undefined;
    let pending: Promise<PendingBlock | undefined> | undefined;
    const readLatest = () =>
      latest ??= reads.latest().then((head) => {
        if (head === undefined) return undefined;
        const atMs = clock.nowMs();
        if (!same(seen?.hash, head.hash)) seen = { hash: head.hash, sinceMs: atMs };
        return { head, atMs };
      });
    const nextPast = async ({ head, atMs }: { readonly head: BlockStamp; readonly atMs: number }, deadline: bigint) => {
      if (head.timestamp > deadline) return true;
      if (!deps.minesOnDemand || seen === undefined || !same(seen.hash, head.hash) || atMs - seen.sinceMs < QUIET_HEAD_MS) return false;
      const next = await (pending ??= txStatus.pendingBlock());
      return next !== undefined && same(next.parentHash, head.hash) && next.timestamp > deadline;
    };
    const held = (key: string, tx: SignedTx, deadline: bigint, head: BlockStamp | undefined) => {
      if (Number(deadline) * 1000 >= nowMs || told.has(key)) return;
      told.add(key);
      deps.log?.info("submission_held_past_deadline", {
        chainId: deps.chainId,
        txHash: tx.txHash,
        deadline: Number(deadline),
        latestBlock: head === undefined ? null : { number: Number(head.number), timestamp: Number(head.timestamp) },
        minesOnDemand: deps.minesOnDemand,
      });
    };
    const passed = async ({ key, tx, deadline }: Parameters<DeadlinePassed>[0]) => {
      if (Number(deadline) * 1000 > nowMs + DEADLINE_READ_MARGIN_MS) return false;
      const read = await readLatest();
      if (read === undefined || !(await nextPast(read, deadline))) {
        held(key, tx, deadline, read?.head);
        return false;
      }
      const count = await reads.countAt(tx.wallet);
      if (count === undefined || count > BigInt(tx.nonce)) return false;
      return (await txStatus.status(tx.txHash, tx)).status === "not-found";
    };
    return Object.assign(passed, { reads });
  };
  return {
    round,
    keepOnly: (listed) => {
      for (const key of told) if (!listed.has(key)) told.delete(key);
    },
  };
}
