import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS replay (
     key TEXT PRIMARY KEY,
     chain_id INTEGER NOT NULL,
     attester TEXT NOT NULL,
     nonce TEXT NOT NULL,
     deadline INTEGER NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms INTEGER NOT NULL
   )`,
  // Submissions before decisions §15 had states claimed/broadcast/done/failed.
  `UPDATE replay SET state = CASE state WHEN 'claimed' THEN 'checked' WHEN 'broadcast' THEN 'sent'
     WHEN 'done' THEN 'mined' WHEN 'failed' THEN 'reverted' ELSE state END
     WHERE state IN ('claimed', 'broadcast', 'done', 'failed')`,
  `DROP INDEX IF EXISTS replay_live_nonce`,
  // One live submission per attester nonce: a second signature over the same nonce cannot be sent
  // while the first is in flight or after it was mined. A reverted one frees the nonce.
  `CREATE UNIQUE INDEX IF NOT EXISTS replay_live_nonce_v2 ON replay (chain_id, attester, nonce)
     WHERE state IN ('checked', 'signed', 'sent', 'mined')`,
  `CREATE INDEX IF NOT EXISTS replay_open ON replay (state, created_at_ms)`,
  `CREATE INDEX IF NOT EXISTS replay_deadline ON replay (deadline)`,
  `CREATE TABLE IF NOT EXISTS accounts (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL UNIQUE,
     plan TEXT NOT NULL,
     created_at_ms INTEGER NOT NULL,
     updated_at_ms INTEGER NOT NULL
   )`,
  `CREATE TABLE IF NOT EXISTS challenges (
     id TEXT PRIMARY KEY,
     address TEXT NOT NULL,
     chain_id INTEGER NOT NULL,
     nonce TEXT NOT NULL,
     message TEXT NOT NULL,
     created_at_ms INTEGER NOT NULL,
     expires_at_ms INTEGER NOT NULL,
     used_at_ms INTEGER
   )`,
  `CREATE INDEX IF NOT EXISTS challenges_expiry ON challenges (expires_at_ms)`,
  `CREATE TABLE IF NOT EXISTS sessions (
     token_hash TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     created_at_ms INTEGER NOT NULL,
     expires_at_ms INTEGER NOT NULL,
     revoked_at_ms INTEGER
   )`,
  `CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at_ms)`,
  // One row per sponsored write; 'reserved' and 'broadcast' rows count against the quota like
  // 'committed' ones, 'released' rows do not. The transaction hash is stored before broadcast.
  `CREATE TABLE IF NOT EXISTS sponsored_writes (
     id TEXT PRIMARY KEY,
     account_id TEXT NOT NULL REFERENCES accounts (id),
     year INTEGER NOT NULL,
     fingerprint TEXT NOT NULL,
     state TEXT NOT NULL,
     tx_hash TEXT,
     uid TEXT,
     block_number TEXT,
     created_at_ms INTEGER NOT NULL,
     updated_at_ms INTEGER NOT NULL
   )`,
  `CREATE INDEX IF NOT EXISTS sponsored_writes_usage ON sponsored_writes (account_id, year, state)`,
  `CREATE INDEX IF NOT EXISTS sponsored_writes_state ON sponsored_writes (state, created_at_ms)`,
];

/**
 * Columns added after a table was first created: the stored transaction of a submission (decisions §15).
 * SQLite has no `ADD COLUMN IF NOT EXISTS`, so each is added when `PRAGMA table_info` lacks it.
 */
const ADDED_COLUMNS: readonly (readonly [table: string, column: string, type: string])[] = [
  ["replay", "raw_tx", "TEXT"],
  ["replay", "wallet", "TEXT"],
  ["replay", "tx_nonce", "INTEGER"],
  ["sponsored_writes", "raw_tx", "TEXT"],
  ["sponsored_writes", "wallet", "TEXT"],
  ["sponsored_writes", "tx_nonce", "INTEGER"],
  // Accounts and sessions as the accounts API shows them (decisions §12).
  ["accounts", "display_name", "TEXT"],
  ["sessions", "wallet_provider_id", "TEXT"],
  ["sessions", "execution_mode", "TEXT"],
  // Who asked for a sign-in challenge: its creation rate is limited per client address (decisions §15).
  ["challenges", "client_key", "TEXT"],
];

/** Statements that need the added columns. */
const AFTER_ADDED_COLUMNS: readonly string[] = [
  // Sign-in challenge rates: creations in the last minute per client and per wallet.
  `CREATE INDEX IF NOT EXISTS challenges_client ON challenges (client_key, created_at_ms)`,
  `CREATE INDEX IF NOT EXISTS challenges_wallet ON challenges (address, created_at_ms)`,
];

/** Adds each of `columns` its table lacks; run inside the migration transaction. */
export function addMissingColumns(db: Database, columns: readonly (readonly [string, string, string])[]): void {
  for (const [table, column, type] of columns) {
    const present = db.query<{ name: string }, []>(`PRAGMA table_info(${table})`).all().some((c) => c.name === column);
    if (!present) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  }
}

/** The methods of a statement that run it. */
const RUNS = ["run", "get", "all", "values", "iterate"] as const;

/** A database that counts the SQL statements it runs (issue 43). */
export type CountingDatabase = Database & {
  /** Statements run since the database was opened. */
  readonly statements: number;
};

/**
 * Has `db` count the SQL statements it runs (issue 43): each `run`, `get`, `all`, `values` or `iterate` of a statement,
 * each `exec`/`run` of the database, and the `BEGIN` and `COMMIT` (or `ROLLBACK`) of a transaction, one each. The
 * budget test of a delegated attestation (e2e/attest_budget_test.ts) reads it; counting costs one addition a statement.
 */
export function countStatements(db: Database): CountingDatabase {
  let statements = 0;
  const wrapped = new WeakSet<object>();
  /** Has a statement count its runs (once per statement: `query` hands out the same one for the same text). */
  const counted = <S extends object>(statement: S): S => {
    if (wrapped.has(statement)) return statement;
    wrapped.add(statement);
    const target = statement as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const name of RUNS) {
      const inner = target[name]!;
      target[name] = (...args: unknown[]) => {
        statements++;
        return inner.apply(statement, args);
      };
    }
    return statement;
  };
  const query = db.query.bind(db);
  const prepare = db.prepare.bind(db);
  const run = db.run.bind(db);
  const exec = db.exec.bind(db);
  const transaction = db.transaction.bind(db);
  const target = db as unknown as Record<string, unknown>;
  target.query = (sql: string) => counted(query(sql));
  target.prepare = (sql: string, params?: never) => counted(prepare(sql, params));
  target.run = (sql: string, ...bindings: never[]) => {
    statements++;
    return run(sql, ...bindings);
  };
  target.exec = (sql: string, ...bindings: never[]) => {
    statements++;
    return exec(sql, ...bindings);
  };
  target.transaction = (inside: (...args: unknown[]) => unknown) => {
    const inner = transaction(inside);
    const twice = (go: (...args: unknown[]) => unknown) => (...args: unknown[]) => {
      statements += 2;
      return go(...args);
    };
    return Object.assign(twice(inner), { deferred: twice(inner.deferred), immediate: twice(inner.immediate), exclusive: twice(inner.exclusive) });
  };
  Object.defineProperty(db, "statements", { get: () => statements });
  return db as CountingDatabase;
}

/** Opens (creating if needed) the service's SQLite file with WAL and the schema applied. */
export function openSqlite(path: string): CountingDatabase {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = countStatements(new Database(path, { create: true, strict: true }));
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA synchronous = NORMAL");
  // Immediate: processes opening one file together migrate one after the other (a column check and its
  // ALTER must not interleave with another process's).
  db.transaction(() => {
    for (const statement of MIGRATIONS) db.exec(statement);
    addMissingColumns(db, ADDED_COLUMNS);
    for (const statement of AFTER_ADDED_COLUMNS) db.exec(statement);
  }).immediate();
  return db;
}
