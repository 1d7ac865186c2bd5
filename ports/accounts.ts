import type { SignedTx } from "./eas.ts";
import type { ReleaseCause } from "./submissions.ts";

/** A plan name; limits and eligible schemas of each come from configuration. */
export type Plan = "free" | "paid";

/** A user account, created on first sign-in and keyed by its wallet address. */
export type Account = {
  readonly id: string;
  /** The wallet address, lowercase. */
  readonly address: string;
  readonly plan: Plan;
  readonly createdAtMs: number;
  /** Set by the account's owner (up to 100 characters); null or absent: none. */
  readonly displayName?: string | null | undefined;
};

/** The account of a wallet, and whether this very call created it. */
export type AccountCreation = { readonly account: Account; readonly created: boolean };

/** A sign-in challenge: the exact EIP-4361 message the wallet must sign, single-use and expiring. */
export type Challenge = {
  readonly id: string;
  /** The wallet address, lowercase. */
  readonly address: string;
  readonly chainId: number;
  readonly nonce: string;
  readonly message: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
  /** Set once the challenge was exchanged for a session. */
  readonly usedAtMs: number | null;
};

/** A server-side session; only the SHA-256 of its token is stored. */
export type Session = {
  /** Lowercase hex SHA-256 of the cookie token. */
  readonly tokenHash: string;
  readonly accountId: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
  readonly revokedAtMs: number | null;
  /** What the client said signed in (the wallet provider's id, e.g. `metamask`), if anything (decisions §12). */
  readonly walletProviderId?: string | null | undefined;
  /** `subscription` (writes sponsored by the plan) or `native` (the user pays gas), as the client said. */
  readonly executionMode?: "subscription" | "native" | null | undefined;
};

/**
 * The bounds a new challenge must fit (decisions §15). Every count is of rows in the store, so instances
 * sharing one database share the bounds.
 */
export type ChallengeLimits = {
  /** Who asks: the client's address key, `unknown` when the address is not known. */
  readonly client: string;
  /** Challenges one client may create within `windowMs`. */
  readonly perClient: number;
  /**
   * Challenges one wallet may be given within `windowMs`, all clients together (decisions §15's per-wallet rate). Past
   * it, only a client that already holds one of the wallet's challenges created in the window is refused (`wallet`); a
   * client's first challenge for the wallet in the window is always given (under its own `perClient`), so no number of
   * strangers asking for the wallet keeps its owner, asking from an address of its own, from a challenge. Counted over
   * every asker and refusing everyone, a stranger spending it each window kept the owner from signing in indefinitely.
   */
  readonly perWallet: number;
  readonly windowMs: number;
  /**
   * Live (unexpired, unused) challenges one client may hold for one wallet; its oldest beyond it are marked used
   * (evicted) rather than the new one refused. Another client's challenges are never evicted: a stranger asking for
   * the wallet's challenges used to evict the one its owner was signing.
   */
  readonly livePerWallet: number;
};

/**
 * What became of a new challenge: stored (with how many older live ones of its client for its wallet it evicted), or
 * refused by the client's creation rate or the wallet's, with when the next one would fit.
 */
export type ChallengeCreation =
  | { readonly ok: true; readonly evicted: number }
  | { readonly ok: false; readonly limit: "client" | "wallet"; readonly retryAfterMs: number };

/** Accounts, sign-in challenges and sessions. */
export interface AccountStore {
  /**
   * Stores a challenge if its client is under its creation rate and the wallet under its rate (or this is the client's
   * first challenge for the wallet in the window), all in one atomic step (counts, eviction and insert), so parallel
   * requests cannot overshoot a limit. Another client's challenges for the wallet never evict this client's, and never
   * refuse its first one of a window.
   */
  readonly createChallenge: (challenge: Challenge, limits: ChallengeLimits) => Promise<ChallengeCreation>;
  readonly findChallenge: (id: string) => Promise<Challenge | undefined>;
  /** Marks an unused challenge used; false when it was already used or is unknown (a concurrent verify won). */
  readonly consumeChallenge: (id: string, nowMs: number) => Promise<boolean>;
  /**
   * The account of a wallet, created on the `free` plan with `newId` if there is none yet. `created` is whether this
   * call inserted it: of parallel calls for one new wallet (on any instance) exactly one did, which a lookup before or
   * after the call cannot tell.
   */
  readonly findOrCreateAccount: (address: string, newId: string, nowMs: number) => Promise<AccountCreation>;
  /** An account by id or by wallet address (any case). */
  readonly findAccount: (idOrAddress: string) => Promise<Account | undefined>;
  readonly listAccounts: () => Promise<Account[]>;
  /** Sets or clears the display name of an account; the updated account, or undefined when unknown. */
  readonly setDisplayName: (id: string, displayName: string | null, nowMs: number) => Promise<Account | undefined>;
  /** Sets the plan of an account by id or address; the updated account, or undefined when unknown. */
  readonly setPlan: (idOrAddress: string, plan: Plan, nowMs: number) => Promise<Account | undefined>;
  readonly saveSession: (session: Session) => Promise<void>;
  /** A session and its account by token hash, whatever its expiry or revocation. */
  readonly findSession: (tokenHash: string) => Promise<{ session: Session; account: Account } | undefined>;
  readonly revokeSession: (tokenHash: string, nowMs: number) => Promise<void>;
  /** Drops challenges and sessions that expired before `nowMs`; returns how many rows went. */
  readonly prune: (nowMs: number) => Promise<number>;
}

/**
 * Where a sponsored write stands: `reserved` (the submission is checked), `signed` (its transaction is
 * stored), `broadcast` (sent: it may have reached the node), then `committed` (mined) or `released`. The
 * open states count against the quota like `committed`.
 */
export type WriteState = "reserved" | "signed" | "broadcast" | "committed" | "released";

/** A reservation of one sponsored write, taken before anything is signed. */
export type WriteReservation = {
  readonly id: string;
  readonly accountId: string;
  /** The calendar year (UTC) the write is charged to. */
  readonly year: number;
  /** Identifies the request (account, schema, subject, controller) for audit and reconciliation. */
  readonly fingerprint: string;
  readonly createdAtMs: number;
  /** The chain the write is sent on (decisions §30); absent (rows written before it was kept): the default chain. */
  readonly chainId?: number | undefined;
};

/** A stored reservation with its progress. */
export type WriteRecord = WriteReservation & {
  readonly state: WriteState;
  /** The signed transaction, stored before it was sent. */
  readonly tx: SignedTx | null;
  readonly txHash: string | null;
  readonly uid: string | null;
  readonly blockNumber: bigint | null;
  readonly updatedAtMs: number;
  /**
   * Why a `released` write was given back, when that was recorded (ports/submissions.ts `ReleaseCause`); absent: not
   * released, or released before causes were kept (read as unproven). A write committed after an unproven release
   * keeps it.
   */
  readonly releaseCause?: ReleaseCause | undefined;
};

/** Writes of one account in one year. */
export type WriteUsage = { readonly used: number; readonly reserved: number };

/** The sponsored-write quota: reserve before submission, commit on success, release on failure. */
export interface SponsoredWriteLedger {
  /**
   * The account's writes charged to `year`: `used`, the committed ones; `reserved`, the open ones and, with `nowMs`,
   * those given back on an unproven cause (`UNPROVEN_RELEASES`) less than `GIVEN_BACK_WATCH_MS` before it, since such a
   * write may still land and be charged (found in review: with a limit of 1, a write given back for its silence, a
   * second one reserved and committed, then the first mined, left the account at 2). Without `nowMs`, the open ones only.
   */
  readonly usage: (accountId: string, year: number, options?: { readonly nowMs?: number | undefined }) => Promise<WriteUsage>;
  /**
   * Atomically reserves one write unless `used + reserved` already reaches `limit` (counted as `usage` counts at the
   * reservation's `createdAtMs`); false when none is left.
   */
  readonly reserve: (reservation: WriteReservation, limit: number) => Promise<boolean>;
  /** Stores the signed transaction before it is sent; false when the write is no longer `reserved` (released). */
  readonly markSigned: (id: string, tx: SignedTx, nowMs: number) => Promise<boolean>;
  /** Records that the transaction may have reached the node. */
  readonly markSent: (id: string, nowMs: number) => Promise<void>;
  /**
   * Charges a write whose transaction was mined: an open one, or one given back on an unproven cause (`UNPROVEN_RELEASES`:
   * it landed after all, decisions §15 "charges a mined witness") less than `GIVEN_BACK_WATCH_MS` before `nowMs`, while
   * its quota is still held for it (`usage`); one given back on a proven cause, or longer ago, stays as it is.
   */
  readonly commit: (
    id: string,
    outcome: { readonly txHash: string; readonly uid: string | null; readonly blockNumber: bigint },
    nowMs: number,
  ) => Promise<void>;
  /**
   * Gives an open write back, keeping why (`cause`; absent: not known, read as unproven); a committed write is never
   * released. A write given back on an unproven cause takes a proven `cause` given later (the reconciler found its
   * transaction reverted, or its nonce taken), and nothing else.
   */
  readonly release: (id: string, nowMs: number, cause?: ReleaseCause | undefined) => Promise<void>;
  /** Reservations still `reserved`, `signed` or `broadcast` that were created before `createdBeforeMs`. */
  readonly unsettled: (createdBeforeMs: number) => Promise<WriteRecord[]>;
  /**
   * Writes still `released` on an unproven cause (`UNPROVEN_RELEASES`), given back at or after `releasedSinceMs` (by
   * `updatedAtMs`), oldest first: the reconciler keeps looking their transactions up.
   */
  readonly givenBackUnproven: (releasedSinceMs: number) => Promise<WriteRecord[]>;
  readonly find: (id: string) => Promise<WriteRecord | undefined>;
}
