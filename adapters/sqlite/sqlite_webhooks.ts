import type { Database } from "bun:sqlite";
import type {
  ClaimedDelivery,
  DeliveryRecord,
  OutboxRow,
  WebhookEndpoint,
  WebhookEventType,
  WebhookStore,
  WebhookTarget,
} from "../../ports/webhooks.ts";
import { outboxTables } from "./sqlite_index_store.ts";

/** The webhook tables (decisions §22) besides the outbox (the index's, see sqlite_index_store.ts). */
export function webhookTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    ...outboxTables(bigint),
    `CREATE TABLE IF NOT EXISTS webhook_endpoints (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       url TEXT NOT NULL,
       events TEXT NOT NULL,
       subjects TEXT NOT NULL,
       own_subjects INTEGER NOT NULL,
       secret TEXT NOT NULL,
       previous_secret TEXT,
       previous_secret_until_ms ${bigint},
       disabled INTEGER NOT NULL DEFAULT 0,
       failing_since_ms ${bigint},
       created_at_ms ${bigint} NOT NULL
     )`,
    `CREATE INDEX IF NOT EXISTS webhook_endpoints_account ON webhook_endpoints (account_id, created_at_ms)`,
    `CREATE TABLE IF NOT EXISTS webhook_subjects (
       endpoint_id TEXT NOT NULL,
       account_id TEXT NOT NULL,
       subject_did TEXT NOT NULL,
       PRIMARY KEY (endpoint_id, subject_did)
     )`,
    `CREATE INDEX IF NOT EXISTS webhook_subjects_did ON webhook_subjects (subject_did)`,
    `CREATE INDEX IF NOT EXISTS subjects_canonical_did ON subjects (canonical_did)`,
    `CREATE TABLE IF NOT EXISTS webhook_messages (
       id TEXT PRIMARY KEY,
       type TEXT NOT NULL,
       body TEXT NOT NULL,
       created_at_ms ${bigint} NOT NULL
     )`,
    `CREATE TABLE IF NOT EXISTS webhook_deliveries (
       id TEXT PRIMARY KEY,
       message_id TEXT NOT NULL,
       endpoint_id TEXT NOT NULL,
       state TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       last_status INTEGER,
       next_attempt_at_ms ${bigint},
       delivered_at_ms ${bigint},
       failed_at_ms ${bigint},
       created_at_ms ${bigint} NOT NULL,
       lease_holder TEXT,
       lease_until_ms ${bigint}
     )`,
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at_ms)`,
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at_ms, id)`,
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_message ON webhook_deliveries (message_id)`,
    // The deliveries in flight (a claim's lease), counted per endpoint by every claim.
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_leased ON webhook_deliveries (endpoint_id, lease_until_ms) WHERE lease_until_ms IS NOT NULL`,
    `CREATE INDEX IF NOT EXISTS webhook_messages_created ON webhook_messages (created_at_ms)`,
    // Each endpoint's due deliveries, oldest first: a claim reads the first few of each endpoint (issue 43).
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, state, next_attempt_at_ms, created_at_ms, id)`,
  ];
}

/** A stored row. */
export type WebhookRow = Record<string, unknown>;

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** An endpoint row as the port's endpoint. */
export function toWebhookEndpoint(row: WebhookRow): WebhookEndpoint {
  return {
    id: String(row.id),
    accountId: String(row.account_id),
    url: String(row.url),
    events: JSON.parse(String(row.events)) as WebhookEventType[],
    subjects: JSON.parse(String(row.subjects)) as string[],
    ownSubjects: Number(row.own_subjects) === 1,
    secret: String(row.secret),
    previousSecret: (row.previous_secret as string | null) ?? null,
    previousSecretUntilMs: numOrNull(row.previous_secret_until_ms),
    disabled: Number(row.disabled) === 1,
    failingSinceMs: numOrNull(row.failing_since_ms),
    createdAtMs: Number(row.created_at_ms),
  };
}

/** A delivery row as the account's list shows it. */
export function toDeliveryRecord(row: WebhookRow): DeliveryRecord {
  return {
    id: String(row.id),
    eventId: String(row.message_id),
    type: String(row.type) as WebhookEventType,
    attempts: Number(row.attempts),
    lastStatus: numOrNull(row.last_status),
    nextAttemptAtMs: numOrNull(row.next_attempt_at_ms),
    deliveredAtMs: numOrNull(row.delivered_at_ms),
    failedAtMs: numOrNull(row.failed_at_ms),
    createdAtMs: Number(row.created_at_ms),
  };
}

/** A claimed delivery row (joined with its endpoint and message). */
export function toClaimedDelivery(row: WebhookRow): ClaimedDelivery {
  return {
    id: String(row.id),
    endpointId: String(row.endpoint_id),
    url: String(row.url),
    secret: String(row.secret),
    previousSecret: (row.previous_secret as string | null) ?? null,
    previousSecretUntilMs: numOrNull(row.previous_secret_until_ms),
    message: { id: String(row.message_id), type: String(row.type) as WebhookEventType, body: String(row.body), createdAtMs: Number(row.message_created_at_ms) },
    attempts: Number(row.attempts),
  };
}

/** An outbox row. */
export function toOutboxRow(row: WebhookRow): OutboxRow {
  return {
    seq: Number(row.seq),
    kind: row.kind === "revoked" ? "revoked" : "attested",
    uid: String(row.uid),
    blockNumber: BigInt(String(row.block_number)),
    txHash: (row.tx_hash as string | null) ?? null,
    chainId: Number(row.chain_id),
    eas: String(row.eas).toLowerCase(),
  };
}

/** The targets of a subject from the endpoints that watch it or whose account owns it. */
export function toTargets(rows: readonly WebhookRow[], subjectDid: string, owners: ReadonlySet<string>): WebhookTarget[] {
  return rows.map((row) => {
    const endpoint = toWebhookEndpoint(row);
    const owned = owners.has(endpoint.accountId);
    return {
      endpointId: endpoint.id,
      accountId: endpoint.accountId,
      events: endpoint.events,
      owned,
      watched: endpoint.subjects.includes(subjectDid) || (endpoint.ownSubjects && owned),
    };
  });
}

/** The delivery of a message to an endpoint: one per pair. */
export const deliveryId = (messageId: string, endpointId: string) => `${messageId}.${endpointId}`;

/** A due delivery a claim may take: one of the oldest few of its endpoint. */
export type ClaimCandidate = {
  readonly id: string;
  readonly endpointId: string;
  readonly accountId: string;
  readonly nextAttemptAtMs: number;
  readonly createdAtMs: number;
};

/** What each endpoint and each account holds in flight now (every holder's leases). */
export type ClaimLoad = { readonly endpoints: ReadonlyMap<string, number>; readonly accounts: ReadonlyMap<string, number> };

/**
 * The candidates a claim takes (issue 43), in order: at most what each endpoint (`perEndpoint`) and each account
 * (`perAccount`) may still hold in flight, in a fair order: every account's next slot before any account's slot after
 * it (the account with fewer in flight first), within an account each endpoint's next before any endpoint's second,
 * then the oldest. One account's backlog or its slow endpoints therefore hide no other account's due delivery.
 */
export function fairClaims(
  candidates: readonly ClaimCandidate[],
  load: ClaimLoad,
  bounds: { readonly limit: number; readonly perEndpoint: number; readonly perAccount: number },
): string[] {
  const age = (a: ClaimCandidate, b: ClaimCandidate) =>
    a.nextAttemptAtMs - b.nextAttemptAtMs || a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const endpointRank = new Map<string, number>();
  const ranked = [...candidates].sort(age).flatMap((c) => {
    const rank = (endpointRank.get(c.endpointId) ?? 0) + 1;
    endpointRank.set(c.endpointId, rank);
    return rank + (load.endpoints.get(c.endpointId) ?? 0) <= bounds.perEndpoint ? [{ c, rank }] : [];
  });
  ranked.sort((a, b) => a.rank - b.rank || age(a.c, b.c));
  const accountRank = new Map<string, number>();
  const fits = ranked.flatMap(({ c }) => {
    const rank = (accountRank.get(c.accountId) ?? 0) + 1;
    accountRank.set(c.accountId, rank);
    const slot = rank + (load.accounts.get(c.accountId) ?? 0);
    return slot <= bounds.perAccount ? [{ c, slot }] : [];
  });
  fits.sort((a, b) => a.slot - b.slot || age(a.c, b.c));
  return fits.slice(0, bounds.limit).map(({ c }) => c.id);
}

/**
 * The SELECT of what each endpoint (and its account) holds in flight at `now` (the placeholder), read through the
 * partial index of leased rows (`hint`: SQLite's `INDEXED BY`, or its planner scans every pending row of a backlog).
 */
export function leasedLoadSql(now: string, hint = ""): string {
  return `SELECT d.endpoint_id, e.account_id, COUNT(*) AS n FROM webhook_deliveries d ${hint} JOIN webhook_endpoints e ON e.id = d.endpoint_id
           WHERE d.lease_until_ms > ${now} AND d.state = 'pending' GROUP BY d.endpoint_id, e.account_id`;
}

/** The load of {@link leasedLoadSql}'s rows. */
export function toClaimLoad(rows: readonly WebhookRow[]): ClaimLoad {
  const endpoints = new Map<string, number>();
  const accounts = new Map<string, number>();
  for (const row of rows) {
    endpoints.set(String(row.endpoint_id), Number(row.n));
    accounts.set(String(row.account_id), (accounts.get(String(row.account_id)) ?? 0) + Number(row.n));
  }
  return { endpoints, accounts };
}

/** A candidate row (`id, endpoint_id, account_id, next_attempt_at_ms, created_at_ms`). */
export function toClaimCandidate(row: WebhookRow): ClaimCandidate {
  return {
    id: String(row.id),
    endpointId: String(row.endpoint_id),
    accountId: String(row.account_id),
    nextAttemptAtMs: Number(row.next_attempt_at_ms),
    createdAtMs: Number(row.created_at_ms),
  };
}

/** The WHERE and ORDER of an endpoint's due deliveries, oldest first (`webhook_deliveries_endpoint_due`), `now` a placeholder. */
export function endpointDueSql(now: string): string {
  return `n.state = 'pending' AND n.next_attempt_at_ms <= ${now} AND (n.lease_until_ms IS NULL OR n.lease_until_ms <= ${now})
           ORDER BY n.next_attempt_at_ms, n.created_at_ms, n.id`;
}

/** The SELECT of claimed deliveries with what sending them needs. */
export const CLAIMED_COLUMNS = `d.id, d.endpoint_id, d.message_id, d.attempts, e.url, e.secret, e.previous_secret, e.previous_secret_until_ms,
  m.type, m.body, m.created_at_ms AS message_created_at_ms`;

/** Webhook endpoints, messages and deliveries in the service's SQLite file; claims are single-writer transactions with a lease. */
export function createSqliteWebhooks(db: Database): WebhookStore {
  db.transaction(() => {
    for (const statement of webhookTables("INTEGER")) db.exec(statement);
  }).immediate();

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

  const insertMessage = db.query("INSERT OR IGNORE INTO webhook_messages (id, type, body, created_at_ms) VALUES (?, ?, ?, ?)");
  const insertDelivery = db.query(
    `INSERT OR IGNORE INTO webhook_deliveries (id, message_id, endpoint_id, state, attempts, next_attempt_at_ms, created_at_ms)
     VALUES (?, ?, ?, 'pending', 0, ?, ?)`,
  );
  const consume = db.query("DELETE FROM webhook_outbox WHERE seq = ?");
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
    for (const seq of consumed) consume.run(seq);
  });

  const leasedLoad = db.query<WebhookRow, [number]>(leasedLoadSql("?", "INDEXED BY webhook_deliveries_leased"));
  const enabledEndpoints = db.query<{ id: string; account_id: string }, []>("SELECT id, account_id FROM webhook_endpoints WHERE disabled = 0");
  const endpointDue = db.query<WebhookRow, [string, number, number, string]>(
    `SELECT n.id, n.endpoint_id, ?4 AS account_id, n.next_attempt_at_ms, n.created_at_ms FROM webhook_deliveries n
      WHERE n.endpoint_id = ?1 AND ${endpointDueSql("?2")} LIMIT ?3`,
  );
  const claim = db.transaction((holder: string, nowMs: number, leaseMs: number, limit: number, perEndpoint: number, perAccount: number) => {
    // Each endpoint's oldest few through its index (an index seek per endpoint with room): a backlog costs nothing.
    const load = toClaimLoad(leasedLoad.all(nowMs));
    const candidates: ClaimCandidate[] = [];
    for (const e of enabledEndpoints.all()) {
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
    } else {
      db.query("UPDATE webhook_endpoints SET failing_since_ms = COALESCE(failing_since_ms, ?) WHERE id = ?").run(nowMs, row.endpoint_id);
      db.query("UPDATE webhook_endpoints SET disabled = 1 WHERE id = ? AND failing_since_ms <= ?").run(row.endpoint_id, nowMs - disableAfterMs);
    }
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
    outbox: (limit) => Promise.resolve(db.query<WebhookRow, [number]>("SELECT * FROM webhook_outbox ORDER BY seq LIMIT ?").all(limit).map(toOutboxRow)),
    publish: (messages, deliveries, consumed) => Promise.resolve(publish.immediate(messages, deliveries, consumed)),
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
        const gone = db.query("DELETE FROM webhook_deliveries WHERE state IN ('delivered', 'failed') AND created_at_ms < ?").run(beforeMs).changes;
        db.query(
          "DELETE FROM webhook_messages WHERE created_at_ms < ? AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = webhook_messages.id)",
        ).run(beforeMs);
        return gone;
      }).immediate());
    },
    stats(nowMs) {
      const row = db.query<{ n: number; oldest: number | null }, []>(
        "SELECT COUNT(*) AS n, MIN(created_at_ms) AS oldest FROM webhook_deliveries WHERE state = 'pending'",
      ).get()!;
      const outbox = db.query<{ n: number }, []>("SELECT COUNT(*) AS n FROM webhook_outbox").get()!;
      return Promise.resolve({ pending: row.n + outbox.n, oldestPendingMs: row.oldest === null ? null : nowMs - row.oldest });
    },
  };
}
