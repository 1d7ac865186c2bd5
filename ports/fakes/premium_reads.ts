/** Premium reads in memory, with the stores' rules: a reservation that would pass the limit adds nothing; a release stops at zero. */
export function fakePremiumReadLedger() {
  const rows = new Map<string, number>();
  const key = (accountId: string, year: number) => `${accountId}|${year}`;
  const ledger = {
    rows,
    used: (accountId: string, year: number) => Promise.resolve(rows.get(key(accountId, year)) ?? 0),
    reserve(accountId: string, year: number, count: number, limit: number) {
      const now = rows.get(key(accountId, year)) ?? 0;
      if (now + count > limit) return Promise.resolve(false);
      rows.set(key(accountId, year), now + count);
      return Promise.resolve(true);
    },
    release(accountId: string, year: number, count: number) {
      const now = rows.get(key(accountId, year));
      if (now !== undefined) rows.set(key(accountId, year), Math.max(0, now - count));
      return Promise.resolve();
    },
  };
  return ledger satisfies import("../premium_reads.ts").PremiumReadLedger;
}

/**
 * A node for the premium proxy: answers `eth_blockNumber` with `head`, other calls through `answer` (default a
 * result naming the method), records every batch it was sent; `down` makes it unreachable.
 */
export function fakeRawRpc(options: { head?: bigint; answer?: (call: import("../premium_reads.ts").RpcCall) => { result?: unknown; error?: { code: number; message: string } } } = {}) {
  const rpc = {
    head: options.head ?? 100n,
    down: false,
    batches: [] as import("../premium_reads.ts").RpcCall[][],
    /** Set: the next sends are handed over and their answers lost (a timeout when `timedOut`). */
    lost: undefined as { timedOut: boolean } | undefined,
    /** Set: sends wait on this before answering (a slow node). */
    gate: undefined as Promise<void> | undefined,
    forward(calls: readonly import("../premium_reads.ts").RpcCall[]): Promise<readonly import("../premium_reads.ts").RpcAnswer[] | undefined> {
      rpc.batches.push([...calls]);
      if (rpc.down) return Promise.resolve(undefined);
      return Promise.resolve(calls.map((c) => ({
        id: c.id,
        ...(c.method === "eth_blockNumber" ? { result: `0x${rpc.head.toString(16)}` } : options.answer?.(c) ?? { result: `${c.method}-ok` }),
      })));
    },
    /** `forward` (so a test's replacement of it applies), with `down` as not sent and `lost` as lost. */
    async send(calls: readonly import("../premium_reads.ts").RpcCall[]): Promise<import("../premium_reads.ts").RpcSendOutcome> {
      await rpc.gate;
      if (rpc.lost !== undefined) {
        rpc.batches.push([...calls]);
        return { kind: "lost", timedOut: rpc.lost.timedOut };
      }
      const answers = await rpc.forward(calls);
      return answers === undefined ? { kind: "not_sent" } : { kind: "answered", answers };
    },
  };
  return rpc satisfies import("../premium_reads.ts").RawRpc;
}
