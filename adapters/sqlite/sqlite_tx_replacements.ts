import type { Database } from "bun:sqlite";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { type Row, toReplacement, txReplacementsTable } from "../sql/tx_replacements.ts";
import { SQLITE_WORDS } from "../sql/schema.ts";

/** Fee-bump replacements in the SQLite file. */
export function createSqliteTxReplacements(db: Database): TxReplacementStore {
  db.exec(txReplacementsTable(SQLITE_WORDS));
  const insert = db.query(
    `INSERT INTO tx_replacements (book, id, tx_hash, raw_tx, wallet, tx_nonce, created_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const list = db.query<Row, [string, string]>(
    "SELECT tx_hash, raw_tx, wallet, tx_nonce, created_at_ms FROM tx_replacements WHERE book = ? AND id = ? ORDER BY created_at_ms, rowid",
  );
  const prune = db.query("DELETE FROM tx_replacements WHERE created_at_ms < ?");
  return {
    add(book, id, { tx, createdAtMs }) {
      insert.run(book, id, tx.txHash, tx.raw, tx.wallet.toLowerCase(), tx.nonce, createdAtMs);
      return Promise.resolve();
    },
    list: (book, id) => Promise.resolve(list.all(book, id).map(toReplacement)),
    prune: (beforeMs) => Promise.resolve(prune.run(beforeMs).changes),
  };
}
