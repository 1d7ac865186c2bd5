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

/** Reads receipts of transactions the service signed, for reconciliation. */
export function createViemTxStatusReader(options: { client: PublicClient; easAddress: HexString; log?: Log | undefined }): TxStatusReader {
  const log = options.log ?? (() => {});
  return {
    async status(txHash): Promise<TxStatus> {
      try {
        const receipt = await options.client.request({ method: "eth_getTransactionReceipt", params: [txHash] });
        if (!receipt) return { status: "not-found" };
        const blockNumber = BigInt(receipt.blockNumber);
        if (receipt.status !== "0x1") return { status: "reverted", blockNumber };
        return { status: "success", blockNumber, uid: attestedUid(receipt.logs, options.easAddress) };
      } catch (error) {
        log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
        return { status: "rpc-error" };
      }
    },
  };
}
