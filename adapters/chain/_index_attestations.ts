/**
 * The attestation index's attestation reads: batches through the state-overridden batch reader or deployless
 * Multicall3, in waves that fit one response, shrunk on a too-large answer.
 */
import { concat, pad } from "viem";
import type { IndexedAttestation, IndexRead } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { EAS_ABI, type EasAttestation } from "../../domain/eas_abi.ts";
import {
  BATCH_READER_ADDRESS,
  BATCH_READER_CODE,
  CALL_OVERHEAD_BYTES,
  chunks,
  GET_ATTESTATION_SELECTOR,
  OVERRIDE_RETURN_BUDGET,
  RESPONSE_SHARE,
  RESULT_OVERHEAD,
  RETURN_BUDGET,
  splitBatchOutput,
  TYPICAL_RESULT_BYTES,
} from "./_batch_reader.ts";
import { attempt, failed, type IndexState } from "./_index_state.ts";
import { decodeAttestationResult } from "./_attestation_result.ts";
import { isOutOfGas, isOverrideRefusal, isResponseTooLarge, isReturnSizeLimit, nodeText, OverrideIgnoredError } from "./_rpc_failures.ts";

type RawAttestation = EasAttestation;

/**
 * Reads attestations with one batch-reader call (`viaOverride`) or one deployless multicall,
 * halving the batch when its return data or gas is too large for one call.
 */
async function readChunk(state: IndexState, uids: readonly HexString[], block: bigint, viaOverride: boolean): Promise<RawAttestation[]> {
  if (uids.length === 1) {
    return [await state.client.readContract({ address: state.eas, abi: EAS_ABI, functionName: "getAttestation", args: [uids[0]!], blockNumber: block })];
  }
  try {
    if (viaOverride) return await readThroughBatchReader(state, uids, block);
    return await state.client.multicall({
      contracts: uids.map((uid) => ({ address: state.eas, abi: EAS_ABI, functionName: "getAttestation", args: [uid] }) as const),
      allowFailure: false,
      deployless: true,
      batchSize: 0,
      blockNumber: block,
    });
  } catch (error) {
    if (!isReturnSizeLimit(error) && !(viaOverride && isOutOfGas(error))) throw error;
    const half = Math.ceil(uids.length / 2);
    const parts = await Promise.all([readChunk(state, uids.slice(0, half), block, viaOverride), readChunk(state, uids.slice(half), block, viaOverride)]);
    return parts.flat();
  }
}

async function readThroughBatchReader(state: IndexState, uids: readonly HexString[], block: bigint): Promise<RawAttestation[]> {
  const { data } = await state.client.call({
    to: BATCH_READER_ADDRESS,
    data: concat([pad(state.eas), pad(GET_ATTESTATION_SELECTOR, { dir: "right" }), ...uids]),
    blockNumber: block,
    stateOverride: [{ address: BATCH_READER_ADDRESS, code: BATCH_READER_CODE }],
  });
  // A node that ignores the override runs our call against an empty account: success, no data.
  if (data === undefined || data === "0x") throw new OverrideIgnoredError();
  return splitBatchOutput(data, uids.length).map((result) => decodeAttestationResult(result, state.checksum));
}

/**
 * Every uid, in batches sized for the read's kind, sent in waves of as many calls as one response holds (one HTTP
 * round trip each; all at once when they fit). A too-large response halves the wave (remembered), and a single
 * call's too-large response halves its batch.
 */
async function readInWaves(state: IndexState, uids: readonly HexString[], block: bigint, through: boolean): Promise<RawAttestation[]> {
  const parts = chunks(uids, batchSize(state, through));
  const out: RawAttestation[] = [];
  for (let i = 0; i < parts.length;) {
    const wave = parts.slice(i, i + wavesOf(state, through));
    try {
      const read = await Promise.all(wave.map((chunk) => readChunk(state, chunk, block, through)));
      for (const part of read) out.push(...part);
      i += wave.length;
    } catch (error) {
      if (!isResponseTooLarge(error)) throw error;
      if (wave.length > 1) {
        state.callsPerRequest = Math.max(1, Math.floor(wave.length / 2));
        state.log("rpc_batch_shrunk", { op: "getAttestation", calls: state.callsPerRequest });
      } else if (wave[0]!.length > 1) {
        const chunk = wave[0]!;
        const half = Math.ceil(chunk.length / 2);
        parts.splice(i, 1, chunk.slice(0, half), chunk.slice(half));
        state.log("rpc_batch_shrunk", { op: "getAttestation", uids: half });
      } else throw error;
    }
  }
  return out;
}

/** How many attestation-read calls go in one HTTP request. */
function wavesOf(state: IndexState, through: boolean): number {
  const perCall = 2 * Math.min(through ? OVERRIDE_RETURN_BUDGET : RETURN_BUDGET, state.responseBudget) + CALL_OVERHEAD_BYTES;
  state.callsPerRequest ??= Math.max(1, Math.floor((state.maxResponseBytes * RESPONSE_SHARE) / perCall));
  return state.callsPerRequest;
}

/** Every uid, in batches sized for the read's kind and waves that fit one response. */
async function readAll(state: IndexState, uids: readonly HexString[], block: bigint): Promise<RawAttestation[]> {
  const viaOverride = state.overrides;
  const run = (through: boolean) => readInWaves(state, uids, block, through);
  try {
    return await run(viaOverride);
  } catch (error) {
    // The node refused or ignored the state override: if a deployless read works, this node is read
    // deployless from now on. Anything else is left to the retries.
    if (!viaOverride || !isOverrideRefusal(error)) throw error;
    const read = await run(false);
    if (state.overrides) state.log("state_override_unsupported", { error: (nodeText(error) || String(error)).slice(0, 300) });
    state.overrides = false;
    return read;
  }
}

function batchSize(state: IndexState, viaOverride: boolean): number {
  const budget = Math.min(viaOverride ? OVERRIDE_RETURN_BUDGET : RETURN_BUDGET, state.responseBudget);
  return Math.max(1, Math.min(state.multicallSize, Math.floor(budget / state.bytesPerAttestation)));
}

/** The attestations `uids` at `block`, in order; a read that comes back out of step is retried, then `inconsistent`. */
export async function attestations(state: IndexState, uids: readonly HexString[], block: bigint): Promise<IndexRead<IndexedAttestation[]>> {
  if (uids.length === 0) return { ok: true, value: [] };
  // A uid from a log up to `block` that reads back empty at `block` means a lagging node behind a
  // load balancer: retried, then a failure, never an empty answer.
  for (let n = 0; ; n++) {
    const outcome = await attempt(state, "getAttestation", () => readAll(state, uids, block));
    if (!outcome.ok) return failed(outcome);
    const read = outcome.value;
    const returned = read.reduce((sum, a) => sum + RESULT_OVERHEAD + Math.ceil((a.data.length - 2) / 64) * 32, 0);
    // Never below the typical size: one artifact's tiny records must not overfill the next one's batches.
    state.bytesPerAttestation = Math.max(TYPICAL_RESULT_BYTES, Math.ceil(returned / read.length));
    if (read.every((a, i) => a.uid.toLowerCase() === uids[i]!.toLowerCase())) {
      return {
        ok: true,
        value: read.map((a) => ({
          uid: a.uid.toLowerCase() as HexString,
          schema: a.schema.toLowerCase() as HexString,
          time: a.time,
          expirationTime: a.expirationTime,
          revocationTime: a.revocationTime,
          refUID: a.refUID as HexString,
          recipient: a.recipient as HexString,
          attester: a.attester as HexString,
          revocable: a.revocable,
          data: a.data as HexString,
        })),
      };
    }
    if (n >= state.retries) {
      state.log("rpc_error", { op: "getAttestation", kind: "inconsistent", block: block.toString() });
      return { ok: false, reason: "inconsistent" };
    }
    await Bun.sleep(state.retryDelayMs * 2 ** n);
  }
}
