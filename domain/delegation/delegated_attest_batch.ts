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
 * client's and the attester's tokens like any request that reached the guard, but for those refused for the service's
 * sake (given back) and the later items of their attester (answered as they were, taking nothing). Gas budget: the simulated gas, split evenly over the items sent, each item's share
 * charged in order (an item the budget refuses is refused, nothing sent for it, and its attester's token given back). The replay records and the caller's
 * tickets (the private relay's sponsored writes) follow the one transaction item by item, as a single send's do: a
 * batch never broadcast gives every item back, a reverted one settles every item as reverted.
 */
import type { BatchSubmission, DelegatedAttestCall, HexString } from "../../ports/eas.ts";
import { fail, ok, type Ok } from "../result.ts";
import { signerUnavailable } from "./signer_unavailable.ts";
import { chainRefused, chainSilentBeforeSend, nonceUnavailable, refusedForUs, refusedWithEarlier } from "./_refusals.ts";
import { type BatchItem as Item, type BatchRun as Run, calls, drop, fitCalldata, giveBack, halveTooLarge, narrow, nodeFailed, oversizedItem, releaseItem } from "./_batch_narrowing.ts";
import type {
  BatchNonces,
  CallerTicket,
  Claimed,
  DelegatedAttestCaller,
  DelegatedAttestDeps,
  DelegatedAttestFailure,
  DelegatedAttestSuccess,
} from "./_delegated_attest_types.ts";
import { batchSimulationCap, deadlineHolds, expiredWhileQueued } from "./_delegated_attest_types.ts";
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
  /** Runs for each request as the single route's `precheck` does: before any RPC (`index`: its position). */
  readonly precheck?: ((request: DelegatedRequest, index: number) => Promise<DelegatedAttestFailure | undefined>) | undefined;
  /**
   * Runs once, with the first item's replay key and every request's place in the batch, just before the one
   * transaction is signed (the submission record): every refusal is known by then.
   */
  readonly onSubmitting?: ((chainId: number, key: string, layout: BatchLayout) => Promise<void>) | undefined;
};

/** Checks and sends a batch. */
export type DelegatedAttestBatch = (bodies: readonly unknown[], caller?: DelegatedAttestBatchCaller) => Promise<DelegatedAttestBatchOutcome>;

/** What the batch borrows from the single route. */
export type BatchContext = {
  readonly deps: DelegatedAttestDeps;
  readonly check: (body: unknown, caller: DelegatedAttestCaller, batch?: BatchNonces) => Promise<Claimed | DelegatedAttestFailure>;
  /**
   * The single route's checks that need no chain and take nothing (parse, schema, deadline, signature shape, replay
   * lookup, the caller's `precheck`; no token, ticket or claim): a refusal, or undefined when they pass.
   */
  readonly checkTakingNothing: (body: unknown, caller: DelegatedAttestCaller) => Promise<DelegatedAttestFailure | undefined>;
};

/** One batch under way, its caller the batch's. */
type BatchRun = Run<DelegatedAttestBatchCaller>;

/** Checks every request of `bodies` as the single route would, and sends those that pass in one transaction. */
export async function attestBatch(ctx: BatchContext, bodies: readonly unknown[], caller: DelegatedAttestBatchCaller): Promise<DelegatedAttestBatchOutcome> {
  const { deps } = ctx;
  if (bodies.length === 0 || bodies.length > MAX_BATCH_ITEMS) throw new Error(`A batch holds 1 to ${MAX_BATCH_ITEMS} requests`);
  const results: (BatchItemResult | undefined)[] = bodies.map(() => undefined);
  const claimed = await checkItems(ctx, bodies, caller, results);
  if (claimed.length === 0) return answered(results);
  const delegate = claimed[0]!.claimed.delegate;
  const simulate = delegate.simulateBatch;
  // Every simulation of the batch (each narrowing round's too) searches up to what its requests may spend.
  const simulateBatch = simulate === undefined
    ? undefined
    : (calls: readonly DelegatedAttestCall[], maxGas?: bigint) => simulate(calls, maxGas === undefined ? batchSimulationCap(deps, calls.length) : { maxGas });
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
    // A request refused for the service's sake (a chain read that failed, a wallet that cannot pay): the attester's
    // later requests are answered as it was, nothing taken. Checked in full, each was verified against a nonce
    // without the refused one's and refused ATTESTER_MISMATCH (NONCE_AHEAD), keeping the attester token it took.
    // Each still gets the checks that need no chain and take nothing (found by review: a later request with an expired
    // deadline or a wrong schema was told to come again, after a 429 an hour later, and one on record lost its 409
    // DUPLICATE with the uid).
    let refused: { readonly index: number; readonly failure: DelegatedAttestFailure } | undefined;
    for (const index of indexes) {
      const itemCaller: DelegatedAttestCaller = {
        clientKey: caller.clientKey,
        admit: caller.admit === undefined ? undefined : (request) => caller.admit!(request, index),
        precheck: caller.precheck === undefined ? undefined : (request) => caller.precheck!(request, index),
      };
      if (refused !== undefined) {
        results[index] = (await ctx.checkTakingNothing(requests[index], itemCaller)) ?? refusedWithEarlier(refused.index, refused.failure);
        continue;
      }
      const outcome = await ctx.check(requests[index], itemCaller, { nonceFor: (_, chainNonce) => chainNonce + taken });
      if ("ok" in outcome) {
        results[index] = outcome;
        if (refusedForUs(outcome)) refused = { index, failure: outcome };
        continue;
      }
      taken++;
      claimed.push({ index, claimed: outcome });
    }
  }));
  return claimed.sort((a, b) => a.index - b.index);
}

/**
 * Simulates what is left until it passes, then charges each item its share of the gas, in order (an item the budget
 * refuses is refused, and the rest simulated again). Returns the gas of the one transaction, or undefined: nothing left.
 */
async function simulateAndCharge(run: BatchRun): Promise<bigint | undefined> {
  const { deps, caller } = run;
  // More bytes than a node takes: cut before any simulation or charge (items only leave the batch from here on).
  await fitCalldata(run);
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
    const oversized = await oversizedItem(run, gas);
    if (oversized !== undefined && "failed" in oversized) {
      await nodeFailed(run, oversized.failed);
      continue;
    }
    if (oversized !== undefined) {
      await drop(run, oversized, fail("INVALID_INPUT", `The attestation needs more gas: more than the ${deps.maxGasPerTx} allowed per transaction; nothing was sent`));
      continue;
    }
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
        // Nothing sent for it: its attester's token goes back (and its later items' with theirs), as a single send's does.
        await drop(run, item, overBudget, { notSentByUs: true });
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
      await caller.onSubmitting(deps.eas.chainId, items[0]!.claimed.key, layout);
    } catch (error) {
      // Nothing signed or sent: every item's record, ticket, gas and attester token go back (the gas and the tokens
      // were kept).
      for (const item of items) await releaseItem(run, item, { notSentByUs: true });
      throw error;
    }
  }
  const signed = new Set<Item>();
  // Asked under the wallet's lock (decisions §6): one expired item makes EAS revert the whole call. One comparison, the
  // earliest deadline's; the time it was asked at tells, if it says no, which items expired.
  const earliest = items.reduce((least, item) => (item.claimed.request.deadline < least ? item.claimed.request.deadline : least), items[0]!.claimed.request.deadline);
  let askedAtMs = deps.clock.nowMs();
  let submission: BatchSubmission;
  try {
    submission = await submitBatch(calls(items), {
      gas,
      stillValid: () => deadlineHolds(deps, earliest, askedAtMs = deps.clock.nowMs()),
      onSigned: async (tx) => {
        for (const item of items) {
          // A record the reconciler already released must not be sent under: nobody could settle it.
          if (!(await deps.replay.markSigned(deps.eas.chainId, item.claimed.key, tx))) throw new Error("A submission record of the batch was released before sending");
        }
        for (const item of items) {
          await item.claimed.ticket?.onSigned(tx);
          signed.add(item);
        }
      },
      onSent: async () => {
        for (const item of items) {
          await deps.replay.markSent(deps.eas.chainId, item.claimed.key);
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
  return await settleBatch(run, items, submission, askedAtMs);
}

/**
 * `details` of a batch's request not sent because another request of the batch expired while the batch waited for the
 * delegate wallet (400 `INVALID_INPUT`): nothing of the batch was sent. A batch answer with one is not kept under an
 * Idempotency-Key (`keepsStoredAnswer`, domain/idempotency/idempotency.ts): kept, the same batch sent again under the
 * key was answered "not sent" for 24 hours, where run again it sends the others (the expired one refused on arrival).
 */
const BATCH_EXPIRED = "BATCH_EXPIRED";

/**
 * A batch not sent because an item's deadline came within the margin while it waited for the wallet (decisions §6):
 * nothing was signed or sent. Each such item is refused as expired; every other item is given back (`BATCH_EXPIRED`),
 * told it may be sent again, or, after an expired item of its attester, that its nonce waits for that one signed again
 * (the same batch sent again refuses it ATTESTER_MISMATCH, NONCE_AHEAD: it was told it "may be sent again", found in
 * review). Every item's signature, reservation and gas go back.
 */
async function expiredInQueue(run: BatchRun, items: readonly Item[], askedAtMs: number): Promise<DelegatedAttestBatchOutcome> {
  const expired = items.filter((item) => !deadlineHolds(run.deps, item.claimed.request.deadline, askedAtMs));
  for (const item of items) {
    const answer = expired.includes(item) ? expiredWhileQueued(run.deps) : notSentWithExpired(item, expired);
    await giveBack(run, item, answer, { notSentByUs: true });
  }
  return answered(run.results, { sent: "not-broadcast" });
}

/** The answer of a request of a batch that was not sent because `expired` did (its own deadline holds). */
function notSentWithExpired(item: Item, expired: readonly Item[]): DelegatedAttestFailure {
  const attester = item.claimed.request.attester.toLowerCase();
  const earlier = expired.find((e) => e.index < item.index && e.claimed.request.attester.toLowerCase() === attester);
  if (earlier !== undefined) {
    const message = `Request ${earlier.index} of the batch, of the same attester and before this one, expired while the batch waited for the delegate wallet, so nothing of it was sent; this request was not sent, and its nonce comes after that request's: sign request ${earlier.index} again with a later deadline and send them again together, in order`;
    return fail("INVALID_INPUT", message, BATCH_EXPIRED);
  }
  // Never empty: the earliest deadline's request, the one `stillValid` compared, is among them.
  const first = expired[0]!.index;
  const message = `Request ${first} of the batch expired while the batch waited for the delegate wallet, so nothing of it was sent; this request was not sent, and may be sent again (in the same batch too: the expired request is then refused on arrival)`;
  return fail("INVALID_INPUT", message, BATCH_EXPIRED);
}

/**
 * A batch holding wallet contracts that passed the simulation and reverted on chain: simulated once more, as a single
 * send is (domain/delegation/_send_one.ts). Refused again, the revert was the chain's state. Accepted again, one of its
 * wallet contracts tells a simulation from a transaction, and no simulation can say which: every wallet contract of
 * the batch is refused from then on (ports/wallet_refusals.ts): whoever put their signatures in one batch vouched for
 * all of them. Signatures of plain keys (recovered, not asked of a contract) are not marked.
 */
async function refuseContractsIfTheyTellSimulationsApart(run: BatchRun, items: readonly Item[], txHash: HexString): Promise<void> {
  const { deps } = run;
  const contracts = items.filter((item) => item.claimed.byContract);
  if (contracts.length === 0 || deps.walletRefusals === undefined) return;
  const again = await run.simulateBatch(calls(items));
  if (!again.ok) return;
  for (const item of contracts) {
    await deps.walletRefusals.refuse({ chainId: deps.eas.chainId, wallet: item.claimed.request.attester.toLowerCase(), txHash, createdAtMs: deps.clock.nowMs() });
  }
}

/** Keeps what became of the one transaction on every item's record and ticket, and words each item's answer. */
async function settleBatch(run: BatchRun, items: readonly Item[], submission: BatchSubmission, askedAtMs: number): Promise<DelegatedAttestBatchOutcome> {
  const { deps, caller, results } = run;
  if (submission.ok) {
    for (const [i, item] of items.entries()) {
      const uid = submission.uids[i] ?? null;
      const value = { txHash: submission.txHash, uid, blockNumber: submission.blockNumber };
      await deps.replay.finish(deps.eas.chainId, item.claimed.key, { state: "mined", ...value });
      await item.claimed.ticket?.onMined(value);
      results[item.index] = ok(value);
    }
    return answered(results, { txHash: submission.txHash, blockNumber: submission.blockNumber, sent: "mined" });
  }
  if (submission.reason === "not-broadcast") {
    // The node refused the transaction (or it was not sent): no gas spent, so every item's gas and attester token go
    // back with its signature and reservation (decisions §23), as the single route's (domain/delegation/_send_one.ts).
    for (const item of items) await giveBack(run, item, chainRefused(), { notSentByUs: true });
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "nonce-unavailable") {
    // The wallet's shared nonce could not be taken (the storage failed): nothing sent, everything given back.
    for (const item of items) await giveBack(run, item, nonceUnavailable(), { notSentByUs: true });
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "rpc-error") {
    // The wallet's nonce or fees could not be read before signing: nothing sent. Every item is 500 RPC_ERROR (an answer
    // that did nothing, not kept under an Idempotency-Key), its signature, reservation, gas and token given back.
    for (const item of items) await giveBack(run, item, chainSilentBeforeSend(), { notSentByUs: true });
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "expired") return await expiredInQueue(run, items, askedAtMs);
  if (submission.reason === "signer-unavailable") {
    // Nothing signed or sent (decisions §27): every signature, reservation and the gas charged go back.
    for (const item of items) await giveBack(run, item, signerUnavailable(), { notSentByUs: true });
    return answered(results, { sent: "not-broadcast" });
  }
  if (submission.reason === "reverted") {
    for (const item of items) {
      await deps.replay.finish(deps.eas.chainId, item.claimed.key, { state: "reverted", txHash: submission.txHash, blockNumber: submission.blockNumber });
      const ticket = item.claimed.ticket;
      if (ticket?.onBurned !== undefined) await ticket.onBurned({ txHash: submission.txHash, blockNumber: submission.blockNumber });
      else await ticket?.release();
      results[item.index] = fail("SUBMISSION_FAILED", "The batch transaction reverted", submission.txHash);
    }
    await refuseContractsIfTheyTellSimulationsApart(run, items, submission.txHash);
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
