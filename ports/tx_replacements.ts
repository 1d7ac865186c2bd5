import type { SignedTx } from "./eas.ts";

/** A transaction signed to replace a submission's stuck one: same nonce, higher fees (a fee bump). */
export type TxReplacement = { readonly tx: SignedTx; readonly createdAtMs: number };

/**
 * The fee bumps of open submissions (performance_reliability §b row 24), kept beside the submission's own record:
 * a replacement is stored before it is sent, so whichever of a submission's transactions is mined, the reconciler
 * knows it for one of its own. Keyed by the book's name, the chain the transaction is signed for and the submission's
 * id: one signature live on two served chains is two replay records under one id (decisions §30), each with its own
 * transactions, so each chain's bumps are its own.
 */
export interface TxReplacementStore {
  /** Records a replacement of a transaction on chain `chainId` (idempotent for one hash). */
  readonly add: (book: string, chainId: number, id: string, replacement: TxReplacement) => Promise<void>;
  /**
   * A submission's replacements on chain `chainId`, oldest first. `null`: on every chain, for a submission whose record
   * names no chain (an earlier version opened it, `SubmissionRecord.chainId`), as that version listed them. A row stored
   * without a chain (by an earlier version, and not named at the upgrade: docs/storage.md) is listed for every chain.
   */
  readonly list: (book: string, chainId: number | null, id: string) => Promise<TxReplacement[]>;
  /** Forgets the replacements of submissions created before `beforeMs` that are settled (the caller prunes by age). */
  readonly prune: (beforeMs: number) => Promise<number>;
}
