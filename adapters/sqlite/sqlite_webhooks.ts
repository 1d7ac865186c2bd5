import type { Database } from "bun:sqlite";
import type { WebhookEndpoint, WebhookStore } from "../../ports/webhooks.ts";
import { CLAIMED_COLUMNS, type ClaimCandidate, type WebhookRow, deliveryId, endpointDueSql, fairClaims, leasedLoadSql, pendingEndpointsSql, toClaimCandidate, toClaimLoad, toClaimedDelivery, toDeliveryRecord, toOutboxRow, toTargets, toWebhookEndpoint, webhookTables } from "../sql/webhooks.ts";

/** Endpoints, their subjects and the targets of an event in the SQLite file. */
function webhookEndpoints(db: Database): Pick<WebhookStore, "create" | "list" | "get" | "update" | "remove" | "rotate" | "targets" | "accountEndpoints" | "anyEnabled"> {
  const accountUsage = db.query<{ endpoints: number; subjects: number }, [string, string]>(
    `SELECT COUNT(*) AS endpoints, (SELECT COUNT(*) FROM webhook_subjects WHERE account_id = ?1 AND endpoint_id <> ?2) AS subjects
       FROM webhook_endpoints WHERE account_id = ?1 AND id <> ?2`,
  );
  const insertEndpoint = db.query(
    `INSERT INTO webhook_endpoints (id, account_id, url, events, subjects, own_subjects, secret, previous_secret, previous_secret_until_ms,
                                    disabled, failing_since_ms, created_at_ms)
     VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, 0, NULL, ?)`,
  );
  const insertSubject = db.query("INSERT OR IGNORE INTO webhook_subjects (endpoint_id, account_id, subject_did) VALUES (?, ?, ?)");
  const dropSubjects = db.query("DELETE FROM webhook_subjects WHERE endpoint_id = ?");
  const getEndpoint = db.query<WebhookRow, [string, string]>("SELECT * FROM webhook_endpoints WHERE account_id = ? AND id = ?");

  const create = db.transaction((e: WebhookEndpoint, limits: { endpoints: number; subjects: number }) => {
    const usage = accountUsage.get(e.accountId, e.id)!;
    if (usage.endpoints >= limits.endpoints || usage.subjects + e.subjects.length > limits.subjects) return "limit" as const;
    insertEndpoint.run(e.id, e.accountId, e.url, JSON.stringify(e.events), JSON.stringify(e.subjects), e.ownSubjects ? 1 : 0, e.secret, e.createdAtMs);
    for (const s of e.subjects) insertSubject.run(e.id, e.accountId, s);
    return "created" as const;
  });

  const update = db.transaction((accountId: string, id: string, change: Parameters<WebhookStore["update"]>[2], limits: { subjects: number }) => {
    const row = getEndpoint.get(accountId, id);
    if (row === null) return undefined;
    if (change.subjects !== undefined) {
      if (accountUsage.get(accountId, id)!.subjects + change.subjects.length > limits.subjects) return "limit" as const;
      dropSubjects.run(id);
      for (const s of change.subjects) insertSubject.run(id, accountId, s);
    }
    const now = toWebhookEndpoint(row);
    const disabled = change.disabled ?? now.disabled;
    db.query(
      `UPDATE webhook_endpoints SET url = ?, events = ?, subjects = ?, own_subjects = ?, disabled = ?,
         failing_since_ms = CASE WHEN ? = 0 THEN NULL ELSE failing_since_ms END WHERE id = ?`,
    ).run(
      change.url ?? now.url,
      JSON.stringify(change.events ?? now.events),
      JSON.stringify(change.subjects ?? now.subjects),
      (change.ownSubjects ?? now.ownSubjects) ? 1 : 0,
      disabled ? 1 : 0,
      disabled ? 1 : 0,
      id,
    );
    if (disabled && !now.disabled) failPendingOf(db, id, Date.now());
    return toWebhookEndpoint(getEndpoint.get(accountId, id)!);
  });

  const remove = db.transaction((accountId: string, id: string) => {
    const gone = db.query("DELETE FROM webhook_endpoints WHERE account_id = ? AND id = ?").run(accountId, id).changes === 1;
    if (gone) {
      dropSubjects.run(id);
      db.query("DELETE FROM webhook_deliveries WHERE endpoint_id = ?").run(id);
    }
    return gone;
  });

  return {
    create: (endpoint, limits) => Promise.resolve(create.immediate(endpoint, limits)),
    list: (accountId) =>
      Promise.resolve(db.query<WebhookRow, [string]>("SELECT * FROM webhook_endpoints WHERE account_id = ? ORDER BY created_at_ms, id").all(accountId).map(toWebhookEndpoint)),
    get(accountId, id) {
      const row = getEndpoint.get(accountId, id);
      return Promise.resolve(row === null ? undefined : toWebhookEndpoint(row));
    },
    update: (accountId, id, change, limits) => Promise.resolve(update.immediate(accountId, id, change, limits)),
    remove: (accountId, id) => Promise.resolve(remove.immediate(accountId, id)),
    rotate(accountId, id, secret, previousUntilMs) {
      db.query(
        "UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until_ms = ?, secret = ? WHERE account_id = ? AND id = ?",
      ).run(previousUntilMs, secret, accountId, id);
      const row = getEndpoint.get(accountId, id);
      return Promise.resolve(row === null ? undefined : toWebhookEndpoint(row));
    },
    targets(subjectDid) {
      const owners = new Set(db.query<{ account_id: string }, [string]>("SELECT DISTINCT account_id FROM subjects WHERE canonical_did = ?").all(subjectDid).map((r) => r.account_id));
      const rows = db.query<WebhookRow, [string, string]>(
        `SELECT * FROM webhook_endpoints WHERE disabled = 0 AND (id IN (SELECT endpoint_id FROM webhook_subjects WHERE subject_did = ?)
           OR account_id IN (SELECT account_id FROM subjects WHERE canonical_did = ?))`,
      ).all(subjectDid, subjectDid);
      return Promise.resolve(toTargets(rows, subjectDid, owners));
    },
    accountEndpoints: (accountId) =>
      Promise.resolve(db.query<WebhookRow, [string]>("SELECT * FROM webhook_endpoints WHERE account_id = ? AND disabled = 0 ORDER BY created_at_ms, id").all(accountId).map(toWebhookEndpoint)),
    anyEnabled: () => Promise.resolve(db.query<{ one: number }, []>("SELECT 1 AS one FROM webhook_endpoints WHERE disabled = 0 LIMIT 1").get() !== null),
  };
}

/** The outbox, messages and deliveries in the SQLite file: claims are single-writer transactions with a lease. */
function webhookDeliveries(db: Database): Pick<WebhookStore, "outbox" | "publish" | "claim" | "record" | "deliveries" | "prune" | "stats"> {
  const insertMessage = db.query("INSERT OR IGNORE INTO webhook_messages (id, type, body, created_at_ms) VALUES (?, ?, ?, ?)");
  const insertDelivery = db.query(
    `INSERT OR IGNORE INTO webhook_deliveries (id, message_id, endpoint_id, state, attempts, next_attempt_at_ms, created_at_ms)
     VALUES (?, ?, ?, 'pending', 0, ?, ?)`,
  );
  // The round's consumed rows in one statement (one per row before: a statement a write on the follower's side).
  const consume = db.query("DELETE FROM webhook_outbox WHERE seq IN (SELECT value FROM json_each(?))");
  const publish = db.transaction((messages: Parameters<WebhookStore["publish"]>[0], deliveries: Parameters<WebhookStore["publish"]>[1], consumed: readonly number[]) => {
    const created = new Map<string, number>();
    for (const m of messages) {
      insertMessage.run(m.id, m.type, m.body, m.createdAtMs);
      created.set(m.id, m.createdAtMs);
    }
    for (const d of deliveries) {
      const at = created.get(d.messageId)!;
      insertDelivery.run(deliveryId(d.messageId, d.endpointId), d.messageId, d.endpointId, at, at);
    }
    if (consumed.length > 0) consume.run(JSON.stringify(consumed));
  });

  const leasedLoad = db.query<WebhookRow, [number]>(leasedLoadSql("?", "INDEXED BY webhook_deliveries_leased"));
  const dueEndpoints = db.query<{ id: string; account_id: string }, [number]>(pendingEndpointsSql("?1", "sqlite"));
  const endpointDue = db.query<WebhookRow, [string, number, number, string]>(
    `SELECT n.id, n.endpoint_id, ?4 AS account_id, n.next_attempt_at_ms, n.created_at_ms FROM webhook_deliveries n
      WHERE n.endpoint_id = ?1 AND ${endpointDueSql("?2")} LIMIT ?3`,
  );
  const claim = db.transaction((holder: string, nowMs: number, leaseMs: number, limit: number, perEndpoint: number, perAccount: number) => {
    // Each endpoint with something due, its oldest few through its index (a seek per endpoint with room): a backlog
    // costs nothing, and an endpoint with nothing pending is not visited.
    const load = toClaimLoad(leasedLoad.all(nowMs));
    const candidates: ClaimCandidate[] = [];
    for (const e of dueEndpoints.all(nowMs)) {
      const room = perEndpoint - (load.endpoints.get(e.id) ?? 0);
      if (room <= 0 || (load.accounts.get(e.account_id) ?? 0) >= perAccount) continue;
      for (const row of endpointDue.all(e.id, nowMs, room, e.account_id)) candidates.push(toClaimCandidate(row));
    }
    const picked = fairClaims(candidates, load, { limit, perEndpoint, perAccount });
    const take = db.query("UPDATE webhook_deliveries SET lease_holder = ?, lease_until_ms = ? WHERE id = ?");
    for (const id of picked) take.run(holder, nowMs + leaseMs, id);
    if (picked.length === 0) return [];
    return db.query<WebhookRow, string[]>(
      `SELECT ${CLAIMED_COLUMNS} FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN webhook_messages m ON m.id = d.message_id WHERE d.id IN (${picked.map(() => "?").join(", ")})`,
    ).all(...picked).map(toClaimedDelivery).sort((a, b) => picked.indexOf(a.id) - picked.indexOf(b.id));
  });

  const record = db.transaction((id: string, holder: string, outcome: Parameters<WebhookStore["record"]>[2], nowMs: number, disableAfterMs: number) => {
    const row = db.query<{ endpoint_id: string }, [string, string]>(
      "SELECT endpoint_id FROM webhook_deliveries WHERE id = ? AND lease_holder = ? AND state = 'pending'",
    ).get(id, holder);
    if (row === null) return;
    db.query(
      `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ?, state = ?, next_attempt_at_ms = ?, delivered_at_ms = ?,
         failed_at_ms = ?, lease_holder = NULL, lease_until_ms = NULL WHERE id = ?`,
    ).run(
      outcome.status,
      outcome.state === "retry" ? "pending" : outcome.state,
      outcome.state === "retry" ? outcome.nextAttemptAtMs : null,
      outcome.state === "delivered" ? nowMs : null,
      outcome.state === "failed" ? nowMs : null,
      id,
    );
    if (outcome.state === "delivered") {
      db.query("UPDATE webhook_endpoints SET failing_since_ms = NULL WHERE id = ? AND failing_since_ms IS NOT NULL").run(row.endpoint_id);
    } else if (!(outcome.state === "failed" && outcome.skipped === true)) {
      db.query("UPDATE webhook_endpoints SET failing_since_ms = COALESCE(failing_since_ms, ?) WHERE id = ?").run(nowMs, row.endpoint_id);
      // Disabled only by a delivery that failed for good (its retries spent), so one failed attempt after a quiet spell
      // no longer disables an endpoint whose retry would have been answered.
      if (outcome.state === "failed") {
        const disabled = db.query("UPDATE webhook_endpoints SET disabled = 1 WHERE id = ? AND disabled = 0 AND failing_since_ms <= ?").run(row.endpoint_id, nowMs - disableAfterMs);
        if (disabled.changes > 0) failPendingOf(db, row.endpoint_id, nowMs);
      }
    }
    // An attempt recorded after its endpoint was disabled (it was leased then) is not retried.
    db.query(
      `UPDATE webhook_deliveries SET state = 'failed', failed_at_ms = ?, next_attempt_at_ms = NULL WHERE id = ? AND state = 'pending'
         AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = ? AND e.disabled = 1)`,
    ).run(nowMs, id, row.endpoint_id);
  });

  return {
    outbox: (limit, chainIds) => Promise.resolve((chainIds === undefined
      ? db.query<WebhookRow, [number]>("SELECT * FROM webhook_outbox ORDER BY seq LIMIT ?").all(limit)
      : db.query<WebhookRow, [string, number]>("SELECT * FROM webhook_outbox WHERE chain_id IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?")
        .all(JSON.stringify(chainIds), limit)).map(toOutboxRow)),
    publish: (messages, deliveries, consumed) => Promise.resolve(publish.immediate(messages, deliveries, consumed)),
    claim: (holder, nowMs, leaseMs, limit, perEndpoint, perAccount) => Promise.resolve(claim.immediate(holder, nowMs, leaseMs, limit, perEndpoint, perAccount)),
    record: (id, holder, outcome, nowMs, disableAfterMs) => Promise.resolve(record.immediate(id, holder, outcome, nowMs, disableAfterMs)),
    deliveries(endpointId, page) {
      const after = page.after;
      const rows = after === undefined
        ? db.query<WebhookRow, [string, number]>(
          `SELECT d.*, m.type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id WHERE d.endpoint_id = ?
            ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ?`,
        ).all(endpointId, page.limit)
        : db.query<WebhookRow, [string, number, number, string, number]>(
          `SELECT d.*, m.type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id WHERE d.endpoint_id = ?
              AND (d.created_at_ms < ? OR (d.created_at_ms = ? AND d.id < ?))
            ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ?`,
        ).all(endpointId, after.createdAtMs, after.createdAtMs, after.id, page.limit);
      return Promise.resolve(rows.map(toDeliveryRecord));
    },
    prune(beforeMs) {
      return Promise.resolve(db.transaction(() => {
        // Pending deliveries of a disabled endpoint (left by a version before they were failed at disabling) go too.
        const gone = db.query(
          `DELETE FROM webhook_deliveries WHERE created_at_ms < ? AND (state IN ('delivered', 'failed')
             OR endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled = 1))`,
        ).run(beforeMs).changes;
        db.query(
          "DELETE FROM webhook_messages WHERE created_at_ms < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = webhook_messages.id)",
        ).run(beforeMs);
        return gone;
      }).immediate());
    },
    stats(nowMs) {
      const row = db.query<{ n: number; oldest: number | null }, []>(
        `SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM webhook_deliveries
          WHERE state = 'pending' AND endpoint_id NOT IN (SELECT id FROM webhook_endpoints WHERE disabled = 1)`,
      ).get()!;
      const outbox = db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM webhook_outbox").get()!;
      return Promise.resolve({ pending: row.n + outbox.n, oldestPendingMs: row.oldest === null ? null : nowMs - row.oldest });
    },
  };
}

/**
 * A disabled endpoint is sent nothing more: its deliveries still pending are failed (kept 30 days, then pruned), those
 * leased now by the record of their attempt (one whose holder died is pruned with the settled ones after 30 days).
 * Before, they stayed pending for good, counted in the queue's depth.
 */
function failPendingOf(db: Database, endpointId: string, nowMs: number): void {
  db.query(
    `UPDATE webhook_deliveries SET state = 'failed', failed_at_ms = ?, next_attempt_at_ms = NULL
      WHERE endpoint_id = ? AND state = 'pending' AND lease_holder IS NULL`,
  ).run(nowMs, endpointId);
}

/** Webhook endpoints, messages and deliveries in the service's SQLite file; claims are single-writer transactions with a lease. */
export function createSqliteWebhooks(db: Database): WebhookStore {
  db.transaction(() => {
    for (const statement of webhookTables("INTEGER")) db.exec(statement);
  }).immediate();

  return {
    ...webhookEndpoints(db),
    ...webhookDeliveries(db),
  };
}
