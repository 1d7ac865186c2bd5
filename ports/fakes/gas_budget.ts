/** The public relay's gas budget in memory, with the stores' rule: a charge that would pass the limit adds nothing. */
export function fakeGasBudget() {
  const windows = new Map<number, bigint>();
  /** Each key's part of a window, by `${windowStartMs} ${key}` (issue 43). */
  const shares = new Map<string, bigint>();
  const budget = {
    windows,
    shares,
    charges: 0,
    used: (windowStartMs: number) => Promise.resolve(windows.get(windowStartMs) ?? 0n),
    usage: (windowStartMs: number, keys: readonly string[]) =>
      Promise.resolve({ total: windows.get(windowStartMs) ?? 0n, byKey: keys.map((key) => shares.get(`${windowStartMs} ${key}`) ?? 0n) }),
    charge(windowStartMs: number, gas: bigint, limit: bigint, parts: readonly import("../gas_budget.ts").GasShare[] = []) {
      budget.charges++;
      const next = (windows.get(windowStartMs) ?? 0n) + gas;
      if (next > limit) return Promise.resolve(false);
      const nextParts = parts.map((p) => ({ id: `${windowStartMs} ${p.key}`, gas: (shares.get(`${windowStartMs} ${p.key}`) ?? 0n) + gas, limit: p.limit }));
      if (nextParts.some((p) => p.gas > p.limit)) return Promise.resolve(false);
      windows.set(windowStartMs, next);
      for (const p of nextParts) shares.set(p.id, p.gas);
      return Promise.resolve(true);
    },
  };
  return budget satisfies import("../gas_budget.ts").GasBudget;
}
