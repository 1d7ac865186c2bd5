/** Refused contract wallets, in memory, with the stores' rule: the first record of a chain and wallet stays. */
export function fakeWalletRefusals() {
  const rows = new Map<string, import("../wallet_refusals.ts").WalletRefusal>();
  const id = (chainId: number, wallet: string) => `${chainId}:${wallet.toLowerCase()}`;
  const store = {
    rows,
    refuse(refusal: import("../wallet_refusals.ts").WalletRefusal) {
      const key = id(refusal.chainId, refusal.wallet);
      if (!rows.has(key)) rows.set(key, { ...refusal, wallet: refusal.wallet.toLowerCase() });
      return Promise.resolve();
    },
    find: (chainId: number, wallet: string) => Promise.resolve(rows.get(id(chainId, wallet))),
  };
  return store satisfies import("../wallet_refusals.ts").WalletRefusalStore;
}
