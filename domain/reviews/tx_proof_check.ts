/**
 * A review's transaction proof checked on the chain it names, on every chain the deployment reads (decisions §18,
 * §30): the chain rule, then the receipt (read once and kept by the reader) and its block's time, then
 * {@link txProofReasons}. A chain the deployment does not read, or one that cannot be read now, is "not checked":
 * never valid, never an error.
 */
import type { Address } from "viem";
import type { ProofChains } from "../../ports/proof_chains.ts";
import { type ChainTransaction, type SenderRelation, txProofChainReason, type TxProofObject, txProofReasons } from "./tx_proofs.ts";

/** The verdict on one transaction proof. */
export type TxProofVerdict =
  | { readonly verdict: "valid"; readonly transaction: ChainTransaction }
  | { readonly verdict: "invalid"; readonly reasons: readonly string[]; readonly transaction?: ChainTransaction | undefined }
  | { readonly verdict: "not-checked"; readonly reason: "chain-not-read" | "chain-failed" };

/** What checking a proof needs besides the chains. */
export type TxProofCheckInput = {
  readonly proof: TxProofObject;
  /** The reviewed subject's DID. */
  readonly subject: string;
  /** The review's chain time (Unix seconds). */
  readonly reviewTime: bigint;
  /** How the transaction's sender relates to the reviewer (the reviewer itself, a wallet it linked, or neither). */
  readonly senderRelation: (from: string) => Promise<SenderRelation>;
  /** Where a transaction to the subject may go on `chainId`: its did:pkh address, or the addresses its evidence names. */
  readonly targets: (chainId: number) => Promise<readonly string[]>;
};

/** Checks one `tx-interaction` / `tx-encoded-value` proof on the chain it names. */
export async function checkTxProofOnChains(input: TxProofCheckInput, chains: Pick<ProofChains, "receipts">): Promise<TxProofVerdict> {
  const { proof } = input;
  // The chain rule first: a transaction on another chain than the subject's proves nothing, and costs no read.
  const wrongChain = txProofChainReason(input.subject, proof.chainId);
  if (wrongChain !== undefined) return { verdict: "invalid", reasons: [wrongChain] };
  const reader = chains.receipts(proof.chainId);
  if (reader === undefined) return { verdict: "not-checked", reason: "chain-not-read" };
  const read = await reader.receipt(proof.txHash);
  if (!read.ok) return { verdict: "not-checked", reason: "chain-failed" };
  if (read.value === null) {
    return { verdict: "invalid", reasons: txProofReasons({ proof, transaction: undefined, senderRelation: "unrelated", targets: [], reviewTime: input.reviewTime }) };
  }
  // The receipt's judgement (settled or not) goes with it: the block's time is kept by it, with no second head read.
  const time = await reader.blockTime(read.value.blockNumber, read.value.settled);
  if (!time.ok || time.value === null) return { verdict: "not-checked", reason: "chain-failed" };
  const transaction: ChainTransaction = {
    from: read.value.from as Address,
    to: read.value.to === null ? undefined : read.value.to as Address,
    success: read.value.status === "success",
    blockTime: BigInt(time.value),
  };
  const reasons = txProofReasons({
    proof,
    transaction,
    senderRelation: await input.senderRelation(transaction.from),
    targets: await input.targets(proof.chainId),
    reviewTime: input.reviewTime,
  });
  return reasons.length === 0 ? { verdict: "valid", transaction } : { verdict: "invalid", reasons, transaction };
}
