/** What SQLite and PostgreSQL share for the signing keys store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { SigningKeyRecord, SigningKeyType } from "../../ports/signing_keys.ts";

/** The signing_keys table (decisions §17), in SQLite (`INTEGER`) or PostgreSQL (`BIGINT`) words for times; tags as JSON text. */
export function signingKeyTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS signing_keys (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       key_did TEXT NOT NULL,
       key_type TEXT NOT NULL CHECK (key_type IN ('attestation', 'service-signing')),
       display_name TEXT NOT NULL,
       tags TEXT NOT NULL,
       notes TEXT,
       created_at_ms ${bigint} NOT NULL,
       updated_at_ms ${bigint} NOT NULL,
       UNIQUE (account_id, key_did)
     )`,
    `CREATE INDEX IF NOT EXISTS signing_keys_account ON signing_keys (account_id, created_at_ms)`,
  ];
}

/** A stored signing-key row (SQLite and PostgreSQL). */
export type SigningKeyRow = {
  id: string;
  account_id: string;
  key_did: string;
  key_type: string;
  display_name: string;
  tags: string;
  notes: string | null;
  created_at_ms: number | string;
  updated_at_ms: number | string;
};

/** A stored row as the port's record. */
export function toSigningKey(row: SigningKeyRow): SigningKeyRecord {
  const tags: unknown = JSON.parse(row.tags);
  return {
    id: row.id,
    accountId: row.account_id,
    keyDid: row.key_did,
    keyType: row.key_type as SigningKeyType,
    displayName: row.display_name,
    tags: Array.isArray(tags) ? tags.filter((t): t is string => typeof t === "string") : [],
    notes: row.notes,
    createdAtMs: Number(row.created_at_ms),
    updatedAtMs: Number(row.updated_at_ms),
  };
}
