/** What SQLite and PostgreSQL share for the replay store store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { HexString } from "../../ports/eas.ts";
import type { ReplayRecord, ReplayState } from "../../ports/replay_store.ts";

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
