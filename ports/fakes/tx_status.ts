import type { TxStatusReader } from "../submissions.ts";

/** The block reads of a node that answers none of them: no signed deadline is ever found passed. */
export const NO_BLOCK_READS: Pick<TxStatusReader, "latestBlock" | "pendingBlock" | "nonceAt"> = {
  latestBlock: () => Promise.resolve(undefined),
  pendingBlock: () => Promise.resolve(undefined),
  nonceAt: () => Promise.resolve(undefined),
};
