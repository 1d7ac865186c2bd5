import { Database } from "bun:sqlite";
import { chmodSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { accountTables } from "../sql/accounts.ts";
import { replayTable, replayTables } from "../sql/replay_store.ts";
import { SQLITE_WORDS, type TableGroup } from "../sql/schema.ts";

/** The tables openSqlite makes (the stores make their own when created), from the source both engines read. */
const TABLE_GROUPS: readonly TableGroup[] = [replayTables(SQLITE_WORDS), accountTables(SQLITE_WORDS)];

/** Adds each of `columns` its table lacks; run inside the migration transaction. */
export function addMissingColumns(db: Database, columns: readonly (readonly [string, string, string])[]): void {
  for (const [table, column, type] of columns) {
    const present = db.query<{ name: string }, []>(`PRAGMA table_info(${table})`).all().some((c) => c.name === column);
    if (!present) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  }
}

/**
 * SQLite's way with a table group: its statements, then each added column its table lacks (SQLite has no
 * `ADD COLUMN IF NOT EXISTS`, so `PRAGMA table_info` is asked), then what needs them. Run inside a transaction.
 */
export function applyTableGroup(db: Database, group: TableGroup): void {
  for (const statement of group.create) db.exec(statement);
  addMissingColumns(db, group.added);
  for (const statement of group.after) db.exec(statement);
}

/**
 * A replay table made before a record's identity was (chain, signature) (decisions §30) had `key` alone as its primary
 * key: one signature's record on one chain refused the same signature on another. SQLite cannot change a table's key,
 * so the table is rebuilt once, rows kept (each named its chain already), then its indexes made again. Run inside the
 * migration transaction, after the replay group was applied (so the old table has every added column).
 */
function rekeyReplay(db: Database): void {
  const columns = db.query<{ name: string; pk: number }, []>("PRAGMA table_info(replay)").all();
  if (columns.find((c) => c.name === "chain_id")?.pk !== 0) return;
  const group = replayTables(SQLITE_WORDS);
  db.exec("ALTER TABLE replay RENAME TO replay_keyed_by_signature");
  db.exec(replayTable(SQLITE_WORDS));
  addMissingColumns(db, group.added);
  const names = columns.map((c) => c.name).join(", ");
  db.exec(`INSERT INTO replay (${names}) SELECT ${names} FROM replay_keyed_by_signature`);
  // Its indexes go with it; the group makes them again on the new table.
  db.exec("DROP TABLE replay_keyed_by_signature");
  applyTableGroup(db, group);
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

/**
 * The page size of a new SQLite file (issue 43 item 4, eighteenth look in docs/performance.md): 1 KiB, not SQLite's
 * 4 KiB. A delegated attestation's statements each change a row or two and their index entries, and every commit writes
 * each page it changed to the WAL whole: about 35 pages a write. Smaller pages write a quarter of the bytes for the same
 * changes; measured in 16 alternated pairs of `bench/attest_cpu.ts`, the service's CPU a write fell by 5 % (±1.5 %),
 * while a keyset page of 90,000 attestations (`bench/query_pages.ts`) read within 2–4 % of its time with 4 KiB pages.
 */
export const SQLITE_PAGE_BYTES = 1024;

/** Opens (creating if needed) the service's SQLite file with WAL and the schema applied. */
export function openSqlite(path: string): CountingDatabase {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = countStatements(new Database(path, { create: true, strict: true }));
  if (path !== ":memory:") ownerOnly(path);
  // The wait first: processes opening the file together meet the first one's WAL recovery (SQLITE_BUSY), and the
  // journal pragma, run before the wait was set, failed at once (a four-process test, red once in a CI run).
  db.exec("PRAGMA busy_timeout = 5000");
  // Before the first table: a new file takes it, a file that has pages keeps its own (SQLite changes it only by VACUUM,
  // which WAL forbids). See {@link SQLITE_PAGE_BYTES}.
  db.exec(`PRAGMA page_size = ${SQLITE_PAGE_BYTES}`);
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  // Immediate: processes opening one file together migrate one after the other (a column check and its
  // ALTER must not interleave with another process's).
  db.transaction(() => {
    for (const group of TABLE_GROUPS) applyTableGroup(db, group);
    rekeyReplay(db);
  }).immediate();
  return db;
}

/**
 * The file readable by its owner only, and its WAL and shared-memory files (SQLite gives those the file's own mode):
 * it holds the OAuth signing keys' private JWKs (without `OAUTH_SIGNER`), webhook secrets and the deployment's secrets.
 * Created with the process's umask (022), any user of the host could read them. A file another user owns (a mounted
 * volume) is left as it is.
 */
function ownerOnly(path: string): void {
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // Absent yet (made with the file's mode), or not ours to change.
    }
  }
}
