import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayRecord, ReplayStore } from "../replay_store.ts";

/** An in-memory replay store with the same rules as the SQLite one. */
export function fakeReplayStore() {
  const rows = new Map<string, ReplayRecord>();
  const live = (state: string) => state === "checked" || state === "signed" || state === "sent";
  const update = (key: string, states: readonly string[], change: Partial<ReplayRecord>) => {
    const row = rows.get(key);
    if (row === undefined || !states.includes(row.state)) return false;
    rows.set(key, { ...row, ...change });
    return true;
  };
  const store = {
    rows,
    find: (key: string) => Promise.resolve(rows.get(key)),
    claim(claim: ReplayClaim): Promise<ClaimOutcome> {
      if (rows.has(claim.key)) return Promise.resolve("duplicate-signature");
      for (const row of rows.values()) {
        if (
          row.chainId === claim.chainId && row.attester === claim.attester && row.nonce === claim.nonce &&
          row.state !== "reverted"
        ) return Promise.resolve("nonce-in-flight");
      }
      rows.set(claim.key, { ...claim, state: "checked", tx: null, txHash: null, uid: null, blockNumber: null });
      return Promise.resolve("claimed");
    },
    markSigned: (key: string, tx: import("../eas.ts").SignedTx) =>
      Promise.resolve(update(key, ["checked"], { state: "signed", tx, txHash: tx.txHash })),
    markSent: (key: string) => Promise.resolve(void update(key, ["checked", "signed"], { state: "sent" })),
    finish(key: string, final: ReplayFinal) {
      update(key, ["checked", "signed", "sent"], {
        state: final.state,
        txHash: final.txHash,
        uid: final.state === "mined" ? final.uid : null,
        blockNumber: final.blockNumber,
      });
      return Promise.resolve();
    },
    release(key: string) {
      if (live(rows.get(key)?.state ?? "")) rows.delete(key);
      return Promise.resolve();
    },
    open: (createdBeforeMs: number) =>
      Promise.resolve([...rows.values()].filter((r) => live(r.state) && r.createdAtMs < createdBeforeMs)),
    prune(nowSeconds: bigint) {
      let n = 0;
      for (const [k, row] of rows) if (row.deadline < nowSeconds && !live(row.state)) rows.delete(k), n++;
      return Promise.resolve(n);
    },
  };
  return store satisfies ReplayStore;
}
