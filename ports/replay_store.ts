/** A signature accepted for submission, recorded before anything is broadcast. */
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

/** The final state of a claim. */
export type ReplayFinal =
  | { readonly state: "done"; readonly txHash: string; readonly uid: string | null; readonly blockNumber: bigint }
  | { readonly state: "failed"; readonly txHash: string };

/**
 * Durable replay protection for delegated signatures. A key is looked up before any RPC, claimed
 * atomically once the signature verified, and released only when nothing was broadcast.
 */
export interface ReplayStore {
  readonly has: (key: string) => Promise<boolean>;
  /** Atomically records the claim; refuses a known key, or a second live claim for the same (chain, attester, nonce). */
  readonly claim: (claim: ReplayClaim) => Promise<ClaimOutcome>;
  readonly markBroadcast: (key: string, txHash: string) => Promise<void>;
  readonly finish: (key: string, final: ReplayFinal) => Promise<void>;
  /** Forgets a claim whose transaction never left the service. */
  readonly release: (key: string) => Promise<void>;
  /** Drops records whose deadline passed before `nowSeconds`. */
  readonly prune: (nowSeconds: bigint) => Promise<number>;
}
