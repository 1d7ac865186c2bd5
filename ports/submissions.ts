import type { HexString, SignedTx } from "./eas.ts";

export type { SignedTx };

/** What the chain says about a transaction the service signed. */
export type TxStatus =
  | {
    readonly status: "success";
    readonly blockNumber: bigint;
    readonly uid: HexString | null;
    /**
     * A `multiAttestByDelegation` batch (decisions §23), read with its stored transaction: each item's uid under the
     * replay key of its signature (the normalized 65 bytes), since the receipt's `Attested` logs follow the calldata.
     */
    readonly uidsBySignature?: ReadonlyMap<string, HexString> | undefined;
  }
  | { readonly status: "reverted"; readonly blockNumber: bigint }
  /**
   * No receipt, but the node names the block the transaction is in (a load-balanced provider whose backend answering
   * receipts is behind the head): it is mined, its outcome (uid, or a revert) comes with the receipt. Never "replaced".
   */
  | { readonly status: "included"; readonly blockNumber: bigint }
  /** No receipt, but the node holds the transaction and its nonce is still free: it may yet be mined. */
  | { readonly status: "pending" }
  /**
   * No receipt, the sender's mined nonce has moved past the transaction's nonce, and the node holds the transaction in
   * no block (or not at all): another transaction took its nonce, so it can never be mined. A node that cannot find a
   * mined transaction says the same: the books tell that case apart by what the write spent (`SubmissionBook.spent`).
   */
  | { readonly status: "replaced" }
  /**
   * The node knows nothing of the hash: never broadcast, or dropped from its pool. When the stored
   * transaction is known, this also means its nonce is still free, so sending its bytes again is safe.
   */
  | { readonly status: "not-found" }
  | { readonly status: "rpc-error" };

/** What sending stored bytes again did. */
export type Rebroadcast = "accepted" | "refused" | "rpc-error";

/** Reads and re-sends transactions the service signed earlier; used to settle submissions. */
export interface TxStatusReader {
  /** The status of a hash; with the stored transaction, "not-found" is told apart from "replaced" by its nonce. */
  readonly status: (txHash: HexString, known?: SignedTx | undefined) => Promise<TxStatus>;
  /** Sends the stored bytes again through the wallet's sender. */
  readonly rebroadcast?: ((tx: SignedTx) => Promise<Rebroadcast>) | undefined;
  /**
   * Signs, without sending, a replacement of a stuck transaction (same nonce, fees raised at least 12.5% and to the
   * market's); undefined when the service does not hold the wallet or the fees cannot be read.
   */
  readonly replacement?: ((tx: SignedTx) => Promise<SignedTx | undefined>) | undefined;
  /*
   * The chain's blocks, read to prove a delegated signature's deadline passed with its transaction nowhere (decisions
   * §15; the proof is in domain/delegation/_signed_deadline.ts). Required: a reader without them held every record
   * carrying a deadline for good (found in review). A node that cannot answer says undefined: nothing is released.
   */
  /** The node's latest block, its number, hash and timestamp from one answer. */
  readonly latestBlock: () => Promise<BlockStamp | undefined>;
  /** The block the node would build next (`pending`), when it gives one: the block it builds on, its timestamp. */
  readonly pendingBlock: () => Promise<PendingBlock | undefined>;
  /**
   * The wallet's transaction count at block `blockNumber` (the nonce its next transaction takes after that block);
   * undefined when the node cannot say, as a backend without that block (one behind the head) fails the call.
   */
  readonly nonceAt: (wallet: string, blockNumber: bigint) => Promise<bigint | undefined>;
}

/** A block as the chain holds it: its number, hash and timestamp (Unix seconds, the clock EAS checks deadlines by). */
export type BlockStamp = { readonly number: bigint; readonly hash: HexString; readonly timestamp: bigint };

/** The block a node would build next: the block it builds on, and the timestamp its own clock gives it now. */
export type PendingBlock = { readonly parentHash: HexString; readonly timestamp: bigint };

/**
 * Why a submission (or a sponsored write) was given back. Proven, nothing of it can land: `unsent` (nothing was signed,
 * or the node provably never took it: the request's own release), `refused` (the node refused the bytes' first send,
 * so they were never broadcast), `reverted` (mined, and reverted), `replaced` (its nonce taken by another transaction,
 * nothing it spends spent, read so on two rounds apart for a sponsored write), `deadline` (the chain passed its
 * signatures' deadline with its nonce free). Unproven ({@link UNPROVEN_RELEASES}): `silence` (its resends had no
 * verdict for the reconciler's `lostAfterMs`, a transaction carrying no deadline), `lost` (a row stored with its hash
 * only, unknown to the node) and `resend-refused` (the node refused a resend of bytes already broadcast, the wallet's
 * nonce still free, a transaction carrying no deadline): the transaction may still land. A resend's refusal ("nonce
 * too low", "already known" by another name, an underpriced copy) proves nothing: the first copy may be mined, or held
 * in another node's pool (adapters/chain/_tx_delivery.ts reads a retried send's refusal the same way).
 */
export type ReleaseCause = "unsent" | "refused" | "reverted" | "replaced" | "deadline" | "silence" | "lost" | "resend-refused";

/**
 * The causes of a release that prove nothing: such a write is not known to have failed (nor to have been written), so a
 * retry under its `Idempotency-Key` is told its outcome is unknown, its payment stays `work_unknown`, and the reconciler
 * keeps looking its transaction up (`SubmissionBook.givenBack`) for {@link GIVEN_BACK_WATCH_MS}, while its quota stays
 * reserved. A release whose cause was not recorded (before causes were) counts as one.
 */
export const UNPROVEN_RELEASES: readonly ReleaseCause[] = ["silence", "lost", "resend-refused"];

/**
 * How long after its release a write given back on an unproven cause is still looked up (an Idempotency-Key's life),
 * and counted as reserved in its account's quota: it may land, and be charged, until then.
 */
export const GIVEN_BACK_WATCH_MS = 24 * 60 * 60_000;

/** Where a submission stands while it is not settled. */
export type OpenState = "checked" | "signed" | "sent";

/** A submission that is neither mined nor released. */
export type OpenSubmission = {
  readonly id: string;
  readonly state: OpenState;
  /** The stored transaction once signed; rows written before it was stored only have `txHash`. */
  readonly tx: SignedTx | null;
  readonly txHash: string | null;
  readonly createdAtMs: number;
};

/** A submission given back on an unproven cause, with when it was (the reconciler's looks are timed from it). */
export type GivenBackSubmission = OpenSubmission & { readonly releasedAtMs: number };

/**
 * One durable record of submissions (delegated attestations, witnesses) seen by the reconciler: the rows
 * still open, and the three ways to settle one.
 */
export interface SubmissionBook {
  readonly name: string;
  /**
   * The chain whose rows the book holds, when its ids are a chain's own (the replay book: a signature's record is keyed
   * by chain and signature, decisions §30); the submissions tracked by such an id are that chain's.
   */
  readonly chainId?: number | undefined;
  readonly open: (createdBeforeMs: number) => Promise<OpenSubmission[]>;
  readonly mined: (
    id: string,
    outcome: {
      readonly txHash: string;
      readonly uid: string | null;
      readonly blockNumber: bigint;
      /** A batch's transaction: the uid of each of its items, under the replay key of its signature (decisions §23). */
      readonly uids?: ReadonlyMap<string, string> | undefined;
    },
  ) => Promise<void>;
  readonly reverted: (id: string, txHash: string, blockNumber: bigint) => Promise<void>;
  /**
   * Gives the submission back: the same signature (or quota) can be used again. `cause`: why (the books that answer a
   * retry from the row keep it; absent: not known, as an unproven one).
   */
  readonly release: (id: string, cause?: ReleaseCause | undefined) => Promise<void>;
  /**
   * The rows this book gave back on an unproven cause ({@link UNPROVEN_RELEASES}) since `releasedSinceMs`: the
   * reconciler still looks their transactions up (a capped number a round, each less often as it ages), never sends them
   * again, and records one found mined (`mined`: charged after all), and one found reverted or replaced (`reverted`,
   * `release` with its proven cause). Absent: the book forgets what it gives back (the replay records: the signature is
   * accepted again).
   */
  readonly givenBack?: ((releasedSinceMs: number) => Promise<GivenBackSubmission[]>) | undefined;
  /**
   * Whether what the submission would spend is spent already although its transaction cannot be found (for a
   * delegated attestation: the attester's EAS nonce moved past the signature's); undefined when it cannot be told.
   * Such a submission is recorded as mined, never released.
   */
  readonly spent?: ((id: string) => Promise<boolean | undefined>) | undefined;
  /**
   * Whether a release of this book is answered to a client (a retry told "nothing written", a paid relay write's
   * submission failed and its payment forgotten, a signature accepted again): its nonce read taken by another is then
   * proven only when read so again `REPLACED_CONFIRM_MS` later (one reading rests on a missing receipt, which a
   * load-balanced provider's backend behind the head also gives). Both books the service runs set it.
   */
  readonly answersReleases?: boolean | undefined;
}
