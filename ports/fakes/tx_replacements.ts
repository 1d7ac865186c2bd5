import type { TxReplacement, TxReplacementStore } from "../tx_replacements.ts";

/** One stored fee bump; `chainId` null for a row an earlier version stored (no chain), listed for every chain. */
export type FakeTxReplacementRow = TxReplacement & { readonly book: string; readonly chainId: number | null; readonly id: string };

/** An in-memory replacement store with the adapters' rules (one row per book, submission and hash; read by chain). */
export function fakeTxReplacements(): TxReplacementStore & { readonly rows: FakeTxReplacementRow[] } {
  const rows: FakeTxReplacementRow[] = [];
  return {
    rows,
    add(book, chainId, id, { tx, createdAtMs }) {
      if (!rows.some((row) => row.book === book && row.id === id && row.tx.txHash === tx.txHash)) rows.push({ book, chainId, id, tx, createdAtMs });
      return Promise.resolve();
    },
    list: (book, chainId, id) =>
      Promise.resolve(
        rows
          .filter((r) => r.book === book && r.id === id && (chainId === null || r.chainId === null || r.chainId === chainId))
          // Oldest first, as the adapters order them (a stable sort keeps the order they were added in for one time).
          .sort((a, b) => a.createdAtMs - b.createdAtMs)
          .map(({ tx, createdAtMs }) => ({ tx, createdAtMs })),
      ),
    prune(beforeMs) {
      const kept = rows.filter((r) => r.createdAtMs >= beforeMs);
      const pruned = rows.length - kept.length;
      rows.splice(0, rows.length, ...kept);
      return Promise.resolve(pruned);
    },
  };
}
