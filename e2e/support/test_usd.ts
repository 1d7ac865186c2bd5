/** The devnet's EIP-3009 test token from a payer's side, for the x402 tests. */
import { createPublicClient, createWalletClient, type Hex, http, parseSignature } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { TEST_USD } from "../../adapters/devnet/mod.ts";

/**
 * Cancels an EIP-3009 authorization with the payer's key, on chain (what a payer racing the settlement could do), and
 * waits for it to be mined.
 */
export async function cancelAuthorization(devnet: { readonly rpcUrl: string; readonly chainId: number }, token: Hex, payerKey: Hex, nonce: Hex): Promise<void> {
  const account = privateKeyToAccount(payerKey);
  const signature = await account.signTypedData({
    domain: { name: TEST_USD.name, version: TEST_USD.version, chainId: devnet.chainId, verifyingContract: token },
    types: { CancelAuthorization: [{ name: "authorizer", type: "address" }, { name: "nonce", type: "bytes32" }] },
    primaryType: "CancelAuthorization",
    message: { authorizer: account.address, nonce },
  });
  const { v, r, s } = parseSignature(signature);
  const wallet = createWalletClient({ account, transport: http(devnet.rpcUrl) });
  const hash = await wallet.writeContract({ address: token, abi: TEST_USD.abi, functionName: "cancelAuthorization", args: [account.address, nonce, Number(v), r, s], chain: null });
  await createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl), pollingInterval: 50 }).waitForTransactionReceipt({ hash });
}
