import { type Address, decodeEventLog, erc20Abi, type Hex, parseAbi, type PublicClient } from "viem";
import type { AuthorizationUse, AuthorizationUses } from "../../ports/payments.ts";

/** EIP-3009's events (both indexed by authorizer and nonce). */
const EIP3009_EVENTS = parseAbi([
  "event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)",
  "event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)",
]);
const [USED, CANCELED] = EIP3009_EVENTS;

/**
 * What became of EIP-3009 authorizations, read with the service's chain client from the token's logs (decisions §13:
 * a settlement refused for a used nonce may be the payment itself, submitted first by someone else). Only on the
 * service's own network, as the payer balances are read; another network (or a failed read) gives undefined.
 *
 * The nonce is used between the verification and the settlement, so only the newest `lookbackBlocks` (default 10,000)
 * are searched, newest first, in windows of `windowBlocks` (default 2,000: within what common providers serve in one
 * `eth_getLogs`); the filter names the token, the event, the authorizer and the nonce, so each answer is a log or none.
 */
export function createViemAuthorizationUses(options: {
  readonly client: PublicClient;
  readonly network: string;
  readonly lookbackBlocks?: bigint | undefined;
  readonly windowBlocks?: bigint | undefined;
}): AuthorizationUses {
  const lookback = options.lookbackBlocks ?? 10_000n;
  const window = options.windowBlocks ?? 2_000n;
  const { client } = options;
  return {
    async useOf({ network, asset, authorizer, nonce }) {
      if (network !== options.network) return undefined;
      try {
        const address = asset as Address;
        const args = { authorizer: authorizer as Address, nonce: nonce as Hex };
        const head = await client.getBlockNumber({ cacheTime: 0 });
        const oldest = head >= lookback ? head - lookback + 1n : 0n;
        for (let toBlock = head; toBlock >= oldest; toBlock -= window) {
          const fromBlock = toBlock - window + 1n > oldest ? toBlock - window + 1n : oldest;
          const [used, canceled] = await Promise.all([
            client.getLogs({ address, event: USED, args, fromBlock, toBlock, strict: true }),
            client.getLogs({ address, event: CANCELED, args, fromBlock, toBlock, strict: true }),
          ]);
          if (canceled[0] !== undefined) return { kind: "canceled", transaction: canceled[0].transactionHash };
          if (used[0] !== undefined) return await usedBy(client, address, used[0]);
          if (fromBlock === oldest) break;
        }
        return { kind: "not_found" };
      } catch {
        return undefined;
      }
    },
  };
}

/** The use of an authorization and the transfer its call made: the token's `Transfer` log right after `AuthorizationUsed`. */
async function usedBy(
  client: PublicClient,
  asset: Address,
  log: { readonly transactionHash: Hex; readonly logIndex: number },
): Promise<AuthorizationUse> {
  const receipt = await client.getTransactionReceipt({ hash: log.transactionHash });
  const next = receipt.logs.find((l) => l.logIndex === log.logIndex + 1 && l.address.toLowerCase() === asset.toLowerCase());
  if (next === undefined) return { kind: "used", transaction: log.transactionHash };
  try {
    const decoded = decodeEventLog({ abi: erc20Abi, data: next.data, topics: next.topics, strict: true });
    if (decoded.eventName !== "Transfer") return { kind: "used", transaction: log.transactionHash };
    const { from, to, value } = decoded.args;
    return { kind: "used", transaction: log.transactionHash, transfer: { from, to, value } };
  } catch {
    return { kind: "used", transaction: log.transactionHash };
  }
}
