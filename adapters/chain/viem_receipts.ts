import type { PublicClient } from "viem";
import type { TxReceiptReader } from "../../ports/interactions.ts";
import { describe } from "./viem_tx_sender.ts";

/** Receipts of the service's chain (decisions §29): sender, recipient, success and block; failures `rpc-error`, never library text. */
export function createViemTxReceiptReader(options: {
  client: PublicClient;
  chainId: number;
  log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
}): TxReceiptReader {
  const log = options.log ?? (() => {});
  return {
    chainId: options.chainId,
    async receipt(txHash) {
      try {
        const receipt = await options.client.request({ method: "eth_getTransactionReceipt", params: [txHash as `0x${string}`] });
        if (!receipt) return { ok: true, value: null };
        return {
          ok: true,
          value: {
            from: receipt.from.toLowerCase(),
            to: receipt.to ? receipt.to.toLowerCase() : null,
            status: receipt.status === "0x1" ? "success" : "reverted",
            blockNumber: Number(BigInt(receipt.blockNumber)),
          },
        };
      } catch (error) {
        log("rpc_error", { op: "getTransactionReceipt", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
    async head() {
      try {
        return { ok: true, value: Number(BigInt(await options.client.request({ method: "eth_blockNumber" }))) };
      } catch (error) {
        log("rpc_error", { op: "blockNumber", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
    async blockTime(blockNumber) {
      try {
        const block = await options.client.request({ method: "eth_getBlockByNumber", params: [`0x${blockNumber.toString(16)}`, false] });
        return { ok: true, value: block ? Number(BigInt(block.timestamp)) : null };
      } catch (error) {
        log("rpc_error", { op: "getBlockByNumber", error: describe(error) });
        return { ok: false, reason: "rpc-error" };
      }
    },
  };
}
