import type { Database } from "bun:sqlite";
import type { IdempotencyStore } from "../../ports/idempotency.ts";
import { IDEMPOTENCY_TABLE, toIdempotencyRecord } from "../sql/idempotency.ts";

/**
 * Idempotency keys in the SQLite file, beside the submission records. A begin is one statement (the insert, or the
 * takeover of an expired or dead record), so two connections to one file never both start one key.
 */
export function createSqliteIdempotency(db: Database): IdempotencyStore {
  db.exec(IDEMPOTENCY_TABLE);
  db.exec("CREATE INDEX IF NOT EXISTS idempotency_keys_expiry ON idempotency_keys (expires_at_ms)");
  const begin = db.query<{ submission_id: string | null }, Record<string, string | number>>(
    `INSERT INTO idempotency_keys (scope, key, fingerprint, state, status, headers, body, created_at_ms, expires_at_ms, lease_until_ms)
     VALUES ($scope, $key, $fingerprint, 'running', NULL, NULL, NULL, $now, $expires, $lease)
     ON CONFLICT (scope, key) DO UPDATE SET
       fingerprint = excluded.fingerprint, state = 'running', status = NULL, headers = NULL, body = NULL,
       submission_id = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN NULL ELSE idempotency_keys.submission_id END,
       created_at_ms = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN excluded.created_at_ms ELSE idempotency_keys.created_at_ms END,
       expires_at_ms = CASE WHEN idempotency_keys.expires_at_ms <= excluded.created_at_ms THEN excluded.expires_at_ms ELSE idempotency_keys.expires_at_ms END,
       lease_until_ms = excluded.lease_until_ms
     WHERE idempotency_keys.expires_at_ms <= excluded.created_at_ms
        OR (idempotency_keys.state = 'running' AND idempotency_keys.lease_until_ms <= excluded.created_at_ms
            AND idempotency_keys.fingerprint = excluded.fingerprint)
     RETURNING submission_id`,
  );
  const find = db.query<Record<string, unknown>, [string, string]>("SELECT * FROM idempotency_keys WHERE scope = ? AND key = ?");
  const complete = db.query("UPDATE idempotency_keys SET state = 'done', status = ?, headers = ?, body = ? WHERE scope = ? AND key = ? AND state = 'running'");
  const attach = db.query("UPDATE idempotency_keys SET submission_id = ? WHERE scope = ? AND key = ? AND state = 'running'");
  const reopen = db.query(
    `UPDATE idempotency_keys SET state = 'running', status = NULL, headers = NULL, body = NULL, lease_until_ms = $lease
     WHERE scope = $scope AND key = $key AND state = 'done' AND fingerprint = $fingerprint AND submission_id IS NOT NULL
       AND status = $status AND headers = $headers AND body = $body AND expires_at_ms > $now`,
  );
  const abandon = db.query("DELETE FROM idempotency_keys WHERE scope = ? AND key = ? AND state = 'running'");
  const prune = db.query("DELETE FROM idempotency_keys WHERE expires_at_ms <= ?");
  const endLeases = db.query("UPDATE idempotency_keys SET lease_until_ms = ?1 WHERE state = 'running' AND lease_until_ms > ?1");
  return {
    begin(record) {
      for (;;) {
        const started = begin.get({
          scope: record.scope,
          key: record.key,
          fingerprint: record.fingerprint,
          now: record.createdAtMs,
          expires: record.expiresAtMs,
          lease: record.leaseUntilMs,
        });
        if (started !== null) return Promise.resolve({ kind: "started", submissionId: started.submission_id ?? null });
        const held = find.get(record.scope, record.key);
        // Abandoned between the two statements (another connection): ask again.
        if (held !== null) return Promise.resolve({ kind: "exists", record: toIdempotencyRecord(held) });
      }
    },
    find(scope, key) {
      const held = find.get(scope, key);
      return Promise.resolve(held === null ? undefined : toIdempotencyRecord(held));
    },
    complete(scope, key, answer) {
      complete.run(answer.status, JSON.stringify(answer.headers), answer.body, scope, key);
      return Promise.resolve();
    },
    attach(scope, key, submissionId) {
      attach.run(submissionId, scope, key);
      return Promise.resolve();
    },
    reopen(scope, key, held) {
      const { answer } = held;
      const taken = reopen.run({
        scope,
        key,
        fingerprint: held.fingerprint,
        status: answer.status,
        headers: JSON.stringify(answer.headers),
        body: answer.body,
        now: held.nowMs,
        lease: held.leaseUntilMs,
      });
      return Promise.resolve(taken.changes === 1);
    },
    abandon(scope, key) {
      abandon.run(scope, key);
      return Promise.resolve();
    },
    prune: (nowMs) => Promise.resolve(prune.run(nowMs).changes),
    endLeases: (nowMs) => Promise.resolve(endLeases.run(nowMs).changes),
  };
}
