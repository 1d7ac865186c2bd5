import { type Abi, type Address, getAddress, type Hex, type PublicClient, type WalletClient } from "viem";
// Imported rather than read at run time, so a compiled executable carries it (scripts/build_test_token.ts writes it).
import artifact from "./test_usd.json" with { type: "json" };

/** The devnet's x402 token: an EIP-3009 ERC-20 with six decimals (adapters/devnet/contracts/TestUsd.sol). */
export const TEST_USD = {
  abi: artifact.abi as Abi,
  bytecode: artifact.bytecode as Hex,
  /** The EIP-712 domain of its authorizations. */
  name: "ATS Test USD",
  version: "2",
  decimals: 6,
} as const;

/** What every Anvil dev account is minted at deployment: one million tUSD. */
export const TEST_USD_MINT = 1_000_000n * 10n ** 6n;

/** Deploys the token unless `previous` still has code there, and mints to `holders` on deployment; its address. */
export async function ensureTestUsd(
  clients: { publicClient: PublicClient; walletClient: WalletClient },
  holders: readonly Address[],
  options: { previous?: Address | undefined; log: (line: string) => void },
): Promise<Address> {
  const { publicClient, walletClient } = clients;
  if (options.previous !== undefined) {
    const code = await publicClient.getCode({ address: options.previous });
    if (code !== undefined && code !== "0x") return options.previous;
  }
  const hash = await walletClient.deployContract({ abi: TEST_USD.abi, bytecode: TEST_USD.bytecode, account: walletClient.account!, chain: walletClient.chain });
  const receipt = await publicClient.waitForTransactionReceipt({ hash });
  const address = getAddress(receipt.contractAddress!);
  // All sent at once with nonces counted here (the node's count would race), then their receipts awaited together.
  const account = walletClient.account!;
  const first = await publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
  const mints: Hex[] = [];
  for (const [i, to] of holders.entries()) {
    mints.push(await walletClient.writeContract({ address, abi: TEST_USD.abi, functionName: "mint", args: [to, TEST_USD_MINT], account, chain: walletClient.chain, nonce: first + i }));
  }
  await Promise.all(mints.map((hash) => publicClient.waitForTransactionReceipt({ hash })));
  options.log(`deployed the x402 test token at ${address}`);
  return address;
}
