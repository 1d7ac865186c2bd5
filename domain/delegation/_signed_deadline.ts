/**
 * The deadline a stored delegated attestation carries, read from its calldata, and whether the chain passed it with
 * the transaction nowhere (decisions §15: the reconciler releases rows whose deadline passed with nothing on chain).
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { HexString, SignedTx } from "../../ports/eas.ts";
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

const same = (a: string | undefined, b: string) => a?.toLowerCase() === b.toLowerCase();

/** The chain's latest block as this reconciler last saw it, and since when (its wall clock): across rounds. */
export type HeadWatch = { seen?: { readonly hash: string; readonly sinceMs: number } | undefined };

/** Whether a lost transaction carrying `deadline` can never land; one round's, sharing that round's block reads. */
export type DeadlinePassed = (lost: { readonly tx: SignedTx; readonly deadline: bigint }) => Promise<boolean>;

/**
 * One round's proofs that transactions carrying a deadline, unknown to the node with no verdict on their resends, can
 * never land (decisions §15). Such a transaction is released on that proof, never on the silence alone: released on
 * the silence, it could still land (sent through a backend that did not answer), `submission.settled` told `failed` and
 * the signature accepted again for an attestation mined later.
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
 * it too. That holds where the answering node is the one that mines: a backend behind the head builds its `pending`
 * on an old block, stamped now, while the chain may hold the transaction in the blocks it lacks. So it counts only
 * once H has been the latest block for `quietAfterMs` in this reconciler's reads (a chain with blocks to add moves its
 * head long before), and never on our wall clock, which says nothing of a node's (an Anvil started at a past timestamp
 * runs behind). A node that only follows a quiet chain stamps its `pending` by its own clock, not the producer's: a
 * producer whose clock runs behind the follower's by more than that stamp's lead on the deadline is this rule's blind
 * spot. A node that gives no `pending` block leaves such a record held until the chain's next block.
 *
 * Each block is read at most once a round, shared by its rows (a batch of N rows read the latest block N times), the
 * wallet's count at H once per wallet, and nothing for a row whose deadline is more than `DEADLINE_READ_MARGIN_MS`
 * ahead of the wall clock.
 */
export function deadlineProofs(
  txStatus: TxStatusReader,
  round: { readonly nowMs: number; readonly quietAfterMs: number; readonly watch: HeadWatch },
): DeadlinePassed {
  const { nowMs, quietAfterMs, watch } = round;
  let latest: Promise<BlockStamp | undefined> | undefined;
  let pending: Promise<PendingBlock | undefined> | undefined;
  const counts = new Map<string, Promise<bigint | undefined>>();
  const readLatest = () =>
    latest ??= txStatus.latestBlock().then((head) => {
      if (head !== undefined && !same(watch.seen?.hash, head.hash)) watch.seen = { hash: head.hash, sinceMs: nowMs };
      return head;
    });
  const nextPast = async (head: BlockStamp, deadline: bigint) => {
    if (head.timestamp > deadline) return true;
    if (watch.seen === undefined || !same(watch.seen.hash, head.hash) || nowMs - watch.seen.sinceMs < quietAfterMs) return false;
    const next = await (pending ??= txStatus.pendingBlock());
    return next !== undefined && same(next.parentHash, head.hash) && next.timestamp > deadline;
  };
  const countAt = (wallet: string, head: BlockStamp) => {
    const key = wallet.toLowerCase();
    let count = counts.get(key);
    if (count === undefined) counts.set(key, count = txStatus.nonceAt(wallet, head.number));
    return count;
  };
  return async function passed({ tx, deadline }) {
    if (Number(deadline) * 1000 > nowMs + DEADLINE_READ_MARGIN_MS) return false;
    const head = await readLatest();
    if (head === undefined || !(await nextPast(head, deadline))) return false;
    const count = await countAt(tx.wallet, head);
    if (count === undefined || count > BigInt(tx.nonce)) return false;
    return (await txStatus.status(tx.txHash, tx)).status === "not-found";
  };
}
