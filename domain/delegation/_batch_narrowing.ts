/**
 * What a batch gives back and how it is narrowed (domain/delegation/delegated_attest_batch.ts): an item refused is
 * given back with its answer and its gas (decisions §23), a batch the simulation refuses is narrowed to what EAS accepts,
 * one too large for a block halved to what fits.
 */
import type { DelegatedAttestCall, Simulation } from "../../ports/eas.ts";
import { fail, type Ok } from "../result.ts";
import type { Claimed, DelegatedAttestDeps, DelegatedAttestFailure, DelegatedAttestSuccess } from "./_delegated_attest_types.ts";
import { refusedForUs, refusedWithEarlier } from "./_refusals.ts";
import { batchCalldataBytes, MAX_CALLDATA_BYTES } from "./_calldata_size.ts";

/** One request of a batch that passed its checks, at its place in the batch. */
export type BatchItem = { readonly index: number; readonly claimed: Claimed };

/** One batch under way: its answers so far, the items still to be sent, and the gas charged to each. */
export type BatchRun<C extends { readonly clientKey?: string | undefined } = { readonly clientKey?: string | undefined }> = {
  readonly deps: DelegatedAttestDeps;
  readonly caller: C;
  readonly results: (Ok<DelegatedAttestSuccess> | DelegatedAttestFailure | undefined)[];
  /** Simulates `calls` searching up to their requests' cap (`batchSimulationCap`), or up to `maxGas` when given. */
  readonly simulateBatch: (calls: readonly DelegatedAttestCall[], maxGas?: bigint) => Promise<Simulation>;
  sending: BatchItem[];
  readonly charged: Map<BatchItem, bigint>;
};

type Item = BatchItem;

/**
 * Gives back what is not sent: the item's record and its caller's ticket, with its answer, and the gas it was charged
 * (decisions §23: an item refused costs nothing). Charged in a round and refused in a later one (the budget refused its
 * larger share, the node failed, the share passed the cap), its gas was kept before, so a batch that sent nothing could
 * spend the hour's budget; so was a transaction the node refused (nothing broadcast, no gas spent), and a free
 * account's share of the private relay stayed spent for the hour. `notSentByUs`: the signer gave no signature, the
 * batch waited for the wallet past a deadline, the wallet's nonce or fees could not be read before signing or its
 * shared nonce could not be taken, the node refused the transaction, the chain did not answer the simulation or found
 * the delegate wallet cannot pay, the guard refused the item's gas (the hour's budget or a share of it), or the
 * caller's submission could not be opened, and the attester's token goes back as well.
 */
export async function giveBack(
  run: BatchRun,
  item: Item,
  answer: DelegatedAttestFailure,
  options: { readonly notSentByUs?: boolean } = {},
) {
  await releaseItem(run, item, options);
  run.results[item.index] = answer;
}

/** What {@link giveBack} gives back, the item's answer left to the caller (a batch that ends in a throw has none). */
export async function releaseItem(run: BatchRun, item: Item, options: { readonly notSentByUs?: boolean } = {}) {
  await run.deps.replay.release(run.deps.eas.chainId, item.claimed.key);
  // Not sent because of the service (its signer, its wallet's queue): the attester's token goes back too (relay_guard.ts).
  if (options.notSentByUs === true) await run.deps.guard?.giveBackAttester?.(item.claimed.request.attester);
  await item.claimed.ticket?.release();
  const charged = run.charged.get(item);
  if (charged !== undefined) {
    run.charged.delete(item);
    await run.deps.guard?.refund?.(charged, { clientKey: run.caller.clientKey ?? "unknown", attester: item.claimed.request.attester });
  }
}

/**
 * Refuses `item` (nothing sent for it) and the later items of its attester, whose nonces no longer fit; `options` as
 * {@link giveBack}'s, for each of them. Refused for the service's sake (`notSentByUs`, the guard's 429), the later
 * items get the same answer: it was 400 `ATTESTER_MISMATCH` ("re-sign"), though the same batch sent again fits, and a
 * batch so answered was kept under its `Idempotency-Key`. `later`, when given, answers each later item instead.
 */
export async function drop(
  run: BatchRun,
  item: Item,
  answer: DelegatedAttestFailure,
  options: { readonly notSentByUs?: boolean; readonly later?: ((other: Item) => DelegatedAttestFailure) | undefined } = {},
) {
  const attester = item.claimed.request.attester.toLowerCase();
  const after = run.sending.filter((other) => other.index > item.index && other.claimed.request.attester.toLowerCase() === attester);
  run.sending = run.sending.filter((other) => other !== item && !after.includes(other));
  await giveBack(run, item, answer, options);
  for (const other of after) {
    // Refused for the service's sake, the later ones are answered as it is: their nonces are fine once it is sent.
    const refusal = options.later !== undefined
      ? options.later(other)
      : options.notSentByUs === true && refusedForUs(answer)
      ? refusedWithEarlier(item.index, answer)
      : fail(
        "ATTESTER_MISMATCH",
        `An earlier request of this attester in the batch was refused (request ${item.index}), so this one's nonce (${other.claimed.nonce}) no longer fits: fetch the nonce, re-sign and resubmit`,
      );
    await giveBack(run, other, refusal, options);
  }
}

/**
 * Gives every item still to be sent back with the node's failure (nothing sent); a simulation the chain did not answer
 * (500 RPC_ERROR) or that found the delegate wallet cannot pay (503 SUBMISSION_FAILED) gives the attester's token back
 * as well, as the single route's does.
 */
export async function nodeFailed(run: BatchRun, simulation: Simulation) {
  const cannotPay = !simulation.ok && simulation.reason === "insufficient-funds";
  const answer = cannotPay
    ? { ...fail("SUBMISSION_FAILED", "The delegate wallet cannot pay for gas right now; nothing was recorded"), unavailable: true as const }
    : fail("RPC_ERROR", "The chain did not answer the simulation");
  for (const item of run.sending) await giveBack(run, item, answer, { notSentByUs: true });
  run.sending = [];
}

export const calls = (items: readonly Item[]) => items.map((item) => item.claimed.call);

/**
 * Narrows `sending`, whose simulation `whole` reverted, to the items EAS accepts (issue 43: the cost is bounded).
 * The first reverting item is found by halving; the rest is simulated once more after the items before it; if that
 * still reverts, each later item is simulated once, after the items kept so far, and kept or refused. A batch of n
 * items costs at most n + ⌈log₂ n⌉ + 1 simulations whatever its items (30 all reverting: 36, not 150); one bad
 * item costs ⌈log₂ n⌉ + 2. Returns the passing simulation of exactly what is left, or undefined when nothing is.
 */
export async function narrow(run: BatchRun, whole: Simulation): Promise<Simulation | undefined> {
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
 * A batch too large for one block or for its requests' share of `MAX_GAS_PER_TX` (the node's estimate found no limit up
 * to its cap that fits): its later half is given
 * back unsent, each item told to come again in a smaller batch (and the later items of its attesters with it), and the
 * rest simulated again, so a batch costs at most ⌈log₂ n⌉ more simulations. One item alone too large is refused as the
 * single route refuses it. It answered every item 500 RPC_ERROR, a dependency failure, with nothing sent.
 */
export async function halveTooLarge(run: BatchRun): Promise<void> {
  // With MAX_GAS_PER_TX the search stops at each request's share of it (batchSimulationCap), else at a block's gas.
  const cap = run.deps.maxGasPerTx;
  if (run.sending.length === 1) {
    const single = cap === undefined
      ? "The attestation needs more gas than a block holds; nothing was sent"
      : `The attestation needs more gas: more than the ${cap} allowed per transaction; nothing was sent`;
    await drop(run, run.sending[0]!, fail("INVALID_INPUT", single));
    return;
  }
  const more = cap === undefined ? "more gas than a block holds" : `more gas than its requests may spend (${cap} each) or a block holds`;
  const later = run.sending.slice(Math.ceil(run.sending.length / 2));
  for (const item of later) {
    if (!run.sending.includes(item)) continue;
    await drop(run, item, fail("INVALID_INPUT", `The batch needs ${more}: this request was not sent; send it again in a smaller batch`));
  }
}

/**
 * A batch of more call data than a node takes in one transaction ({@link MAX_CALLDATA_BYTES}; decisions §23): before any
 * simulation or charge, each item too large to be sent even alone in a batch (a batch of one carries more bytes than
 * the single call; larger still, the single route's own check refused it before) is refused 400 `INVALID_INPUT` and
 * told to send it alone, on the single route, which takes it; its attester's later items, whose nonces no longer fit
 * without it, 400 `INVALID_INPUT` too, told to send it alone first and then them (their signatures stay good: it was
 * the single route's "more than a node takes", which no route could carry, and the later items' `ATTESTER_MISMATCH`
 * "re-sign", which a client such as docs/client.md's does, found in review). Then what is left is cut to the longest
 * run of its items that fits, the others given back unsent as {@link halveTooLarge} gives them back, each told to come
 * again in a smaller batch. The bytes are known without the node, so the cut is exact where gas is halved a simulation at a time.
 * Sent, the node refused the transaction after its reads and a signature, everything given back: data of zero bytes is
 * cheap in gas, so a request could do it again and again. The run was cut at the first item too large on its own, so
 * the items after it (other attesters' too) were told to come again in a smaller batch, and one in the middle was told
 * so as well, though no batch could carry it (found in review).
 */
export async function fitCalldata(run: BatchRun): Promise<void> {
  // From the last: an attester's later item too large gets its own answer, not the earlier one's.
  for (const item of [...run.sending].reverse()) {
    if (!run.sending.includes(item) || batchCalldataBytes([item.claimed.call]) <= MAX_CALLDATA_BYTES) continue;
    const alone = "The attestation's call data is too large to be sent in a batch, even alone; nothing was sent: send it alone, on the single route (the same path without /batch)";
    const later = (other: Item) =>
      fail(
        "INVALID_INPUT",
        `An earlier request of this attester in the batch (request ${item.index}) is too large to be sent in a batch, so this one's nonce (${other.claimed.nonce}) no longer fits in it; nothing was sent: send request ${item.index} alone first, then this one`,
      );
    await drop(run, item, fail("INVALID_INPUT", alone), { later });
  }
  let fits = 0;
  while (fits < run.sending.length && batchCalldataBytes(calls(run.sending.slice(0, fits + 1))) <= MAX_CALLDATA_BYTES) fits++;
  // From the last: each item cut gets this answer (forward, an attester's later items got ATTESTER_MISMATCH, "re-sign",
  // though their nonces fit once sent again in order).
  for (const item of run.sending.slice(fits).reverse()) {
    const answer = `The batch's call data is more than the ${MAX_CALLDATA_BYTES} bytes a node takes in one transaction: this request was not sent; send it again in a smaller batch`;
    await drop(run, item, fail("INVALID_INPUT", answer));
  }
}

/**
 * The least gas one attestation of a batch costs: its uid, schema, times and attester go into four storage slots that
 * were zero (20,000 gas each, EIP-2200); each 32-byte word of its data into a slot of its own, 20,000 when the word is
 * not all zeros and at least 2,100 when it is (the store of an unchanged cold slot, EIP-2929); and its bytes in the
 * transaction's call data, 16 gas each and 4 for a zero byte (EIP-2028).
 */
const SLOT_GAS = 20_000n;
const UNCHANGED_SLOT_GAS = 2_100n;
const FIXED_SLOTS = 4n;

/** The least gas storing `data` (0x hex) as an attestation's data costs (see above). */
export function leastAttestationGas(data: string): bigint {
  const hex = data.startsWith("0x") ? data.slice(2) : data;
  let gas = FIXED_SLOTS * SLOT_GAS;
  for (let at = 0; at + 1 < hex.length; at += 2) gas += hex.slice(at, at + 2) === "00" ? 4n : 16n;
  // Bytes of 32 or more are stored word by word; fewer share the length's slot (counted once as the fourth fixed slot).
  if (hex.length >= 64) {
    for (let at = 0; at < hex.length; at += 64) gas += /[^0]/.test(hex.slice(at, at + 64)) ? SLOT_GAS : UNCHANGED_SLOT_GAS;
  }
  return gas;
}

/**
 * What an attestation may cost beyond its least: EAS's own code, the signature's recovery, memory and hashing (about
 * 150,000 on the devnet), with room. An item whose least is under half of what is left of the cap after it cannot need
 * more than the cap (its least's own overheads stay within 15 %).
 */
const BEYOND_LEAST_GAS = 200_000n;

/**
 * The item of a passing batch that alone needs more than `MAX_GAS_PER_TX`, or undefined (decisions §23: each request is
 * checked as the single route would; before, cheap items carried an oversized one under the batch's average). What
 * decides an attestation's gas is the data it stores: the item storing the most is priced by its own gas in the batch,
 * when the batch's gas could leave it more than the cap (the batch's gas less every other item's least) and its least
 * is not far under the cap ({@link BEYOND_LEAST_GAS}). EAS runs the items in order, so its gas is the gas of the items up to it less the gas of
 * those before it (one or two more simulations; a prefix of a passing batch passes, its attesters' nonces in order).
 * Another item stores less, so needs less (the same EAS code, an attester's signature check bounded apart).
 * `failed`: the node did not answer one of those simulations.
 */
export async function oversizedItem(run: BatchRun, total: bigint): Promise<Item | undefined | { readonly failed: Simulation }> {
  const cap = run.deps.maxGasPerTx;
  if (cap === undefined || run.sending.length < 2) return undefined;
  const least = run.sending.map((item) => leastAttestationGas(item.claimed.call.data.data));
  let heaviest = 0;
  for (let i = 1; i < least.length; i++) if (least[i]! > least[heaviest]!) heaviest = i;
  const others = least.reduce((sum, gas, i) => (i === heaviest ? sum : sum + gas), 0n);
  if (total - others <= cap || least[heaviest]! * 2n + BEYOND_LEAST_GAS < cap) return undefined;
  // A prefix that reverts all the same (it should not) leaves the batch to the average's rule, as before.
  const gasOf = async (count: number): Promise<bigint | undefined | { readonly failed: Simulation }> => {
    if (count === 0) return 0n;
    if (count === run.sending.length) return total;
    // Up to the batch's own gas: a prefix of it needs no more, whatever its requests' share of the cap.
    const simulation = await run.simulateBatch(calls(run.sending.slice(0, count)), total);
    return simulation.ok ? simulation.gas : simulation.reason === "reverted" ? undefined : { failed: simulation };
  };
  const upTo = await gasOf(heaviest + 1);
  if (typeof upTo !== "bigint") return upTo;
  const before = await gasOf(heaviest);
  if (typeof before !== "bigint") return before;
  return upTo - before > cap ? run.sending[heaviest] : undefined;
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
