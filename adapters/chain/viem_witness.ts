import { BaseError, encodeFunctionData, numberToHex, parseTransaction, type PublicClient, RpcRequestError } from "viem";
import type { HexString, SignedTx, Simulation, Submission } from "../../ports/eas.ts";
import type { Rebroadcast } from "../../ports/submissions.ts";
import type { TxStatus, TxStatusReader, WitnessAttestCall, WitnessWriter } from "../../ports/witness.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { TYPICAL_ATTEST_GAS } from "./viem_eas.ts";
import { classifySimulationError } from "./_simulation_errors.ts";
import { multiAttestSignatures } from "./attest_calldata.ts";
import { attestedUid, attestedUids, describe, type ReceiptLog, submitAttestation, type TxSender } from "./viem_tx_sender.ts";
import { rawSendAnswer } from "./_tx_delivery.ts";

type Log = (event: string, fields: Record<string, unknown>) => void;

/**
 * The witness wallet: plain EAS `attest` from the service's own key, through the wallet's shared
 * transaction sender (so it never races the delegate for nonces when both are one key).
 */
export function createViemWitnessWriter(options: {
  client: PublicClient;
  sender: TxSender;
  easAddress: HexString;
  log?: Log | undefined;
}): WitnessWriter {
  const { client, sender, easAddress } = options;
  const log = options.log ?? (() => {});
  const encode = (call: WitnessAttestCall) =>
    encodeFunctionData({ abi: EAS_ABI, functionName: "attest", args: [{ schema: call.schema, data: call.data }] });
  return {
    address: sender.address,
    checkFunds: () => sender.checkFunds(TYPICAL_ATTEST_GAS),
    async simulate(call): Promise<Simulation> {
      try {
        const gas = await client.estimateGas({ account: sender.address, to: easAddress, data: encode(call) });
        return { ok: true, gas: (gas * 12n) / 10n };
      } catch (error) {
        return classifySimulationError(error, log);
      }
    },
    submit: (call, submitOptions): Promise<Submission> => submitAttestation(sender, easAddress, encode(call), submitOptions, "witness"),
  };
}

/**
 * Reads what the chain says about transactions the service signed, for reconciliation: the receipt;
 * without one, whether the node holds the transaction in a block (mined: the receipt is still to come, as from a
 * load-balanced provider whose backend answering receipts is behind), in its pool, or not at all, and whether its
 * sender's mined nonce has passed it. Only a transaction in no block whose nonce was passed is "replaced", and that
 * is read again after the nonce (the receipt, then the transaction), so one mined in between is never reported
 * replaced. With the stored transaction, a hash the node does not know is checked against the wallet's nonce too:
 * "not-found" then means its nonce is still free, and `rebroadcast` sends the stored bytes again through the
 * wallet's sender. `latestBlock`, `pendingBlock` and `nonceAt` read the blocks that prove a signature's deadline passed;
 * a failed read is undefined (it proves nothing).
 */
export function createViemTxStatusReader(options: {
  client: PublicClient;
  easAddress: HexString;
  log?: Log | undefined;
  /** The sender of a wallet the service holds, so a rebroadcast keeps its nonce bookkeeping right. */
  senderOf?: ((wallet: string) => TxSender | undefined) | undefined;
}): TxStatusReader {
  const log = options.log ?? (() => {});
  const { client } = options;
  const receiptStatus = async (txHash: HexString, known?: SignedTx): Promise<TxStatus | undefined> => {
    const receipt = await client.request({ method: "eth_getTransactionReceipt", params: [txHash] });
    if (!receipt) return undefined;
    const blockNumber = BigInt(receipt.blockNumber);
    if (receipt.status !== "0x1") return { status: "reverted", blockNumber };
    return { status: "success", blockNumber, uid: attestedUid(receipt.logs, options.easAddress), uidsBySignature: batchUids(receipt.logs, known) };
  };
  // A batch's items each name their own uid: the k-th signature of the calldata is the k-th `Attested` log.
  const batchUids = (logs: readonly ReceiptLog[], known: SignedTx | undefined) => {
    if (known === undefined) return undefined;
    let signatures: string[] | undefined;
    try {
      signatures = multiAttestSignatures(parseTransaction(known.raw).data ?? "0x");
    } catch {
      return undefined;
    }
    if (signatures === undefined) return undefined;
    const uids = attestedUids(logs, options.easAddress);
    if (uids.length !== signatures.length) return undefined;
    return new Map(signatures.map((signature, i) => [signature, uids[i]!]));
  };
  // A read whose failure is told as undefined (nothing is proved by it), logged.
  const read = async <T>(op: string, call: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await call();
    } catch (error) {
      log("rpc_error", { op, error: describe(error) });
      return undefined;
    }
  };
  const minedCount = async (wallet: string) =>
    BigInt(await client.request({ method: "eth_getTransactionCount", params: [wallet as HexString, "latest"] }));
  const byHash = (txHash: HexString) => client.request({ method: "eth_getTransactionByHash", params: [txHash] });
  // The node names the transaction's block but gives no receipt: mined, its outcome still to come.
  const included = (tx: { readonly blockNumber: string | null } | null): TxStatus | undefined =>
    tx?.blockNumber ? { status: "included", blockNumber: BigInt(tx.blockNumber) } : undefined;
  return {
    async status(txHash, known): Promise<TxStatus> {
      let op = "getTransactionReceipt";
      try {
        const mined = await receiptStatus(txHash, known);
        if (mined !== undefined) return mined;
        op = "getTransactionByHash";
        const tx = await byHash(txHash);
        const inBlock = included(tx);
        if (inBlock !== undefined) return inBlock;
        const wallet = tx?.from ?? known?.wallet;
        const nonce = tx ? BigInt(tx.nonce) : known === undefined ? undefined : BigInt(known.nonce);
        if (wallet === undefined || nonce === undefined) return { status: "not-found" };
        op = "getTransactionCount";
        if ((await minedCount(wallet)) <= nonce) return tx ? { status: "pending" } : { status: "not-found" };
        // The nonce is spent: by this transaction (mined since the first reads) or by another one. Replaced only when
        // the node still gives no receipt and holds the transaction in no block.
        op = "getTransactionReceipt";
        const late = await receiptStatus(txHash, known);
        if (late !== undefined) return late;
        op = "getTransactionByHash";
        return included(await byHash(txHash)) ?? { status: "replaced" };
      } catch (error) {
        log("rpc_error", { op, error: describe(error) });
        return { status: "rpc-error" };
      }
    },
    replacement: async (tx: SignedTx) => await options.senderOf?.(tx.wallet)?.replacement(tx),
    // Each answer is parsed inside `read`, so one the node gives in no expected shape (older Besu answers `null` for a
    // block past its head) is undefined too: it threw outside the read, and one row's throw ended the whole round.
    async latestBlock() {
      return await read("getBlockByNumber", async () => {
        const block: unknown = await client.request({ method: "eth_getBlockByNumber", params: ["latest", false] });
        const number = quantity(field(block, "number"));
        const hash = blockHashOf(field(block, "hash"));
        const timestamp = quantity(field(block, "timestamp"));
        return number === undefined || hash === undefined || timestamp === undefined ? undefined : { number, hash, timestamp };
      });
    },
    async pendingBlock() {
      return await read("getBlockByNumber(pending)", async () => {
        const block: unknown = await client.request({ method: "eth_getBlockByNumber", params: ["pending", false] });
        const parentHash = blockHashOf(field(block, "parentHash"));
        const timestamp = quantity(field(block, "timestamp"));
        return parentHash === undefined || timestamp === undefined ? undefined : { parentHash, timestamp };
      });
    },
    async nonceAt(wallet, blockNumber) {
      // At the block's number, never a tag: a backend without that block fails the call rather than answer for its own.
      return await read("getTransactionCount", async () =>
        quantity(await client.request({ method: "eth_getTransactionCount", params: [wallet as HexString, numberToHex(blockNumber)] })));
    },
    async rebroadcast(tx: SignedTx): Promise<Rebroadcast> {
      const sender = options.senderOf?.(tx.wallet);
      if (sender !== undefined) return await sender.rebroadcast(tx);
      try {
        // Sent once: a retry's answer is not the first send's (a -32603 then "nonce too low" read "refused").
        await client.request({ method: "eth_sendRawTransaction", params: [tx.raw] }, { retryCount: 0 });
        return "accepted";
      } catch (error) {
        log("rpc_error", { op: "sendRawTransaction", error: describe(error) });
        // The node's own answer, read as the sender's sendRaw reads it: an internal error or a rate limit is no verdict
        // on the bytes (it was "refused", so the reconciler released a record whose bytes could still land), and a
        // JSON-RPC error in a non-2xx HTTP reply is a failed exchange, as json_rpc.ts reads every non-2xx.
        const answer = error instanceof BaseError ? error.walk((e) => e instanceof RpcRequestError) : undefined;
        if (!(answer instanceof RpcRequestError)) return "rpc-error";
        if (answer.status !== undefined && (answer.status < 200 || answer.status > 299)) return "rpc-error";
        // A 2xx error without a numeric code is no verdict either, as the JSON-RPC client reads it (-1).
        const sent = rawSendAnswer(typeof answer.code === "number" ? answer.code : -1, answer.details);
        return sent === "lost" ? "rpc-error" : sent;
      }
    },
  };
}

/** A field of a JSON-RPC answer that may be no object at all (`null`, a string). */
const field = (answer: unknown, name: string): unknown => (typeof answer === "object" && answer !== null ? (answer as Record<string, unknown>)[name] : undefined);

/** A JSON-RPC quantity (`0x`-hex), or undefined for anything else (`null`, a number, a malformed string). */
const quantity = (value: unknown): bigint | undefined => (typeof value === "string" && /^0x[0-9a-fA-F]{1,64}$/.test(value) ? BigInt(value) : undefined);

/** A 32-byte hash, or undefined for anything else (a block not sealed yet answers `null`). */
const blockHashOf = (value: unknown): HexString | undefined => (typeof value === "string" && /^0x[0-9a-fA-F]{64}$/.test(value) ? (value as HexString) : undefined);
