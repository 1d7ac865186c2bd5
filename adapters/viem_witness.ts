import { encodeFunctionData, type PublicClient } from "viem";
import type { HexString, Simulation, Submission } from "../ports/eas.ts";
import type { TxStatus, TxStatusReader, WitnessAttestCall, WitnessWriter } from "../ports/witness.ts";
import { EAS_ABI } from "./eas_abi.ts";
import { classifySimulationError } from "./viem_eas.ts";
import { attestedUid, describe, type TxSender } from "./viem_tx_sender.ts";

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
    async simulate(call): Promise<Simulation> {
      try {
        const gas = await client.estimateGas({ account: sender.address, to: easAddress, data: encode(call) });
        return { ok: true, gas: (gas * 12n) / 10n };
      } catch (error) {
        return classifySimulationError(error, log);
      }
    },
    async submit(call, submitOptions): Promise<Submission> {
      const outcome = await sender.send({ to: easAddress, data: encode(call), gas: submitOptions.gas, onSigned: submitOptions.onSigned });
      if (!outcome.ok) return outcome;
      return { ok: true, txHash: outcome.txHash, blockNumber: outcome.blockNumber, uid: attestedUid(outcome.logs, easAddress) };
    },
  };
}

/**
 * Reads what the chain says about transactions the service signed, for reconciliation: the receipt;
 * without one, whether the node still holds the transaction and whether its sender's mined nonce has
 * passed it (then it can never be mined). The nonce is read before the last receipt check, so a
 * transaction mined in between is reported mined, not replaced.
 */
export function createViemTxStatusReader(options: { client: PublicClient; easAddress: HexString; log?: Log | undefined }): TxStatusReader {
  const log = options.log ?? (() => {});
  const { client } = options;
  const receiptStatus = async (txHash: HexString): Promise<TxStatus | undefined> => {
    const receipt = await client.request({ method: "eth_getTransactionReceipt", params: [txHash] });
    if (!receipt) return undefined;
    const blockNumber = BigInt(receipt.blockNumber);
    if (receipt.status !== "0x1") return { status: "reverted", blockNumber };
    return { status: "success", blockNumber, uid: attestedUid(receipt.logs, options.easAddress) };
  };
  return {
    async status(txHash): Promise<TxStatus> {
      let op = "getTransactionReceipt";
      try {
        const mined = await receiptStatus(txHash);
        if (mined !== undefined) return mined;
        op = "getTransactionByHash";
        const tx = await client.request({ method: "eth_getTransactionByHash", params: [txHash] });
        if (!tx) return { status: "not-found" };
        op = "getTransactionCount";
        const count = await client.request({ method: "eth_getTransactionCount", params: [tx.from, "latest"] });
        if (BigInt(count) <= BigInt(tx.nonce)) return { status: "pending" };
        op = "getTransactionReceipt";
        // The nonce is spent: by this transaction (mined since the first read) or by another one.
        return (await receiptStatus(txHash)) ?? { status: "replaced" };
      } catch (error) {
        log("rpc_error", { op, error: describe(error) });
        return { status: "rpc-error" };
      }
    },
  };
}
