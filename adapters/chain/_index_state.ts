import { createPublicClient, type Hex, http, type PublicClient } from "viem";
import type { IndexFailureReason, IndexRead } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { DEFAULT_MAX_RESPONSE_BYTES, RESPONSE_SHARE, TYPICAL_RESULT_BYTES } from "./_batch_reader.ts";
import { classify, type RpcFailure } from "./_rpc_failures.ts";
import { checksumAddress } from "../../domain/address.ts";
import type { Keccak256 } from "../../ports/keccak.ts";
import type { ChecksumAddress } from "./_attestation_result.ts";

/** Options of `createViemAttestationIndex`. */
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
  /** keccak-256 for the checksums of the attestations' addresses (the service's in WebAssembly); absent: viem's. */
  readonly keccak?: Keccak256 | undefined;
};

export type Outcome<T> = { ok: true; value: T } | ({ ok: false } & RpcFailure);

/** One index's client and what it has learned of its provider (read and updated by the reads). */
export type IndexState = {
  readonly options: ViemAttestationIndexOptions;
  readonly client: PublicClient;
  readonly eas: HexString;
  readonly log: (event: string, fields: Record<string, unknown>) => void;
  /** An attestation's address as viem spells it (checksummed), with the options' keccak. */
  readonly checksum: ChecksumAddress;
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly multicallSize: number;
  readonly maxResponseBytes: number;
  /** Return data one call may carry so that its response (hex, twice the bytes) fits the limit with room. */
  readonly responseBudget: number;
  /** Learned size of one attestation in aggregate3 return data, to size the next batches. */
  bytesPerAttestation: number;
  /** Whether attestations are read through the state-overridden batch reader (else deployless). */
  overrides: boolean;
  /** Attestation-read `eth_call`s sent together (one HTTP request): as many as one response holds; halved on a too-large answer. */
  callsPerRequest: number | undefined;
  /** Log ranges in flight together; halved when their answers together were too large. */
  logsInFlight: number;
  /** The widest range the provider accepted lately; null = no limit known. */
  span: bigint | null;
  /** EAS's SchemaRegistry address is immutable. */
  registry: Promise<IndexRead<HexString>> | undefined;
};

/** The client and the starting figures of one index. */
export function createIndexState(options: ViemAttestationIndexOptions): IndexState {
  const maxResponseBytes = Math.max(16_384, options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES);
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { wait: 0, batchSize: 100 },
      maxResponseBodySize: maxResponseBytes,
      fetchFn: options.fetchFn,
      retryCount: 0,
      timeout: options.timeoutMs ?? 8_000,
    }),
  }) as PublicClient;
  return {
    options,
    client,
    eas: options.easAddress,
    log: options.log ?? (() => {}),
    checksum: (address) => checksumAddress(address, options.keccak?.hex),
    retries: options.retries ?? 2,
    retryDelayMs: options.retryDelayMs ?? 150,
    multicallSize: Math.max(1, options.multicallSize ?? Number.MAX_SAFE_INTEGER),
    maxResponseBytes,
    responseBudget: Math.floor((maxResponseBytes * RESPONSE_SHARE) / 2),
    bytesPerAttestation: TYPICAL_RESULT_BYTES,
    overrides: options.stateOverride ?? true,
    callsPerRequest: undefined,
    logsInFlight: Math.max(1, options.logConcurrency ?? 4),
    span: options.maxBlockRange ?? null,
    registry: undefined,
  };
}

/** Runs `run`, retrying transient failures with exponential backoff; a range refusal or a fatal error is not retried. */
export async function attempt<T>(state: IndexState, op: string, run: () => Promise<T>, ranged = false): Promise<Outcome<T>> {
  for (let n = 0; ; n++) {
    try {
      return { ok: true, value: await run() };
    } catch (error) {
      const failure = classify(error, ranged);
      if (failure.kind === "range" || failure.kind === "fatal" || n >= state.retries) {
        state.log("rpc_error", { op, kind: failure.kind, attempt: n + 1, error: failure.text.slice(0, 300) });
        return { ok: false, ...failure };
      }
      await Bun.sleep(state.retryDelayMs * 2 ** n);
    }
  }
}

/** The port's failure for an RPC failure. */
export const failed = (outcome: { kind: string }): { ok: false; reason: IndexFailureReason } => ({
  ok: false,
  reason: outcome.kind === "timeout" ? "timeout" : outcome.kind === "range" ? "range-too-large" : "rpc-error",
});

export const toHex = (n: bigint) => `0x${n.toString(16)}` as Hex;
