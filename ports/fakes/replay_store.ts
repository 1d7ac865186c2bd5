import type { SignedTx } from "../eas.ts";
import type { ClaimOutcome, ReplayClaim, ReplayFinal, ReplayRecord, ReplayStore } from "../replay_store.ts";

/** A record's identity in the fake, as in the stores: its chain and its key (decisions §30). */
const idOf = (chainId: number, key: string) => `${chainId}:${key}`;

/** An in-memory replay store with the same rules as the SQLite one; `rows` is keyed by chain and key (`<chainId>:<key>`). */
export function fakeReplayStore() {
  const rows = new Map<string, ReplayRecord>();
  const live = (state: string) => state === "checked" || state === "signed" || state === "sent";
  const update = (chainId: number, key: string, states: readonly string[], change: Partial<ReplayRecord>) => {
    const row = rows.get(idOf(chainId, key));
    if (row === undefined || !states.includes(row.state)) return false;
    rows.set(idOf(chainId, key), { ...row, ...change });
    return true;
  };
  const store = {
    rows,
    find: (chainId: number, key: string) => Promise.resolve(rows.get(idOf(chainId, key))),
    findAnyChain: (key: string) =>
      Promise.resolve([...rows.values()].filter((row) => row.key === key).sort((a, b) => a.chainId - b.chainId)[0]),
    claim(claim: ReplayClaim): Promise<ClaimOutcome> {
      if (rows.has(idOf(claim.chainId, claim.key))) return Promise.resolve("duplicate-signature");
      for (const row of rows.values()) {
        if (
          row.chainId === claim.chainId && row.attester === claim.attester && row.nonce === claim.nonce &&
          row.state !== "reverted"
        ) return Promise.resolve("nonce-in-flight");
      }
      rows.set(idOf(claim.chainId, claim.key), { ...claim, state: "checked", tx: null, txHash: null, uid: null, blockNumber: null });
      return Promise.resolve("claimed");
    },
    markSigned: (chainId: number, key: string, tx: SignedTx) =>
      Promise.resolve(update(chainId, key, ["checked"], { state: "signed", tx, txHash: tx.txHash })),
    markSent: (chainId: number, key: string) => Promise.resolve(void update(chainId, key, ["checked", "signed"], { state: "sent" })),
    finish(chainId: number, key: string, final: ReplayFinal) {
      update(chainId, key, ["checked", "signed", "sent"], {
        state: final.state,
        txHash: final.txHash,
        uid: final.state === "mined" ? final.uid : null,
        blockNumber: final.blockNumber,
      });
      return Promise.resolve();
    },
    release(chainId: number, key: string) {
      if (live(rows.get(idOf(chainId, key))?.state ?? "")) rows.delete(idOf(chainId, key));
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
