/** What SQLite and PostgreSQL share for the subjects store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { Subject } from "../../ports/subjects.ts";

/** The subjects table, in SQLite (`INTEGER`) or PostgreSQL (`BIGINT`) words for times. */
export function subjectTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS subjects (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       canonical_did TEXT NOT NULL,
       subject_did_hash TEXT NOT NULL,
       display_name TEXT,
       is_default ${bigint === "BIGINT" ? "BOOLEAN" : "INTEGER"} NOT NULL,
       bootstrap ${bigint === "BIGINT" ? "BOOLEAN" : "INTEGER"} NOT NULL,
       ownership_method TEXT NOT NULL,
       ownership_wallet_did TEXT NOT NULL,
       verified_at_ms ${bigint} NOT NULL,
       created_at_ms ${bigint} NOT NULL,
       UNIQUE (account_id, canonical_did)
     )`,
    `CREATE INDEX IF NOT EXISTS subjects_account ON subjects (account_id, created_at_ms)`,
    // The transactions keep one default per account; the database refuses a second one should a bug try.
    `CREATE UNIQUE INDEX IF NOT EXISTS subjects_one_default ON subjects (account_id) WHERE ${bigint === "BIGINT" ? "is_default" : "is_default = 1"}`,
  ];
}

export type Row = {
  id: string;
  account_id: string;
  canonical_did: string;
  subject_did_hash: string;
  display_name: string | null;
  is_default: number | boolean;
  bootstrap: number | boolean;
  ownership_method: string;
  ownership_wallet_did: string;
  verified_at_ms: number | string;
  created_at_ms: number | string;
};

/** A stored row as the port's subject (SQLite and PostgreSQL). */
export function toSubject(row: Row): Subject {
  return {
    id: row.id,
    accountId: row.account_id,
    canonicalDid: row.canonical_did,
    subjectDidHash: row.subject_did_hash,
    displayName: row.display_name,
    isDefault: Boolean(row.is_default),
    bootstrap: Boolean(row.bootstrap),
    ownershipMethod: row.ownership_method,
    ownershipWalletDid: row.ownership_wallet_did,
    verifiedAtMs: Number(row.verified_at_ms),
    createdAtMs: Number(row.created_at_ms),
  };
}
