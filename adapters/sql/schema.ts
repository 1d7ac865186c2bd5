/**
 * The one migration source both engines read (issue 47 item 4). A table group is written once, in the words of
 * `SqlWords` where the engines differ; SQLite and PostgreSQL each apply it their own way (`sqlite_database.ts`,
 * `postgres_schema.ts`). Statements are idempotent, so a database made by any earlier version opens, and a group is
 * extended by appending: a new table to `create`, a new column to `added` (never renaming or dropping one).
 */

/** The column types where the engines' words differ. */
export type SqlWords = {
  /** 64-bit integers: times in milliseconds, chain ids, nonces. */
  readonly int: "INTEGER" | "BIGINT";
  /** Amounts beyond 64 bits (gas): decimal text in SQLite, `NUMERIC` in PostgreSQL. */
  readonly decimal: "TEXT" | "NUMERIC";
  /** Bytes. */
  readonly bytes: "BLOB" | "BYTEA";
};

export const SQLITE_WORDS: SqlWords = { int: "INTEGER", decimal: "TEXT", bytes: "BLOB" };
export const POSTGRES_WORDS: SqlWords = { int: "BIGINT", decimal: "NUMERIC", bytes: "BYTEA" };

/** A column added after its table was first created: [table, column, type]. */
export type AddedColumn = readonly [table: string, column: string, type: string];

/** A group of tables: created, then the columns added since (each only where missing), then what needs them. */
export type TableGroup = {
  readonly create: readonly string[];
  readonly added: readonly AddedColumn[];
  readonly after: readonly string[];
};

/** PostgreSQL's way with a group: one statement list, added columns as `ADD COLUMN IF NOT EXISTS`. */
export function postgresStatements(group: TableGroup): string[] {
  return [
    ...group.create,
    ...group.added.map(([table, column, type]) => `ALTER TABLE ${table} ADD COLUMN IF NOT EXISTS ${column} ${type}`),
    ...group.after,
  ];
}
