import type { Database } from "bun:sqlite";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { type Row, toReplacement } from "../sql/tx_replacements.ts";

/** Fee-bump replacements in the SQLite file. */
export function createSqliteTxReplacements(db: Database): TxReplacementStore {
  db.exec(`CREATE TABLE IF NOT EXISTS tx_replacements (
    book TEXT NOT NULL, id TEXT NOT NULL, tx_hash TEXT NOT NULL, raw_tx TEXT NOT NULL, wallet TEXT NOT NULL,
    tx_nonce INTEGER NOT NULL, created_at_ms INTEGER NOT NULL, PRIMARY KEY (book, id, tx_hash))`);
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
