/**
 * The deadline a stored delegated attestation carries, read from its calldata, and whether the chain passed it with
 * the transaction nowhere (decisions §15: the reconciler releases rows whose deadline passed with nothing on chain).
 */
import { decodeFunctionData, parseTransaction } from "viem/utils";
import type { HexString, SignedTx } from "../../ports/eas.ts";
import type { TxStatusReader } from "../../ports/submissions.ts";
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
 * Whether `tx`, carrying `deadline`, unknown to the node with no verdict on its resends, can never land: the chain's
 * latest block is past the deadline and the node still does not know the transaction, its nonce free. Such a
 * transaction is released on that, never on the silence alone: released on the silence, it could still land (sent
 * through a backend that did not answer), `submission.settled` told `failed` and the signature accepted again for an
 * attestation mined later. EAS refuses the call in a block whose timestamp is past the deadline, and no block's
 * timestamp is below its parent's: once the node's latest block is past it, no block to come holds the transaction.
 * The chain's clock, not ours: a chain whose blocks run behind the wall clock (a devnet, a sequencer's skew) may still
 * mine it after our clock passed the deadline, and no margin on ours would bound that. The latest block is read first,
 * then the transaction again: one mined between the caller's first read and the block's is found, not released.
 */
export async function chainPassed(
  txStatus: TxStatusReader,
  lost: { readonly tx: SignedTx; readonly deadline: bigint },
): Promise<boolean> {
  const { tx, deadline } = lost;
  const chainTime = await txStatus.chainTime?.();
  if (chainTime === undefined || chainTime <= deadline) return false;
  return (await txStatus.status(tx.txHash, tx)).status === "not-found";
}
