/** What SQLite and PostgreSQL share for the factory calls store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { FactoryCallRecord } from "../../ports/factory_calls.ts";
import type { SqlWords } from "./schema.ts";

export type Row = {
  chain_id: number | bigint;
  wallet: string;
  factory: string;
  calldata_hash: string;
  state: string;
  tx_hash: string | null;
  gas_used: string | null;
  created_at_ms: number | bigint;
  updated_at_ms: number | bigint;
};

/** A stored row as the port's record (SQLite and PostgreSQL share the columns). */
export function toFactoryCall(row: Row | Record<string, unknown>): FactoryCallRecord {
  return {
    chainId: Number(row.chain_id),
    wallet: String(row.wallet),
    factory: String(row.factory),
    calldataHash: String(row.calldata_hash),
    state: row.state === "failed" ? "failed" : "sent",
    txHash: row.tx_hash === null || row.tx_hash === undefined ? null : String(row.tx_hash),
    gasUsed: row.gas_used === null || row.gas_used === undefined ? null : BigInt(String(row.gas_used)),
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
}

/** The ERC-6492 factory calls the service sent (issue 23): one row per chain and wallet. */
export const factoryCallsTable = (w: SqlWords) => `CREATE TABLE IF NOT EXISTS factory_calls (
  chain_id ${w.int} NOT NULL, wallet TEXT NOT NULL, factory TEXT NOT NULL, calldata_hash TEXT NOT NULL,
  state TEXT NOT NULL, tx_hash TEXT, gas_used ${w.decimal}, created_at_ms ${w.int} NOT NULL, updated_at_ms ${w.int} NOT NULL,
  PRIMARY KEY (chain_id, wallet))`;
