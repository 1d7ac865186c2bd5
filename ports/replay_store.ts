import type { SignedTx } from "./eas.ts";

/** A signature accepted for submission, recorded before anything is signed or sent. */
export type ReplayClaim = {
  /** The normalized signature (r, low-s, v 27/28) as lowercase hex. */
  readonly key: string;
  readonly chainId: number;
  readonly attester: string;
  readonly nonce: bigint;
  /** Unix seconds; the record is kept at least until then. */
  readonly deadline: bigint;
  readonly createdAtMs: number;
};

/** Why a claim was refused. */
export type ClaimOutcome = "claimed" | "duplicate-signature" | "nonce-in-flight";

/**
 * Where a submission stands (decisions §15): `checked` (signature verified, nothing signed yet) →
 * `signed` (the transaction is stored, maybe not sent) → `sent` (it may have reached the node) →
 * `mined` | `reverted`. A released submission has no record: its signature can be used again.
 */
export type ReplayState = "checked" | "signed" | "sent" | "mined" | "reverted";

/** A stored submission. */
export type ReplayRecord = ReplayClaim & {
  readonly state: ReplayState;
  readonly tx: SignedTx | null;
  readonly txHash: string | null;
  readonly uid: string | null;
  readonly blockNumber: bigint | null;
};

/** The final state of a submission. */
export type ReplayFinal =
  | { readonly state: "mined"; readonly txHash: string; readonly uid: string | null; readonly blockNumber: bigint }
  | { readonly state: "reverted"; readonly txHash: string; readonly blockNumber: bigint };

/**
 * Durable replay protection and submission record for delegated signatures. A key is looked up before
 * any RPC, claimed atomically once the signature verified, moved through its states before each step
 * happens, and released only when its transaction provably never reached the chain.
 *
 * A record is its chain's (decisions §30): its identity is (chain id, key). The same 65 bytes can be a valid signature
 * on two chains (a contract wallet whose `isValidSignature` ignores them, as a Safe's approved hashes), and a record
 * on one chain never refuses, answers for or changes the other's.
 */
export interface ReplayStore {
  readonly find: (chainId: number, key: string) => Promise<ReplayRecord | undefined>;
  /**
   * The record of `key` on whichever chain holds one (the lowest chain id if several do): for a submission record that
   * names no chain (`SubmissionRecord.chainId` null: opened by a version before records named their chain, during a
   * rolling restart too), whose replay record is found as that version found it, by key alone.
   */
  readonly findAnyChain: (key: string) => Promise<ReplayRecord | undefined>;
  /** Atomically records the claim; refuses a key known on its chain, or a second live claim for the same (chain, attester, nonce). */
  readonly claim: (claim: ReplayClaim) => Promise<ClaimOutcome>;
  /** Stores the signed transaction before it is sent; false when the record is no longer `checked` (released). */
  readonly markSigned: (chainId: number, key: string, tx: SignedTx) => Promise<boolean>;
  readonly markSent: (chainId: number, key: string) => Promise<void>;
  readonly finish: (chainId: number, key: string, final: ReplayFinal) => Promise<void>;
  /** Forgets a submission whose transaction provably never reached the chain; a mined or reverted one stays. */
  readonly release: (chainId: number, key: string) => Promise<void>;
  /** Submissions still checked, signed or sent that were created before `createdBeforeMs`, oldest first. */
  readonly open: (createdBeforeMs: number) => Promise<ReplayRecord[]>;
  /** Drops settled records whose deadline passed before `nowSeconds` (open ones wait for the reconciler). */
  readonly prune: (nowSeconds: bigint) => Promise<number>;
}
