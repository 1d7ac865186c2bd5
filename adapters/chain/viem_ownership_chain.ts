import { BaseError, ContractFunctionExecutionError, type PublicClient, parseAbi } from "viem";
import type { HexString } from "../../ports/eas.ts";
import type { OwnershipChain } from "../../ports/ownership_chain.ts";
import { describe } from "./viem_tx_sender.ts";

const OWNABLE_ABI = parseAbi(["function owner() view returns (address)"]);

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
    async owner(contract) {
      try {
        return { ok: true, value: (await client.readContract({ address: contract, abi: OWNABLE_ABI, functionName: "owner" })).toLowerCase() as HexString };
      } catch (error) {
        // A contract without owner(), or one that reverts: no owner, not a failed lookup.
        if (error instanceof BaseError && error.walk((e) => e instanceof ContractFunctionExecutionError)) {
          const text = describe(error);
          if (/revert|returned no data|not a contract|decode/i.test(text)) return { ok: true, value: null };
        }
        return failed("owner", error);
      }
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
