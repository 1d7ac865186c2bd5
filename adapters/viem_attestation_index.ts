import { createPublicClient, type Hex, http, HttpRequestError, parseAbi, type PublicClient, TimeoutError } from "viem";
import type {
  AttestationIndex,
  AttestedLog,
  AttestedQuery,
  IndexedAttestation,
  IndexFailureReason,
  IndexRead,
  SchemaRecord,
} from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { ATTESTED_TOPIC, EAS_ABI, type EasAttestation } from "./eas_abi.ts";

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
  /** Per HTTP request; default 8 s. */
  readonly timeoutMs?: number | undefined;
  /** Further attempts after a transient failure (timeout, 5xx, 429, connection error); default 2. */
  readonly retries?: number | undefined;
  /** First retry delay, doubled each time; default 150 ms. */
  readonly retryDelayMs?: number | undefined;
  /** The widest log range asked for at once; default: no limit until the provider refuses one. */
  readonly maxBlockRange?: bigint | undefined;
  /** Log ranges in flight at once; default 4. */
  readonly logConcurrency?: number | undefined;
  /** At most this many attestation reads per multicall `eth_call`; default: as many as fit the return-size budget. */
  readonly multicallSize?: number | undefined;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
};

type Outcome<T> = { ok: true; value: T } | { ok: false; kind: "range" | "timeout" | "fatal" | "transient"; text: string };

/**
 * The attestation index on a viem HTTP client. Every `eth_call` carries the pinned `blockNumber`.
 *
 * Round trips: the transport batches JSON-RPC (`batch`), so the reads one step issues together
 * travel in one HTTP request. Attestations and schema records are read through Multicall3's
 * `aggregate3` run *deployless* (its bytecode executed inside `eth_call`, viem `deployless: true`):
 * the devnet has no Multicall3 deployed and deployless needs none, so N reads cost a few JSON-RPC
 * calls instead of N. JSON-RPC batching alone would save round trips, but providers still bill and
 * rate-limit every call inside a batch. The price of deployless: its return data is capped at the
 * contract size limit (24,576 bytes), so batches are sized from the attestation size seen last time,
 * and a batch that still overflows is halved (down to a plain `eth_call` for one huge attestation).
 *
 * Logs: one `eth_getLogs` per block range, topic1 = the OR-list of recipients, topic3 = the OR-list
 * of schema UIDs. A range the provider refuses ("block range too large", "query returned more
 * than 10000 results", ...) is split (at the provider's suggested range when it names one, else in
 * halves) and the narrower width is remembered for later requests.
 *
 * Retries: transient failures are retried a bounded number of times with exponential backoff;
 * viem's own retries are off so range refusals are not retried blindly. Library errors stop here.
 */
export function createViemAttestationIndex(options: ViemAttestationIndexOptions): AttestationIndex {
  const log = options.log ?? (() => {});
  const retries = options.retries ?? 2;
  const retryDelayMs = options.retryDelayMs ?? 150;
  const concurrency = Math.max(1, options.logConcurrency ?? 4);
  const multicallSize = Math.max(1, options.multicallSize ?? Number.MAX_SAFE_INTEGER);
  /** Learned size of one attestation in aggregate3 return data, to size the next batches. */
  let bytesPerAttestation = TYPICAL_RESULT_BYTES;
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { wait: 0, batchSize: 100 },
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

  async function getLogs(query: AttestedQuery, from: bigint, to: bigint): Promise<Outcome<AttestedLog[]>> {
    const topics = [
      ATTESTED_TOPIC,
      query.recipients.map((r) => `0x${r.slice(2).toLowerCase().padStart(64, "0")}`),
      null,
      query.schemaUids.map((s) => s.toLowerCase()),
    ];
    const outcome = await attempt("eth_getLogs", () =>
      client.request({
        method: "eth_getLogs",
        params: [{ address: eas, topics: topics as never, fromBlock: toHex(from), toBlock: toHex(to) }],
      }), true);
    if (!outcome.ok) return outcome;
    const logs: AttestedLog[] = [];
    for (const raw of outcome.value as RawLog[]) {
      if (raw.removed) continue;
      const [, recipient, attester, schema] = raw.topics;
      if (recipient === undefined || attester === undefined || schema === undefined || !/^0x[0-9a-fA-F]{64}$/.test(raw.data)) {
        return { ok: false, kind: "fatal", text: "Malformed Attested log" };
      }
      logs.push({
        uid: raw.data.toLowerCase() as HexString,
        recipient: `0x${recipient.slice(-40).toLowerCase()}` as HexString,
        attester: `0x${attester.slice(-40).toLowerCase()}` as HexString,
        schemaUid: schema.toLowerCase() as HexString,
        blockNumber: BigInt(raw.blockNumber ?? "0x0"),
      });
    }
    return { ok: true, value: logs };
  }

  async function attestedUids(query: AttestedQuery): Promise<IndexRead<AttestedLog[]>> {
    const from = query.fromBlock ?? options.startBlock;
    if (query.recipients.length === 0 || query.schemaUids.length === 0 || from > query.toBlock) return { ok: true, value: [] };
    const pending = splitRange(from, query.toBlock, span);
    const done: { from: bigint; logs: AttestedLog[] }[] = [];
    let failure: { ok: false; reason: IndexFailureReason } | undefined;
    const inFlight = new Set<Promise<void>>();
    const runRange = async ([a, b]: [bigint, bigint]) => {
      const outcome = await getLogs(query, a, b);
      if (outcome.ok) done.push({ from: a, logs: outcome.value });
      else if (outcome.kind === "range" && b > a) {
        const width = suggestedWidth(outcome.text, a, b) ?? (b - a + 1n) / 2n;
        span = span === null || width < span ? width : span;
        log("log_range_split", { from: a.toString(), to: b.toString(), width: width.toString() });
        pending.push(...splitRange(a, b, width));
      } else failure ??= failed(outcome);
    };
    while ((pending.length > 0 || inFlight.size > 0) && failure === undefined) {
      while (pending.length > 0 && inFlight.size < concurrency) {
        const task: Promise<void> = runRange(pending.shift()!).finally(() => inFlight.delete(task));
        inFlight.add(task);
      }
      await Promise.race(inFlight);
    }
    if (failure !== undefined) return failure;
    done.sort((x, y) => (x.from < y.from ? -1 : 1));
    return { ok: true, value: done.flatMap((d) => d.logs) };
  }

  /** Reads attestations with one deployless multicall, halving the batch when its return data is too large. */
  async function readChunk(uids: readonly HexString[], block: bigint): Promise<RawAttestation[]> {
    if (uids.length === 1) {
      return [await client.readContract({ address: eas, abi: EAS_ABI, functionName: "getAttestation", args: [uids[0]!], blockNumber: block })];
    }
    try {
      return await client.multicall({
        contracts: uids.map((uid) => ({ address: eas, abi: EAS_ABI, functionName: "getAttestation", args: [uid] }) as const),
        allowFailure: false,
        deployless: true,
        batchSize: 0,
        blockNumber: block,
      });
    } catch (error) {
      if (!isReturnSizeLimit(error)) throw error;
      const half = Math.ceil(uids.length / 2);
      const parts = await Promise.all([readChunk(uids.slice(0, half), block), readChunk(uids.slice(half), block)]);
      return parts.flat();
    }
  }

  async function attestations(uids: readonly HexString[], block: bigint): Promise<IndexRead<IndexedAttestation[]>> {
    if (uids.length === 0) return { ok: true, value: [] };
    const size = Math.max(1, Math.min(multicallSize, Math.floor(RETURN_BUDGET / bytesPerAttestation)));
    // A uid from a log up to `block` that reads back empty at `block` means a lagging node behind a
    // load balancer: retried, then a failure, never an empty answer.
    for (let n = 0; ; n++) {
      const outcome = await attempt("getAttestation", () =>
        Promise.all(chunks(uids, size).map((chunk) => readChunk(chunk, block))).then((parts) => parts.flat())
      );
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

  return { chainId: options.chainId, easAddress: eas, latestBlock, schemaRecords, attestedUids, attestations };
}

type RawLog = { topics: string[]; data: string; blockNumber?: string | null; removed?: boolean };
type RawAttestation = EasAttestation;

/** Return data of one getAttestation inside aggregate3 besides its `data`: offsets, lengths, ten fields. */
const RESULT_OVERHEAD = 512;
/**
 * Return data one deployless call may carry. It comes back as the code the wrapper's constructor
 * "deploys", so nodes cap it at the contract size limit (24,576 bytes, EIP-170); this leaves room.
 */
const RETURN_BUDGET = 22_000;
/** A policy-schema attestation (a certification with twenty fields is about 1.7 KB) with room to spare. */
const TYPICAL_RESULT_BYTES = 2_048;

/** Whether a deployless call failed because its return data exceeded the contract size limit. */
function isReturnSizeLimit(error: unknown): boolean {
  let text = "";
  for (let e = error, depth = 0; depth < 8 && e instanceof Error; depth++, e = e.cause) {
    text += ` ${e.message} ${String((e as { details?: unknown }).details ?? "")}`;
  }
  return /contract ?size ?limit|max(imum)? code size|code size (limit|exceeded)|contract code size/i.test(text);
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
export function classify(error: unknown, ranged: boolean): { kind: "range" | "timeout" | "fatal" | "transient"; text: string } {
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
  if (ranged && (status === 413 || RANGE_REFUSALS.some((re) => re.test(lower)))) return { kind: "range", text };
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
