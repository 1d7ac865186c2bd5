import { type Address, erc20Abi, type PublicClient } from "viem";
import type { PayerBalances } from "../../ports/payments.ts";

/**
 * Payers' token balances read with the service's chain client (issue 23): only on the service's own network, where
 * the client reads; another network (or a failed read) gives undefined, and the paid call then allows one open
 * payment at a time per payer.
 */
export function createViemPayerBalances(options: { readonly client: PublicClient; readonly network: string }): PayerBalances {
  return {
    async balanceOf({ network, asset, payer }) {
      if (network !== options.network) return undefined;
      try {
        return await options.client.readContract({ address: asset as Address, abi: erc20Abi, functionName: "balanceOf", args: [payer as Address] });
      } catch {
        return undefined;
      }
    },
  };
}
