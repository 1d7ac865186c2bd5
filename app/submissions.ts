/**
 * Wiring of the submission reconciler (decisions §15): open submissions settled at start and every minute, then the
 * sweep that finishes submissions a crash left without their outcome or their `submission.settled` (decisions §22).
 */
import { createViemTxStatusReader } from "../adapters/chain/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { chainAnswer } from "../domain/chains/mod.ts";
import { createSubmissionReconciler, type Reconcile, type ReconcileReport, replayBook, witnessBook } from "../domain/delegation/mod.ts";
import { createIdempotency, type Idempotency } from "../domain/idempotency/mod.ts";
import {
  type ChainHead,
  createSubmissionStatus,
  createSubmissionSweep,
  createSubmissionTracker,
  type SubmissionSettled,
  type SubmissionStatus,
  type SubmissionTracker,
  trackedBook,
} from "../domain/submissions/mod.ts";
import { settlementConcerns } from "../domain/webhooks/mod.ts";
import { type Config, confirmationsOf, defaultChain } from "./config.ts";
import { type WriteChain, writeChains } from "./write_chains.ts";
import type { Foundation } from "./foundation.ts";
import type { Clock } from "../ports/clock.ts";
import type { Logger } from "../ports/logger.ts";

/**
 * Open submissions younger than this belong to requests still in flight (a receipt is awaited for at most
 * two minutes) and are left to them by the periodic reconciler.
 */
const RECONCILE_GRACE_MS = 5 * 60_000;

/**
 * A write stored before its transaction's bytes were (hash only) and unknown to the node is given back after this; so
 * is one unknown to the node whose resends have had no verdict for this long without a break, when its transaction
 * carries no deadline (a witness's own attestation). One that carries a deadline (a delegated signature's) waits for
 * a block past it instead (released on the silence, it could still land); on a chain that mines only on demand, for
 * the latest block to stand still (QUIET_HEAD_MS, its own 10 minutes) with the node's next block stamped past it.
 */
const LOST_AFTER_MS = 10 * 60_000;

/**
 * How long one step of the minute's work (a chain's round, the sweep, the pruning) may run before a tick logs it
 * overdue (`reconcile_round_overdue`), and before a tick stops waiting for it and starts the next round. Its RPC calls
 * are bounded (10 s each) but its database calls are not: Bun SQL has no query timeout, and a query whose server
 * vanished without a word waits for TCP keepalive, hours. Rounds never overlap, so one that never ended stopped
 * reconciling on this instance for good, in silence (found in review).
 */
export const ROUND_OVERDUE_MS = 10 * 60_000;
export const ROUND_ABANDONED_MS = 15 * 60_000;

/** How long a settled submission stays readable by its id (decisions §23). */
export const SUBMISSIONS_KEPT_MS = 30 * 24 * 60 * 60_000;

/** What the submission side gives the routes, and what stops its timers. */
export type WiredSubmissions = {
  /** Idempotency keys of writes (decisions §23), in the same database as the submission records. */
  readonly idempotency: Idempotency;
  /** Opens the relays' submission records and keeps their outcomes (decisions §23). */
  readonly tracker: SubmissionTracker;
  /** Reads a submission by id, and an account's list. */
  readonly status: SubmissionStatus;
  /** One round of every chain's reconciler now, with the given grace (tests); the rows left open. */
  readonly reconcile: (graceMs?: number) => Promise<number>;
  readonly stop: () => void;
};

/**
 * Settles what a crash left open before the first request, then starts the periodic rounds; returns what stops them.
 * A SQLite file has no other instance, so every open row is from before this start; on PostgreSQL other instances
 * may be mid-flight. A row left open by a passing failure (the node restarting, an answer lost) gets a few more
 * rounds first; one truly pending on chain stays for the periodic rounds.
 */
export async function wireSubmissions(
  config: Pick<Config, "chains" | "relays">,
  f: Foundation,
  events: {
    readonly onSettled?: SubmissionSettled | undefined;
    /**
     * This start holds the SQLite file's instance lock (main.ts, the binary): no other process or in-process service
     * uses the file, so a running idempotency key in it is a request that died with the last process. Tests run
     * several services on one file in one process without it (app/foundation.ts `holdSqliteLock`).
     */
    readonly holdsSqliteLock?: boolean | undefined;
    /** The reconciler's clock (tests; default the system's). */
    readonly reconcileClock?: { readonly nowMs: () => number } | undefined;
  } = {},
): Promise<WiredSubmissions> {
  const { storage, eas, log, devnet } = f;
  const chains = writeChains(config, f).list;
  const told = events.onSettled === undefined ? undefined : namingChain(f, chains, events.onSettled);
  // `submission.settled` (decisions §22): each kept outcome goes to the account's webhook endpoints. A failure to queue
  // the event is logged and does not undo the outcome; the submission stays untold and the sweep tells it again.
  const onSettled: SubmissionSettled | undefined = told === undefined ? undefined : (event) =>
    told(event).catch((error: unknown) => {
      log.warn("webhook_submission_event_failed", { error: error instanceof Error ? error.message : String(error) });
      throw error;
    });
  // A submission of the public relay (no account) has nobody to tell: its settlement is kept told (issue 43).
  const tells = onSettled === undefined ? () => false : settlementConcerns;
  const tracking = { records: storage.submissions, clock: systemClock, replacements: storage.txReplacements, onSettled, tells };
  const bumpAfterMs = config.relays.feeBump.afterSeconds === 0 ? undefined : config.relays.feeBump.afterSeconds * 1000;
  // Decisions §30: each attestation chain's submissions and sponsored writes (the witness's, the private relay's) are
  // followed on that chain, by its own reconciler; a sponsored write from before rows named their chain is the default's.
  const several = chains.length > 1;
  // Asked once at start, every chain at once: a reconciler's rounds never ask it again.
  const onDemand = await Promise.all(chains.map((on) => minesOnDemandOf(config, f, on)));
  const reconcilers = chains.map((on, i) => ({
    chainId: on.chain.chainId,
    reconcile: createSubmissionReconciler({
      chainId: on.chain.chainId,
      books: [
        // A replay record is its chain's (decisions §30): each chain's book holds and settles that chain's only.
        trackedBook(replayBook(storage.replay, on.chain.chainId, on.eas.reader), tracking),
        // A private relay write whose transaction the node cannot show is charged once its signatures are spent on chain.
        witnessBook(storage.ledger, systemClock, several ? { chainId: on.chain.chainId, isDefault: i === 0 } : undefined, {
          replay: storage.replay,
          eas: on.eas.reader,
        }),
      ],
      txStatus: createViemTxStatusReader({
        client: on.eas.client,
        easAddress: on.easAddress,
        log: (event, fields) => log.warn(event, { ...fields, ...(chains.length > 1 ? { chainId: on.chain.chainId } : {}) }),
        senderOf: on.eas.senderOf,
      }),
      clock: events.reconcileClock ?? systemClock,
      graceMs: RECONCILE_GRACE_MS,
      lostAfterMs: LOST_AFTER_MS,
      replacements: storage.txReplacements,
      bumpAfterMs,
      maxBumps: config.relays.feeBump.max,
      // The embedded devnet's state is saved before an outcome read from it is recorded, as after a send (foundation.ts
      // onMined): a crash right after a resent transaction is recorded must not leave it charged but missing.
      saveChain: devnet?.checkpoint,
      // A still head's `pending` block proves a deadline passed only where the chain mines on demand: the embedded devnet,
      // an Anvil or Hardhat node, or a chain the operator declares so (CHAINS_FILE `minesOnDemand`); elsewhere it may
      // be a stalled node's.
      minesOnDemand: onDemand[i],
      log,
    }),
  }));
  const reconcile = everyChain(reconcilers, log);
  const settle = async (graceMs?: number, at?: (step: RoundStep) => void): Promise<number> => {
    const { report, failed } = await reconcile({ graceMs, at });
    if (report.mined + report.reverted + report.released + report.rebroadcast + report.bumped > 0) log.info("submissions_reconciled", report);
    return failed ? -1 : report.open;
  };
  const startupGrace = storage.kind === "sqlite" ? 0 : undefined;
  // The same holds for idempotency keys, once this start holds the file's lock: a running key is a request that died
  // with the last process, and its retry may take it over now (ports/idempotency.ts `endLeases`). Without the lock (an
  // in-process start beside another on the file, as tests make), a live request's key would be taken over: not ended.
  if (storage.kind === "sqlite" && events.holdsSqliteLock === true) {
    const ended = await storage.idempotency.endLeases?.(systemClock.nowMs());
    if (ended !== undefined && ended > 0) log.info("idempotency_leases_ended", { keys: ended });
  }
  for (let round = 0; round < 4 && (await settle(startupGrace)) !== 0; round++) await Bun.sleep(250);
  // Submissions a crash left without their outcome or their `submission.settled`, after the reconciler's rounds.
  const sweepOnce = createSubmissionSweep({ ...tracking, replay: storage.replay, minAgeMs: RECONCILE_GRACE_MS });
  const sweep = (minAgeMs?: number) =>
    sweepOnce(minAgeMs).then((n) => void (n > 0 && log.info("submissions_swept", { settledOrTold: n })), (error: unknown) =>
      log.warn("submission_sweep_failed", { error: error instanceof Error ? error.message : String(error) }));
  await sweep(startupGrace);
  // Keys kept 24 h, and settled submissions past their time, go with the same minute's round.
  const pruneKeys = () =>
    Promise.all([storage.idempotency.prune(systemClock.nowMs()), storage.submissions.prune(systemClock.nowMs() - SUBMISSIONS_KEPT_MS)]).catch((error: unknown) =>
      log.warn("idempotency_prune_failed", { error: error instanceof Error ? error.message : String(error) }));
  await pruneKeys();
  const timer = everyMinute({ settle: (at) => settle(undefined, at), sweep, prune: pruneKeys }, f);
  return {
    idempotency: createIdempotency({ store: storage.idempotency, clock: systemClock }),
    // The reconciler replaces nothing sooner than FEE_BUMP_AFTER_SECONDS after a record was made (0: never).
    tracker: createSubmissionTracker({ ...tracking, random: cryptoRandom, bumpAfterMs: bumpAfterMs ?? Number.POSITIVE_INFINITY }),
    status: createSubmissionStatus({
      records: storage.submissions,
      replay: storage.replay,
      replacements: storage.txReplacements,
      head: () => eas.client.getBlockNumber(),
      confirmations: confirmationsOf(defaultChain(config.chains), devnet !== undefined),
      ...chainHeads(config, f, chains),
    }),
    reconcile: (graceMs) => settle(graceMs),
    stop: () => clearInterval(timer),
  };
}

/**
 * The minute's work on a timer: the reconcilers' rounds, the sweep, the pruning. A minute's work still running when the
 * next minute comes skips that minute: rounds never overlap, unless one step of it has run ROUND_ABANDONED_MS (a
 * database call that never answers): then the next round starts (`oneAtATime`).
 */
function everyMinute(
  work: { readonly settle: (at: (step: RoundStep) => void) => Promise<unknown>; readonly sweep: () => Promise<void>; readonly prune: () => Promise<unknown> },
  f: Pick<Foundation, "log" | "metrics">,
): ReturnType<typeof setInterval> {
  const overdue: RoundBounds["overdue"] = (late) => {
    f.log.warn(late.abandoned ? "reconcile_round_abandoned" : "reconcile_round_overdue", { ageSeconds: Math.round(late.ageMs / 1000), ...late.at });
    f.metrics.increment(late.abandoned ? "ats_reconcile_rounds_abandoned_total" : "ats_reconcile_rounds_overdue_total");
  };
  const timer = setInterval(oneAtATime(async (at) => {
    await work.settle(at);
    at({ step: "sweep" });
    await work.sweep();
    at({ step: "prune" });
    await work.prune();
  }, { clock: systemClock, overdue }), 60_000);
  timer.unref?.();
  return timer;
}

/**
 * One round of every chain's reconciler, one after the other; the reports added up. A chain whose round fails is logged
 * (`reconcile_failed`, naming it) and the chains after it still run: one chain's node answering what a read did not
 * expect ended every later chain's round too, each minute.
 */
export function everyChain(
  reconcilers: readonly { readonly chainId: number; readonly reconcile: Reconcile }[],
  log: Pick<Logger, "warn">,
): (options?: { graceMs?: number | undefined; at?: ((step: RoundStep) => void) | undefined }) => Promise<{ report: ReconcileReport; failed: boolean }> {
  return async (options = {}) => {
    const report: ReconcileReport = { mined: 0, reverted: 0, released: 0, rebroadcast: 0, bumped: 0, open: 0 };
    let failed = false;
    for (const { chainId, reconcile } of reconcilers) {
      // Outside the chain's `try`: a round given up on ends here (see `oneAtATime`), not logged as the chain's failure.
      options.at?.({ chainId });
      try {
        const one = await reconcile(options.graceMs === undefined ? {} : { graceMs: options.graceMs });
        for (const key of Object.keys(report) as (keyof ReconcileReport)[]) report[key] += one[key];
      } catch (error) {
        failed = true;
        log.warn("reconcile_failed", { chainId, error: error instanceof Error ? error.message : String(error) });
      }
    }
    return { report, failed };
  };
}

/** Where a round of the minute's work is: one chain's reconciler, the sweep or the pruning. */
export type RoundStep = { readonly chainId: number } | { readonly step: "sweep" | "prune" };

/** What {@link oneAtATime} bounds a run by: its clock, and where a run past its bounds is told. */
export type RoundBounds = {
  readonly clock: Clock;
  /**
   * Told once a run whose current step has run {@link ROUND_OVERDUE_MS} (`abandoned` false), and when a tick gives up
   * on it after {@link ROUND_ABANDONED_MS} (`abandoned` true), with the step's age and where it is.
   */
  readonly overdue: (late: { readonly ageMs: number; readonly at: RoundStep | undefined; readonly abandoned: boolean }) => void;
};

/** Thrown by a given-up run's next step: it ends there, leaving the rest of the minute's work to the run after it. */
const ABANDONED = new Error("Reconcile round abandoned");

/**
 * `task` run by a timer, skipped while its last run has not ended. With `bounds`, a run whose current step (the task
 * tells each with `at`) has run ROUND_OVERDUE_MS is told once a run, and once it has run ROUND_ABANDONED_MS the tick
 * stops waiting for it and starts a new run: a call that never answers (a database query, which has no timeout) held
 * every later run back for good. The run given up on, should its call ever answer, ends at its next step. Until then
 * the two overlap, which is safe: a row's resend is the same signed bytes (one hash, landing at most once), an outcome
 * is recorded by its book's conditional write, and the chain's reconciler starts its own new round for the new run
 * (domain/delegation/submission_reconciler.ts, sooner than this bound, so never shares the stuck one).
 */
export function oneAtATime(task: (at: (step: RoundStep) => void) => Promise<unknown>, bounds?: RoundBounds): () => void {
  type Run = { sinceMs: number; at: RoundStep | undefined; told: boolean; abandoned: boolean };
  let running: Run | undefined;
  return () => {
    if (running !== undefined) {
      if (bounds === undefined) return;
      const ageMs = bounds.clock.nowMs() - running.sinceMs;
      if (ageMs < ROUND_OVERDUE_MS) return;
      if (ageMs < ROUND_ABANDONED_MS) {
        if (!running.told) bounds.overdue({ ageMs, at: running.at, abandoned: false });
        running.told = true;
        return;
      }
      running.abandoned = true;
      bounds.overdue({ ageMs, at: running.at, abandoned: true });
    }
    const run: Run = { sinceMs: bounds?.clock.nowMs() ?? 0, at: undefined, told: false, abandoned: false };
    running = run;
    // Each step is timed from its start: a round of many chains, each quick, is not stuck.
    const at = (step: RoundStep) => {
      if (run.abandoned) throw ABANDONED;
      run.at = step;
      run.sinceMs = bounds?.clock.nowMs() ?? 0;
    };
    void task(at).catch((error: unknown) => {
      if (error !== ABANDONED) throw error;
    }).finally(() => {
      if (running === run) running = undefined;
    });
  };
}

/** Whether a chain mines only on demand (see {@link minesOnDemand}), its node asked through the chain's own client. */
function minesOnDemandOf(config: Pick<Config, "chains">, f: Foundation, on: WriteChain): Promise<boolean> {
  const configured = config.chains.list.find((c) => c.chainId === on.chain.chainId || c.caip2 === on.chain.caip2)?.minesOnDemand;
  // A chain whose node did not answer at start waits behind its gate (app/chain_checks.ts): not asked, the start goes on.
  const answered = f.devnet === undefined && f.heldChains().get(on.chain.caip2) === "checked";
  return minesOnDemand({ configured, devnet: f.devnet !== undefined }, answered ? on.eas.client : undefined, {
    found: (clientVersion) => f.log.info("chain_mines_on_demand", { chainId: on.chain.chainId, clientVersion }),
  });
}

/** How an Anvil (`anvil/v1.2.0`) and a Hardhat node (`HardhatNetwork/2.22.0/…`) name themselves in `web3_clientVersion`. */
const ON_DEMAND_NODE = /^(anvil|hardhatnetwork)\//i;

/**
 * Whether a chain mines only on demand: as CHAINS_FILE declares it (`minesOnDemand`, true or false), else on the
 * embedded devnet (its Anvil does), else when its node (asked `web3_clientVersion` once, at start) is an Anvil or a
 * Hardhat node. Those are development chains, which mine when they have transactions: an Anvil reached through
 * `RPC_URL` (the compose and Kubernetes devnets) was not taken for one, and a relay record whose resends got no verdict
 * stayed 409 `DUPLICATE` until some other transaction was mined (found in review). One started with a block time moves
 * its head every block, so the rule it opens never applies there. A node that does not answer, or names itself
 * otherwise (geth, reth, Besu, a provider), is not on demand: a stalled node's head stands still too.
 */
export async function minesOnDemand(
  chain: { readonly configured: boolean | undefined; readonly devnet: boolean },
  node: { readonly request: (call: { method: "web3_clientVersion" }) => Promise<unknown> } | undefined,
  options: { readonly found?: ((clientVersion: string) => void) | undefined } = {},
): Promise<boolean> {
  if (chain.configured !== undefined) return chain.configured;
  if (chain.devnet) return true;
  const version = await node?.request({ method: "web3_clientVersion" }).catch(() => undefined);
  const onDemand = typeof version === "string" && ON_DEMAND_NODE.test(version);
  if (onDemand) options.found?.(version);
  return onDemand;
}

/** Decisions §30: with several attestation chains, a submission's view names its chain and counts on its head. */
function chainHeads(config: Pick<Config, "chains">, f: Foundation, chains: readonly WriteChain[]): { otherChains?: Map<number, ChainHead>; defaultChain?: ChainHead } {
  if (chains.length < 2) return {};
  const headOf = (on: WriteChain): ChainHead => {
    const configured = config.chains.list.find((c) => c.chainId === on.chain.chainId || c.caip2 === on.chain.caip2);
    return {
      answer: chainAnswer(on.chain),
      head: () => on.eas.client.getBlockNumber(),
      confirmations: confirmationsOf(configured, f.devnet !== undefined),
    };
  };
  return { defaultChain: headOf(chains[0]!), otherChains: new Map(chains.slice(1).map((on) => [on.chain.chainId, headOf(on)])) };
}

/**
 * Decisions §30: with several chains, `submission.settled` names the chain of the submission (its record names it: one
 * storage read per settlement; a record a previous version opened names none, and its replay record's is read by key,
 * a second read); with one, the event is told as before (the webhooks' default chain).
 */
function namingChain(f: Foundation, chains: readonly WriteChain[], onSettled: SubmissionSettled): SubmissionSettled {
  if (chains.length < 2) return onSettled;
  return async (event) => {
    const record = await f.storage.submissions.find(event.submissionId);
    const chainId = record === undefined ? undefined : record.chainId ?? (await f.storage.replay.findAnyChain(record.ref))?.chainId;
    const on = chains.find((c) => c.chain.chainId === chainId);
    const named: typeof event & { chain?: ReturnType<typeof chainAnswer> } = on === undefined ? event : { ...event, chain: chainAnswer(on.chain) };
    await onSettled(named);
  };
}
