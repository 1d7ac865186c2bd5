import type { SignedTx } from "./eas.ts";

/** A transaction signed to replace a submission's stuck one: same nonce, higher fees (a fee bump). */
export type TxReplacement = { readonly tx: SignedTx; readonly createdAtMs: number };

/**
 * The fee bumps of open submissions (performance_reliability §b row 24), kept beside the submission's own record:
 * a replacement is stored before it is sent, so whichever of a submission's transactions is mined, the reconciler
 * knows it for one of its own. Keyed by the book's name and the submission's id.
 */
export interface TxReplacementStore {
  /** Records a replacement (idempotent for one hash). */
  readonly add: (book: string, id: string, replacement: TxReplacement) => Promise<void>;
  /** A submission's replacements, oldest first. */
  readonly list: (book: string, id: string) => Promise<TxReplacement[]>;
  /** Forgets the replacements of submissions created before `beforeMs` that are settled (the caller prunes by age). */
  readonly prune: (beforeMs: number) => Promise<number>;
}
