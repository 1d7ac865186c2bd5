import type { Database } from "bun:sqlite";
import type { AttestedLog, EasEvent, IndexCheckpoint, IndexStore, PagedLog } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";

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
  ];
}

/** How many earlier checkpoints are kept to find where a reorg forked. */
export const CHECKPOINT_HISTORY = 256;

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

/** The attestation index of one EAS contract in the service's SQLite file. */
export function createSqliteIndexStore(db: Database, scope: { chainId: number; easAddress: string }): IndexStore {
  db.transaction(() => {
    for (const statement of indexTables("INTEGER")) db.exec(statement);
  }).immediate();
  const chainId = scope.chainId;
  const eas = scope.easAddress.toLowerCase();
  const leaseName = `${chainId}:${eas}`;

  const latest = db.query<{ block_number: number; block_hash: string }, [number, string]>(
    "SELECT block_number, block_hash FROM index_checkpoints WHERE chain_id = ? AND eas = ? ORDER BY block_number DESC LIMIT 1",
  );
  const history = db.query<{ block_number: number; block_hash: string }, [number, string, number]>(
    "SELECT block_number, block_hash FROM index_checkpoints WHERE chain_id = ? AND eas = ? ORDER BY block_number DESC LIMIT ?",
  );
  const insertEvent = db.query(
    `INSERT INTO index_attestations (chain_id, eas, uid, recipient, attester, schema_uid, block_number, log_index)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
  );
  const revoke = db.query("UPDATE index_attestations SET revoked_block = ? WHERE chain_id = ? AND eas = ? AND uid = ?");
  const insertCheckpoint = db.query("INSERT OR REPLACE INTO index_checkpoints (chain_id, eas, block_number, block_hash) VALUES (?, ?, ?, ?)");
  const trimHistory = db.query(
    `DELETE FROM index_checkpoints WHERE chain_id = ? AND eas = ? AND block_number < (
       SELECT MIN(block_number) FROM (SELECT block_number FROM index_checkpoints WHERE chain_id = ? AND eas = ?
                                      ORDER BY block_number DESC LIMIT ?))`,
  );
  const dropEvents = db.query("DELETE FROM index_attestations WHERE chain_id = ? AND eas = ? AND block_number > ?");
  const unrevoke = db.query("UPDATE index_attestations SET revoked_block = NULL WHERE chain_id = ? AND eas = ? AND revoked_block > ?");
  const dropCheckpoints = db.query("DELETE FROM index_checkpoints WHERE chain_id = ? AND eas = ? AND block_number > ?");
  const takeLease = db.query(
    `INSERT INTO index_lease (name, holder, expires_at_ms) VALUES ($name, $holder, $expires)
     ON CONFLICT (name) DO UPDATE SET holder = $holder, expires_at_ms = $expires
       WHERE index_lease.holder = $holder OR index_lease.expires_at_ms < $now`,
  );

  const current = () => {
    const row = latest.get(chainId, eas);
    return row === null ? undefined : { blockNumber: BigInt(row.block_number), blockHash: row.block_hash as HexString };
  };

  const append = db.transaction((expected: bigint | undefined, events: readonly EasEvent[], next: IndexCheckpoint): boolean => {
    if (current()?.blockNumber !== expected) return false;
    for (const e of events) {
      if (e.kind === "attested") {
        insertEvent.run(chainId, eas, e.uid, e.recipient, e.attester, e.schemaUid, Number(e.blockNumber), e.logIndex);
      } else {
        revoke.run(Number(e.blockNumber), chainId, eas, e.uid);
      }
    }
    insertCheckpoint.run(chainId, eas, Number(next.blockNumber), next.blockHash);
    trimHistory.run(chainId, eas, chainId, eas, CHECKPOINT_HISTORY);
    return true;
  });

  const rewind = db.transaction((to: IndexCheckpoint | undefined) => {
    const block = to === undefined ? -1 : Number(to.blockNumber);
    dropEvents.run(chainId, eas, block);
    unrevoke.run(chainId, eas, block);
    dropCheckpoints.run(chainId, eas, block);
    if (to !== undefined) insertCheckpoint.run(chainId, eas, block, to.blockHash);
  });

  return {
    checkpoint: () => Promise.resolve(current()),
    history: (limit) =>
      Promise.resolve(history.all(chainId, eas, limit).map((r) => ({ blockNumber: BigInt(r.block_number), blockHash: r.block_hash as HexString }))),
    append: (expected, events, next) => Promise.resolve(append.immediate(expected, events, next)),
    rewind: (to) => Promise.resolve(void rewind.immediate(to)),
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
    page(query) {
      const before = query.before;
      const rows = db.query<Row, (string | number)[]>(
        `SELECT * FROM index_attestations WHERE chain_id = ? AND eas = ? AND recipient = ? AND schema_uid = ? AND block_number <= ?
           ${before === undefined ? "" : "AND (block_number < ? OR (block_number = ? AND log_index < ?))"}
         ORDER BY block_number DESC, log_index DESC LIMIT ?`,
      ).all(
        chainId,
        eas,
        query.recipient.toLowerCase(),
        query.schemaUid.toLowerCase(),
        Number(query.toBlock),
        ...(before === undefined ? [] : [Number(before.blockNumber), Number(before.blockNumber), before.logIndex]),
        query.limit,
      );
      return Promise.resolve(rows.map(toPaged));
    },
    lease(holder, nowMs, leaseMs) {
      takeLease.run({ name: leaseName, holder, expires: nowMs + leaseMs, now: nowMs });
      const row = db.query<{ holder: string }, [string]>("SELECT holder FROM index_lease WHERE name = ?").get(leaseName);
      return Promise.resolve(row?.holder === holder);
    },
  };
}
