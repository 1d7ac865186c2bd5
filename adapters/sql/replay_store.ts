/** What SQLite and PostgreSQL share for the replay store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { HexString } from "../../ports/eas.ts";
import type { ReplayRecord, ReplayState } from "../../ports/replay_store.ts";
import type { TableGroup, SqlWords } from "./schema.ts";

/**
 * The name of the replay table's primary key, (chain_id, key): a signature's record is its chain's (decisions §30). A
 * table made before it had `key` alone as its key; SQLite rebuilds it once (`sqlite_database.ts`), PostgreSQL swaps the
 * key ({@link REKEY_REPLAY_POSTGRES}). Every row named its chain already (`chain_id` was always NOT NULL).
 */
export const REPLAY_PRIMARY_KEY = "replay_chain_key";

/** The replay table's columns as first made, before `added` (a rebuilt SQLite table is made with them, then added to). */
export function replayTable(w: SqlWords): string {
  return `CREATE TABLE IF NOT EXISTS replay (
         key TEXT NOT NULL,
         chain_id ${w.int} NOT NULL,
         attester TEXT NOT NULL,
         nonce TEXT NOT NULL,
         deadline ${w.int} NOT NULL,
         state TEXT NOT NULL,
         tx_hash TEXT,
         uid TEXT,
         block_number TEXT,
         created_at_ms ${w.int} NOT NULL,
         CONSTRAINT ${REPLAY_PRIMARY_KEY} PRIMARY KEY (chain_id, key)
       )`;
}

/**
 * PostgreSQL: a table keyed by `key` alone (made before decisions §30's fix) is keyed by (chain_id, key); once. The old
 * key is dropped by the name PostgreSQL has for it (`pg_constraint`, contype 'p'), not by the name it gives by default
 * (`replay_pkey`): a table made under another name and renamed, or restored so, keeps its key's first name.
 */
export const REKEY_REPLAY_POSTGRES = `DO $$ DECLARE old_key TEXT; BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conname = '${REPLAY_PRIMARY_KEY}' AND conrelid = 'replay'::regclass) THEN
    SELECT conname INTO old_key FROM pg_constraint WHERE conrelid = 'replay'::regclass AND contype = 'p';
    IF old_key IS NOT NULL THEN
      EXECUTE format('ALTER TABLE replay DROP CONSTRAINT %I', old_key);
    END IF;
    ALTER TABLE replay ADD CONSTRAINT ${REPLAY_PRIMARY_KEY} PRIMARY KEY (chain_id, key);
  END IF;
END $$`;

/** The replay records' table (decisions §15): one row per signature and chain, one live submission per attester nonce. */
export function replayTables(w: SqlWords): TableGroup {
  return {
    create: [
      replayTable(w),
      // Submissions before decisions §15 had states claimed/broadcast/done/failed.
      `UPDATE replay SET state = CASE state WHEN 'claimed' THEN 'checked' WHEN 'broadcast' THEN 'sent'
         WHEN 'done' THEN 'mined' WHEN 'failed' THEN 'reverted' ELSE state END
         WHERE state IN ('claimed', 'broadcast', 'done', 'failed')`,
      `DROP INDEX IF EXISTS replay_live_nonce`,
      // One live submission per attester nonce: a second signature over the same nonce cannot be sent
      // while the first is in flight or after it was mined. A reverted one frees the nonce.
      `CREATE UNIQUE INDEX IF NOT EXISTS replay_live_nonce_v2 ON replay (chain_id, attester, nonce)
         WHERE state IN ('checked', 'signed', 'sent', 'mined')`,
      `CREATE INDEX IF NOT EXISTS replay_open ON replay (state, created_at_ms)`,
      `CREATE INDEX IF NOT EXISTS replay_deadline ON replay (deadline)`,
      // A record found by its key alone (the primary key leads with the chain): a submission naming no chain
      // (`findAnyChain`), the one-time naming of submissions' chains, and a previous version's statements during a
      // rolling restart of PostgreSQL (they name no chain).
      `CREATE INDEX IF NOT EXISTS replay_key ON replay (key)`,
    ],
    // The stored transaction of a submission (decisions §15).
    added: [["replay", "raw_tx", "TEXT"], ["replay", "wallet", "TEXT"], ["replay", "tx_nonce", w.int]],
    after: [],
  };
}

/** A replay row as stored (SQLite and PostgreSQL use the same columns). */
export type ReplayRow = {
  key: string;
  chain_id: number | string;
  attester: string;
  nonce: string;
  deadline: number | string;
  state: string;
  tx_hash: string | null;
  uid: string | null;
  block_number: string | null;
  raw_tx: string | null;
  wallet: string | null;
  tx_nonce: number | string | null;
  created_at_ms: number | string;
};

/** Translates a stored row into the port's record. */
export function toReplayRecord(row: ReplayRow): ReplayRecord {
  return {
    key: row.key,
    chainId: Number(row.chain_id),
    attester: row.attester,
    nonce: BigInt(row.nonce),
    deadline: BigInt(row.deadline),
    createdAtMs: Number(row.created_at_ms),
    state: row.state as ReplayState,
    tx: row.raw_tx === null || row.tx_hash === null || row.wallet === null || row.tx_nonce === null ? null : {
      txHash: row.tx_hash as HexString,
      raw: row.raw_tx as HexString,
      wallet: row.wallet as HexString,
      nonce: Number(row.tx_nonce),
    },
    txHash: row.tx_hash,
    uid: row.uid,
    blockNumber: row.block_number === null ? null : BigInt(row.block_number),
  };
}
