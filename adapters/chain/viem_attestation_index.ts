import {
  concat,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  http,
  HttpRequestError,
  pad,
  parseAbi,
  type PublicClient,
  ResponseBodyTooLargeError,
  TimeoutError,
} from "viem";
import type {
  AttestationIndex,
  AttestedLog,
  AttestedQuery,
  ChainHistory,
  EasEvent,
  IndexBlock,
  IndexedAttestation,
  IndexFailureReason,
  IndexRead,
  SchemaRecord,
} from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { ATTESTED_TOPIC, EAS_ABI, type EasAttestation, REVOKED_TOPIC } from "../../domain/eas_abi.ts";

const SCHEMA_REGISTRY_ABI = parseAbi([
  "struct SchemaRecord { bytes32 uid; address resolver; bool revocable; string schema; }",
  "function getSchema(bytes32 uid) view returns (SchemaRecord)",
]);

const ZERO_UID = `0x${"0".repeat(64)}`;

/** Options of {@link createViemAttestationIndex}. */
export type ViemAttestationIndexOptions = {
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly easAddress: HexString;
  /** The first block log scans cover (the EAS deployment block). */
  readonly startBlock: bigint;
  /** Replaces `fetch` for JSON-RPC, e.g. to count round trips in tests. */
  readonly fetchFn?: typeof fetch | undefined;
  /** Per HTTP request (config `ARTIFACT_TRUST_RPC_TIMEOUT_MS`); default 8 s. */
  readonly timeoutMs?: number | undefined;
  /** Further attempts after a transient failure (timeout, 5xx, 429, connection error); default 2. */
  readonly retries?: number | undefined;
  /** First retry delay, doubled each time; default 150 ms. */
  readonly retryDelayMs?: number | undefined;
  /** The widest log range asked for at once; default: no limit until the provider refuses one. */
  readonly maxBlockRange?: bigint | undefined;
  /** Log ranges in flight at once; default 4. */
  readonly logConcurrency?: number | undefined;
  /** At most this many attestation reads per `eth_call`; default: as many as fit the budget of the read's kind. */
  readonly multicallSize?: number | undefined;
  /**
   * Read attestations through the batch reader installed by an `eth_call` state override (default
   * true); false: deployless Multicall3 only. A node that refuses state overrides is detected and
   * read deployless from then on either way.
   */
  readonly stateOverride?: boolean | undefined;
  /**
   * The largest HTTP response body read (viem's limit, default 10,485,760 bytes). Reads are sized to fit it, and a
   * response over it, or one the provider refuses for its size, shrinks what is sent together (issue 43).
   */
  readonly maxResponseBytes?: number | undefined;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
};

type Outcome<T> = { ok: true; value: T } | { ok: false; kind: "range" | "timeout" | "fatal" | "transient"; text: string; tooLarge?: true };

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
  const log = options.log ?? (() => {});
  const retries = options.retries ?? 2;
  const retryDelayMs = options.retryDelayMs ?? 150;
  const concurrency = Math.max(1, options.logConcurrency ?? 4);
  const multicallSize = Math.max(1, options.multicallSize ?? Number.MAX_SAFE_INTEGER);
  /** Learned size of one attestation in aggregate3 return data, to size the next batches. */
  let bytesPerAttestation = TYPICAL_RESULT_BYTES;
  /** Whether attestations are read through the state-overridden batch reader (else deployless). */
  let overrides = options.stateOverride ?? true;
  const maxResponseBytes = Math.max(16_384, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
  /** Return data one call may carry so that its response (hex, twice the bytes) fits the limit with room. */
  const responseBudget = Math.floor((maxResponseBytes * RESPONSE_SHARE) / 2);
  /** Attestation-read `eth_call`s sent together (one HTTP request): as many as one response holds; halved on a too-large answer. */
  let callsPerRequest: number | undefined;
  /** Log ranges in flight together; halved when their answers together were too large. */
  let logsInFlight = concurrency;
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { wait: 0, batchSize: 100 },
      maxResponseBodySize: maxResponseBytes,
      fetchFn: options.fetchFn,
      retryCount: 0,
      timeout: options.timeoutMs ?? 8_000,
    }),
  }) as PublicClient;
  const eas = options.easAddress;
  /** The widest range the provider accepted lately; null = no limit known. */
  let span: bigint | null = options.maxBlockRange ?? null;
  /** EAS's SchemaRegistry address is immutable. */
  let registry: Promise<IndexRead<HexString>> | undefined;

  async function attempt<T>(op: string, run: () => Promise<T>, ranged = false): Promise<Outcome<T>> {
    for (let n = 0; ; n++) {
      try {
        return { ok: true, value: await run() };
      } catch (error) {
        const failure = classify(error, ranged);
        if (failure.kind === "range" || failure.kind === "fatal" || n >= retries) {
          log("rpc_error", { op, kind: failure.kind, attempt: n + 1, error: failure.text.slice(0, 300) });
          return { ok: false, ...failure };
        }
        await Bun.sleep(retryDelayMs * 2 ** n);
      }
    }
  }
  const failed = (outcome: { kind: string }): { ok: false; reason: IndexFailureReason } => ({
    ok: false,
    reason: outcome.kind === "timeout" ? "timeout" : outcome.kind === "range" ? "range-too-large" : "rpc-error",
  });

  async function latestBlock(): Promise<IndexRead<bigint>> {
    const outcome = await attempt("eth_blockNumber", async () => BigInt(await client.request({ method: "eth_blockNumber" })));
    return outcome.ok ? outcome : failed(outcome);
  }

  function schemaRegistry(block: bigint): Promise<IndexRead<HexString>> {
    registry ??= attempt("getSchemaRegistry", () =>
      client.readContract({ address: eas, abi: EAS_ABI, functionName: "getSchemaRegistry", blockNumber: block })
    ).then((outcome): IndexRead<HexString> => {
      if (!outcome.ok) {
        registry = undefined;
        return failed(outcome);
      }
      return { ok: true, value: outcome.value as HexString };
    });
    return registry;
  }

  async function schemaRecords(uids: readonly HexString[], block: bigint): Promise<IndexRead<SchemaRecord[]>> {
    if (uids.length === 0) return { ok: true, value: [] };
    const address = await schemaRegistry(block);
    if (!address.ok) return address;
    const outcome = await attempt("getSchema", () =>
      client.multicall({
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

  /** One `eth_getLogs` of the EAS contract with `topics`, parsed into EAS events (Attested and Revoked share a layout). */
  async function getLogs(topics: readonly unknown[], from: bigint, to: bigint): Promise<Outcome<EasEvent[]>> {
    const outcome = await attempt("eth_getLogs", () =>
      client.request({
        method: "eth_getLogs",
        params: [{ address: eas, topics: topics as never, fromBlock: toHex(from), toBlock: toHex(to) }],
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
      });
    }
    return { ok: true, value: events };
  }

  /**
   * Every log matching `topics` in `[from, to]`, in chain order: ranges in flight `concurrency` at a time; a
   * range the provider refuses is split and the narrower width remembered.
   */
  async function scanLogs(topics: readonly unknown[], from: bigint, to: bigint): Promise<IndexRead<EasEvent[]>> {
    if (from > to) return { ok: true, value: [] };
    const pending = splitRange(from, to, span);
    const done: { from: bigint; events: EasEvent[] }[] = [];
    let failure: { ok: false; reason: IndexFailureReason } | undefined;
    const inFlight = new Set<Promise<void>>();
    const runRange = async ([a, b]: [bigint, bigint], together: number) => {
      const outcome = await getLogs(topics, a, b);
      if (outcome.ok) done.push({ from: a, events: outcome.value });
      else if (outcome.kind === "range" && outcome.tooLarge === true && together > 1) {
        // Answers sent together were too large for one response: fewer ranges at once, this one again as it was.
        const fewer = Math.max(1, Math.floor(together / 2));
        if (fewer < logsInFlight) {
          logsInFlight = fewer;
          log("rpc_batch_shrunk", { op: "eth_getLogs", inFlight: fewer });
        }
        pending.push([a, b]);
      } else if (outcome.kind === "range" && b > a) {
        const width = suggestedWidth(outcome.text, a, b) ?? (b - a + 1n) / 2n;
        span = span === null || width < span ? width : span;
        log("log_range_split", { from: a.toString(), to: b.toString(), width: width.toString() });
        pending.push(...splitRange(a, b, width));
      } else failure ??= failed(outcome);
    };
    while ((pending.length > 0 || inFlight.size > 0) && failure === undefined) {
      while (pending.length > 0 && inFlight.size < logsInFlight) {
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
    return { ok: true, value: done.flatMap((d) => d.events) };
  }

  async function attestedUids(query: AttestedQuery): Promise<IndexRead<AttestedLog[]>> {
    const from = query.fromBlock ?? options.startBlock;
    if (query.recipients.length === 0 || query.schemaUids.length === 0 || from > query.toBlock) return { ok: true, value: [] };
    const topics = [
      ATTESTED_TOPIC,
      query.recipients.map((r) => `0x${r.slice(2).toLowerCase().padStart(64, "0")}`),
      null,
      query.schemaUids.map((s) => s.toLowerCase()),
    ];
    const scanned = await scanLogs(topics, from, query.toBlock);
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

  async function block(blockNumber: bigint): Promise<IndexRead<IndexBlock | null>> {
    const outcome = await attempt("eth_getBlockByNumber", () =>
      client.request({ method: "eth_getBlockByNumber", params: [toHex(blockNumber), false] })
    );
    if (!outcome.ok) return failed(outcome);
    const found = outcome.value as { hash?: string | null; timestamp?: string | null } | null;
    if (!found?.hash) return { ok: true, value: null };
    return { ok: true, value: { blockNumber, blockHash: found.hash.toLowerCase() as HexString, timestamp: BigInt(found.timestamp ?? "0x0") } };
  }

  async function blockHash(blockNumber: bigint): Promise<IndexRead<HexString | null>> {
    const read = await block(blockNumber);
    return read.ok ? { ok: true, value: read.value?.blockHash ?? null } : read;
  }

  async function events(from: bigint, to: bigint): Promise<IndexRead<{ events: EasEvent[]; toHash: HexString; toTimestamp: bigint }>> {
    // Issued together, so the block rides in the first range's batch.
    const [scanned, last] = await Promise.all([scanLogs([[ATTESTED_TOPIC, REVOKED_TOPIC]], from, to), block(to)]);
    if (!scanned.ok) return scanned;
    if (!last.ok) return last;
    if (last.value === null) return { ok: false, reason: "inconsistent" };
    return { ok: true, value: { events: scanned.value, toHash: last.value.blockHash, toTimestamp: last.value.timestamp } };
  }

  /**
   * Reads attestations with one batch-reader call (`viaOverride`) or one deployless multicall,
   * halving the batch when its return data or gas is too large for one call.
   */
  async function readChunk(uids: readonly HexString[], block: bigint, viaOverride: boolean): Promise<RawAttestation[]> {
    if (uids.length === 1) {
      return [await client.readContract({ address: eas, abi: EAS_ABI, functionName: "getAttestation", args: [uids[0]!], blockNumber: block })];
    }
    try {
      if (viaOverride) return await readThroughBatchReader(uids, block);
      return await client.multicall({
        contracts: uids.map((uid) => ({ address: eas, abi: EAS_ABI, functionName: "getAttestation", args: [uid] }) as const),
        allowFailure: false,
        deployless: true,
        batchSize: 0,
        blockNumber: block,
      });
    } catch (error) {
      if (!isReturnSizeLimit(error) && !(viaOverride && isOutOfGas(error))) throw error;
      const half = Math.ceil(uids.length / 2);
      const parts = await Promise.all([readChunk(uids.slice(0, half), block, viaOverride), readChunk(uids.slice(half), block, viaOverride)]);
      return parts.flat();
    }
  }

  async function readThroughBatchReader(uids: readonly HexString[], block: bigint): Promise<RawAttestation[]> {
    const { data } = await client.call({
      to: BATCH_READER_ADDRESS,
      data: concat([pad(eas), pad(GET_ATTESTATION_SELECTOR, { dir: "right" }), ...uids]),
      blockNumber: block,
      stateOverride: [{ address: BATCH_READER_ADDRESS, code: BATCH_READER_CODE }],
    });
    // A node that ignores the override runs our call against an empty account: success, no data.
    if (data === undefined || data === "0x") throw new OverrideIgnoredError();
    return splitBatchOutput(data, uids.length).map((result) =>
      decodeFunctionResult({ abi: EAS_ABI, functionName: "getAttestation", data: result })
    );
  }

  /**
   * Every uid, in batches sized for the read's kind, sent in waves of as many calls as one response holds (one HTTP
   * round trip each; all at once when they fit). A too-large response halves the wave (remembered), and a single
   * call's too-large response halves its batch.
   */
  async function readInWaves(uids: readonly HexString[], block: bigint, through: boolean): Promise<RawAttestation[]> {
    const parts = chunks(uids, batchSize(through));
    const out: RawAttestation[] = [];
    for (let i = 0; i < parts.length;) {
      const wave = parts.slice(i, i + wavesOf(through));
      try {
        const read = await Promise.all(wave.map((chunk) => readChunk(chunk, block, through)));
        for (const part of read) out.push(...part);
        i += wave.length;
      } catch (error) {
        if (!isResponseTooLarge(error)) throw error;
        if (wave.length > 1) {
          callsPerRequest = Math.max(1, Math.floor(wave.length / 2));
          log("rpc_batch_shrunk", { op: "getAttestation", calls: callsPerRequest });
        } else if (wave[0]!.length > 1) {
          const chunk = wave[0]!;
          const half = Math.ceil(chunk.length / 2);
          parts.splice(i, 1, chunk.slice(0, half), chunk.slice(half));
          log("rpc_batch_shrunk", { op: "getAttestation", uids: half });
        } else throw error;
      }
    }
    return out;
  }

  /** How many attestation-read calls go in one HTTP request. */
  function wavesOf(through: boolean): number {
    const perCall = 2 * Math.min(through ? OVERRIDE_RETURN_BUDGET : RETURN_BUDGET, responseBudget) + CALL_OVERHEAD_BYTES;
    callsPerRequest ??= Math.max(1, Math.floor((maxResponseBytes * RESPONSE_SHARE) / perCall));
    return callsPerRequest;
  }

  /** Every uid, in batches sized for the read's kind and waves that fit one response. */
  async function readAll(uids: readonly HexString[], block: bigint): Promise<RawAttestation[]> {
    const viaOverride = overrides;
    const run = (through: boolean) => readInWaves(uids, block, through);
    try {
      return await run(viaOverride);
    } catch (error) {
      // The node refused or ignored the state override: if a deployless read works, this node is read
      // deployless from now on. Anything else is left to the retries.
      if (!viaOverride || !isOverrideRefusal(error)) throw error;
      const read = await run(false);
      if (overrides) log("state_override_unsupported", { error: (nodeText(error) || String(error)).slice(0, 300) });
      overrides = false;
      return read;
    }
  }

  function batchSize(viaOverride: boolean): number {
    const budget = Math.min(viaOverride ? OVERRIDE_RETURN_BUDGET : RETURN_BUDGET, responseBudget);
    return Math.max(1, Math.min(multicallSize, Math.floor(budget / bytesPerAttestation)));
  }

  async function attestations(uids: readonly HexString[], block: bigint): Promise<IndexRead<IndexedAttestation[]>> {
    if (uids.length === 0) return { ok: true, value: [] };
    // A uid from a log up to `block` that reads back empty at `block` means a lagging node behind a
    // load balancer: retried, then a failure, never an empty answer.
    for (let n = 0; ; n++) {
      const outcome = await attempt("getAttestation", () => readAll(uids, block));
      if (!outcome.ok) return failed(outcome);
      const read = outcome.value;
      const returned = read.reduce((sum, a) => sum + RESULT_OVERHEAD + Math.ceil((a.data.length - 2) / 64) * 32, 0);
      // Never below the typical size: one artifact's tiny records must not overfill the next one's batches.
      bytesPerAttestation = Math.max(TYPICAL_RESULT_BYTES, Math.ceil(returned / read.length));
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
      if (n >= retries) {
        log("rpc_error", { op: "getAttestation", kind: "inconsistent", block: block.toString() });
        return { ok: false, reason: "inconsistent" };
      }
      await Bun.sleep(retryDelayMs * 2 ** n);
    }
  }

  return {
    chainId: options.chainId,
    easAddress: eas,
    latestBlock,
    schemaRecords,
    attestedUids,
    attestations,
    head: latestBlock,
    blockHash,
    block,
    events,
  };
}

type RawLog = { topics: string[]; data: string; blockNumber?: string | null; logIndex?: string | null; transactionHash?: string | null; removed?: boolean };
type RawAttestation = EasAttestation;

/** Return data of one getAttestation inside aggregate3 besides its `data`: offsets, lengths, ten fields. */
const RESULT_OVERHEAD = 512;
/**
 * Return data one deployless call may carry. It comes back as the code the wrapper's constructor
 * "deploys", so nodes cap it at the contract size limit (24,576 bytes, EIP-170); this leaves room.
 */
const RETURN_BUDGET = 22_000;
/**
 * Return data one batch-reader call may carry. Not capped by the node as such; the limit is gas: each
 * 32 bytes read is a cold SLOAD (2,100 gas), so 128 KB is about 8.4M gas, well inside the usual
 * `eth_call` gas caps (Anvil: the 30M block gas limit; geth: 50M).
 */
const OVERRIDE_RETURN_BUDGET = 128_000;
/** viem's default limit on an HTTP response body. */
const DEFAULT_MAX_RESPONSE_BYTES = 10_485_760;
/** The share of the response limit reads plan to fill (the rest: JSON framing, calls that ride in the same batch). */
const RESPONSE_SHARE = 0.75;
/** A JSON-RPC answer's framing besides its result. */
const CALL_OVERHEAD_BYTES = 256;

/** A policy-schema attestation (a certification with twenty fields is about 1.7 KB) with room to spare. */
const TYPICAL_RESULT_BYTES = 2_048;

/**
 * Where the batch reader's code is installed for the duration of one `eth_call` (an address nothing
 * is deployed at; overriding code that did exist would only affect our own call).
 */
const BATCH_READER_ADDRESS = "0x00000000000000000000000000000000a77e5ead" as const;
const GET_ATTESTATION_SELECTOR = encodeFunctionData({ abi: EAS_ABI, functionName: "getAttestation", args: [ZERO_UID as Hex] }).slice(0, 10) as Hex;

/**
 * The batch reader: EVM runtime code, hand-assembled, 78 bytes. Calldata: word 0 the target contract,
 * word 1 a 4-byte selector (left-aligned), then one 32-byte argument per call. For each argument it
 * STATICCALLs `selector ‖ argument` on the target with all gas left and appends `length ‖ returndata`
 * (length as a 32-byte word) to its output, from memory 0x40 on; a failed call reverts the whole read.
 *
 * ```
 * 00 PUSH1 40                                  out = 0x40 (output end)
 * 02 PUSH1 40                                  i = 0x40 (calldata offset of the next argument)
 * 04 JUMPDEST                                  loop:
 * 05 CALLDATASIZE DUP2 LT ISZERO PUSH1 45 JUMPI  if !(i < calldatasize) goto end
 * 0c PUSH1 20 CALLDATALOAD PUSH1 00 MSTORE      mem[0..32] = selector word
 * 12 PUSH1 20 DUP2 PUSH1 04 CALLDATACOPY        mem[4..36] = calldata[i..i+32]
 * 18 PUSH1 00 PUSH1 00 PUSH1 24 PUSH1 00        retSize, retOffset, argsSize 36, argsOffset 0
 * 20 PUSH1 00 CALLDATALOAD GAS STATICCALL       ok = staticcall(gas, target, 0, 36, 0, 0)
 * 25 PUSH1 2c JUMPI PUSH1 00 DUP1 REVERT        if !ok revert(0, 0)
 * 2c JUMPDEST                                  cont:
 * 2d RETURNDATASIZE DUP3 MSTORE                 mem[out] = len
 * 30 RETURNDATASIZE PUSH1 00 DUP4 PUSH1 20 ADD RETURNDATACOPY   mem[out+32..] = returndata
 * 38 SWAP1 RETURNDATASIZE PUSH1 20 ADD ADD SWAP1                out += 32 + len
 * 3f PUSH1 20 ADD PUSH1 04 JUMP                 i += 32; goto loop
 * 45 JUMPDEST POP PUSH1 40 SWAP1 SUB PUSH1 40 RETURN            end: return mem[0x40..out]
 * ```
 */
export const BATCH_READER_CODE: Hex =
  "0x604060405b3681101560455760203560005260208160043760006000602460006000355afa602c57600080fd5b3d82523d6000836020013e903d60200101906020016004565b50604090036040f3";

/**
 * Whether a response was too large to read: over the transport's limit (viem's `ResponseBodyTooLargeError`), HTTP
 * 413, or a provider's refusal for its size.
 */
export function isResponseTooLarge(error: unknown): boolean {
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    if (e instanceof ResponseBodyTooLargeError) return true;
    if (e instanceof HttpRequestError && e.status === 413) return true;
  }
  return isTooLargeText(describe(error));
}

/** A provider's or the transport's words for a response too large to send or read. */
function isTooLargeText(text: string): boolean {
  return /exceeded the size limit|response (body )?(size|too large|is too large)|payload too large|status: 413|responsebodytoolarge/i.test(text);
}

/** Whether a deployless call failed because its return data exceeded the contract size limit. */
function isReturnSizeLimit(error: unknown): boolean {
  return /contract ?size ?limit|max(imum)? code size|code size (limit|exceeded)|contract code size/i.test(describe(error));
}

/** Splits the batch reader's output into the `count` return data it holds; throws on anything else. */
export function splitBatchOutput(output: Hex, count: number): Hex[] {
  const out: Hex[] = [];
  let at = 2;
  while (at < output.length) {
    const length = Number.parseInt(output.slice(at, at + 64), 16);
    if (!Number.isSafeInteger(length) || at + 64 + length * 2 > output.length) throw new Error("Malformed batch reader output");
    out.push(`0x${output.slice(at + 64, at + 64 + length * 2)}`);
    at += 64 + length * 2;
  }
  if (out.length !== count) throw new Error("Malformed batch reader output");
  return out;
}

/** Whether a call ran out of gas; inside the batch reader a starved STATICCALL shows as a bare revert. */
function isOutOfGas(error: unknown): boolean {
  return /out ?of ?gas|gas required exceeds|revert/i.test(nodeText(error));
}

/** The batch reader's call came back empty: the node ignored the state override. */
class OverrideIgnoredError extends Error {
  constructor() {
    super("The node ignored the eth_call state override");
  }
}

/**
 * Whether the node refused the state-override parameter (invalid params, unknown method or field,
 * "too many arguments") or ignored it, rather than the request failing on the way or for a reason
 * a retry may cure.
 */
function isOverrideRefusal(error: unknown): boolean {
  const codes: unknown[] = [];
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    if (e instanceof OverrideIgnoredError) return true;
    if (e instanceof HttpRequestError || e instanceof TimeoutError) return false;
    codes.push((e as { code?: unknown }).code);
  }
  if (codes.some((code) => code === -32600 || code === -32601 || code === -32602)) return true;
  return /override|argument|invalid param|unknown field|not supported|unsupported/i.test(nodeText(error));
}

/** What the node itself said (viem's `details`), without viem's own text (which names the call's arguments). */
function nodeText(error: unknown): string {
  const texts: string[] = [];
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    const details = (e as { details?: unknown }).details;
    if (typeof details === "string") texts.push(details);
  }
  return texts.join(" | ");
}

/** The messages and details of an error and its causes, for matching and logs. */
function describe(error: unknown): string {
  let text = "";
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    text += ` ${e.message} ${String((e as { details?: unknown }).details ?? "")}`;
  }
  return text;
}

const toHex = (n: bigint) => `0x${n.toString(16)}` as Hex;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Splits `[from, to]` into consecutive ranges of at most `width` blocks (`null`: one range). */
export function splitRange(from: bigint, to: bigint, width: bigint | null): [bigint, bigint][] {
  if (width === null || width <= 0n) return [[from, to]];
  const out: [bigint, bigint][] = [];
  for (let a = from; a <= to; a += width) out.push([a, a + width - 1n < to ? a + width - 1n : to]);
  return out;
}

/**
 * Texts providers use to refuse a log range or a result size (Alchemy, Infura, QuickNode, Ankr,
 * BlockPI, Chainstack, public Base/OP nodes, geth/erigon/reth). Matched lowercase.
 */
const RANGE_REFUSALS = [
  /block range/,
  /range (is )?too (large|wide|big)/,
  /too (many|large) (blocks|logs|results)/,
  /query returned more than/,
  /response size (exceeded|is larger|should not)/,
  /log response size/,
  /exceed(s|ed)? (the )?max(imum)? (block )?range/,
  /max(imum)? (block )?range/,
  /limited to (a )?[\d,]+/,
  /range limit/,
  /results? (limit|exceed)/,
  /more than [\d,]+ (results|logs|blocks)/,
  /query timeout exceeded/,
  /invalid block range/,
];

/** What kind of failure an RPC error is; `ranged` calls may be refused for their range. */
export function classify(error: unknown, ranged: boolean): { kind: "range" | "timeout" | "fatal" | "transient"; text: string; tooLarge?: true } {
  const texts: string[] = [];
  const codes: number[] = [];
  let status: number | undefined;
  let timeout = false;
  let seen = error;
  for (let depth = 0; depth < 8 && seen instanceof Error; depth++) {
    const e = seen as Error & { details?: unknown; shortMessage?: unknown; code?: unknown; status?: unknown };
    if (typeof e.details === "string") texts.push(e.details);
    if (typeof e.shortMessage === "string") texts.push(e.shortMessage);
    if (typeof e.code === "number") codes.push(e.code);
    if (e instanceof HttpRequestError && typeof e.status === "number") status = e.status;
    if (e instanceof TimeoutError) timeout = true;
    seen = e.cause;
  }
  if (texts.length === 0 && error instanceof Error) texts.push(error.message);
  const text = texts.join(" | ");
  const lower = text.toLowerCase();
  if (timeout) return { kind: "timeout", text };
  const tooLarge = status === 413 || isResponseTooLarge(error);
  // A too-large answer is marked: the scan first sends fewer ranges together, then splits (issue 43).
  if (ranged && (tooLarge || RANGE_REFUSALS.some((re) => re.test(lower)))) return { kind: "range", text, ...(tooLarge ? { tooLarge: true } : {}) };
  // A revert or an unknown method will not change on retry.
  if (codes.includes(3) || codes.includes(-32601) || /execution reverted|revert/.test(lower)) return { kind: "fatal", text };
  return { kind: "transient", text };
}

/** The width of the range a provider suggests (`[0x.., 0x..]`, Infura/Alchemy style), when it starts at `from`. */
export function suggestedWidth(text: string, from: bigint, to: bigint): bigint | undefined {
  const match = /\[\s*(0x[0-9a-fA-F]+)\s*,\s*(0x[0-9a-fA-F]+)\s*\]/.exec(text);
  if (!match) return undefined;
  const a = BigInt(match[1]!);
  const b = BigInt(match[2]!);
  if (a !== from || b < a || b >= to) return undefined;
  return b - a + 1n;
}
