import { BaseError, encodeFunctionData, type Hex, type PublicClient, parseAbi } from "viem";
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import { describe } from "./viem_tx_sender.ts";

/** `owner()`'s call data. */
const OWNER_CALL = encodeFunctionData({ abi: parseAbi(["function owner() view returns (address)"]), functionName: "owner" });

/**
 * The gas `owner()` may burn: a getter needs a few thousand. Before, the call ran at the node's cap, and an anonymous
 * subject-ownership proof naming a contract whose `owner()` loops cost the node 37 ms of CPU a request. Running out of
 * it is "no owner", as a revert is.
 */
export const OWNER_CALL_GAS = 100_000n;

/** The chain reads of ownership proofs on the service's viem client; failures are `rpc-error`, never library text. */
export function createViemOwnershipChain(options: {
  client: PublicClient;
  chainId: number;
  log?: ((event: string, fields: Record<string, unknown>) => void) | undefined;
}): OwnershipChain {
  const { client } = options;
  const log = options.log ?? (() => {});
  const failed = (op: string, error: unknown) => {
    log("rpc_error", { op, error: describe(error) });
    return { ok: false as const, reason: "rpc-error" as const };
  };
  return {
    chainId: options.chainId,
    async hasCode(address) {
      try {
        const code = await client.getCode({ address });
        return { ok: true, value: code !== undefined && code !== "0x" };
      } catch (error) {
        return failed("getCode", error);
      }
    },
    async owner(contract, blockNumber) {
      let data: Hex | undefined;
      try {
        ({ data } = await client.call({ to: contract, data: OWNER_CALL, gas: OWNER_CALL_GAS, ...(blockNumber === undefined ? {} : { blockNumber }) }));
      } catch (error) {
        // A contract whose owner() reverts or runs out of its gas: no owner, not a failed lookup.
        if (error instanceof BaseError && /revert|out ?of ?gas/i.test(`${error.shortMessage} ${error.details ?? ""}`)) return { ok: true, value: null };
        return failed("owner", error);
      }
      // A contract without owner() (no data), or one answering something that is no address: no owner.
      if (data === undefined || data.length !== 66 || !/^0x0{24}/.test(data)) return { ok: true, value: null };
      return { ok: true, value: `0x${data.slice(26)}`.toLowerCase() as HexString };
    },
    async transaction(hash) {
      try {
        const receipt = await client.request({ method: "eth_getTransactionReceipt", params: [hash] });
        if (!receipt) return { ok: true, value: null };
        return {
          ok: true,
          value: {
            from: receipt.from.toLowerCase() as HexString,
            contractAddress: receipt.contractAddress ? (receipt.contractAddress.toLowerCase() as HexString) : null,
            blockNumber: BigInt(receipt.blockNumber),
            logs: receipt.logs.map((l) => ({ address: l.address.toLowerCase() as HexString, topics: l.topics.map((t) => t.toLowerCase() as HexString) })),
          },
        };
      } catch (error) {
        return failed("getTransactionReceipt", error);
      }
    },
  };
}
