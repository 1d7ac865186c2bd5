/** What SQLite and PostgreSQL share for the idempotency store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { IdempotencyRecord } from "../../ports/idempotency.ts";

/** The table of idempotency keys (decisions §23); the same columns on PostgreSQL. */
export const IDEMPOTENCY_TABLE = `CREATE TABLE IF NOT EXISTS idempotency_keys (
  scope TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL, state TEXT NOT NULL,
  status INTEGER, headers TEXT, body TEXT,
  created_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL, lease_until_ms BIGINT NOT NULL, submission_id TEXT,
  PRIMARY KEY (scope, key))`;

/** A stored row as the port's record (SQLite and PostgreSQL share the columns). */
export function toIdempotencyRecord(row: Record<string, unknown>): IdempotencyRecord {
  const done = row.state === "done" && row.status !== null && row.status !== undefined;
  return {
    scope: String(row.scope),
    key: String(row.key),
    fingerprint: String(row.fingerprint),
    state: done ? "done" : "running",
    answer: done ? { status: Number(row.status), headers: JSON.parse(String(row.headers ?? "{}")), body: String(row.body ?? "") } : null,
    createdAtMs: Number(row.created_at_ms),
    expiresAtMs: Number(row.expires_at_ms),
    leaseUntilMs: Number(row.lease_until_ms),
    submissionId: (row.submission_id as string | null | undefined) ?? null,
  };
}
