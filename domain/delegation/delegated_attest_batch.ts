/**
 * Batches of delegated attestations (decisions §23): each request checked exactly as the single route checks it (the
 * same pipeline, {@link Claimed}), the ones that pass sent together in one EAS `multiAttestByDelegation`
 * transaction, and one answer per request, in order.
 *
 * EAS 1.4 checks every signature of the call against the attester's nonce as it increments within the call: the
 * items of one attester are checked in their order, each against the chain's nonce plus the items of that attester
 * already accepted before it, so they must be signed for consecutive nonces in the order sent; an item whose nonce
 * does not fit is refused before anything is sent (ATTESTER_MISMATCH, as the single route refuses a moved nonce).
 *
 * A batch the simulation refuses is narrowed, never sent as is: the first item whose prefix of the call reverts is
 * refused with the single route's answer, the later items of its attester with it (their nonces no longer fit), and
 * the rest simulated again; if that reverts too, each later item is simulated once after those kept (issue 43: at
 * most n + ⌈log₂ n⌉ + 1 simulations for n items, not one halving per reverting item). A refused item has taken the
 * client's and the attester's tokens like any request that reached the guard. Gas budget: the simulated gas, split evenly over the items sent, each item's share
 * charged in order (an item the budget refuses is refused, nothing sent for it). The replay records and the caller's
 * tickets (the private relay's sponsored writes) follow the one transaction item by item, as a single send's do: a
 * batch never broadcast gives every item back, a reverted one settles every item as reverted.
 */
import type { BatchSubmission, DelegatedAttestCall, HexString, Simulation } from "../../ports/eas.ts";
import { fail, ok, type Ok } from "../result.ts";
import { signerUnavailable } from "./signer_unavailable.ts";
import type {
  BatchNonces,
  CallerTicket,
  Claimed,
  DelegatedAttestCaller,
  DelegatedAttestDeps,
  DelegatedAttestFailure,
  DelegatedAttestSuccess,
} from "./_delegated_attest_types.ts";
import { type DelegatedRequest, delegatedRequestOf } from "./delegated_request.ts";

/** At most this many requests in one batch (decisions §23). */
export const MAX_BATCH_ITEMS = 50;

/** One request's answer within a batch: its attestation, or the single route's refusal of it. */
export type BatchItemResult = Ok<DelegatedAttestSuccess> | DelegatedAttestFailure;

/** What a batch came to: its one transaction (null when no request passed its checks) and an answer per request. */
export type DelegatedAttestBatchOutcome = {
  readonly txHash: HexString | null;
  readonly blockNumber: bigint | null;
  readonly results: readonly BatchItemResult[];
  /** How the transaction ended, for the submission record: absent when nothing was sent. */
  readonly sent?: "mined" | "reverted" | "not-broadcast" | "unknown" | undefined;
  /** The name of the chain it was sent on, when several are served (decisions §30): the answer's `chain`. */
  readonly chainName?: string | undefined;
};

/**
 * A batch's requests as they are about to be sent (decisions §23), in order: each sent one under its replay record's
 * key, each refused one with the single route's refusal of it.
 */
export type BatchLayout = readonly ({ readonly ref: string } | { readonly refused: DelegatedAttestFailure })[];

/** Who sent the batch; `admit` runs for each request as the single route's `admit` does (`index`: its position). */
export type DelegatedAttestBatchCaller = {
  readonly clientKey?: string | undefined;
  readonly admit?: ((request: DelegatedRequest, index: number) => Promise<DelegatedAttestFailure | CallerTicket>) | undefined;
  /**
   * Runs once, with the first item's replay key and every request's place in the batch, just before the one
   * transaction is signed (the submission record): every refusal is known by then.
   */
  readonly onSubmitting?: ((key: string, layout: BatchLayout) => Promise<void>) | undefined;
};

/** Checks and sends a batch. */
export type DelegatedAttestBatch = (bodies: readonly unknown[], caller?: DelegatedAttestBatchCaller) => Promise<DelegatedAttestBatchOutcome>;

/** What the batch borrows from the single route. */
export type BatchContext = {
  readonly deps: DelegatedAttestDeps;
  readonly check: (body: unknown, caller: DelegatedAttestCaller, batch?: BatchNonces) => Promise<Claimed | DelegatedAttestFailure>;
};

type Item = { readonly index: number; readonly claimed: Claimed };

/** One batch under way: its answers so far, the items still to be sent, and the gas charged to each. */
type BatchRun = {
  readonly deps: DelegatedAttestDeps;
  readonly caller: DelegatedAttestBatchCaller;
  readonly results: (BatchItemResult | undefined)[];
  readonly simulateBatch: NonNullable<Claimed["delegate"]["simulateBatch"]>;
  sending: Item[];
  readonly charged: Map<Item, bigint>;
};

/** Checks every request of `bodies` as the single route would, and sends those that pass in one transaction. */
export async function attestBatch(ctx: BatchContext, bodies: readonly unknown[], caller: DelegatedAttestBatchCaller): Promise<DelegatedAttestBatchOutcome> {
  const { deps } = ctx;
  if (bodies.length === 0 || bodies.length > MAX_BATCH_ITEMS) throw new Error(`A batch holds 1 to ${MAX_BATCH_ITEMS} requests`);
  const results: (BatchItemResult | undefined)[] = bodies.map(() => undefined);
  const claimed = await checkItems(ctx, bodies, caller, results);
  if (claimed.length === 0) return answered(results);
  const delegate = claimed[0]!.claimed.delegate;
  const simulateBatch = delegate.simulateBatch;
  const run: BatchRun = { deps, caller, results, simulateBatch: simulateBatch!, sending: claimed, charged: new Map() };
  if (simulateBatch === undefined || delegate.submitBatch === undefined) {
    for (const item of claimed) await giveBack(run, item, fail("SUBMISSION_FAILED", "This deployment does not send batches; nothing was sent"));
    return answered(results);
  }
  const gas = await simulateAndCharge(run);
  if (gas === undefined) return answered(results);
  return await sendBatch(run, delegate.submitBatch, gas);
}

/** The answers, one per request, in order (with the transaction's when there is one). */
function answered(results: readonly (BatchItemResult | undefined)[], extra: Partial<DelegatedAttestBatchOutcome> = {}): DelegatedAttestBatchOutcome {
  return { txHash: null, blockNumber: null, ...extra, results: results.map((r) => r ?? fail("INTERNAL_ERROR" as never, "Not answered")) };
}

/**
 * Checks each request (each read once) as the single route does; the items of one attester one after another, in
 * order (each takes the next nonce), attesters apart. Returns the claimed items in order; refusals go in `results`.
 */
async function checkItems(ctx: BatchContext, bodies: readonly unknown[], caller: DelegatedAttestBatchCaller, results: (BatchItemResult | undefined)[]): Promise<Item[]> {
  const lines = new Map<string, number[]>();
  const requests = bodies.map((body, index) => {
    const parsed = delegatedRequestOf(body, ctx.deps.keccak256);
    const line = parsed.ok ? parsed.value.attester.toLowerCase() : `unparsed:${index}`;
    lines.set(line, [...(lines.get(line) ?? []), index]);
    return parsed.ok ? parsed.value : body;
  });
  const claimed: Item[] = [];
  await Promise.all([...lines.values()].map(async (indexes) => {
    let taken = 0n;
    for (const index of indexes) {
      const itemCaller: DelegatedAttestCaller = {
        clientKey: caller.clientKey,
        admit: caller.admit === undefined ? undefined : (request) => caller.admit!(request, index),
      };
      const outcome = await ctx.check(requests[index], itemCaller, { nonceFor: (_, chainNonce) => chainNonce + taken });
      if ("ok" in outcome) {
        results[index] = outcome;
        continue;
      }
      taken++;
      claimed.push({ index, claimed: outcome });
    }
  }));
  return claimed.sort((a, b) => a.index - b.index);
}

/**
 * Gives back what is not sent: the item's record and its caller's ticket, with its answer, and (unless `keepGas`) the
 * gas it was charged (decisions §23: an item refused costs nothing). Charged in a round and refused in a later one
 * (the budget refused its larger share, the node failed, the share passed the cap), its gas was kept before, so a batch
 * that sent nothing could spend the hour's budget. `keepGas`: a transaction the node refused, charged as a single
 * send's is.
 */
async function giveBack(run: BatchRun, item: Item, answer: DelegatedAttestFailure, options: { readonly keepGas?: boolean } = {}) {
  await run.deps.replay.release(item.claimed.key);
  await item.claimed.ticket?.release();
  const charged = run.charged.get(item);
  if (charged !== undefined && options.keepGas !== true) {
    run.charged.delete(item);
    await run.deps.guard?.refund?.(charged, { clientKey: run.caller.clientKey ?? "unknown", attester: item.claimed.request.attester });
  }
  run.results[item.index] = answer;
}

/** Refuses `item` (nothing sent for it) and the later items of its attester, whose nonces no longer fit. */
async function drop(run: BatchRun, item: Item, answer: DelegatedAttestFailure) {
  const attester = item.claimed.request.attester.toLowerCase();
  const after = run.sending.filter((other) => other.index > item.index && other.claimed.request.attester.toLowerCase() === attester);
  run.sending = run.sending.filter((other) => other !== item && !after.includes(other));
  await giveBack(run, item, answer);
  for (const other of after) {
    await giveBack(
      run,
      other,
      fail(
        "ATTESTER_MISMATCH",
        `An earlier request of this attester in the batch was refused (request ${item.index}), so this one's nonce (${other.claimed.nonce}) no longer fits: fetch the nonce, re-sign and resubmit`,
      ),
    );
  }
}

/** Gives every item still to be sent back with the node's failure (nothing sent). */
async function nodeFailed(run: BatchRun, simulation: Simulation) {
  const answer = !simulation.ok && simulation.reason === "insufficient-funds"
    ? { ...fail("SUBMISSION_FAILED", "The delegate wallet cannot pay for gas right now; nothing was recorded"), unavailable: true as const }
    : fail("RPC_ERROR", "The chain did not answer the simulation");
  for (const item of run.sending) await giveBack(run, item, answer);
  run.sending = [];
}

const calls = (items: readonly Item[]) => items.map((item) => item.claimed.call);

/**
 * Narrows `sending`, whose simulation `whole` reverted, to the items EAS accepts (issue 43: the cost is bounded).
 * The first reverting item is found by halving; the rest is simulated once more after the items before it; if that
 * still reverts, each later item is simulated once, after the items kept so far, and kept or refused. A batch of n
 * items costs at most n + ⌈log₂ n⌉ + 1 simulations whatever its items (30 all reverting: 36, not 150); one bad
 * item costs ⌈log₂ n⌉ + 2. Returns the passing simulation of exactly what is left, or undefined when nothing is.
 */
async function narrow(run: BatchRun, whole: Simulation): Promise<Simulation | undefined> {
  const first = await firstReverting(run.simulateBatch, run.sending, whole);
  if ("failed" in first) {
    await nodeFailed(run, first.failed);
    return undefined;
  }
  const kept = run.sending.slice(0, first.index);
  await drop(run, run.sending[first.index]!, refusalOf(first.simulation));
  if (run.sending.length === kept.length) return first.passing;
  const again = await run.simulateBatch(calls(run.sending));
  if (again.ok) return again;
  if (again.reason !== "reverted") {
    await nodeFailed(run, again);
    return undefined;
  }
  let last = first.passing;
  const accepted = [...kept];
  for (const item of run.sending.slice(kept.length)) {
    // Refused meanwhile with an earlier item of its attester.
    if (!run.sending.includes(item)) continue;
    const simulation = await run.simulateBatch(calls([...accepted, item]));
    if (simulation.ok) {
      accepted.push(item);
      last = simulation;
    } else if (simulation.reason === "reverted") await drop(run, item, refusalOf(simulation));
    else {
      await nodeFailed(run, simulation);
      return undefined;
    }
  }
  return run.sending.length === 0 ? undefined : last;
}

/**
 * A batch too large for one block (the node's estimate found no limit up to its cap that fits): its later half is given
 * back unsent, each item told to come again in a smaller batch (and the later items of its attesters with it), and the
 * rest simulated again, so a batch costs at most ⌈log₂ n⌉ more simulations. One item alone too large is refused as the
 * single route refuses it. It answered every item 500 RPC_ERROR, a dependency failure, with nothing sent.
 */
async function halveTooLarge(run: BatchRun): Promise<void> {
  if (run.sending.length === 1) {
    await drop(run, run.sending[0]!, fail("INVALID_INPUT", "The attestation needs more gas than a block holds; nothing was sent"));
    return;
  }
  const later = run.sending.slice(Math.ceil(run.sending.length / 2));
  for (const item of later) {
    if (!run.sending.includes(item)) continue;
    await drop(run, item, fail("INVALID_INPUT", "The batch needs more gas than a block holds: this request was not sent; send it again in a smaller batch"));
  }
}

/**
 * Simulates what is left until it passes, then charges each item its share of the gas, in order (an item the budget
 * refuses is refused, and the rest simulated again). Returns the gas of the one transaction, or undefined: nothing left.
 */
async function simulateAndCharge(run: BatchRun): Promise<bigint | undefined> {
  const { deps, caller } = run;
  for (;;) {
    if (run.sending.length === 0) return undefined;
    let simulation = await run.simulateBatch(calls(run.sending));
    if (!simulation.ok && simulation.reason === "too-much-gas") {
      await halveTooLarge(run);
      continue;
    }
    if (!simulation.ok) {
      if (simulation.reason !== "reverted") {
        await nodeFailed(run, simulation);
        continue;
      }
      const narrowed = await narrow(run, simulation);
      if (narrowed === undefined || !narrowed.ok) continue;
      simulation = narrowed;
    }
    const gas = simulation.gas;
    const share = (gas + BigInt(run.sending.length) - 1n) / BigInt(run.sending.length);
    if (deps.maxGasPerTx !== undefined && share > deps.maxGasPerTx) {
      for (const item of [...run.sending]) {
        if (run.sending.includes(item)) {
          await drop(run, item, fail("INVALID_INPUT", `The attestation needs ${share} gas, more than the ${deps.maxGasPerTx} allowed per transaction`));
        }
      }
      continue;
    }
    // Each item's share, in order; an item charged in an earlier round (a larger batch) pays the difference only.
    let refusedAny = false;
    for (const item of [...run.sending]) {
      if (!run.sending.includes(item)) continue;
      const owed = share - (run.charged.get(item) ?? 0n);
      if (owed <= 0n) continue;
      const overBudget = await deps.guard?.charge(owed, { clientKey: caller.clientKey ?? "unknown", attester: item.claimed.request.attester });
      if (overBudget !== undefined) {
        await drop(run, item, overBudget);
        refusedAny = true;
        continue;
      }
      run.charged.set(item, (run.charged.get(item) ?? 0n) + owed);
    }
    if (!refusedAny) return gas;
  }
}

/** Opens the caller's submission with every request's place, then signs and sends the one transaction. */
async function sendBatch(run: BatchRun, submitBatch: NonNullable<Claimed["delegate"]["submitBatch"]>, gas: bigint): Promise<DelegatedAttestBatchOutcome> {
  const { deps, caller, results } = run;
  const items = run.sending;
  if (caller.onSubmitting !== undefined) {
    try {
      const keys = new Map(items.map((item) => [item.index, item.claimed.key]));
      const layout: BatchLayout = results.map((result, index) => {
        const key = keys.get(index);
        if (key !== undefined) return { ref: key };
        if (result === undefined || result.ok) throw new Error(`Request ${index} of the batch is neither sent nor refused`);
        return { refused: result };
      });
      await caller.onSubmitting(items[0]!.claimed.key, layout);
    } catch (error) {
      for (const item of items) {
        await deps.replay.release(item.claimed.key);
        await item.claimed.ticket?.release();
      }
      throw error;
    }
  }
  const signed = new Set<Item>();
  let submission: BatchSubmission;
  try {
    submission = await submitBatch(calls(items), {
      gas,
      onSigned: async (tx) => {
        for (const item of items) {
          // A record the reconciler already released must not be sent under: nobody could settle it.
          if (!(await deps.replay.markSigned(item.claimed.key, tx))) throw new Error("A submission record of the batch was released before sending");
        }
        for (const item of items) {
          await item.claimed.ticket?.onSigned(tx);
          signed.add(item);
        }
      },
      onSent: async () => {
        for (const item of items) {
          await deps.replay.markSent(item.claimed.key);
          await item.claimed.ticket?.onSent();
        }
      },
    });
  } finally {
    // Nothing signed (a throw before sending): every item goes back as a single send's would.
    if (signed.size !== items.length) {
      for (const item of items) if (!signed.has(item)) await item.claimed.ticket?.release();
    }
  }
  return await settleBatch(run, items, submission);
}

/** Keeps what became of the one transaction on every item's record and ticket, and words each item's answer. */
async function settleBatch(run: BatchRun, items: readonly Item[], submission: BatchSubmission): Promise<DelegatedAttestBatchOutcome> {
  const { deps, caller, results } = run;
  if (submission.ok) {
    for (const [i, item] of items.entries()) {
      const uid = submission.uids[i] ?? null;
      const value = { txHash: submission.txHash, uid, blockNumber: submission.blockNumber };
      await deps.replay.finish(item.claimed.key, { state: "mined", ...value });
      await item.claimed.ticket?.onMined(value);
      results[item.index] = ok(value);
    }
    return answered(results, { txHash: submission.txHash, blockNumber: submission.blockNumber, sent: "mined" });
  }
  if (submission.reason === "not-broadcast") {
    for (const item of items) {
      await giveBack(run, item, fail("SUBMISSION_FAILED", "The chain refused the transaction; nothing was sent, and the same signature may be submitted again"), { keepGas: true });
    }
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "signer-unavailable") {
    // Nothing signed or sent (decisions §27): every signature, reservation and the gas charged go back.
    for (const item of items) await giveBack(run, item, signerUnavailable());
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "reverted") {
    for (const item of items) {
      await deps.replay.finish(item.claimed.key, { state: "reverted", txHash: submission.txHash, blockNumber: submission.blockNumber });
      const ticket = item.claimed.ticket;
      if (ticket?.onBurned !== undefined) await ticket.onBurned({ txHash: submission.txHash, blockNumber: submission.blockNumber });
      else await ticket?.release();
      results[item.index] = fail("SUBMISSION_FAILED", "The batch transaction reverted", submission.txHash);
    }
    return answered(results, { txHash: submission.txHash, blockNumber: submission.blockNumber, sent: "reverted" });
  }
  for (const item of items) {
    results[item.index] = fail(
      "OUTCOME_UNKNOWN",
      "The transaction was sent but its outcome is not known yet; it will be settled, and the same signature then answers with it",
      submission.txHash,
    );
  }
  return answered(results, { txHash: submission.txHash, sent: "unknown" });
}

/** The single route's answer to an item EAS reverts. */
function refusalOf(simulation: Simulation): DelegatedAttestFailure {
  const name = !simulation.ok && simulation.reason === "reverted" ? simulation.errorName : "reverted";
  return name === "DeadlineExpired" ? fail("SIGNATURE_EXPIRED", "Signature expired") : fail("INVALID_INPUT", `EAS rejected the attestation: ${name}`);
}

/**
 * The first item whose prefix of the call reverts (EAS runs the items in order, so a prefix that reverts stays
 * reverting as it grows), found by halving: at most ⌈log₂ n⌉ simulations, `whole` being the whole call's. With it, the
 * passing simulation of the prefix before it (undefined for the first item); `failed` when the node did not answer.
 */
async function firstReverting(
  simulate: (calls: readonly DelegatedAttestCall[]) => Promise<Simulation>,
  items: readonly Item[],
  whole: Simulation,
): Promise<{ index: number; simulation: Simulation; passing: Simulation | undefined } | { failed: Simulation }> {
  let low = 0;
  let high = items.length - 1;
  let found = whole;
  let passing: Simulation | undefined;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    const simulation = await simulate(items.slice(0, middle + 1).map((item) => item.claimed.call));
    if (simulation.ok) {
      low = middle + 1;
      passing = simulation;
    } else if (simulation.reason === "reverted") {
      high = middle;
      found = simulation;
    } else return { failed: simulation };
  }
  return { index: high, simulation: found, passing: high === 0 ? undefined : passing };
}
