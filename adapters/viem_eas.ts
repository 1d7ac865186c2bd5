import {
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  encodeFunctionData,
  type Hex,
  http,
  InsufficientFundsError,
  keccak256,
  type PublicClient,
  TimeoutError,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type {
  DelegatedAttestCall,
  DelegateSubmitter,
  EasReader,
  HexString,
  NonceRead,
  Simulation,
  Submission,
  SubmitOptions,
} from "../ports/eas.ts";
import { ATTESTED_TOPIC, EAS_ABI } from "./eas_abi.ts";

/** Options of {@link createViemEas}. */
export type ViemEasOptions = {
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly easAddress: HexString;
  readonly delegatePrivateKey?: HexString | undefined;
  /** Replaces `fetch` for JSON-RPC, e.g. to count round trips in tests. */
  readonly fetchFn?: typeof fetch | undefined;
  readonly rpcTimeoutMs?: number | undefined;
  /** How long to wait for a receipt before answering "unknown outcome". */
  readonly receiptTimeoutMs?: number | undefined;
  readonly log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
};

/** The EAS adapters built on one viem client. */
export type ViemEas = {
  readonly reader: EasReader;
  readonly delegate: DelegateSubmitter | undefined;
  readonly client: PublicClient;
  /** True when the RPC answers with the configured chain id. */
  readonly ping: () => Promise<boolean>;
};

const FEE_TTL_MS = 2_000;

/**
 * Builds the EAS reader and the delegate wallet on a viem HTTP client with JSON-RPC batching, so
 * that the reads a request makes in one tick share one round trip. The delegate's transaction
 * nonces are assigned in one place (a lock around sign-and-send), receipts are awaited outside it.
 */
export function createViemEas(options: ViemEasOptions): ViemEas {
  const log = options.log ?? (() => {});
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { wait: 0 },
      fetchFn: options.fetchFn,
      retryCount: 1,
      timeout: options.rpcTimeoutMs ?? 10_000,
    }),
    pollingInterval: 50,
  }) as PublicClient;
  const easAddress = options.easAddress;

  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  let feeRequest: Promise<typeof fees> | undefined;
  const refreshFees = (): Promise<typeof fees> => {
    if (fees !== undefined && Date.now() - fees.at < FEE_TTL_MS) return Promise.resolve(fees);
    feeRequest ??= Promise.all([client.getGasPrice(), client.estimateMaxPriorityFeePerGas()])
      .then(([gasPrice, priority]) => {
        fees = { at: Date.now(), maxFeePerGas: gasPrice * 2n + priority, maxPriorityFeePerGas: priority };
        return fees;
      })
      .finally(() => (feeRequest = undefined));
    return feeRequest;
  };

  const reader: EasReader = {
    chainId: options.chainId,
    easAddress,
    async getAttesterNonce(attester): Promise<NonceRead> {
      // Issued in the same tick as the nonce read, so the fee refresh rides in the same batch.
      const feeWarmup = options.delegatePrivateKey ? refreshFees().catch(() => undefined) : undefined;
      try {
        const nonce = await client.readContract({
          address: easAddress,
          abi: EAS_ABI,
          functionName: "getNonce",
          args: [attester],
        });
        await feeWarmup;
        return { ok: true, nonce };
      } catch (error) {
        log("rpc_error", { op: "getNonce", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
  };

  const ping = async () => {
    try {
      return (await client.getChainId()) === options.chainId;
    } catch {
      return false;
    }
  };

  if (options.delegatePrivateKey === undefined) return { reader, delegate: undefined, client, ping };

  const account = privateKeyToAccount(options.delegatePrivateKey);
  let nextNonce: number | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  const encode = (call: DelegatedAttestCall) =>
    encodeFunctionData({
      abi: EAS_ABI,
      functionName: "attestByDelegation",
      args: [{
        schema: call.schema,
        data: call.data,
        signature: call.signature,
        attester: call.attester,
        deadline: call.deadline,
      }],
    });

  const delegate: DelegateSubmitter = {
    address: account.address,
    async simulate(call): Promise<Simulation> {
      try {
        const gas = await client.estimateGas({ account: account.address, to: easAddress, data: encode(call) });
        // Headroom for state that changes between the estimate and inclusion.
        return { ok: true, gas: (gas * 12n) / 10n };
      } catch (error) {
        return classifySimulationError(error, log);
      }
    },
    async submit(call, submitOptions: SubmitOptions): Promise<Submission> {
      const data = encode(call);
      let fee: NonNullable<typeof fees>;
      try {
        fee = (await refreshFees())!;
      } catch (error) {
        log("rpc_error", { op: "fees", error: describe(error) });
        return { ok: false, reason: "not-broadcast" };
      }
      const sent = await exclusive(async (): Promise<{ txHash: Hex } | Submission> => {
        try {
          nextNonce ??= await client.getTransactionCount({ address: account.address, blockTag: "pending" });
        } catch (error) {
          log("rpc_error", { op: "getTransactionCount", error: describe(error) });
          return { ok: false, reason: "not-broadcast" };
        }
        const nonce = nextNonce;
        const serialized = await account.signTransaction({
          chainId: options.chainId,
          type: "eip1559",
          to: easAddress,
          data,
          gas: submitOptions.gas,
          nonce,
          maxFeePerGas: fee.maxFeePerGas,
          maxPriorityFeePerGas: fee.maxPriorityFeePerGas,
          value: 0n,
        });
        const txHash = keccak256(serialized);
        await submitOptions.onSigned(txHash);
        try {
          await client.request({ method: "eth_sendRawTransaction", params: [serialized] });
          nextNonce = nonce + 1;
          return { txHash };
        } catch (error) {
          log("rpc_error", { op: "sendRawTransaction", nonce, error: describe(error) });
          // Re-read the pending count next time: the node may or may not hold this nonce now.
          nextNonce = undefined;
          if (error instanceof BaseError && error.walk((e) => e instanceof TimeoutError)) {
            return { ok: false, reason: "unknown-outcome", txHash };
          }
          return { ok: false, reason: "not-broadcast" };
        }
      });
      if (!("txHash" in sent) || "ok" in sent) return sent as Submission;
      return await awaitReceipt(client, sent.txHash, easAddress, options.receiptTimeoutMs ?? 120_000, log);
    },
  };
  return { reader, delegate, client, ping };
}

async function awaitReceipt(
  client: PublicClient,
  txHash: Hex,
  easAddress: HexString,
  timeoutMs: number,
  log: (event: string, fields: Record<string, unknown>) => void,
): Promise<Submission> {
  const started = Date.now();
  let delay = 25;
  for (;;) {
    try {
      const receipt = await client.request({ method: "eth_getTransactionReceipt", params: [txHash] });
      if (receipt) {
        const blockNumber = BigInt(receipt.blockNumber);
        if (receipt.status !== "0x1") return { ok: false, reason: "reverted", txHash, blockNumber };
        const attested = receipt.logs.find((l) =>
          l.address.toLowerCase() === easAddress.toLowerCase() && l.topics[0] === ATTESTED_TOPIC
        );
        const uid = attested && attested.data.length >= 66 ? (attested.data.slice(0, 66) as HexString) : null;
        return { ok: true, txHash, blockNumber, uid };
      }
    } catch (error) {
      log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
    }
    if (Date.now() - started > timeoutMs) return { ok: false, reason: "unknown-outcome", txHash };
    await Bun.sleep(delay);
    delay = Math.min(delay * 2, 1_000);
  }
}

function classifySimulationError(
  error: unknown,
  log: (event: string, fields: Record<string, unknown>) => void,
): Simulation {
  if (error instanceof BaseError) {
    if (error.walk((e) => e instanceof InsufficientFundsError)) return { ok: false, reason: "insufficient-funds" };
    const revertData = findRevertData(error);
    if (revertData !== undefined) {
      const name = decodeEasError(revertData);
      return { ok: false, reason: "reverted", errorName: name };
    }
    const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
    if (reverted instanceof ContractFunctionRevertedError) {
      return { ok: false, reason: "reverted", errorName: reverted.data?.errorName ?? "reverted" };
    }
    if (/execution reverted|revert/i.test(error.details ?? "")) {
      return { ok: false, reason: "reverted", errorName: "reverted" };
    }
  }
  log("rpc_error", { op: "estimateGas", error: describe(error) });
  return { ok: false, reason: "rpc-error" };
}

function findRevertData(error: BaseError): Hex | undefined {
  let found: Hex | undefined;
  error.walk((e) => {
    const data = (e as { data?: unknown }).data;
    if (typeof data === "string" && /^0x[0-9a-fA-F]{8}/.test(data)) found = data as Hex;
    else if (typeof data === "object" && data !== null && typeof (data as { data?: unknown }).data === "string") {
      found = (data as { data: Hex }).data;
    }
    return false;
  });
  return found;
}

const EAS_ERROR_SELECTORS = new Map<string, string>();

function decodeEasError(data: Hex): string {
  if (EAS_ERROR_SELECTORS.size === 0) {
    for (const item of EAS_ABI) {
      if (item.type === "error") {
        EAS_ERROR_SELECTORS.set(keccak256(new TextEncoder().encode(`${item.name}()`)).slice(0, 10), item.name);
      }
    }
  }
  return EAS_ERROR_SELECTORS.get(data.slice(0, 10).toLowerCase()) ?? "reverted";
}

/** A short, URL-free description of an error for logs. */
function describe(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return error instanceof Error ? error.message : String(error);
}
