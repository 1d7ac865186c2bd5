/** What SQLite and PostgreSQL share for the index store: its row mappers, table definitions and query text (adapters/sql/, docs/storage.md). */
import type { OutboxSkip, StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { INDEX_QUERY_INDEXES, timeSecondsBackfill } from "./index_query.ts";

/**
 * Webhooks (decisions §22): the outbox the follower's appends write in their own transaction, and how far they have
 * written it (the WEBHOOK_CONFIRMATIONS boundary of the last append).
 */
export function outboxTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS webhook_outbox (
       seq ${bigint === "BIGINT" ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"},
       chain_id ${bigint} NOT NULL,
       eas TEXT NOT NULL,
       kind TEXT NOT NULL,
       uid TEXT NOT NULL,
       block_number ${bigint} NOT NULL,
       tx_hash TEXT
     )`,
    `CREATE TABLE IF NOT EXISTS webhook_marks (
       name TEXT PRIMARY KEY,
       block_number ${bigint} NOT NULL
     )`,
  ];
}

/** The index's tables, in SQLite (`INTEGER`) or PostgreSQL (`BIGINT`) words for block numbers and chain ids. */
export function indexTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS index_attestations (
       chain_id ${bigint} NOT NULL,
       eas TEXT NOT NULL,
       uid TEXT NOT NULL,
       recipient TEXT NOT NULL,
       attester TEXT NOT NULL,
       schema_uid TEXT NOT NULL,
       block_number ${bigint} NOT NULL,
       log_index INTEGER NOT NULL,
       revoked_block ${bigint},
       PRIMARY KEY (chain_id, eas, uid)
     )`,
    `CREATE INDEX IF NOT EXISTS index_attestations_recipient
       ON index_attestations (chain_id, eas, recipient, schema_uid, block_number, log_index)`,
    `CREATE INDEX IF NOT EXISTS index_attestations_block ON index_attestations (chain_id, eas, block_number)`,
    `CREATE TABLE IF NOT EXISTS index_checkpoints (
       chain_id ${bigint} NOT NULL,
       eas TEXT NOT NULL,
       block_number ${bigint} NOT NULL,
       block_hash TEXT NOT NULL,
       PRIMARY KEY (chain_id, eas, block_number)
     )`,
    `CREATE TABLE IF NOT EXISTS index_lease (
       name TEXT PRIMARY KEY,
       holder TEXT NOT NULL,
       expires_at_ms ${bigint} NOT NULL
     )`,
    // The follower's last completed poll (decisions §21), shared by every instance reading the store.
    `CREATE TABLE IF NOT EXISTS index_polls (
       name TEXT PRIMARY KEY,
       checked_at_ms ${bigint} NOT NULL,
       chain_head ${bigint} NOT NULL
     )`,
    // The rule the stored subjects follow (domain/index/record_subject.ts), per chain and EAS contract.
    `CREATE TABLE IF NOT EXISTS index_subject_rules (
       chain_id ${bigint} NOT NULL,
       eas TEXT NOT NULL,
       rule TEXT NOT NULL,
       PRIMARY KEY (chain_id, eas)
     )`,
    ...outboxTables(bigint),
    // The revocations of a block range, for the outbox. An expression no list query names, so the planner never takes
    // it for theirs (issue 37: their plans seek and never sort).
    `CREATE INDEX IF NOT EXISTS index_attestations_revoked_at ON index_attestations (chain_id, eas, (COALESCE(revoked_block, -1)))`,
    // Issue 34: full records and block times; PostgreSQL adds them to existing tables here, SQLite in
    // createSqliteIndexStore (it has no ADD COLUMN IF NOT EXISTS).
    ...(bigint === "BIGINT"
      ? [
        ...INDEX_ADDED_COLUMNS.map(([table, column, type]) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type.replace("INTEGER", "BIGINT")}`),
        ...INDEX_QUERY_INDEXES,
        timeSecondsBackfill("postgres"),
      ]
      : []),
  ];
}

/**
 * The columns added after the index's tables were first created (issue 34): each attestation's full record (read
 * once at ingest; NULL on rows stored before, filled by the follower), whether a row is in the unconfirmed tail, and
 * each checkpoint's block time. uint64 values are decimal TEXT (an expiration time may pass a signed 64-bit integer).
 */
export const INDEX_ADDED_COLUMNS = [
  ["index_attestations", "time", "TEXT"],
  ["index_attestations", "expiration_time", "TEXT"],
  ["index_attestations", "revocation_time", "TEXT"],
  ["index_attestations", "ref_uid", "TEXT"],
  ["index_attestations", "revocable", "INTEGER"],
  ["index_attestations", "data", "TEXT"],
  ["index_attestations", "tail", "INTEGER NOT NULL DEFAULT 0"],
  ["index_checkpoints", "block_time", "INTEGER"],
  // Issue 37: the attestation's time as a number, for `since`/`until` (the record's `time` is decimal TEXT).
  ["index_attestations", "time_seconds", "INTEGER"],
  // Issue 35: the transactions of an attestation and of its revocation, for webhook payloads.
  ["index_attestations", "tx_hash", "TEXT"],
  ["index_attestations", "revoked_tx_hash", "TEXT"],
  // Issue 43: the subject the record names (its decoded `subject`, normalized), for counts; '' none, NULL not known yet.
  ["index_attestations", "subject", "TEXT"],
  // The completed poll (its checked_at_ms) after which the chain's head stayed below the index (IndexStore.doubted); NULL: none.
  ["index_polls", "doubted_at_ms", "INTEGER"],
  // The forgetting a change of the subject rule began and has not finished (adapters/sql/subject_rules.ts); NULL: none.
  ["index_subject_rules", "forgetting", "TEXT"],
] as const;

/**
 * The outbox rows of the attestations and revocations stored in blocks (from, to] (decisions §22), oldest first, as
 * `chain_id, eas, kind, uid, block_number, tx_hash`. A revocation is a row whose `revoked_block` is set: the range
 * test is on `COALESCE(revoked_block, -1)` (the expression index), so a boundary below -1 (a chain younger than
 * WEBHOOK_CONFIRMATIONS, issue 43) must not make every unrevoked row a revocation without a block.
 */
export const OUTBOX_SELECTS = [
  `SELECT chain_id, eas, 'attested' AS kind, uid, block_number, tx_hash FROM index_attestations
    WHERE chain_id = $1 AND eas = $2 AND block_number > $3 AND block_number <= $4 ORDER BY block_number, log_index`,
  `SELECT chain_id, eas, 'revoked' AS kind, uid, revoked_block AS block_number, revoked_tx_hash AS tx_hash FROM index_attestations
    WHERE chain_id = $1 AND eas = $2 AND COALESCE(revoked_block, -1) > $3 AND COALESCE(revoked_block, -1) <= $4
      AND revoked_block IS NOT NULL
    ORDER BY revoked_block, log_index`,
] as const;

/**
 * Each append: the tail's rows in blocks now confirmed become confirmed rows (`$1` chain, `$2` EAS, `$3` the confirmed
 * block). A seek in the partial index `index_attestations_tail` (issue 45), never a walk of the confirmed rows.
 */
export const CONFIRM_TAIL = "UPDATE index_attestations SET tail = 0 WHERE chain_id = $1 AND eas = $2 AND tail = 1 AND block_number <= $3";

/** {@link OUTBOX_SELECTS} written to the outbox, one statement each. */
export const OUTBOX_INSERTS = OUTBOX_SELECTS.map((select) => `INSERT INTO webhook_outbox (chain_id, eas, kind, uid, block_number, tx_hash) ${select}`);

/** One outbox row as {@link OUTBOX_SELECTS} give it. */
export type OutboxCandidate = { chain_id: unknown; eas: unknown; kind: unknown; uid: unknown; block_number: unknown; tx_hash: unknown };

/** An outbox row that could not be written, as {@link OutboxSkip} tells it. */
export function outboxSkip(row: OutboxCandidate, error: unknown): OutboxSkip {
  return {
    kind: String(row.kind),
    uid: String(row.uid),
    blockNumber: row.block_number === null || row.block_number === undefined ? null : BigInt(String(row.block_number)),
    error: error instanceof Error ? error.message : String(error),
  };
}

/** How many earlier checkpoints are kept to find where a reorg forked. */
export const CHECKPOINT_HISTORY = 256;

/** A row with its record columns. */
export type RecordRow = Record<string, unknown>;

/** A stored row as a record; undefined while the row has no record yet. */
export function toStoredAttestation(row: RecordRow): StoredAttestation | undefined {
  if (row.data === null || row.data === undefined || row.time === null || row.time === undefined) return undefined;
  return {
    uid: String(row.uid) as HexString,
    schema: String(row.schema_uid) as HexString,
    time: BigInt(String(row.time)),
    expirationTime: BigInt(String(row.expiration_time)),
    revocationTime: BigInt(String(row.revocation_time ?? "0")),
    refUID: String(row.ref_uid) as HexString,
    recipient: String(row.recipient) as HexString,
    attester: String(row.attester) as HexString,
    revocable: Number(row.revocable) === 1,
    data: String(row.data) as HexString,
    blockNumber: BigInt(String(row.block_number)),
    revokedBlock: row.revoked_block === null || row.revoked_block === undefined ? null : BigInt(String(row.revoked_block)),
  };
}
