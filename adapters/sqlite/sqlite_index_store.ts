import type { Database } from "bun:sqlite";
import type { AppendDetails, AttestedLog, EasEvent, IndexCheckpoint, IndexedAttestation, IndexStore, OutboxSkip, PagedLog, StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { firstBlockAtSql, INDEX_QUERY_INDEXES, indexQuerySql, timeSecondsBackfill } from "../sql/index_query.ts";
import { CHECKPOINT_HISTORY, CONFIRM_TAIL, INDEX_ADDED_COLUMNS, OUTBOX_INSERTS, OUTBOX_SELECTS, type OutboxCandidate, type RecordRow, indexTables, outboxSkip, toStoredAttestation } from "../sql/index_store.ts";
import { subjectRules } from "./_subject_rules.ts";

type Row = { uid: string; recipient: string; attester: string; schema_uid: string; block_number: number; log_index: number; revoked_block: number | null };

const toLog = (row: Row): AttestedLog => ({
  uid: row.uid as HexString,
  recipient: row.recipient as HexString,
  attester: row.attester as HexString,
  schemaUid: row.schema_uid as HexString,
  blockNumber: BigInt(row.block_number),
  logIndex: row.log_index,
});

const toPaged = (row: Row): PagedLog => ({ ...toLog(row), logIndex: row.log_index });

/** `?, ?, ?` for n values. */
const marks = (n: number) => Array.from({ length: n }, () => "?").join(", ");

type CheckpointRow = { block_number: number; block_hash: string; block_time: number | null };

const toCheckpoint = (row: CheckpointRow): IndexCheckpoint => ({
  blockNumber: BigInt(row.block_number),
  blockHash: row.block_hash as HexString,
  ...(row.block_time === null ? {} : { timestamp: BigInt(row.block_time) }),
});

const time = (t: bigint | undefined) => (t === undefined ? null : Number(t));

/** A record's columns as the statements below take them: time … data, time_seconds, then the subject ('' none, null kept). */
const recordValues = (a: IndexedAttestation, subjects: ReadonlyMap<string, string> | undefined) =>
  [
    a.time.toString(),
    a.expirationTime.toString(),
    a.revocationTime.toString(),
    a.refUID.toLowerCase(),
    a.revocable ? 1 : 0,
    a.data.toLowerCase(),
    Number(a.time),
    subjects === undefined ? null : (subjects.get(a.uid.toLowerCase()) ?? ""),
  ] as const;

/**
 * Stores a record of the chain's EAS; with `subjects` (issue 43) the subject it names too ('' none), else the stored one
 * stays. One statement, prepared once per caller (the appends and the record reads both store records).
 */
function recordSaver(db: Database, chainId: number, eas: string): (a: IndexedAttestation, subjects?: ReadonlyMap<string, string>) => void {
  const setRecord = db.query(
    `UPDATE index_attestations SET time = ?, expiration_time = ?, revocation_time = ?, ref_uid = ?, revocable = ?, data = ?, time_seconds = ?,
       subject = COALESCE(?, subject)
     WHERE chain_id = ? AND eas = ? AND uid = ?`,
  );
  return (a, subjects) => void setRecord.run(...recordValues(a, subjects), chainId, eas, a.uid.toLowerCase());
}

/**
 * Writes a step's events with their records, in the append's transaction: an attestation and its record in one statement,
 * a revocation on its row, then the records not stored with an event (a revocation's attestation, an event seen twice).
 */
function eventWriter(db: Database, chainId: number, eas: string): (events: readonly EasEvent[], details: AppendDetails, confirmedTo: bigint) => void {
  const insertEvent = db.query(
    `INSERT INTO index_attestations (chain_id, eas, uid, recipient, attester, schema_uid, block_number, log_index, tail, tx_hash)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  // An event with its record in one statement (as the PostgreSQL store does): the row's record columns and the time and
  // subject indexes are written once, not inserted empty and then updated. A row already there gets the record only.
  const insertEventWithRecord = db.query(
    `INSERT INTO index_attestations (chain_id, eas, uid, recipient, attester, schema_uid, block_number, log_index, tail, tx_hash,
       time, expiration_time, revocation_time, ref_uid, revocable, data, time_seconds, subject)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (chain_id, eas, uid) DO UPDATE SET time = excluded.time, expiration_time = excluded.expiration_time,
       revocation_time = excluded.revocation_time, ref_uid = excluded.ref_uid, revocable = excluded.revocable, data = excluded.data,
       time_seconds = excluded.time_seconds, subject = COALESCE(excluded.subject, index_attestations.subject)`,
  );
  const revoke = db.query("UPDATE index_attestations SET revoked_block = ?, revoked_tx_hash = ? WHERE chain_id = ? AND eas = ? AND uid = ?");
  const saveRecord = recordSaver(db, chainId, eas);
  return (events, details, confirmedTo) => {
    const records = new Map((details.attestations ?? []).map((a) => [a.uid.toLowerCase(), a]));
    for (const e of events) {
      if (e.kind !== "attested") {
        revoke.run(Number(e.blockNumber), e.txHash ?? null, chainId, eas, e.uid);
        continue;
      }
      const tail = e.blockNumber > confirmedTo ? 1 : 0;
      const a = records.get(e.uid.toLowerCase());
      if (a === undefined) {
        insertEvent.run(chainId, eas, e.uid, e.recipient, e.attester, e.schemaUid, Number(e.blockNumber), e.logIndex, tail, e.txHash ?? null);
        continue;
      }
      insertEventWithRecord.run(
        chainId, eas, e.uid, e.recipient, e.attester, e.schemaUid, Number(e.blockNumber), e.logIndex, tail, e.txHash ?? null,
        ...recordValues(a, details.subjects),
      );
      records.delete(e.uid.toLowerCase());
    }
    for (const a of records.values()) saveRecord(a, details.subjects);
  };
}

/** Appends and rewinds in the SQLite file: events, records, checkpoints and outbox rows in one transaction. */
function indexAppends(db: Database, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "append" | "rewind"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const latest = db.query<CheckpointRow, [number, string]>(
    "SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ? AND eas = ? ORDER BY block_number DESC LIMIT 1",
  );
  const mark = db.query<{ block_number: number }, [string]>("SELECT block_number FROM webhook_marks WHERE name = ?");
  const setMark = db.query("INSERT INTO webhook_marks (name, block_number) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET block_number = ?2");
  const lowerMark = db.query("UPDATE webhook_marks SET block_number = ?2 WHERE name = ?1 AND block_number > ?2");
  const outboxInserts = OUTBOX_INSERTS.map((text) => db.query(text.replace(/\$(\d)/g, "?$1")));
  const outboxSelects = OUTBOX_SELECTS.map((text) => db.query<OutboxCandidate, (string | number)[]>(text.replace(/\$(\d)/g, "?$1")));
  const outboxInsertOne = db.query("INSERT INTO webhook_outbox (chain_id, eas, kind, uid, block_number, tx_hash) VALUES (?, ?, ?, ?, ?, ?)");
  /** Runs `write` inside a savepoint of the append's transaction: on a throw only its writes are undone. */
  const inSavepoint = (write: () => void) => {
    db.exec("SAVEPOINT outbox");
    try {
      write();
    } catch (error) {
      db.exec("ROLLBACK TO outbox");
      db.exec("RELEASE outbox");
      throw error;
    }
    db.exec("RELEASE outbox");
  };
  /**
   * The outbox rows of blocks (from, upTo], in the append's transaction (issue 43: the index's progress never depends
   * on an event's insert): all at once, or, when that fails, one by one, each row that cannot be written skipped and
   * told, never failing the append.
   */
  const queueOutbox = (from: number, upTo: number, skipped: OutboxSkip[]) => {
    try {
      inSavepoint(() => {
        for (const insert of outboxInserts) insert.run(chainId, eas, from, upTo);
      });
      return;
    } catch {
      // One row at a time below.
    }
    for (const select of outboxSelects) {
      for (const row of select.all(chainId, eas, from, upTo)) {
        try {
          inSavepoint(() => void outboxInsertOne.run(row.chain_id as number, row.eas as string, row.kind as string, row.uid as string, row.block_number as number, row.tx_hash as string | null));
        } catch (error) {
          skipped.push(outboxSkip(row, error));
        }
      }
    }
  };
  const dropOutbox = db.query("DELETE FROM webhook_outbox WHERE chain_id = ? AND eas = ? AND block_number > ?");
  const confirm = db.query(CONFIRM_TAIL.replace(/\$(\d)/g, "?$1"));
  const insertCheckpoint = db.query(
    "INSERT OR REPLACE INTO index_checkpoints (chain_id, eas, block_number, block_hash, block_time) VALUES (?, ?, ?, ?, ?)",
  );
  const writeEvents = eventWriter(db, chainId, eas);
  const trimHistory = db.query(
    `DELETE FROM index_checkpoints WHERE chain_id = ? AND eas = ? AND block_number < (
       SELECT MIN(block_number) FROM (SELECT block_number FROM index_checkpoints WHERE chain_id = ? AND eas = ?
                                      ORDER BY block_number DESC LIMIT ?))`,
  );
  const dropEvents = db.query("DELETE FROM index_attestations WHERE chain_id = ? AND eas = ? AND block_number > ?");
  const unrevoke = db.query(
    "UPDATE index_attestations SET revoked_block = NULL, revocation_time = '0' WHERE chain_id = ? AND eas = ? AND revoked_block > ?",
  );
  const dropCheckpoints = db.query("DELETE FROM index_checkpoints WHERE chain_id = ? AND eas = ? AND block_number > ?");
  const current = () => {
    const row = latest.get(chainId, eas);
    return row === null ? undefined : toCheckpoint(row);
  };

  const append = db.transaction((expected: bigint | undefined, events: readonly EasEvent[], next: IndexCheckpoint, details: AppendDetails, skipped: OutboxSkip[]): boolean => {
    if (current()?.blockNumber !== expected) return false;
    const confirmedTo = details.confirmedTo ?? next.blockNumber;
    writeEvents(events, details, confirmedTo);
    if (details.webhookConfirmedTo !== undefined) {
      // Decisions §22: the events of the blocks that just became deep enough, in this transaction.
      // The boundary never goes below -1 ("before block 0"): a chain younger than the confirmations (issue 43).
      const upTo = Math.max(-1, Number(details.webhookConfirmedTo < next.blockNumber ? details.webhookConfirmedTo : next.blockNumber));
      const from = mark.get(leaseName)?.block_number;
      if (from !== undefined && upTo > from) {
        queueOutbox(from, upTo, skipped);
      }
      // A fresh index's first append sets the boundary at the deep-enough head, not at its own last block: the history a
      // catch-up stores in the steps after it is history too, and is not told (issue 45: steps are now small).
      if (from === undefined) setMark.run(leaseName, Math.max(-1, Number(details.webhookConfirmedTo)));
      else if (upTo > from) setMark.run(leaseName, upTo);
    }
    confirm.run(chainId, eas, Number(confirmedTo));
    for (const b of details.blocks ?? []) insertCheckpoint.run(chainId, eas, Number(b.blockNumber), b.blockHash, Number(b.timestamp));
    insertCheckpoint.run(chainId, eas, Number(next.blockNumber), next.blockHash, time(next.timestamp));
    trimHistory.run(chainId, eas, chainId, eas, CHECKPOINT_HISTORY);
    return true;
  });
  const rewind = db.transaction((to: IndexCheckpoint | undefined, keepWebhookMark: boolean) => {
    const block = to === undefined ? -1 : Number(to.blockNumber);
    dropEvents.run(chainId, eas, block);
    unrevoke.run(chainId, eas, block);
    dropCheckpoints.run(chainId, eas, block);
    // A reorg deeper than WEBHOOK_CONFIRMATIONS: what was not fanned out yet goes, and the new chain's blocks are told.
    if (!keepWebhookMark) {
      dropOutbox.run(chainId, eas, block);
      lowerMark.run(leaseName, block);
    }
    if (to !== undefined) insertCheckpoint.run(chainId, eas, block, to.blockHash, time(to.timestamp));
  });

  return {
    append(expected, events, next, details = {}) {
      const skipped: OutboxSkip[] = [];
      const stored = append.immediate(expected, events, next, details, skipped);
      if (skipped.length > 0) details.onOutboxSkipped?.(skipped);
      return Promise.resolve(stored);
    },
    rewind: (to, options) => Promise.resolve(void rewind.immediate(to, options?.keepWebhookMark === true)),
  };
}

/** The index's checkpoints and the chain head it saw, in the SQLite file. */
function indexProgress(db: Database, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "checkpoint" | "history" | "head" | "checked" | "doubted"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const latest = db.query<CheckpointRow, [number, string]>(
    "SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ? AND eas = ? ORDER BY block_number DESC LIMIT 1",
  );
  const history = db.query<CheckpointRow, [number, string, number]>(
    "SELECT block_number, block_hash, block_time FROM index_checkpoints WHERE chain_id = ? AND eas = ? ORDER BY block_number DESC LIMIT ?",
  );
  const current = () => {
    const row = latest.get(chainId, eas);
    return row === null ? undefined : toCheckpoint(row);
  };

  const polls = db.query<{ checked_at_ms: number; chain_head: number; doubted_at_ms: number | null }, [string]>("SELECT checked_at_ms, chain_head, doubted_at_ms FROM index_polls WHERE name = ?");
  // The doubted poll is named by its own time: no other poll completed since it was read (IndexStore.doubted).
  const saveDoubt = db.query("UPDATE index_polls SET doubted_at_ms = checked_at_ms WHERE name = ?1 AND checked_at_ms = ?2");
  const savePoll = db.query(
    `INSERT INTO index_polls (name, checked_at_ms, chain_head) VALUES (?1, ?2, ?3)
     ON CONFLICT (name) DO UPDATE SET checked_at_ms = MAX(index_polls.checked_at_ms, ?2), chain_head = ?3, doubted_at_ms = NULL`,
  );

  return {
    checkpoint: () => Promise.resolve(current()),
    history: (limit) => Promise.resolve(history.all(chainId, eas, limit).map(toCheckpoint)),
    head() {
      const checkpoint = current();
      if (checkpoint === undefined) return Promise.resolve(undefined);
      const poll = polls.get(leaseName);
      return Promise.resolve({
        ...checkpoint,
        checkedAtMs: poll === null ? null : Number(poll.checked_at_ms),
        chainHead: poll === null ? null : BigInt(poll.chain_head),
        doubtedAtMs: poll?.doubted_at_ms ?? null,
      });
    },
    checked(nowMs, chainHead) {
      savePoll.run(leaseName, nowMs, Number(chainHead));
      return Promise.resolve();
    },
    doubted: (checkedAtMs) => Promise.resolve(saveDoubt.run(leaseName, checkedAtMs).changes > 0),
  };
}

/** The full records and subjects of indexed attestations in the SQLite file. */
function indexRecords(
  db: Database,
  scope: { chainId: number; easAddress: string },
): Pick<IndexStore, "records" | "incomplete" | "complete" | "unsubjected" | "setSubjects" | "counts"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const setSubject = db.query("UPDATE index_attestations SET subject = ? WHERE chain_id = ? AND eas = ? AND uid = ?");
  const saveRecord = recordSaver(db, chainId, eas);
  const complete = db.transaction((records: readonly IndexedAttestation[]) => {
    for (const a of records) saveRecord(a);
  });
  return {
    records(uids) {
      if (uids.length === 0) return Promise.resolve([]);
      const wanted = [...new Set(uids.map((u) => u.toLowerCase()))];
      const out: StoredAttestation[] = [];
      for (let i = 0; i < wanted.length; i += 500) {
        const part = wanted.slice(i, i + 500);
        const rows = db.query<RecordRow, (string | number)[]>(
          `SELECT * FROM index_attestations WHERE chain_id = ? AND eas = ? AND uid IN (${marks(part.length)})`,
        ).all(chainId, eas, ...part);
        for (const row of rows) {
          const record = toStoredAttestation(row);
          if (record !== undefined) out.push(record);
        }
      }
      return Promise.resolve(out);
    },
    incomplete(limit) {
      const rows = db.query<{ uid: string }, [number, string, number]>(
        "SELECT uid FROM index_attestations WHERE chain_id = ? AND eas = ? AND data IS NULL ORDER BY block_number, log_index LIMIT ?",
      ).all(chainId, eas, limit);
      return Promise.resolve(rows.map((r) => r.uid as HexString));
    },
    complete(records) {
      complete.immediate(records);
      return Promise.resolve();
    },
    unsubjected(limit, recipient) {
      const rows = db.query<RecordRow, (string | number)[]>(
        `SELECT * FROM index_attestations WHERE chain_id = ? AND eas = ? AND subject IS NULL AND data IS NOT NULL
           ${recipient === undefined ? "" : "AND recipient = ?"} LIMIT ?`,
      ).all(chainId, eas, ...(recipient === undefined ? [] : [recipient.toLowerCase()]), limit);
      return Promise.resolve(rows.map(toStoredAttestation).filter((r): r is StoredAttestation => r !== undefined));
    },
    setSubjects(subjects) {
      db.transaction(() => {
        for (const s of subjects) setSubject.run(s.subject ?? "", chainId, eas, s.uid.toLowerCase());
      }).immediate();
      return Promise.resolve();
    },
    counts() {
      const row = db.query<{ n: number; tail: number | null }, [number, string]>(
        "SELECT COUNT(*) AS n, SUM(tail) AS tail FROM index_attestations WHERE chain_id = ? AND eas = ?",
      ).get(chainId, eas)!;
      return Promise.resolve({ attestations: row.n, tail: row.tail ?? 0 });
    },
  };
}

/** Reads of the index in the SQLite file (decisions §24) and the follower's lease. */
function indexReads(db: Database, scope: { chainId: number; easAddress: string }): Pick<IndexStore, "attested" | "query" | "count" | "lease"> {
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const takeLease = db.query(
    `INSERT INTO index_lease (name, holder, expires_at_ms) VALUES ($name, $holder, $expires)
     ON CONFLICT (name) DO UPDATE SET holder = $holder, expires_at_ms = $expires
       WHERE index_lease.holder = $holder OR index_lease.expires_at_ms < $now`,
  );

  /** Where a filter's since and until fall (decisions §24): one seek in the time index each. */
  const firstBlockAt = (seconds: bigint | undefined): bigint | null | undefined => {
    if (seconds === undefined) return undefined;
    const { text, params } = firstBlockAtSql("sqlite", { chainId, eas }, seconds);
    const row = db.query<{ block_number: number }, (string | number)[]>(text).get(...params);
    return row === null ? null : BigInt(row.block_number);
  };
  const timeBlocks = (filter: { since?: bigint | undefined; until?: bigint | undefined }) => ({ since: firstBlockAt(filter.since), until: firstBlockAt(filter.until) });

  return {
    attested(query) {
      if (query.recipients.length === 0 || query.schemaUids.length === 0) return Promise.resolve([]);
      const recipients = query.recipients.map((r) => r.toLowerCase());
      const schemas = query.schemaUids.map((s) => s.toLowerCase());
      const rows = db.query<Row, (string | number)[]>(
        `SELECT * FROM index_attestations WHERE chain_id = ? AND eas = ? AND recipient IN (${marks(recipients.length)})
           AND schema_uid IN (${marks(schemas.length)}) AND block_number BETWEEN ? AND ?
         ORDER BY block_number, log_index`,
      ).all(chainId, eas, ...recipients, ...schemas, Number(query.fromBlock), Number(query.toBlock));
      return Promise.resolve(rows.map(toLog));
    },
    query(query) {
      const { text, params } = indexQuerySql("sqlite", { chainId, eas }, query, timeBlocks(query));
      return Promise.resolve(db.query<Row, (string | number)[]>(text).all(...params).map(toPaged));
    },
    count(filter) {
      const { text, params } = indexQuerySql("sqlite", { chainId, eas }, { ...filter, count: true }, timeBlocks(filter));
      return Promise.resolve(db.query<{ n: number }, (string | number)[]>(text).get(...params)!.n);
    },
    lease(holder, nowMs, leaseMs) {
      takeLease.run({ name: leaseName, holder, expires: nowMs + leaseMs, now: nowMs });
      const row = db.query<{ holder: string }, [string]>("SELECT holder FROM index_lease WHERE name = ?").get(leaseName);
      return Promise.resolve(row?.holder === holder);
    },
  };
}

/** The attestation index of one EAS contract in the service's SQLite file. */
export function createSqliteIndexStore(db: Database, scope: { chainId: number; easAddress: string }): IndexStore {
  db.transaction(() => {
    for (const statement of indexTables("INTEGER")) db.exec(statement);
    for (const [table, column, type] of INDEX_ADDED_COLUMNS) {
      const columns = db.query<{ name: string }, []>(`PRAGMA table_info(${table})`).all();
      if (!columns.some((c) => c.name === column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
    }
    for (const statement of INDEX_QUERY_INDEXES) db.exec(statement);
    db.exec(timeSecondsBackfill("sqlite"));
  }).immediate();
  return {
    ...indexAppends(db, scope),
    ...indexProgress(db, scope),
    ...indexRecords(db, scope),
    ...indexReads(db, scope),
    ...subjectRules(db, scope.chainId, scope.easAddress.toLowerCase()),
  };
}
