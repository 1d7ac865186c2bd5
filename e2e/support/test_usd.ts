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

/** An `exact` payment's EIP-3009 authorization and signature, as a `PAYMENT-SIGNATURE` carries them. */
export type SignedAuthorization = {
  readonly signature: Hex;
  readonly authorization: { readonly from: Hex; readonly to: Hex; readonly value: string; readonly validAfter: string; readonly validBefore: string; readonly nonce: Hex };
};

/**
 * Submits a payer's signed authorization with `submitterKey`'s wallet (anyone holding it can: a third party
 * front-running the facilitator) and waits for it to be mined.
 */
export async function submitAuthorization(devnet: { readonly rpcUrl: string }, token: Hex, submitterKey: Hex, signed: SignedAuthorization): Promise<Hex> {
  const a = signed.authorization;
  const { v, r, s } = parseSignature(signed.signature);
  const wallet = createWalletClient({ account: privateKeyToAccount(submitterKey), transport: http(devnet.rpcUrl) });
  const args = [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s] as const;
  const hash = await wallet.writeContract({ address: token, abi: TEST_USD.abi, functionName: "transferWithAuthorization", args, chain: null });
  await createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl), pollingInterval: 50 }).waitForTransactionReceipt({ hash });
  return hash;
}
