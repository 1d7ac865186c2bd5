/**
 * Transaction proofs of a review (decisions §18): `tx-interaction` and `tx-encoded-value` proofs name a
 * transaction (`proofObject` `{chainId, txHash}`, chainId CAIP-2 as the reference schemas write it, a bare
 * number accepted). The transaction counts when it succeeded, no later than the review, was sent by the
 * reviewer (or a wallet it linked), to the reviewed subject's contract (a did:pkh subject) or to an address
 * the subject's endpoint evidence names. Pure: the chain facts come in as arguments.
 */
import type { Address, Hex } from "viem";
import { fail, ok, type Result } from "../result.ts";

/** The proof types that name a transaction. */
export const TX_PROOF_TYPES = ["tx-interaction", "tx-encoded-value"] as const;
/** One of {@link TX_PROOF_TYPES}. */
export type TxProofType = (typeof TX_PROOF_TYPES)[number];

/** A transaction proof's object, read. */
export type TxProofObject = {
  readonly chainId: number;
  readonly txHash: Hex;
  /** `tx-encoded-value`: the sender the proof claims. */
  readonly sender?: Address | undefined;
  /** `tx-interaction`: the contract the proof claims. */
  readonly contractAddress?: Address | undefined;
};

/** Tells whether a proof type names a transaction. */
export function isTxProofType(proofType: unknown): proofType is TxProofType {
  return (TX_PROOF_TYPES as readonly unknown[]).includes(proofType);
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/** Reads `{chainId, txHash, sender?, contractAddress?}`; chainId `eip155:<n>` or a positive integer. */
export function readTxProofObject(proofObject: unknown): Result<TxProofObject, "INVALID_INPUT"> {
  if (typeof proofObject !== "object" || proofObject === null || Array.isArray(proofObject)) {
    return fail("INVALID_INPUT", "proofObject must be {chainId, txHash}");
  }
  const { chainId, txHash, sender, contractAddress } = proofObject as Record<string, unknown>;
  const id = typeof chainId === "number" ? chainId : typeof chainId === "string" && /^eip155:[1-9][0-9]{0,15}$/.test(chainId) ? Number(chainId.slice(7)) : NaN;
  if (!Number.isSafeInteger(id) || id <= 0) return fail("INVALID_INPUT", "proofObject.chainId must be an EVM chain (eip155:<id>)");
  if (typeof txHash !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(txHash)) return fail("INVALID_INPUT", "proofObject.txHash must be 32 bytes of hex");
  if (sender !== undefined && (typeof sender !== "string" || !ADDRESS.test(sender))) return fail("INVALID_INPUT", "proofObject.sender must be an address");
  if (contractAddress !== undefined && (typeof contractAddress !== "string" || !ADDRESS.test(contractAddress))) {
    return fail("INVALID_INPUT", "proofObject.contractAddress must be an address");
  }
  return ok({
    chainId: id,
    txHash: txHash.toLowerCase() as Hex,
    ...(sender === undefined ? {} : { sender: sender as Address }),
    ...(contractAddress === undefined ? {} : { contractAddress: contractAddress as Address }),
  });
}

/** A transaction a reviewer names to back a review: the chain (`eip155:<id>` or the id) and the hash. */
export type ReviewTransaction = {
  readonly chainId: string | number;
  readonly txHash: string;
  /** Default `tx-interaction`. */
  readonly proofType?: TxProofType | undefined;
};

/**
 * The review proof naming `tx` (purpose `commercial-tx`, chainId written CAIP-2 as the reference schemas do), or
 * what is wrong with it, worded by the transaction's own fields (`txHash must be 32 bytes of hex`).
 */
export function transactionProof(tx: ReviewTransaction): Result<{ proofType: TxProofType; proofPurpose: "commercial-tx"; proofObject: { chainId: string; txHash: Hex } }, "INVALID_INPUT"> {
  const proofType = tx.proofType ?? "tx-interaction";
  if (!isTxProofType(proofType)) return fail("INVALID_INPUT", `proofType must be one of ${TX_PROOF_TYPES.join(", ")}`);
  const read = readTxProofObject({ chainId: tx.chainId, txHash: tx.txHash });
  if (!read.ok) return fail("INVALID_INPUT", read.message.replace(/^proofObject\./, ""));
  return ok({ proofType, proofPurpose: "commercial-tx", proofObject: { chainId: `eip155:${read.value.chainId}`, txHash: read.value.txHash } });
}

/** The transaction as the chain holds it; undefined when it is not there. */
export type ChainTransaction = {
  readonly from: Address;
  /** Undefined for a contract creation. */
  readonly to: Address | undefined;
  readonly success: boolean;
  /** Unix seconds of its block. */
  readonly blockTime: bigint;
};

/** How a transaction's sender relates to the reviewer. */
export type SenderRelation = "attester" | "linked" | "unrelated";

/**
 * Why a transaction proof does not count, one sentence a reason; empty when it counts. `targets` are the
 * addresses a transaction to the subject may go to: a did:pkh subject's own address, or the EVM addresses
 * its endpoint evidence names.
 */
export function txProofReasons(input: {
  readonly proof: TxProofObject;
  readonly transaction: ChainTransaction | undefined;
  readonly senderRelation: SenderRelation;
  readonly targets: readonly string[];
  /** The review's chain time. */
  readonly reviewTime: bigint;
}): string[] {
  const { proof, transaction } = input;
  if (transaction === undefined) return [`the transaction ${proof.txHash} is not on eip155:${proof.chainId}`];
  const reasons: string[] = [];
  if (!transaction.success) reasons.push("the transaction reverted");
  if (transaction.blockTime > input.reviewTime) reasons.push("the transaction was mined after the review");
  if (proof.sender !== undefined && proof.sender.toLowerCase() !== transaction.from.toLowerCase()) {
    reasons.push("the proof's sender is not the transaction's sender");
  }
  if (input.senderRelation === "unrelated") reasons.push("the transaction was sent by someone other than the reviewer or a wallet it linked");
  const to = transaction.to?.toLowerCase();
  if (to === undefined) {
    reasons.push("the transaction created a contract; it went to no subject");
  } else {
    if (proof.contractAddress !== undefined && proof.contractAddress.toLowerCase() !== to) {
      reasons.push("the proof's contractAddress is not where the transaction went");
    }
    if (!input.targets.some((t) => t.toLowerCase() === to)) {
      reasons.push("the transaction went to an address that is neither the subject's contract nor named by its endpoint evidence");
    }
  }
  return reasons;
}

/** The EVM address of a `did:pkh:eip155:<chain>:<address>` (any chain), else undefined. */
export function didPkhAddress(did: string): Address | undefined {
  const match = /^did:pkh:eip155:[0-9]+:(0x[0-9a-fA-F]{40})$/.exec(did.split("#")[0]!);
  return match === null ? undefined : match[1] as Address;
}

/** The chain id of a `did:pkh:eip155:<chain>:<address>`, else undefined. */
export function didPkhChainId(did: string): number | undefined {
  const match = /^did:pkh:eip155:([0-9]{1,16}):0x[0-9a-fA-F]{40}$/.exec(did.split("#")[0]!);
  return match === null ? undefined : Number(match[1]);
}

/**
 * The chain rule of transaction proofs (decisions §18), the one every writer and reader of a review applies: a
 * transaction reaches a did:pkh only on that DID's own chain (the same address on another chain is another
 * account, possibly with no code at all). The reason a transaction on `chainId` cannot reach `did`, or undefined
 * when it can or when the DID names no chain (a did:web: its endpoint evidence names the did:pkh it is reached at).
 */
export function txProofChainReason(did: string, chainId: number): string | undefined {
  const named = didPkhChainId(did);
  if (named === undefined || named === chainId) return undefined;
  return `the transaction is on eip155:${chainId}, not on ${did.split("#")[0]}'s chain eip155:${named}`;
}

/**
 * The address a transaction on `chainId` must go to for `did` (an endpoint-named controller, or a did:pkh subject):
 * the did:pkh's address when {@link txProofChainReason} lets the chain through, else undefined.
 */
export function didPkhAddressOn(did: string, chainId: number): Address | undefined {
  return txProofChainReason(did, chainId) === undefined ? didPkhAddress(did) : undefined;
}
