import type { SQL, TransactionSQL } from "bun";
import type { AppendDetails, AttestedLog, EasEvent, IndexCheckpoint, IndexedAttestation, IndexStore, OutboxSkip, PagedLog, StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { CHECKPOINT_HISTORY, CONFIRM_TAIL, indexTables, OUTBOX_INSERTS, OUTBOX_SELECTS, type OutboxCandidate, outboxSkip, toStoredAttestation } from "../sql/index_store.ts";
import { firstBlockAtSql, indexQuerySql } from "../sql/index_query.ts";
import { migrate } from "./postgres_migrate.ts";
import { subjectRules } from "./_subject_rules.ts";

/** Serializes the index's migrations and its writers across instances. */
const INDEX_LOCK = 7_240_002;

type Row = Record<string, unknown>;

/**
 * Rows one write statement carries (issue 45): the rows go as one JSON parameter, so a chunk is one round trip whatever
 * its size; this bounds the parameter (about 1.5 KB a row with a record) and the statement's memory.
 */
const WRITE_CHUNK = 2_000;

/**
 * Events appended (a backfill's steps) after which the store analyzes `index_attestations` itself, and again each time it
 * has appended as many more as it had by its last ANALYZE (so a backfill of n events analyzes about log2(n / 1,000)
 * times). Before a table's first statistics, PostgreSQL's generic plan of a prepared `chain_id = $1 AND eas = $2 AND
 * uid = ANY($3)` (the plan it keeps after five runs) takes the chain's rows for a handful and filters them by uid: a
 * page's records took 27–85 ms among 90,000 attestations (`bench/query_pages.ts`: 46–52 ms a page, against 1.3–1.8 ms
 * once analyzed), until autovacuum's first ANALYZE, up to a minute or more later. Eighteenth look, docs/performance.md.
 */
const ANALYZE_AFTER_EVENTS = 1_000;

/** A record as a JSON row for `json_to_recordset` (uid, time, …, subject); `subject` null when the subjects are not given (the stored one stays). */
function recordRow(a: IndexedAttestation, subjects: ReadonlyMap<string, string> | undefined): Record<string, unknown> {
  return {
    uid: a.uid.toLowerCase(),
    time: a.time.toString(),
    expiration_time: a.expirationTime.toString(),
    revocation_time: a.revocationTime.toString(),
    ref_uid: a.refUID.toLowerCase(),
    revocable: a.revocable ? 1 : 0,
    data: a.data.toLowerCase(),
    subject: subjects === undefined ? null : storedSubject(subjects.get(a.uid.toLowerCase())),
  };
}

/** A subject PostgreSQL can hold: one with U+0000 (the domain names none) failed the whole append; it names none (""). */
function storedSubject(subject: string | undefined): string {
  return subject === undefined || subject.includes("\u0000") ? "" : subject;
}

const toLog = (row: Row): AttestedLog => ({
  uid: String(row.uid) as HexString,
  recipient: String(row.recipient) as HexString,
  attester: String(row.attester) as HexString,
  schemaUid: String(row.schema_uid) as HexString,
  blockNumber: BigInt(String(row.block_number)),
  logIndex: Number(row.log_index),
});

const toPaged = (row: Row): PagedLog => ({ ...toLog(row), logIndex: Number(row.log_index) });

const toCheckpoint = (row: Row): IndexCheckpoint => ({
  blockNumber: BigInt(String(row.block_number)),
  blockHash: String(row.block_hash) as HexString,
  ...(row.block_time === null || row.block_time === undefined ? {} : { timestamp: BigInt(String(row.block_time)) }),
});

/**
 * The outbox rows of blocks (from, upTo], in the append's transaction (issue 43: the index's progress never depends
 * on an event's insert): all at once in a savepoint, or, when that fails, one by one, each in its own savepoint, a
 * row that cannot be written skipped and told, never failing the append.
 */
async function queueOutbox(tx: TransactionSQL, { chainId, eas }: { chainId: number; eas: string }, from: bigint, upTo: bigint, skipped: OutboxSkip[]) {
  const params = [chainId, eas, from.toString(), upTo.toString()];
  try {
    await tx.savepoint(async (sp) => {
      for (const text of OUTBOX_INSERTS) await sp.unsafe(text, params);
    });
    return;
  } catch {
    // One row at a time below.
  }
  for (const text of OUTBOX_SELECTS) {
    const rows: OutboxCandidate[] = await tx.unsafe(text, params);
    for (const row of rows) {
      try {
        await tx.savepoint(async (sp) => {
          await sp`INSERT INTO webhook_outbox (chain_id, eas, kind, uid, block_number, tx_hash)
                   VALUES (${chainId}, ${eas}, ${String(row.kind)}, ${String(row.uid)},
                           ${row.block_number === null ? null : String(row.block_number)}::BIGINT, ${row.tx_hash === null ? null : String(row.tx_hash)})`;
        });
      } catch (error) {
        skipped.push(outboxSkip(row, error));
      }
    }
  }
}

/** Appends and rewinds in PostgreSQL, under the index's advisory lock: events, records, checkpoints and outbox rows in one transaction. */
function indexAppends(sql: SQL, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "append" | "rewind"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const current = async (db: SQL): Promise<IndexCheckpoint | undefined> => {
    const [row]: Row[] = await db`SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas}
                                   ORDER BY block_number DESC LIMIT 1`;
    return row === undefined ? undefined : toCheckpoint(row);
  };
  const setCheckpoint = async (db: SQL, next: IndexCheckpoint) => {
    const time = next.timestamp === undefined ? null : next.timestamp.toString();
    await db`INSERT INTO index_checkpoints (chain_id, eas, block_number, block_hash, block_time)
             VALUES (${chainId}, ${eas}, ${next.blockNumber.toString()}, ${next.blockHash}, ${time}::BIGINT)
             ON CONFLICT (chain_id, eas, block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash, block_time = EXCLUDED.block_time`;
  };
  /**
   * Stores records; with `subjects` (issue 43) the subject each names too ('' none), else the stored one stays. One
   * `UPDATE … FROM json_to_recordset` per {@link WRITE_CHUNK} records (issue 45: one statement per record was a round trip
   * each, 150 attestations a second on a catch-up).
   */
  const saveRecords = async (db: SQL, records: readonly IndexedAttestation[], subjects?: ReadonlyMap<string, string>) => {
    for (let i = 0; i < records.length; i += WRITE_CHUNK) {
      const rows = records.slice(i, i + WRITE_CHUNK).map((a) => recordRow(a, subjects));
      await db`UPDATE index_attestations AS a SET time = r.time, expiration_time = r.expiration_time, revocation_time = r.revocation_time,
                 ref_uid = r.ref_uid, revocable = r.revocable, data = r.data, time_seconds = r.time::BIGINT, subject = COALESCE(r.subject, a.subject)
                 FROM json_to_recordset(${JSON.stringify(rows)}::TEXT::JSON) AS r(uid TEXT, time TEXT, expiration_time TEXT, revocation_time TEXT, ref_uid TEXT, revocable INTEGER, data TEXT, subject TEXT)
                WHERE a.chain_id = ${chainId} AND a.eas = ${eas} AND a.uid = r.uid`;
    }
  };

  /** The append in one transaction under the index lock; outbox rows it could not write go to `skipped`. */
  const appendIn = (expected: bigint | undefined, events: readonly EasEvent[], next: IndexCheckpoint, details: AppendDetails, skipped: OutboxSkip[]) =>
    sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${INDEX_LOCK}, ${chainId})`;
      if ((await current(tx))?.blockNumber !== expected) return false;
      const confirmedTo = details.confirmedTo ?? next.blockNumber;
      // Issue 45: each new row is inserted with its record (one statement per chunk); records of rows stored before (a
      // revocation's attestation) are updated after, as are the revocations, a chunk a statement.
      const records = new Map((details.attestations ?? []).map((a) => [a.uid.toLowerCase(), a]));
      const inserted = new Set<string>();
      const rows: Record<string, unknown>[] = [];
      for (const e of events) {
        if (e.kind !== "attested" || inserted.has(e.uid.toLowerCase())) continue;
        inserted.add(e.uid.toLowerCase());
        const record = records.get(e.uid.toLowerCase());
        rows.push({
          ...(record === undefined ? {} : recordRow(record, details.subjects)),
          uid: e.uid,
          recipient: e.recipient,
          attester: e.attester,
          schema_uid: e.schemaUid,
          block_number: e.blockNumber.toString(),
          log_index: e.logIndex,
          tail: e.blockNumber > confirmedTo ? 1 : 0,
          tx_hash: e.txHash ?? null,
        });
      }
      for (let i = 0; i < rows.length; i += WRITE_CHUNK) {
        await tx`INSERT INTO index_attestations (chain_id, eas, uid, recipient, attester, schema_uid, block_number, log_index, tail, tx_hash,
                   time, expiration_time, revocation_time, ref_uid, revocable, data, time_seconds, subject)
                 SELECT ${chainId}, ${eas}, r.uid, r.recipient, r.attester, r.schema_uid, r.block_number, r.log_index, r.tail, r.tx_hash,
                        r.time, r.expiration_time, r.revocation_time, r.ref_uid, r.revocable, r.data, r.time::BIGINT, r.subject
                   FROM json_to_recordset(${JSON.stringify(rows.slice(i, i + WRITE_CHUNK))}::TEXT::JSON)
                     AS r(uid TEXT, time TEXT, expiration_time TEXT, revocation_time TEXT, ref_uid TEXT, revocable INTEGER, data TEXT, subject TEXT,
                        recipient TEXT, attester TEXT, schema_uid TEXT, block_number BIGINT, log_index INTEGER, tail INTEGER, tx_hash TEXT)
                 ON CONFLICT (chain_id, eas, uid) DO UPDATE SET time = COALESCE(EXCLUDED.time, index_attestations.time),
                   expiration_time = COALESCE(EXCLUDED.expiration_time, index_attestations.expiration_time),
                   revocation_time = COALESCE(EXCLUDED.revocation_time, index_attestations.revocation_time),
                   ref_uid = COALESCE(EXCLUDED.ref_uid, index_attestations.ref_uid), revocable = COALESCE(EXCLUDED.revocable, index_attestations.revocable),
                   data = COALESCE(EXCLUDED.data, index_attestations.data), time_seconds = COALESCE(EXCLUDED.time_seconds, index_attestations.time_seconds),
                   subject = COALESCE(EXCLUDED.subject, index_attestations.subject)`;
      }
      const revoked = events.filter((e) => e.kind === "revoked").map((e) => ({ uid: e.uid, block_number: e.blockNumber.toString(), tx_hash: e.txHash ?? null }));
      for (let i = 0; i < revoked.length; i += WRITE_CHUNK) {
        // A uid revoked twice in one chunk (not on a real chain) takes its last revocation, as statements in order did.
        const chunk = [...new Map(revoked.slice(i, i + WRITE_CHUNK).map((r) => [r.uid, r])).values()];
        await tx`UPDATE index_attestations AS a SET revoked_block = r.block_number, revoked_tx_hash = r.tx_hash
                   FROM json_to_recordset(${JSON.stringify(chunk)}::TEXT::JSON) AS r(uid TEXT, block_number BIGINT, tx_hash TEXT)
                  WHERE a.chain_id = ${chainId} AND a.eas = ${eas} AND a.uid = r.uid`;
      }
      await saveRecords(tx, (details.attestations ?? []).filter((a) => !inserted.has(a.uid.toLowerCase())), details.subjects);
      if (details.webhookConfirmedTo !== undefined) {
        // Decisions §22: the events of the blocks that just became deep enough, in this transaction.
        // The boundary never goes below -1 ("before block 0"): a chain younger than the confirmations (issue 43).
        const below = details.webhookConfirmedTo < next.blockNumber ? details.webhookConfirmedTo : next.blockNumber;
        const upTo = below < -1n ? -1n : below;
        const [row]: Row[] = await tx`SELECT block_number FROM webhook_marks WHERE name = ${leaseName}`;
        const from = row === undefined ? undefined : BigInt(String(row.block_number));
        if (from !== undefined && upTo > from) await queueOutbox(tx, { chainId, eas }, from, upTo, skipped);
        // A fresh index's first append sets the boundary at the deep-enough head, not at its own last block: the history a
        // catch-up stores in the steps after it is history too, and is not told (issue 45: steps are now small).
        const mark = from === undefined ? (details.webhookConfirmedTo < -1n ? -1n : details.webhookConfirmedTo) : upTo;
        if (from === undefined || upTo > from) {
          await tx`INSERT INTO webhook_marks (name, block_number) VALUES (${leaseName}, ${mark.toString()})
                   ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number`;
        }
      }
      await tx.unsafe(CONFIRM_TAIL, [chainId, eas, confirmedTo.toString()]);
      for (const b of details.blocks ?? []) await setCheckpoint(tx, b);
      await setCheckpoint(tx, next);
      await tx`DELETE FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas} AND block_number < (
                 SELECT MIN(block_number) FROM (SELECT block_number FROM index_checkpoints WHERE chain_id = ${chainId}
                                                AND eas = ${eas} ORDER BY block_number DESC LIMIT ${CHECKPOINT_HISTORY}) AS kept)`;
      return true;
    });

  // Events this store appended since it last analyzed the table, and how many it had appended by then.
  let sinceAnalyze = 0;
  let atAnalyze = 0;
  return {
    async append(expected, events, next, details = {}) {
      const skipped: OutboxSkip[] = [];
      const stored = await appendIn(expected, events, next, details, skipped);
      if (skipped.length > 0) details.onOutboxSkipped?.(skipped);
      if (stored) sinceAnalyze += events.length;
      if (stored && sinceAnalyze >= ANALYZE_AFTER_EVENTS && sinceAnalyze >= atAnalyze) {
        atAnalyze += sinceAnalyze;
        sinceAnalyze = 0;
        // Statistics only, so not awaited: on PostgreSQL a write waits for its own poll's append
        // (app/attestation_index.ts `afterMinedOf`), never for this. On a failure the planner waits for autovacuum.
        void sql.unsafe("ANALYZE index_attestations").catch(() => undefined);
      }
      return stored;
    },
    rewind: (to, options) =>
      sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(${INDEX_LOCK}, ${chainId})`;
        const block = to === undefined ? "-1" : to.blockNumber.toString();
        await tx`DELETE FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas} AND block_number > ${block}`;
        await tx`UPDATE index_attestations SET revoked_block = NULL, revocation_time = '0' WHERE chain_id = ${chainId} AND eas = ${eas} AND revoked_block > ${block}`;
        await tx`DELETE FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas} AND block_number > ${block}`;
        // A reorg deeper than WEBHOOK_CONFIRMATIONS: what was not fanned out yet goes, and the new chain's blocks are told.
        if (options?.keepWebhookMark !== true) {
          await tx`DELETE FROM webhook_outbox WHERE chain_id = ${chainId} AND eas = ${eas} AND block_number > ${block}`;
          await tx`UPDATE webhook_marks SET block_number = ${block} WHERE name = ${leaseName} AND block_number > ${block}`;
        }
        if (to !== undefined) await setCheckpoint(tx, to);
      }),
  };
}

/** The index's checkpoints and the chain head it saw, in PostgreSQL. */
function indexProgress(sql: SQL, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "checkpoint" | "history" | "head" | "checked" | "doubted"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const current = async (db: SQL): Promise<IndexCheckpoint | undefined> => {
    const [row]: Row[] = await db`SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas}
                                   ORDER BY block_number DESC LIMIT 1`;
    return row === undefined ? undefined : toCheckpoint(row);
  };
  return {
    checkpoint: () => current(sql),
    async history(limit) {
      const rows: Row[] = await sql`SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas}
                                     ORDER BY block_number DESC LIMIT ${limit}`;
      return rows.map(toCheckpoint);
    },
    async head() {
      const [row]: Row[] = await sql`
        SELECT c.block_number, c.block_hash, c.block_time, p.checked_at_ms, p.chain_head, p.doubted_at_ms
          FROM (SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ${chainId} AND eas = ${eas}
                 ORDER BY block_number DESC LIMIT 1) AS c
          LEFT JOIN index_polls p ON p.name = ${leaseName}`;
      return row === undefined ? undefined : {
        ...toCheckpoint(row),
        checkedAtMs: row.checked_at_ms === null ? null : Number(row.checked_at_ms),
        chainHead: row.chain_head === null ? null : BigInt(String(row.chain_head)),
        doubtedAtMs: row.doubted_at_ms === null ? null : Number(row.doubted_at_ms),
      };
    },
    async checked(nowMs, chainHead) {
      await sql`INSERT INTO index_polls (name, checked_at_ms, chain_head) VALUES (${leaseName}, ${nowMs}, ${chainHead.toString()})
                ON CONFLICT (name) DO UPDATE SET checked_at_ms = GREATEST(index_polls.checked_at_ms, EXCLUDED.checked_at_ms), chain_head = EXCLUDED.chain_head, doubted_at_ms = NULL`;
    },
    doubted: async (checkedAtMs) => (await sql`UPDATE index_polls SET doubted_at_ms = checked_at_ms WHERE name = ${leaseName} AND checked_at_ms = ${checkedAtMs} RETURNING name`).length > 0,
  };
}

/** The full records and subjects of indexed attestations in PostgreSQL. */
function indexRecords(
  sql: SQL,
  scope: { chainId: number; easAddress: string },
): Pick<IndexStore, "records" | "incomplete" | "complete" | "unsubjected" | "setSubjects" | "counts"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  /**
   * Stores records; with `subjects` (issue 43) the subject each names too ('' none), else the stored one stays. One
   * `UPDATE … FROM json_to_recordset` per {@link WRITE_CHUNK} records (issue 45: one statement per record was a round trip
   * each, 150 attestations a second on a catch-up).
   */
  const saveRecords = async (db: SQL, records: readonly IndexedAttestation[], subjects?: ReadonlyMap<string, string>) => {
    for (let i = 0; i < records.length; i += WRITE_CHUNK) {
      const rows = records.slice(i, i + WRITE_CHUNK).map((a) => recordRow(a, subjects));
      await db`UPDATE index_attestations AS a SET time = r.time, expiration_time = r.expiration_time, revocation_time = r.revocation_time,
                 ref_uid = r.ref_uid, revocable = r.revocable, data = r.data, time_seconds = r.time::BIGINT, subject = COALESCE(r.subject, a.subject)
                 FROM json_to_recordset(${JSON.stringify(rows)}::TEXT::JSON) AS r(uid TEXT, time TEXT, expiration_time TEXT, revocation_time TEXT, ref_uid TEXT, revocable INTEGER, data TEXT, subject TEXT)
                WHERE a.chain_id = ${chainId} AND a.eas = ${eas} AND a.uid = r.uid`;
    }
  };

  return {
    async records(uids) {
      if (uids.length === 0) return [];
      const rows: Row[] = await sql`SELECT * FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas}
                                      AND uid = ANY(${sql.array([...new Set(uids.map((u) => u.toLowerCase()))], "TEXT")})`;
      return rows.map(toStoredAttestation).filter((r): r is StoredAttestation => r !== undefined);
    },
    async incomplete(limit) {
      const rows: Row[] = await sql`SELECT uid FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas} AND data IS NULL
                                      ORDER BY block_number, log_index LIMIT ${limit}`;
      return rows.map((r) => String(r.uid) as HexString);
    },
    complete: (records) => sql.begin(async (tx) => void await saveRecords(tx, records)),
    async unsubjected(limit, recipient) {
      const rows: Row[] = recipient === undefined
        ? await sql`SELECT * FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas} AND subject IS NULL AND data IS NOT NULL
                      LIMIT ${limit}`
        : await sql`SELECT * FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas} AND subject IS NULL AND data IS NOT NULL
                      AND recipient = ${recipient.toLowerCase()} LIMIT ${limit}`;
      return rows.map(toStoredAttestation).filter((r): r is StoredAttestation => r !== undefined);
    },
    async setSubjects(subjects) {
      if (subjects.length === 0) return;
      await sql`UPDATE index_attestations AS a SET subject = s.subject
                  FROM (SELECT UNNEST(${sql.array(subjects.map((s) => s.uid.toLowerCase()), "TEXT")}::TEXT[]) AS uid,
                               UNNEST(${sql.array(subjects.map((s) => storedSubject(s.subject ?? undefined)), "TEXT")}::TEXT[]) AS subject) AS s
                 WHERE a.chain_id = ${chainId} AND a.eas = ${eas} AND a.uid = s.uid`;
    },
    async counts() {
      const [row]: Row[] = await sql`SELECT COUNT(*) AS n, COALESCE(SUM(tail), 0) AS tail FROM index_attestations
                                       WHERE chain_id = ${chainId} AND eas = ${eas}`;
      return { attestations: Number(row!.n), tail: Number(row!.tail) };
    },
  };
}

/** Reads of the index in PostgreSQL (decisions §24) and the follower's lease. */
function indexReads(sql: SQL, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "attested" | "query" | "count" | "lease"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  /** Where a filter's since and until fall (decisions §24): one seek in the time index each. */
  const firstBlockAt = async (seconds: bigint | undefined): Promise<bigint | null | undefined> => {
    if (seconds === undefined) return undefined;
    const { text, params } = firstBlockAtSql("postgres", { chainId, eas }, seconds);
    const [row]: Row[] = await sql.unsafe(text, params);
    return row === undefined ? null : BigInt(String(row.block_number));
  };
  const timeBlocks = async (filter: { since?: bigint | undefined; until?: bigint | undefined }) =>
    ({ since: await firstBlockAt(filter.since), until: await firstBlockAt(filter.until) });

  return {
    async attested(query) {
      if (query.recipients.length === 0 || query.schemaUids.length === 0) return [];
      const rows: Row[] = await sql`
        SELECT * FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas}
           AND recipient = ANY(${sql.array(query.recipients.map((r) => r.toLowerCase()), "TEXT")})
           AND schema_uid = ANY(${sql.array(query.schemaUids.map((s) => s.toLowerCase()), "TEXT")})
           AND block_number BETWEEN ${query.fromBlock.toString()} AND ${query.toBlock.toString()}
         ORDER BY block_number, log_index`;
      return rows.map(toLog);
    },
    async query(query) {
      const { text, params } = indexQuerySql("postgres", { chainId, eas }, query, await timeBlocks(query));
      const rows: Row[] = await sql.unsafe(text, params);
      return rows.map(toPaged);
    },
    async count(filter) {
      const { text, params } = indexQuerySql("postgres", { chainId, eas }, { ...filter, count: true }, await timeBlocks(filter));
      const [row]: Row[] = await sql.unsafe(text, params);
      return Number(row!.n);
    },
    async lease(holder, nowMs, leaseMs) {
      const rows: Row[] = await sql`
        INSERT INTO index_lease (name, holder, expires_at_ms) VALUES (${leaseName}, ${holder}, ${nowMs + leaseMs})
        ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at_ms = EXCLUDED.expires_at_ms
          WHERE index_lease.holder = EXCLUDED.holder OR index_lease.expires_at_ms < ${nowMs}
        RETURNING holder`;
      return rows.length === 1 && rows[0]!.holder === holder;
    },
  };
}

/**
 * The attestation index in PostgreSQL, shared by every instance: one follower at a time holds the lease
 * row; the others read. Appends and rewinds take a transaction-scoped advisory lock and check the
 * checkpoint inside it, so even two followers (a lease that ran out mid-step) cannot interleave.
 */
export async function createPostgresIndexStore(sql: SQL, scope: { chainId: number; easAddress: string }): Promise<IndexStore> {
  await migrate(sql, { name: "index", lock: INDEX_LOCK, statements: indexTables("BIGINT") });
  return {
    ...indexAppends(sql, scope),
    ...indexProgress(sql, scope),
    ...indexRecords(sql, scope),
    ...indexReads(sql, scope),
    ...subjectRules(sql, scope.chainId, scope.easAddress.toLowerCase()),
  };
}
