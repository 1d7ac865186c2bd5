/**
 * The SQL of the index's queries (decisions §24), one text for SQLite and PostgreSQL: the filters as predicates the
 * indexes below serve, `since`/`until` turned into block bounds (an attestation's time is its block's time, which
 * never decreases along the chain) and the keyset position as a row-value comparison, so a deep page is one index
 * seek like the first.
 */
import type { IndexFilter, IndexQuery } from "../../ports/attestation_index.ts";

/** The SQL words that differ. */
export type SqlDialect = "sqlite" | "postgres";

/** A statement and its numbered parameters (`?1` in SQLite, `$1` in PostgreSQL). */
export type SqlStatement = { readonly text: string; readonly params: (string | number)[] };

/**
 * The indexes the queries use, one per filter the route takes, each ending in the paging order (block, log index);
 * created after `time_seconds` exists. The subject and recipient filters share the recipient index.
 */
export const INDEX_QUERY_INDEXES: readonly string[] = [
  `CREATE INDEX IF NOT EXISTS index_attestations_recipient_order
     ON index_attestations (chain_id, eas, recipient, block_number, log_index)`,
  `CREATE INDEX IF NOT EXISTS index_attestations_attester
     ON index_attestations (chain_id, eas, attester, block_number, log_index)`,
  `CREATE INDEX IF NOT EXISTS index_attestations_schema
     ON index_attestations (chain_id, eas, schema_uid, block_number, log_index)`,
  `CREATE INDEX IF NOT EXISTS index_attestations_time ON index_attestations (chain_id, eas, time_seconds, block_number)`,
];

/** Fills `time_seconds` of rows stored before it was kept (issue 37); a no-op once every record has it. */
export function timeSecondsBackfill(dialect: SqlDialect): string {
  return `UPDATE index_attestations SET time_seconds = CAST(time AS ${dialect === "sqlite" ? "INTEGER" : "BIGINT"})
          WHERE time_seconds IS NULL AND time IS NOT NULL`;
}

/** Builds a page query, or with `count` the count of the filter's rows. */
export function indexQuerySql(
  dialect: SqlDialect,
  scope: { readonly chainId: number; readonly eas: string },
  query: ({ readonly count: true } & IndexFilter) | ({ readonly count?: false | undefined } & IndexQuery),
): SqlStatement {
  const params: (string | number)[] = [];
  const text = (v: string | number) => {
    params.push(v);
    return dialect === "sqlite" ? `?${params.length}` : `$${params.length}`;
  };
  // Block numbers and times: numbers in SQLite, decimal strings cast in PostgreSQL (BIGINT columns).
  const big = (v: bigint) => {
    if (dialect === "sqlite") return text(Number(v));
    return `${text(v.toString())}::BIGINT`;
  };
  const int = (v: number) => (dialect === "sqlite" ? text(v) : `${text(v)}::INTEGER`);
  const scoped = () => `chain_id = ${text(scope.chainId)} AND eas = ${text(scope.eas)}`;
  const where = [scoped(), `block_number <= ${big(query.toBlock)}`];
  if (query.recipient !== undefined) where.push(`recipient = ${text(query.recipient.toLowerCase())}`);
  if (query.attester !== undefined) where.push(`attester = ${text(query.attester.toLowerCase())}`);
  if (query.schemaUid !== undefined) where.push(`schema_uid = ${text(query.schemaUid.toLowerCase())}`);
  if (query.revoked === true) where.push(`revoked_block IS NOT NULL AND revoked_block <= ${big(query.toBlock)}`);
  if (query.revoked === false) where.push(`(revoked_block IS NULL OR revoked_block > ${big(query.toBlock)})`);
  // The first block whose time reaches t (blocks before it are all earlier): one seek on the time index.
  const firstBlockAt = (t: bigint) =>
    `(SELECT block_number FROM index_attestations WHERE ${scoped()} AND time_seconds >= ${big(t)}
       ORDER BY time_seconds, block_number LIMIT 1)`;
  if (query.since !== undefined) {
    where.push(`block_number >= COALESCE(${firstBlockAt(query.since)}, ${big(query.toBlock + 1n)})`);
    where.push(`time_seconds >= ${big(query.since)}`);
  }
  if (query.until !== undefined) {
    where.push(`block_number < COALESCE(${firstBlockAt(query.until)}, ${big(query.toBlock + 1n)})`);
    where.push(`time_seconds < ${big(query.until)}`);
  }
  if (query.count === true) return { text: `SELECT COUNT(*) AS n FROM index_attestations WHERE ${where.join(" AND ")}`, params };
  const newest = query.order === "newest";
  if (query.after !== undefined) {
    where.push(`(block_number, log_index) ${newest ? "<" : ">"} (${big(query.after.blockNumber)}, ${int(query.after.logIndex)})`);
  }
  const direction = newest ? "DESC" : "ASC";
  return {
    text: `SELECT uid, recipient, attester, schema_uid, block_number, log_index FROM index_attestations
           WHERE ${where.join(" AND ")} ORDER BY block_number ${direction}, log_index ${direction} LIMIT ${int(query.limit)}`,
    params,
  };
}
