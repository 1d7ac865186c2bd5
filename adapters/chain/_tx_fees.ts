/**
 * The fees a wallet's transactions offer (EIP-1559), kept {@link FEE_TTL_MS}: the gas price (`eth_gasPrice`) and the
 * priority fee (`eth_maxPriorityFeePerGas`), the maximum fee twice the price plus the priority fee. Issue 43 item 5: the
 * two parts are kept apart, and a receipt of this wallet renews the price with the one the chain just charged it
 * (`effectiveGasPrice`: the block's base fee plus the priority fee paid), so a wallet that writes every block asks only
 * for the priority fee when its time is up, not for both.
 */
import { type JsonRpc, quantity } from "./json_rpc.ts";

/** How long a fee read serves. */
export const FEE_TTL_MS = 2_000;

/** Fee data. */
export type Fees = { readonly maxFeePerGas: bigint; readonly maxPriorityFeePerGas: bigint };

/** A wallet's fees: `refresh` answers them (reading what is older than {@link FEE_TTL_MS}), `charged` renews the price. */
export function createFees(rpc: JsonRpc, now: () => number = Date.now) {
  let price: { readonly at: number; readonly value: bigint } | undefined;
  let tip: { readonly at: number; readonly value: bigint } | undefined;
  let request: Promise<Fees> | undefined;
  const fresh = (part: { readonly at: number } | undefined) => part !== undefined && now() - part.at < FEE_TTL_MS;
  const fees = (gasPrice: bigint, priority: bigint): Fees => ({ maxFeePerGas: gasPrice * 2n + priority, maxPriorityFeePerGas: priority });
  return {
    refresh(): Promise<Fees> {
      const priceFresh = fresh(price);
      const tipFresh = fresh(tip);
      if (priceFresh && tipFresh) return Promise.resolve(fees(price!.value, tip!.value));
      request ??= Promise.all([priceFresh ? price!.value : rpc.request("eth_gasPrice", []).then(quantity), tipFresh ? tip!.value : maxPriorityFee(rpc)])
        .then(([gasPrice, priority]) => {
          const at = now();
          if (!priceFresh) price = { at, value: gasPrice };
          if (!tipFresh) tip = { at, value: priority };
          return fees(gasPrice, priority);
        })
        .finally(() => (request = undefined));
      return request;
    },
    /** The gas price the chain charged one of this wallet's transactions now (its receipt's `effectiveGasPrice`). */
    charged(gasPrice: bigint) {
      price = { at: now(), value: gasPrice };
    },
  };
}

/**
 * The priority fee as viem estimates it: `eth_maxPriorityFeePerGas`, or for a node without it the gas price less
 * the latest block's base fee (never below 0).
 */
async function maxPriorityFee(rpc: JsonRpc): Promise<bigint> {
  try {
    return quantity(await rpc.request("eth_maxPriorityFeePerGas", []));
  } catch {
    const [block, gasPrice] = await Promise.all([
      rpc.request<{ baseFeePerGas?: string } | null>("eth_getBlockByNumber", ["latest", false]),
      rpc.request("eth_gasPrice", []).then(quantity),
    ]);
    if (block?.baseFeePerGas === undefined) throw new Error("The chain has no EIP-1559 base fee");
    const fee = gasPrice - quantity(block.baseFeePerGas);
    return fee < 0n ? 0n : fee;
  }
}
