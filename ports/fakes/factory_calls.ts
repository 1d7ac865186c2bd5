/** The ERC-6492 factory calls sent, in memory, with the stores' rule: one record per chain and wallet. */
export function fakeFactoryCalls() {
  const rows = new Map<string, import("../factory_calls.ts").FactoryCallRecord>();
  const id = (chainId: number, wallet: string) => `${chainId}:${wallet.toLowerCase()}`;
  const store = {
    rows,
    begin(attempt: import("../factory_calls.ts").FactoryCallAttempt) {
      const key = id(attempt.chainId, attempt.wallet);
      if (rows.has(key)) return Promise.resolve(false);
      rows.set(key, {
        ...attempt,
        wallet: attempt.wallet.toLowerCase(),
        factory: attempt.factory.toLowerCase(),
        state: "sent",
        txHash: null,
        gasUsed: null,
        updatedAtMs: attempt.createdAtMs,
      });
      return Promise.resolve(true);
    },
    failed(chainId: number, wallet: string, burn: { txHash: string; gasUsed: bigint | null }, nowMs: number) {
      const row = rows.get(id(chainId, wallet));
      if (row !== undefined) rows.set(id(chainId, wallet), { ...row, state: "failed", ...burn, updatedAtMs: nowMs });
      return Promise.resolve();
    },
    forget(chainId: number, wallet: string) {
      rows.delete(id(chainId, wallet));
      return Promise.resolve();
    },
    find: (chainId: number, wallet: string) => Promise.resolve(rows.get(id(chainId, wallet))),
  };
  return store satisfies import("../factory_calls.ts").FactoryCallStore;
}
