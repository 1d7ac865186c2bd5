import type { SQL } from "bun";
import type { IdempotencyStore } from "../../ports/idempotency.ts";
import { IDEMPOTENCY_TABLE, toIdempotencyRecord } from "../sql/idempotency.ts";

/** The table, created with the storage's migrations (under their advisory lock). */
export const IDEMPOTENCY_TABLES: readonly string[] = [
  IDEMPOTENCY_TABLE,
  "CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at_ms)",
];

/**
 * Idempotency keys in PostgreSQL, beside the submission records and seen by every instance (decisions §23). A begin
 * is one `INSERT … ON CONFLICT DO UPDATE … WHERE`: the row is locked and its condition read again on the newest
 * version, so of requests racing with one key at any instances exactly one starts it.
 */
export function createPostgresIdempotency(sql: SQL): IdempotencyStore {
  return {
    async begin(record) {
      for (;;) {
        const started = await sql`
          INSERT INTO idempotency_keys (scope, key, fingerprint, state, created_at_ms, expires_at_ms, lease_until_ms)
          VALUES (${record.scope}, ${record.key}, ${record.fingerprint}, 'running', ${record.createdAtMs}, ${record.expiresAtMs}, ${record.leaseUntilMs})
          ON CONFLICT (scope, key) DO UPDATE SET
            fingerprint = excluded.fingerprint, state = 'running', status = NULL, headers = NULL, body = NULL,
            submission_id = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN NULL ELSE idempotency_keys.submission_id END,
            created_at_ms = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN excluded.created_at_ms ELSE idempotency_keys.created_at_ms END,
            expires_at_ms = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN excluded.expires_at_ms ELSE idempotency_keys.expires_at_ms END,
            lease_until_ms = excluded.lease_until_ms
          WHERE idempotency_keys.expires_at_ms <= excluded.created_at_ms
             OR (idempotency_keys.state = 'running' AND idempotency_keys.lease_until_ms <= excluded.created_at_ms
                 AND idempotency_keys.fingerprint = excluded.fingerprint)
          RETURNING submission_id` as { submission_id: string | null }[];
        if (started.length === 1) return { kind: "started", submissionId: started[0]!.submission_id ?? null };
        const [held] = await sql`SELECT * FROM idempotency_keys WHERE scope = ${record.scope} AND key = ${record.key}` as Record<string, unknown>[];
        // Abandoned between the two statements (another instance): ask again.
        if (held !== undefined) return { kind: "exists", record: toIdempotencyRecord(held) };
      }
    },
    async find(scope, key) {
      const [held] = await sql`SELECT * FROM idempotency_keys WHERE scope = ${scope} AND key = ${key}` as Record<string, unknown>[];
      return held === undefined ? undefined : toIdempotencyRecord(held);
    },
    async complete(scope, key, answer) {
      await sql`UPDATE idempotency_keys SET state = 'done', status = ${answer.status}, headers = ${JSON.stringify(answer.headers)}, body = ${answer.body}
                WHERE scope = ${scope} AND key = ${key} AND state = 'running'`;
    },
    async attach(scope, key, submissionId) {
      await sql`UPDATE idempotency_keys SET submission_id = ${submissionId} WHERE scope = ${scope} AND key = ${key} AND state = 'running'`;
    },
    async reopen(scope, key, held) {
      const { answer } = held;
      const taken = await sql`
        UPDATE idempotency_keys SET state = 'running', status = NULL, headers = NULL, body = NULL, lease_until_ms = ${held.leaseUntilMs}
        WHERE scope = ${scope} AND key = ${key} AND state = 'done' AND fingerprint = ${held.fingerprint} AND submission_id IS NOT NULL
          AND status = ${answer.status} AND headers = ${JSON.stringify(answer.headers)} AND body = ${answer.body}
          AND expires_at_ms > ${held.nowMs}
        RETURNING key` as unknown[];
      return taken.length === 1;
    },
    async abandon(scope, key) {
      await sql`DELETE FROM idempotency_keys WHERE scope = ${scope} AND key = ${key} AND state = 'running'`;
    },
    async prune(nowMs) {
      return (await sql`DELETE FROM idempotency_keys WHERE expires_at_ms <= ${nowMs} RETURNING key`).length;
    },
  };
}
