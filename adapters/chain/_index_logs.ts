/** The attestation index's log reads: one `eth_getLogs` per range, ranges split and in flight together as the provider allows. */
import type { AttestedLog, AttestedQuery, EasEvent, IndexFailureReason, IndexRead } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { ATTESTED_TOPIC, REVOKED_TOPIC } from "../../domain/eas_abi.ts";
import { attempt, failed, type IndexState, type Outcome, toHex } from "./_index_state.ts";
import { suggestedWidth } from "./_rpc_failures.ts";

type RawLog = {
  topics: string[];
  data: string;
  blockNumber?: string | null;
  blockHash?: string | null;
  logIndex?: string | null;
  transactionHash?: string | null;
  removed?: boolean;
};

/** One `eth_getLogs` of the EAS contract with `topics`, parsed into EAS events (Attested and Revoked share a layout). */
export async function getLogs(state: IndexState, topics: readonly unknown[], from: bigint | HexString, to?: bigint): Promise<Outcome<EasEvent[]>> {
  // A block hash (EIP-234) names one block; else the range [from, to].
  const where = typeof from === "string" ? { blockHash: from } : { fromBlock: toHex(from), toBlock: toHex(to!) };
  const outcome = await attempt(state, "eth_getLogs", () =>
    state.client.request({
      method: "eth_getLogs",
      params: [{ address: state.eas, topics: topics as never, ...where }],
    }), true);
  if (!outcome.ok) return outcome;
  const events: EasEvent[] = [];
  for (const raw of outcome.value as RawLog[]) {
    if (raw.removed) continue;
    const [topic0, recipient, attester, schema] = raw.topics;
    const kind = topic0 === ATTESTED_TOPIC ? "attested" : topic0 === REVOKED_TOPIC ? "revoked" : undefined;
    if (
      kind === undefined || recipient === undefined || attester === undefined || schema === undefined ||
      !/^0x[0-9a-fA-F]{64}$/.test(raw.data)
    ) {
      return { ok: false, kind: "fatal", text: "Malformed EAS log" };
    }
    events.push({
      kind,
      uid: raw.data.toLowerCase() as HexString,
      recipient: `0x${recipient.slice(-40).toLowerCase()}` as HexString,
      attester: `0x${attester.slice(-40).toLowerCase()}` as HexString,
      schemaUid: schema.toLowerCase() as HexString,
      blockNumber: BigInt(raw.blockNumber ?? "0x0"),
      logIndex: Number(raw.logIndex ?? "0x0"),
      ...(typeof raw.transactionHash === "string" ? { txHash: raw.transactionHash.toLowerCase() as HexString } : {}),
      ...(typeof raw.blockHash === "string" ? { blockHash: raw.blockHash.toLowerCase() as HexString } : {}),
    });
  }
  return { ok: true, value: events };
}

/**
 * Every log matching `topics` in `[from, to]`, in chain order: ranges in flight `concurrency` at a time; a
 * range the provider refuses is split and the narrower width remembered.
 */
export async function scanLogs(state: IndexState, topics: readonly unknown[], from: bigint, to: bigint): Promise<IndexRead<EasEvent[]>> {
  if (from > to) return { ok: true, value: [] };
  const pending = splitRange(from, to, state.span);
  const done: { from: bigint; events: EasEvent[] }[] = [];
  let failure: { ok: false; reason: IndexFailureReason } | undefined;
  const inFlight = new Set<Promise<void>>();
  const runRange = async ([a, b]: [bigint, bigint], together: number) => {
    const outcome = await getLogs(state, topics, a, b);
    if (outcome.ok) done.push({ from: a, events: outcome.value });
    else if (outcome.kind === "range" && outcome.tooLarge === true && together > 1) {
      // Answers sent together were too large for one response: fewer ranges at once, this one again as it was.
      const fewer = Math.max(1, Math.floor(together / 2));
      if (fewer < state.logsInFlight) {
        state.logsInFlight = fewer;
        state.log("rpc_batch_shrunk", { op: "eth_getLogs", inFlight: fewer });
      }
      pending.push([a, b]);
    } else if (outcome.kind === "range" && b > a) {
      const width = suggestedWidth(outcome.text, a, b) ?? (b - a + 1n) / 2n;
      state.span = state.span === null || width < state.span ? width : state.span;
      state.log("log_range_split", { from: a.toString(), to: b.toString(), width: width.toString() });
      pending.push(...splitRange(a, b, width));
    } else failure ??= failed(outcome);
  };
  while ((pending.length > 0 || inFlight.size > 0) && failure === undefined) {
    while (pending.length > 0 && inFlight.size < state.logsInFlight) {
      const together = inFlight.size + 1;
      const task: Promise<void> = runRange(pending.shift()!, together).finally(() => inFlight.delete(task));
      inFlight.add(task);
    }
    await Promise.race(inFlight);
  }
  // A failed scan ends only once its other ranges (and their retries) have: nothing of it reaches the node later.
  if (failure !== undefined) {
    await Promise.allSettled([...inFlight]);
    return failure;
  }
  done.sort((x, y) => (x.from < y.from ? -1 : 1));
  // In chain order whatever order the provider answered in: a revocation applied before its attestation's insert
  // was lost for good (issue: logs out of order in one response).
  return { ok: true, value: inChainOrder(done.flatMap((d) => d.events)) };
}

/** The Attested logs of `query`'s recipients and schemas, in chain order. */
export async function attestedUids(state: IndexState, query: AttestedQuery): Promise<IndexRead<AttestedLog[]>> {
  const from = query.fromBlock ?? state.options.startBlock;
  if (query.recipients.length === 0 || query.schemaUids.length === 0 || from > query.toBlock) return { ok: true, value: [] };
  const topics = [
    ATTESTED_TOPIC,
    query.recipients.map((r) => `0x${r.slice(2).toLowerCase().padStart(64, "0")}`),
    null,
    query.schemaUids.map((s) => s.toLowerCase()),
  ];
  const scanned = await scanLogs(state, topics, from, query.toBlock);
  if (!scanned.ok) return scanned;
  return {
    ok: true,
    value: scanned.value.map((e) => ({
      uid: e.uid,
      recipient: e.recipient,
      attester: e.attester,
      schemaUid: e.schemaUid,
      blockNumber: e.blockNumber,
      logIndex: e.logIndex,
    })),
  };
}

/** Splits `[from, to]` into consecutive ranges of at most `width` blocks (`null`: one range). */
export function splitRange(from: bigint, to: bigint, width: bigint | null): [bigint, bigint][] {
  if (width === null || width <= 0n) return [[from, to]];
  const out: [bigint, bigint][] = [];
  for (let a = from; a <= to; a += width) out.push([a, a + width - 1n < to ? a + width - 1n : to]);
  return out;
}

/** Events by block, then log index. */
export function inChainOrder<E extends { readonly blockNumber: bigint; readonly logIndex: number }>(events: E[]): E[] {
  return events.sort((a, b) => (a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1));
}

/** The EAS events of one block by its hash (EIP-234). */
export async function eventsOfBlock(state: IndexState, blockHash: HexString): Promise<IndexRead<EasEvent[]>> {
  const outcome = await getLogs(state, [[ATTESTED_TOPIC, REVOKED_TOPIC]], blockHash);
  return outcome.ok ? { ok: true, value: inChainOrder(outcome.value) } : failed(outcome);
}
