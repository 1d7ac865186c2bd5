import type { SQL } from "bun";
import type { WebhookStore } from "../../ports/webhooks.ts";
import { CLAIMED_COLUMNS, deliveryId, endpointDueSql, fairClaims, leasedLoadSql, pendingEndpointsSql, toClaimCandidate, toClaimLoad, toClaimedDelivery, toDeliveryRecord, toOutboxRow, toTargets, toWebhookEndpoint, webhookTables, type WebhookRow } from "../sql/webhooks.ts";

/** The webhook tables in PostgreSQL words. */
export const WEBHOOK_TABLES = webhookTables("BIGINT");

/** Serializes one account's endpoint writes across instances (its limits are counted under it). */
const WEBHOOK_ACCOUNT_LOCK = 7_240_035;
/**
 * Serializes claims across instances (issue 43): a claim counts what every endpoint and every account holds in flight
 * and takes leases within both bounds, which two claims counting at once could pass together.
 */
const WEBHOOK_CLAIM_LOCK = 7_240_036;

type Row = WebhookRow;

/** Endpoints, their subjects and the targets of an event in PostgreSQL. */
function webhookEndpoints(sql: SQL): Pick<WebhookStore, "create" | "list" | "get" | "update" | "remove" | "rotate" | "targets" | "accountEndpoints" | "anyEnabled"> {
  const usage = async (tx: SQL, accountId: string, exceptId: string) => {
    const [row]: Row[] = await tx`
      SELECT (SELECT COUNT(*) FROM webhook_endpoints WHERE account_id = ${accountId} AND id <> ${exceptId}) AS endpoints,
             (SELECT COUNT(*) FROM webhook_subjects WHERE account_id = ${accountId} AND endpoint_id <> ${exceptId}) AS subjects`;
    return { endpoints: Number(row!.endpoints), subjects: Number(row!.subjects) };
  };
  const lockAccount = (tx: SQL, accountId: string) => tx`SELECT pg_advisory_xact_lock(${WEBHOOK_ACCOUNT_LOCK}, hashtext(${accountId}))`;
  const setSubjects = async (tx: SQL, endpointId: string, accountId: string, subjects: readonly string[]) => {
    await tx`DELETE FROM webhook_subjects WHERE endpoint_id = ${endpointId}`;
    if (subjects.length === 0) return;
    const rows = subjects.map((s) => ({ endpoint_id: endpointId, account_id: accountId, subject_did: s }));
    await tx`INSERT INTO webhook_subjects ${tx(rows)} ON CONFLICT DO NOTHING`;
  };
  const getEndpoint = async (db: SQL, accountId: string, id: string) => {
    const [row]: Row[] = await db`SELECT * FROM webhook_endpoints WHERE account_id = ${accountId} AND id = ${id}`;
    return row === undefined ? undefined : toWebhookEndpoint(row);
  };

  return {
    create: (e, limits) =>
      sql.begin(async (tx) => {
        await lockAccount(tx, e.accountId);
        const now = await usage(tx, e.accountId, e.id);
        if (now.endpoints >= limits.endpoints || now.subjects + e.subjects.length > limits.subjects) return "limit" as const;
        await tx`INSERT INTO webhook_endpoints (id, account_id, url, events, subjects, own_subjects, secret, disabled, created_at_ms)
                 VALUES (${e.id}, ${e.accountId}, ${e.url}, ${JSON.stringify(e.events)}, ${JSON.stringify(e.subjects)}, ${e.ownSubjects ? 1 : 0},
                         ${e.secret}, 0, ${e.createdAtMs})`;
        await setSubjects(tx, e.id, e.accountId, e.subjects);
        return "created" as const;
      }),
    async list(accountId) {
      const rows: Row[] = await sql`SELECT * FROM webhook_endpoints WHERE account_id = ${accountId} ORDER BY created_at_ms, id`;
      return rows.map(toWebhookEndpoint);
    },
    get: (accountId, id) => getEndpoint(sql, accountId, id),
    update: (accountId, id, change, limits) =>
      sql.begin(async (tx) => {
        await lockAccount(tx, accountId);
        const now = await getEndpoint(tx, accountId, id);
        if (now === undefined) return undefined;
        if (change.subjects !== undefined) {
          if ((await usage(tx, accountId, id)).subjects + change.subjects.length > limits.subjects) return "limit" as const;
          await setSubjects(tx, id, accountId, change.subjects);
        }
        const disabled = change.disabled ?? now.disabled;
        await tx`UPDATE webhook_endpoints SET url = ${change.url ?? now.url}, events = ${JSON.stringify(change.events ?? now.events)},
                   subjects = ${JSON.stringify(change.subjects ?? now.subjects)}, own_subjects = ${(change.ownSubjects ?? now.ownSubjects) ? 1 : 0},
                   disabled = ${disabled ? 1 : 0}, failing_since_ms = CASE WHEN ${disabled ? 1 : 0} = 0 THEN NULL ELSE failing_since_ms END
                 WHERE id = ${id}`;
        if (disabled && !now.disabled) await failPendingOf(tx, id, Date.now());
        return await getEndpoint(tx, accountId, id);
      }),
    remove: (accountId, id) =>
      sql.begin(async (tx) => {
        if ((await getEndpoint(tx, accountId, id)) === undefined) return false;
        // Deliveries before their endpoint: the order a claim and a record lock them in.
        await tx`DELETE FROM webhook_deliveries WHERE endpoint_id = ${id}`;
        await tx`DELETE FROM webhook_subjects WHERE endpoint_id = ${id}`;
        const gone = await tx`DELETE FROM webhook_endpoints WHERE account_id = ${accountId} AND id = ${id} RETURNING id`;
        return gone.length === 1;
      }),
    async rotate(accountId, id, secret, previousUntilMs) {
      const rows: Row[] = await sql`UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until_ms = ${previousUntilMs}, secret = ${secret}
                                     WHERE account_id = ${accountId} AND id = ${id} RETURNING *`;
      return rows[0] === undefined ? undefined : toWebhookEndpoint(rows[0]);
    },
    async targets(subjectDid) {
      // No stored subject holds U+0000, which PostgreSQL's text refuses: one sent failed the fan-out's round for good.
      if (subjectDid.includes("\u0000")) return toTargets([], subjectDid, new Set());
      const owners: Row[] = await sql`SELECT DISTINCT account_id FROM subjects WHERE canonical_did = ${subjectDid}`;
      const rows: Row[] = await sql`
        SELECT * FROM webhook_endpoints WHERE disabled = 0 AND (id IN (SELECT endpoint_id FROM webhook_subjects WHERE subject_did = ${subjectDid})
           OR account_id IN (SELECT account_id FROM subjects WHERE canonical_did = ${subjectDid}))`;
      return toTargets(rows, subjectDid, new Set(owners.map((r) => String(r.account_id))));
    },
    async accountEndpoints(accountId) {
      const rows: Row[] = await sql`SELECT * FROM webhook_endpoints WHERE account_id = ${accountId} AND disabled = 0 ORDER BY created_at_ms, id`;
      return rows.map(toWebhookEndpoint);
    },
    async anyEnabled() {
      const rows: Row[] = await sql`SELECT 1 AS one FROM webhook_endpoints WHERE disabled = 0 LIMIT 1`;
      return rows.length > 0;
    },
  };
}

/** The outbox, messages and deliveries in PostgreSQL: claims one at a time under an advisory lock. */
function webhookDeliveries(sql: SQL): Pick<WebhookStore, "outbox" | "publish" | "claim" | "record" | "deliveries" | "prune" | "stats"> {
  return {
    async outbox(limit, chainIds) {
      const rows: Row[] = chainIds === undefined
        ? await sql`SELECT * FROM webhook_outbox ORDER BY seq LIMIT ${limit}`
        : await sql`SELECT * FROM webhook_outbox WHERE chain_id = ANY(${sql.array(chainIds.map(String), "BIGINT")}) ORDER BY seq LIMIT ${limit}`;
      return rows.map(toOutboxRow);
    },
    publish: (messages, deliveries, consumed) =>
      sql.begin(async (tx) => {
        const created = new Map(messages.map((m) => [m.id, m.createdAtMs]));
        if (messages.length > 0) {
          await tx`INSERT INTO webhook_messages ${tx(messages.map((m) => ({ id: m.id, type: m.type, body: m.body, created_at_ms: m.createdAtMs })))}
                   ON CONFLICT DO NOTHING`;
        }
        for (let i = 0; i < deliveries.length; i += 500) {
          const rows = deliveries.slice(i, i + 500).map((d) => ({
            id: deliveryId(d.messageId, d.endpointId),
            message_id: d.messageId,
            endpoint_id: d.endpointId,
            state: "pending",
            attempts: 0,
            next_attempt_at_ms: created.get(d.messageId)!,
            created_at_ms: created.get(d.messageId)!,
          }));
          await tx`INSERT INTO webhook_deliveries ${tx(rows)} ON CONFLICT DO NOTHING`;
        }
        if (consumed.length > 0) await tx`DELETE FROM webhook_outbox WHERE seq = ANY(${sql.array(consumed.map(String), "BIGINT")})`;
      }),
    claim: (holder, nowMs, leaseMs, limit, perEndpoint, perAccount) =>
      sql.begin(async (tx) => {
        // One claim at a time for the deployment (a claim is a few statements): the bounds per endpoint and per
        // account hold across instances. Rows a record or a removal holds right now are skipped, not waited for.
        await tx`SELECT pg_advisory_xact_lock(${WEBHOOK_CLAIM_LOCK})`;
        // Each enabled endpoint's oldest few through its index (a backlog costs nothing), then the fair pick.
        const load = toClaimLoad(await tx.unsafe(leasedLoadSql("$1"), [nowMs]));
        // Only the endpoints with something due are visited (pendingEndpointsSql), not every enabled one.
        const candidates: Row[] = await tx.unsafe(
          `SELECT d.id, e.id AS endpoint_id, e.account_id, d.next_attempt_at_ms, d.created_at_ms
             FROM (${pendingEndpointsSql("$1", "postgres")}) e CROSS JOIN LATERAL (
               SELECT n.id, n.next_attempt_at_ms, n.created_at_ms FROM webhook_deliveries n
                WHERE n.endpoint_id = e.id AND ${endpointDueSql("$1")} LIMIT $2) d`,
          [nowMs, perEndpoint],
        );
        const order = fairClaims(candidates.map(toClaimCandidate), load, { limit, perEndpoint, perAccount });
        if (order.length === 0) return [];
        const lockedRows: Row[] = await tx`SELECT id FROM webhook_deliveries WHERE id = ANY(${sql.array(order, "TEXT")}) FOR UPDATE SKIP LOCKED`;
        const locked = new Set(lockedRows.map((r) => String(r.id)));
        const picked = order.filter((id) => locked.has(id));
        if (picked.length === 0) return [];
        await tx`UPDATE webhook_deliveries SET lease_holder = ${holder}, lease_until_ms = ${nowMs + leaseMs} WHERE id = ANY(${sql.array(picked, "TEXT")})`;
        const rows: Row[] = await tx.unsafe(
          `SELECT ${CLAIMED_COLUMNS} FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
             JOIN webhook_messages m ON m.id = d.message_id WHERE d.id = ANY($1::TEXT[])`,
          [picked],
        );
        return rows.map(toClaimedDelivery).sort((a, b) => picked.indexOf(a.id) - picked.indexOf(b.id));
      }),
    record: (id, holder, outcome, nowMs, disableAfterMs) =>
      sql.begin(async (tx) => {
        const [row]: Row[] = await tx`SELECT endpoint_id FROM webhook_deliveries WHERE id = ${id} AND lease_holder = ${holder} AND state = 'pending' FOR UPDATE`;
        if (row === undefined) return;
        await tx`UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = ${outcome.status},
                   state = ${outcome.state === "retry" ? "pending" : outcome.state},
                   next_attempt_at_ms = ${outcome.state === "retry" ? outcome.nextAttemptAtMs : null},
                   delivered_at_ms = ${outcome.state === "delivered" ? nowMs : null},
                   failed_at_ms = ${outcome.state === "failed" ? nowMs : null}, lease_holder = NULL, lease_until_ms = NULL
                 WHERE id = ${id}`;
        const endpoint = String(row.endpoint_id);
        if (outcome.state === "delivered") {
          await tx`UPDATE webhook_endpoints SET failing_since_ms = NULL WHERE id = ${endpoint} AND failing_since_ms IS NOT NULL`;
        } else if (!(outcome.state === "failed" && outcome.skipped === true)) {
          await tx`UPDATE webhook_endpoints SET failing_since_ms = COALESCE(failing_since_ms, ${nowMs}) WHERE id = ${endpoint}`;
          // Disabled only by a delivery that failed for good (its retries spent): one failed attempt after a quiet spell
          // no longer disables an endpoint whose retry would have been answered.
          if (outcome.state === "failed") {
            const disabled = await tx`UPDATE webhook_endpoints SET disabled = 1 WHERE id = ${endpoint} AND disabled = 0
                                       AND failing_since_ms <= ${nowMs - disableAfterMs} RETURNING id`;
            if (disabled.length > 0) await failPendingOf(tx, endpoint, nowMs);
          }
        }
        // An attempt recorded after its endpoint was disabled (it was leased then) is not retried.
        await tx`UPDATE webhook_deliveries SET state = 'failed', failed_at_ms = ${nowMs}, next_attempt_at_ms = NULL
                   WHERE id = ${id} AND state = 'pending' AND EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.id = ${endpoint} AND e.disabled = 1)`;
      }),
    async deliveries(endpointId, page) {
      const after = page.after;
      const rows: Row[] = after === undefined
        ? await sql`SELECT d.*, m.type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id WHERE d.endpoint_id = ${endpointId}
                     ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ${page.limit}`
        : await sql`SELECT d.*, m.type FROM webhook_deliveries d JOIN webhook_messages m ON m.id = d.message_id WHERE d.endpoint_id = ${endpointId}
                       AND (d.created_at_ms < ${after.createdAtMs} OR (d.created_at_ms = ${after.createdAtMs} AND d.id < ${after.id}))
                     ORDER BY d.created_at_ms DESC, d.id DESC LIMIT ${page.limit}`;
      return rows.map(toDeliveryRecord);
    },
    prune: (beforeMs) =>
      sql.begin(async (tx) => {
        // Pending deliveries of a disabled endpoint (left by a version before they were failed at disabling) go too.
        const gone = await tx`DELETE FROM webhook_deliveries WHERE created_at_ms < ${beforeMs} AND (state IN ('delivered', 'failed')
                                OR endpoint_id IN (SELECT id FROM webhook_endpoints WHERE disabled = 1)) RETURNING id`;
        await tx`DELETE FROM webhook_messages m WHERE m.created_at_ms < ${beforeMs}
                   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.message_id = m.id)`;
        return gone.length;
      }),
    async stats(nowMs) {
      const [row]: Row[] = await sql`SELECT
          (SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending' AND endpoint_id NOT IN (SELECT id FROM webhook_endpoints WHERE disabled = 1)) AS n,
          (SELECT MIN(created_at_ms) FROM webhook_deliveries WHERE state = 'pending' AND endpoint_id NOT IN (SELECT id FROM webhook_endpoints WHERE disabled = 1)) AS oldest,
                                            (SELECT COUNT(*) FROM webhook_outbox) AS outbox`;
      const oldest = row!.oldest === null ? null : Number(row!.oldest);
      return { pending: Number(row!.n) + Number(row!.outbox), oldestPendingMs: oldest === null ? null : nowMs - oldest };
    },
  };
}

/**
 * A disabled endpoint is sent nothing more: its deliveries still pending are failed (kept 30 days, then pruned), those
 * leased now (or locked by another transaction: `SKIP LOCKED`, so no lock is waited for in the other order) by the
 * record of their attempt (one whose holder died is pruned with the settled ones after 30 days). Before, they stayed pending for good, counted in the queue's depth.
 */
async function failPendingOf(tx: SQL, endpointId: string, nowMs: number): Promise<void> {
  await tx`UPDATE webhook_deliveries SET state = 'failed', failed_at_ms = ${nowMs}, next_attempt_at_ms = NULL
             WHERE id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND state = 'pending'
                            AND lease_holder IS NULL FOR UPDATE SKIP LOCKED)`;
}

/**
 * Webhook endpoints, messages and deliveries in PostgreSQL, shared by every instance: claims run one at a time under
 * an advisory lock and take their rows `FOR UPDATE SKIP LOCKED`, so instances claiming together never take the same
 * delivery and the bounds per endpoint and per account hold for the deployment.
 */
export function createPostgresWebhooks(sql: SQL): WebhookStore {
  return {
    ...webhookEndpoints(sql),
    ...webhookDeliveries(sql),
  };
}
