/** What SQLite and PostgreSQL share for the webhooks store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { ClaimedDelivery, DeliveryRecord, OutboxRow, WebhookEndpoint, WebhookEventType, WebhookTarget } from "../../ports/webhooks.ts";
import { outboxTables } from "./index_store.ts";

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
    // The endpoints with something pending, one index step each: a claim visits only those (pendingEndpointsSql).
    `CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at_ms) WHERE state = 'pending'`,
  ];
}

/** A stored row. */
export type WebhookRow = Record<string, unknown>;

export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

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

/**
 * The enabled endpoints with a delivery due at `now` (`id, account_id`): a walk over the endpoints that have pending
 * deliveries, one index step each, so a claim's cost follows them, not every endpoint. Before, each claim (twice a
 * second, and after every attempt) asked every enabled endpoint in turn: 10,000 idle endpoints, free to register, held
 * SQLite's one writer (and the service's event loop) about 100 ms a claim.
 */
export function pendingEndpointsSql(now: string, dialect: "sqlite" | "postgres"): string {
  // SQLite is told the walk's index and order (its planner otherwise sorted every pending row at each step).
  const walk = dialect === "sqlite" ? "INDEXED BY webhook_deliveries_pending" : "";
  const join = dialect === "sqlite" ? "CROSS JOIN" : "JOIN";
  return `WITH RECURSIVE pending(id) AS (
      SELECT (SELECT endpoint_id FROM webhook_deliveries ${walk} WHERE state = 'pending' ORDER BY endpoint_id LIMIT 1)
      UNION ALL
      SELECT (SELECT p.endpoint_id FROM webhook_deliveries p ${walk} WHERE p.state = 'pending' AND p.endpoint_id > pending.id ORDER BY p.endpoint_id LIMIT 1)
        FROM pending WHERE pending.id IS NOT NULL
    )
    SELECT e.id, e.account_id FROM pending ${join} webhook_endpoints e ON e.id = pending.id
     WHERE e.disabled = 0 AND EXISTS (SELECT 1 FROM webhook_deliveries n WHERE n.endpoint_id = e.id AND n.state = 'pending' AND n.next_attempt_at_ms <= ${now})`;
}

/** The SELECT of claimed deliveries with what sending them needs. */
export const CLAIMED_COLUMNS = `d.id, d.endpoint_id, d.message_id, d.attempts, e.url, e.secret, e.previous_secret, e.previous_secret_until_ms,
  m.type, m.body, m.created_at_ms AS message_created_at_ms`;
