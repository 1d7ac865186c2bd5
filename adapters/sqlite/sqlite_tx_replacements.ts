import type { Database } from "bun:sqlite";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { addMissingColumns } from "./sqlite_database.ts";
import { type Row, toReplacement, TX_REPLACEMENTS_CHAIN_BACKFILL, txReplacementsAddedColumns, txReplacementsTable } from "../sql/tx_replacements.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** Fee-bump replacements in the SQLite file. */
export function createSqliteTxReplacements(db: Database): TxReplacementStore {
  db.transaction(() => {
    db.exec(txReplacementsTable(SQLITE_WORDS));
    const named = db.query<{ name: string }, []>("PRAGMA table_info(tx_replacements)").all().some((c) => c.name === "chain_id");
    addMissingColumns(db, txReplacementsAddedColumns(SQLITE_WORDS));
    if (!named) db.exec(TX_REPLACEMENTS_CHAIN_BACKFILL);
  }).immediate();
  const insert = db.query(
    `INSERT INTO tx_replacements (book, chain_id, id, tx_hash, raw_tx, wallet, tx_nonce, created_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const columns = "SELECT tx_hash, raw_tx, wallet, tx_nonce, created_at_ms FROM tx_replacements";
  const onChain = db.query<Row, [string, string, number]>(
    `${columns} WHERE book = ? AND id = ? AND (chain_id = ? OR chain_id IS NULL) ORDER BY created_at_ms, rowid`,
  );
  const anyChain = db.query<Row, [string, string]>(`${columns} WHERE book = ? AND id = ? ORDER BY created_at_ms, rowid`);
  const prune = db.query("DELETE FROM tx_replacements WHERE created_at_ms < ?");
  return {
    add(book, chainId, id, { tx, createdAtMs }) {
      insert.run(book, chainId, id, tx.txHash, tx.raw, tx.wallet.toLowerCase(), tx.nonce, createdAtMs);
      return Promise.resolve();
    },
    list: (book, chainId, id) => Promise.resolve((chainId === null ? anyChain.all(book, id) : onChain.all(book, id, chainId)).map(toReplacement)),
    prune: (beforeMs) => Promise.resolve(prune.run(beforeMs).changes),
  };
}
