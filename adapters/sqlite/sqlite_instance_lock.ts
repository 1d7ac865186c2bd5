import { Database } from "bun:sqlite";
import { chmodSync, mkdirSync, realpathSync } from "node:fs";
import { basename, dirname, join } from "node:path";

/**
 * The lock that keeps a SQLite data file to one service process. Two processes on one file each handed out the
 * delegate wallet's next nonce from their own memory, and about one write in six failed with "nonce too low".
 *
 * How it is held: a small SQLite database beside the data file (`<file>.lock`) kept inside an open `BEGIN EXCLUSIVE`
 * transaction for as long as the process lives. SQLite takes that as a POSIX record lock on the file, and the kernel
 * drops such locks when the process ends, however it ends: a `kill -9` leaves no stale lock, and nothing has to
 * tell a dead holder from a live one by process ids (which containers and pid reuse make unreliable). Bun has no
 * `flock`; calling it through `bun:ffi` would need the C library's name for each platform, while SQLite's own
 * locking is there on every one. Another process asking for the same transaction gets SQLITE_BUSY at once (no busy
 * wait is set), and so does a second connection in this process, since SQLite sees its own locks on a file too.
 *
 * The lock file holds one empty table, made once, so that taking the lock writes nothing: no journal is left
 * behind by a killed holder. Nothing else may open the lock file in the holding process: closing any descriptor of
 * a file drops every POSIX lock the process has on it (SQLite keeps its own descriptors open for that reason).
 * The connection is kept in `held`: a Database nobody refers to is closed by the garbage collector, and the lock
 * went with it.
 */
export type SqliteInstanceLock = {
  /** The lock file. */
  readonly path: string;
  /** Ends the transaction and closes the lock file; the next start may take it. */
  readonly release: () => void;
};

/** What taking the lock came to: held by us, held by another process (or connection), or an error of the file. */
export type SqliteLockAttempt =
  | { readonly ok: true; readonly lock: SqliteInstanceLock }
  | { readonly ok: false; readonly path: string; readonly busy: true }
  | { readonly ok: false; readonly path: string; readonly busy: false; readonly message: string };

const held = new Set<Database>();

/**
 * The lock file of a SQLite data file: beside it, its name and `.lock`, by its real path (symbolic links resolved, in
 * the file's name or its folder's), so that two paths to one file take one lock. Before, a `DATABASE_PATH` that was a
 * link to another instance's file (a volume mounted twice, a `current` link) got a lock of its own, and both ran. A
 * file not made yet is named by its folder's real path; a folder not made yet, as written. Hard links stay apart.
 */
export function sqliteLockPath(databasePath: string): string {
  return `${realPathOf(databasePath)}.lock`;
}

function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return path;
    }
  }
}

/** Takes the instance lock of `databasePath` without waiting (see {@link SqliteInstanceLock}). */
export function lockSqliteFile(databasePath: string): SqliteLockAttempt {
  const path = sqliteLockPath(databasePath);
  let db: Database | undefined;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    db = new Database(path, { create: true });
    try {
      chmodSync(path, 0o600);
    } catch {
      // A file another user owns (a mounted volume) keeps its mode.
    }
    db.exec("PRAGMA busy_timeout = 0");
    db.exec("CREATE TABLE IF NOT EXISTS instance_lock (id INTEGER PRIMARY KEY)");
    db.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    db?.close();
    if ((error as { code?: unknown } | null)?.code === "SQLITE_BUSY") return { ok: false, path, busy: true };
    return { ok: false, path, busy: false, message: error instanceof Error ? error.message : String(error) };
  }
  const connection = db;
  held.add(connection);
  return {
    ok: true,
    lock: {
      path,
      release() {
        if (!held.delete(connection)) return;
        connection.close();
      },
    },
  };
}
