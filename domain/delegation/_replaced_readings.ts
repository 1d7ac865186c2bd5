/**
 * What the reconciler keeps across rounds to read a transaction's nonce taken by another twice before it calls that
 * proven, and how a round it no longer waits for is told to stop.
 */
import type { Clock } from "../../ports/clock.ts";
import type { TxStatus } from "../../ports/submissions.ts";

/**
 * How far apart two readings of "replaced" must be before a write whose release is answered to a client is released
 * as proven `replaced`. One reading rests on the absence of a receipt, and a load-balanced provider may answer the
 * nonce from a backend at the head and the receipt from one behind it (found in review); a backend still behind
 * minutes later is not expected.
 */
export const REPLACED_CONFIRM_MS = 5 * 60_000;

/** Readings of "replaced" by row (its book's name and id), across rounds: the first's time, until one points to landing. */
export type ReplacedReadings = {
  /**
   * Whether this reading of "replaced", asked at `askedAtMs` (the clock before its first call to the node), confirms
   * one recorded at least {@link REPLACED_CONFIRM_MS} before; else, if it is the first, it is recorded at the clock's
   * time now (after its answer). Each reading is dated when it was taken, never by its round's start: a slow round
   * (RPC timeouts on the rows ahead, a database wait) dated a late reading minutes early, and the next round's, seconds
   * later, confirmed it (found in review). The first dated late and the second early: they are at least that far apart.
   */
  readonly confirmed: (key: string, askedAtMs: number) => boolean;
  /** Records a reading: one pointing to the transaction landing (see {@link pointsToLanding}) forgets the first "replaced". */
  readonly read: (key: string, status: TxStatus) => void;
  /** Forgets the rows not in `listed` (settled, or no longer listed). */
  readonly keepOnly: (listed: ReadonlySet<string>) => void;
  /** Forgets one row's readings (it was released). */
  readonly forget: (key: string) => void;
};

/**
 * Forgets what a round kept of a row it releases: its silence and its first "replaced". A relay record's key is its
 * signature's, accepted again once released: kept, the new record's first "replaced" confirmed against the old one's
 * (found in review).
 */
export function forgetReleased(round: { readonly silentSince: Map<string, number>; readonly replaced: ReplacedReadings }, key: string): void {
  round.silentSince.delete(key);
  round.replaced.forget(key);
}

/**
 * Whether a reading says the transaction is in a block (mined, reverted, or its receipt still to come): only such a
 * reading starts the "replaced" readings again. Unknown to the node or held in its pool does not (found in review: one
 * lagging backend's "unknown" between two readings of "replaced" started the count again, and a provider flapping so
 * held a record whose nonce another transaction took open for good); a reading of "replaced" five minutes after the
 * first, whatever came between, proves it.
 */
export const pointsToLanding = (status: TxStatus): boolean =>
  status.status === "success" || status.status === "reverted" || status.status === "included";

/** Keeps the readings of "replaced" in memory: a restart reads twice again, the safe way. */
export function replacedReadings(clock: Clock): ReplacedReadings {
  const first = new Map<string, number>();
  return {
    confirmed(key, askedAtMs) {
      const since = first.get(key);
      if (since === undefined) first.set(key, clock.nowMs());
      return since !== undefined && askedAtMs - since >= REPLACED_CONFIRM_MS;
    },
    read(key, status) {
      if (pointsToLanding(status)) first.delete(key);
    },
    keepOnly(listed) {
      for (const key of first.keys()) if (!listed.has(key)) first.delete(key);
    },
    forget(key) {
      first.delete(key);
    },
  };
}

/** A round running this long is not shared: shorter than the app's give-up (15 minutes) that calls for a new one. */
export const ROUND_SHARED_MS = 10 * 60_000;

/**
 * `run` one round at a time: a call while one runs gets that round's answer, its own arguments unused (rounds
 * overlapping shared the head's watch and the rows' silences, and sent the same rows' bytes twice), unless it has run
 * ROUND_SHARED_MS: a call that never answers (a database query has no timeout) held this chain's rounds for good (found
 * in review). The call then starts a new round, and the old one is told it was superseded (`superseded()` true): it
 * stops at its next row, so that it settles nothing more on what it read long ago, nor keeps its state for the new
 * one. Overlapping until then is safe, as two instances' rounds are: the same bytes resent, an outcome kept only on a
 * row still open. The stuck round, should it end, leaves the new one running.
 */
export function oneRoundAtATime<A, T>(clock: Clock, run: (args: A, superseded: () => boolean) => Promise<T>): (args: A) => Promise<T> {
  let running: { readonly round: Promise<T>; readonly sinceMs: number; readonly told: { superseded: boolean } } | undefined;
  return (args) => {
    const sinceMs = clock.nowMs();
    if (running !== undefined) {
      if (sinceMs - running.sinceMs < ROUND_SHARED_MS) return running.round;
      running.told.superseded = true;
    }
    const told = { superseded: false };
    const round = run(args, () => told.superseded).finally(() => {
      if (running?.round === round) running = undefined;
    });
    running = { round, sinceMs, told };
    return round;
  };
}
