import { parseAbi } from "viem";
import type {
  AttestationIndex,
  ChainHistory,
  EasEvent,
  IndexBlock,
  IndexRead,
  SchemaRecord,
} from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { ATTESTED_TOPIC, EAS_ABI, REVOKED_TOPIC } from "../../domain/eas_abi.ts";
import { ZERO_UID } from "./_batch_reader.ts";
import { attestations } from "./_index_attestations.ts";
import { attestedUids, eventsOfBlock, scanLogs } from "./_index_logs.ts";
import { bloomTest } from "./_logs_bloom.ts";
import { attempt, createIndexState, failed, type IndexState, toHex, type ViemAttestationIndexOptions } from "./_index_state.ts";

export { BATCH_READER_CODE, splitBatchOutput } from "./_batch_reader.ts";
export { splitRange } from "./_index_logs.ts";
export type { ViemAttestationIndexOptions } from "./_index_state.ts";
export { classify, isResponseTooLarge, suggestedWidth } from "./_rpc_failures.ts";

const SCHEMA_REGISTRY_ABI = parseAbi([
  "struct SchemaRecord { bytes32 uid; address resolver; bool revocable; string schema; }",
  "function getSchema(bytes32 uid) view returns (SchemaRecord)",
]);

/**
 * The attestation index on a viem HTTP client. Every `eth_call` carries the pinned `blockNumber`.
 *
 * Round trips: the transport batches JSON-RPC (`batch`), so the reads one step issues together
 * travel in one HTTP request. JSON-RPC batching alone would save round trips, but providers still bill
 * and rate-limit every call inside a batch, so N reads must also be few `eth_call`s:
 * - Attestations: one `eth_call` to a small batch reader ({@link BATCH_READER_CODE}) whose code the
 *   call installs by state override (geth, Anvil, Erigon, Nethermind, Besu and the big providers
 *   accept it), up to ~128 KB of return data (~8M gas) per call: 50 candidates are one call.
 * - Fallback and schema records: Multicall3's `aggregate3` run *deployless* (its creation code
 *   executed inside `eth_call`, viem `deployless: true`), which needs no contract on chain (the devnet
 *   has no Multicall3) and no override, but returns its data as the code of the contract it "deploys",
 *   so nodes cap it at the contract size limit (EIP-170, 24,576 bytes; Anvil answers
 *   `CreateContractSizeLimit`): about ten attestations per call. That cap is why deployless alone
 *   cannot read 50 attestations in one or two calls.
 * Batches are sized from the attestation size seen last time; one that still overflows (size cap,
 * gas) is halved, down to a plain `eth_call` for one huge attestation.
 *
 * Logs: one `eth_getLogs` per block range, topic1 = the OR-list of recipients, topic3 = the OR-list
 * of schema UIDs. A range the provider refuses ("block range too large", "query returned more
 * than 10000 results", ...) is split (at the provider's suggested range when it names one, else in
 * halves) and the narrower width is remembered for later requests.
 *
 * Response size (issue 43): the transport's batching puts every call issued together into one HTTP request, whose
 * response must fit `maxResponseBytes` (viem's limit; providers have their own). Attestation reads go in waves of at
 * most as many `eth_call`s as the limit holds at their return-data budget, and one chunk's budget fits it too; a
 * response still too large (over the limit, HTTP 413, a provider's "response size" refusal) halves the wave and
 * remembers it, down to one call, then halves that call's batch. Log ranges the same: a too-large answer halves the
 * ranges in flight together, then splits the range, so a step of any size shrinks and goes on.
 *
 * Retries: transient failures are retried a bounded number of times with exponential backoff;
 * viem's own retries are off so range refusals are not retried blindly. Library errors stop here.
 */
export function createViemAttestationIndex(options: ViemAttestationIndexOptions): AttestationIndex & ChainHistory {
  const state = createIndexState(options);
  const latest = () => latestBlock(state);
  return {
    chainId: options.chainId,
    easAddress: state.eas,
    latestBlock: latest,
    schemaRecords: (uids, blockNumber) => schemaRecords(state, uids, blockNumber),
    attestedUids: (query) => attestedUids(state, query),
    attestations: (uids, blockNumber) => attestations(state, uids, blockNumber),
    head: latest,
    blockHash: (blockNumber) => blockHash(state, blockNumber),
    block: (blockNumber) => block(state, blockNumber),
    events: (from, to) => events(state, from, to),
    eventsOfBlock: (hash) => eventsOfBlock(state, hash),
  };
}

/** The bloom test of each index state's EAS contract, made once. */
const BLOOM_TESTS = new WeakMap<IndexState, ReturnType<typeof bloomTest>>();
function mayHoldEvents(state: IndexState, bloom: unknown): boolean | undefined {
  let test = BLOOM_TESTS.get(state);
  if (test === undefined) BLOOM_TESTS.set(state, test = bloomTest(state.eas, [ATTESTED_TOPIC, REVOKED_TOPIC]));
  return test(bloom);
}

async function latestBlock(state: IndexState): Promise<IndexRead<bigint>> {
  const outcome = await attempt(state, "eth_blockNumber", async () => BigInt(await state.client.request({ method: "eth_blockNumber" })));
  return outcome.ok ? outcome : failed(outcome);
}

function schemaRegistry(state: IndexState, block: bigint): Promise<IndexRead<HexString>> {
  state.registry ??= attempt(state, "getSchemaRegistry", () =>
    state.client.readContract({ address: state.eas, abi: EAS_ABI, functionName: "getSchemaRegistry", blockNumber: block })
  ).then((outcome): IndexRead<HexString> => {
    if (!outcome.ok) {
      state.registry = undefined;
      return failed(outcome);
    }
    return { ok: true, value: outcome.value as HexString };
  });
  return state.registry;
}

async function schemaRecords(state: IndexState, uids: readonly HexString[], block: bigint): Promise<IndexRead<SchemaRecord[]>> {
  if (uids.length === 0) return { ok: true, value: [] };
  const address = await schemaRegistry(state, block);
  if (!address.ok) return address;
  const outcome = await attempt(state, "getSchema", () =>
    state.client.multicall({
      contracts: uids.map((uid) => ({ address: address.value, abi: SCHEMA_REGISTRY_ABI, functionName: "getSchema", args: [uid] }) as const),
      allowFailure: false,
      deployless: true,
      batchSize: 0,
      blockNumber: block,
    })
  );
  if (!outcome.ok) return failed(outcome);
  return {
    ok: true,
    value: outcome.value.map((record, i): SchemaRecord =>
      record.uid === ZERO_UID
        ? { uid: uids[i]!, registered: false }
        : { uid: uids[i]!, registered: true, schema: record.schema, revocable: record.revocable }
    ),
  };
}

async function block(state: IndexState, blockNumber: bigint): Promise<IndexRead<IndexBlock | null>> {
  const outcome = await attempt(state, "eth_getBlockByNumber", () =>
    state.client.request({ method: "eth_getBlockByNumber", params: [toHex(blockNumber), false] })
  );
  if (!outcome.ok) return failed(outcome);
  const found = outcome.value as { number?: string | null; hash?: string | null; timestamp?: string | null; parentHash?: string | null; logsBloom?: string | null } | null;
  if (!found?.hash) return { ok: true, value: null };
  // Another block than asked (a backend answering for what it has): no block is better than a wrong one.
  if (typeof found.number === "string" && BigInt(found.number) !== blockNumber) return { ok: false, reason: "inconsistent" };
  const parentHash = typeof found.parentHash === "string" ? { parentHash: found.parentHash.toLowerCase() as HexString } : {};
  const mayHold = mayHoldEvents(state, found.logsBloom);
  return {
    ok: true,
    value: {
      blockNumber,
      blockHash: found.hash.toLowerCase() as HexString,
      timestamp: BigInt(found.timestamp ?? "0x0"),
      ...parentHash,
      ...(mayHold === undefined ? {} : { mayHoldEvents: mayHold }),
    },
  };
}

async function blockHash(state: IndexState, blockNumber: bigint): Promise<IndexRead<HexString | null>> {
  const read = await block(state, blockNumber);
  return read.ok ? { ok: true, value: read.value?.blockHash ?? null } : read;
}

async function events(
  state: IndexState,
  from: bigint,
  to: bigint,
): Promise<IndexRead<{ events: EasEvent[]; toHash: HexString; toTimestamp: bigint; toParentHash?: HexString | undefined; toMayHoldEvents?: boolean | undefined }>> {
  // Issued together, so the block rides in the first range's batch.
  const [scanned, last] = await Promise.all([scanLogs(state, [[ATTESTED_TOPIC, REVOKED_TOPIC]], from, to), block(state, to)]);
  if (!scanned.ok) return scanned;
  if (!last.ok) return last;
  if (last.value === null) return { ok: false, reason: "inconsistent" };
  return {
    ok: true,
    value: {
      events: scanned.value,
      toHash: last.value.blockHash,
      toTimestamp: last.value.timestamp,
      toParentHash: last.value.parentHash,
      toMayHoldEvents: last.value.mayHoldEvents,
    },
  };
}
