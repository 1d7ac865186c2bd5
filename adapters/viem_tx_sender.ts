import { BaseError, type Hex, keccak256, type PublicClient, TimeoutError } from "viem";
import type { PrivateKeyAccount } from "viem/accounts";
import type { HexString } from "../ports/eas.ts";
import type { WalletNonces } from "../ports/storage.ts";
import { ATTESTED_TOPIC } from "./eas_abi.ts";

/** The outcome of sending one transaction and waiting for its receipt. */
export type SendOutcome =
  | { readonly ok: true; readonly txHash: HexString; readonly blockNumber: bigint; readonly logs: readonly ReceiptLog[] }
  | { readonly ok: false; readonly reason: "not-broadcast" }
  | { readonly ok: false; readonly reason: "reverted"; readonly txHash: HexString; readonly blockNumber: bigint }
  | { readonly ok: false; readonly reason: "unknown-outcome"; readonly txHash: HexString };

/** A log of a receipt, as the node returned it. */
export type ReceiptLog = { readonly address: string; readonly topics: readonly string[]; readonly data: string };

/** What to send. */
export type SendRequest = {
  readonly to: HexString;
  readonly data: HexString;
  readonly gas: bigint;
  /** Called with the hash after signing and before broadcast, so the caller can store it first. */
  readonly onSigned?: ((txHash: HexString) => Promise<void>) | undefined;
};

/** Sends transactions from one wallet; nonces are assigned in one place per wallet. */
export type TxSender = {
  readonly address: HexString;
  readonly send: (request: SendRequest) => Promise<SendOutcome>;
  /** Refreshes the fee cache if stale; call in the same tick as another read to share its batch. */
  readonly warmFees: () => Promise<unknown>;
};

const FEE_TTL_MS = 2_000;

type Log = (event: string, fields: Record<string, unknown>) => void;

/**
 * Builds a sender for one wallet: a lock around nonce assignment, signing and broadcast (so
 * concurrent sends never share or skip a nonce), receipts awaited outside the lock, and fee data
 * cached for two seconds. After a failed broadcast the next send re-reads the pending count.
 */
export function createTxSender(options: {
  client: PublicClient;
  account: PrivateKeyAccount;
  chainId: number;
  receiptTimeoutMs?: number | undefined;
  log?: Log | undefined;
  /** Shared nonce bookkeeping when several instances send from this wallet (PostgreSQL storage). */
  nonces?: WalletNonces | undefined;
}): TxSender {
  const { client, account } = options;
  const log = options.log ?? (() => {});
  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  let feeRequest: Promise<NonNullable<typeof fees>> | undefined;
  const refreshFees = (): Promise<NonNullable<typeof fees>> => {
    if (fees !== undefined && Date.now() - fees.at < FEE_TTL_MS) return Promise.resolve(fees);
    feeRequest ??= Promise.all([client.getGasPrice(), client.estimateMaxPriorityFeePerGas()])
      .then(([gasPrice, priority]) => {
        fees = { at: Date.now(), maxFeePerGas: gasPrice * 2n + priority, maxPriorityFeePerGas: priority };
        return fees;
      })
      .finally(() => (feeRequest = undefined));
    return feeRequest;
  };

  let nextNonce: number | undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(task: () => Promise<T>): Promise<T> => {
    const run = queue.then(task, task);
    queue = run.catch(() => undefined);
    return run;
  };

  return {
    address: account.address,
    warmFees: () => refreshFees().catch(() => undefined),
    async send(request) {
      let fee: NonNullable<typeof fees>;
      try {
        fee = await refreshFees();
      } catch (error) {
        log("rpc_error", { op: "fees", error: describe(error) });
        return { ok: false, reason: "not-broadcast" };
      }
      const signAndSend = async (nonce: number): Promise<{ txHash: Hex } | SendOutcome> => {
        const serialized = await account.signTransaction({
          chainId: options.chainId,
          type: "eip1559",
          to: request.to,
          data: request.data,
          gas: request.gas,
          nonce,
          maxFeePerGas: fee.maxFeePerGas,
          maxPriorityFeePerGas: fee.maxPriorityFeePerGas,
          value: 0n,
        });
        const txHash = keccak256(serialized);
        await request.onSigned?.(txHash);
        try {
          await client.request({ method: "eth_sendRawTransaction", params: [serialized] });
          return { txHash };
        } catch (error) {
          log("rpc_error", { op: "sendRawTransaction", nonce, error: describe(error) });
          if (error instanceof BaseError && error.walk((e) => e instanceof TimeoutError)) {
            return { ok: false, reason: "unknown-outcome", txHash };
          }
          return { ok: false, reason: "not-broadcast" };
        }
      };
      const pendingCount = async (): Promise<number | undefined> => {
        try {
          return await client.getTransactionCount({ address: account.address, blockTag: "pending" });
        } catch (error) {
          log("rpc_error", { op: "getTransactionCount", error: describe(error) });
          return undefined;
        }
      };

      const sent = await exclusive(async (): Promise<{ txHash: Hex } | SendOutcome> => {
        const shared = options.nonces;
        if (shared !== undefined) {
          // Several instances: the next nonce is the larger of what they recorded and what the node has.
          let outcome: { txHash: Hex } | SendOutcome = { ok: false, reason: "not-broadcast" };
          try {
            return await shared.withLock(options.chainId, account.address, async (storedNext) => {
              const pending = await pendingCount();
              if (pending === undefined) return { used: undefined, value: outcome };
              const nonce = Math.max(storedNext, pending);
              outcome = await signAndSend(nonce);
              return { used: "txHash" in outcome && !("ok" in outcome) ? nonce : undefined, value: outcome };
            });
          } catch (error) {
            // The database failed; if the transaction left, its outcome still stands (the node counts it).
            log("nonce_lock_error", { error: error instanceof Error ? error.message : String(error) });
            return outcome;
          }
        }
        if (nextNonce === undefined) {
          const pending = await pendingCount();
          if (pending === undefined) return { ok: false, reason: "not-broadcast" };
          nextNonce = pending;
        }
        const nonce = nextNonce;
        const outcome = await signAndSend(nonce);
        // After a failed broadcast the node may or may not hold this nonce: re-read the pending count next time.
        nextNonce = "ok" in outcome ? undefined : nonce + 1;
        return outcome;
      });
      if ("ok" in sent) return sent;
      return await awaitReceipt(client, sent.txHash, options.receiptTimeoutMs ?? 120_000, log);
    },
  };
}

async function awaitReceipt(client: PublicClient, txHash: Hex, timeoutMs: number, log: Log): Promise<SendOutcome> {
  const started = Date.now();
  // A devnet mines on receipt of the transaction, so the receipt is usually there at once or a few ms later;
  // a chain with real blocks costs a handful of extra polls before the delay reaches its 1 s cap.
  let delay = 5;
  for (;;) {
    try {
      const receipt = await client.request({ method: "eth_getTransactionReceipt", params: [txHash] });
      if (receipt) {
        const blockNumber = BigInt(receipt.blockNumber);
        if (receipt.status !== "0x1") return { ok: false, reason: "reverted", txHash, blockNumber };
        return { ok: true, txHash, blockNumber, logs: receipt.logs };
      }
    } catch (error) {
      log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
    }
    if (Date.now() - started > timeoutMs) return { ok: false, reason: "unknown-outcome", txHash };
    await Bun.sleep(delay);
    delay = Math.min(delay * 2, 1_000);
  }
}

/** The uid of the first EAS `Attested` log of a receipt, or null. */
export function attestedUid(logs: readonly ReceiptLog[], easAddress: string): HexString | null {
  const log = logs.find((l) => l.address.toLowerCase() === easAddress.toLowerCase() && l.topics[0] === ATTESTED_TOPIC);
  return log && log.data.length >= 66 ? (log.data.slice(0, 66) as HexString) : null;
}

/** A short, URL-free description of an error for logs. */
export function describe(error: unknown): string {
  if (error instanceof BaseError) return error.shortMessage;
  return error instanceof Error ? error.message : String(error);
}
