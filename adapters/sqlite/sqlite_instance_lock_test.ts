/**
 * The SQLite file's instance lock (sqlite_instance_lock.ts): one holder at a time, in this process or another; the
 * data file itself stays open to others (the operator's commands); a holder killed with SIGKILL leaves no stale lock.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lockSqliteFile, type SqliteInstanceLock } from "./sqlite_instance_lock.ts";
import { openSqliteStorage } from "./sqlite_storage.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-sqlite-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function take(path: string): SqliteInstanceLock {
  const taken = lockSqliteFile(path);
  if (!taken.ok) throw new Error(`not taken: ${JSON.stringify(taken)}`);
  return taken.lock;
}

/** A child process that takes the lock of `path`, prints `held` or `busy`, and holds it until its stdin closes. */
function child(path: string) {
  const script = join(dir, "child.ts");
  writeFileSync(script, `import { lockSqliteFile } from ${JSON.stringify(join(import.meta.dir, "sqlite_instance_lock.ts"))};
const taken = lockSqliteFile(${JSON.stringify(path)});
console.log(taken.ok ? "held" : taken.busy ? "busy" : "error " + taken.message);
for await (const _ of Bun.stdin.stream()) { /* until the parent closes stdin */ }
`);
  const proc = Bun.spawn([process.execPath, script], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
  const said = (async () => {
    const reader = proc.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    return text.trim();
  })();
  return { proc, said };
}

describe("the SQLite instance lock", () => {
  test("one holder in this process: a second take is refused until the first is released", () => {
    const path = join(dir, "one.sqlite");
    const first = take(path);
    expect(lockSqliteFile(path)).toEqual({ ok: false, path: `${path}.lock`, busy: true });
    first.release();
    first.release();
    take(path).release();
  });

  test("the data file stays open to others while the lock is held", async () => {
    const path = join(dir, "data.sqlite");
    const lock = take(path);
    const storage = openSqliteStorage(path);
    expect(await storage.ping()).toBe(true);
    await storage.close();
    lock.release();
  });

  test("another process is refused while this one holds it, and takes it once it is released", async () => {
    const path = join(dir, "two.sqlite");
    const lock = take(path);
    const refused = child(path);
    expect(await refused.said).toBe("busy");
    refused.proc.stdin.end();
    await refused.proc.exited;
    lock.release();
    const holder = child(path);
    expect(await holder.said).toBe("held");
    expect(lockSqliteFile(path)).toMatchObject({ ok: false, busy: true });
    holder.proc.stdin.end();
    expect(await holder.proc.exited).toBe(0);
    take(path).release();
  });

  test("a holder killed with SIGKILL leaves no stale lock and no journal", async () => {
    const path = join(dir, "killed.sqlite");
    const holder = child(path);
    expect(await holder.said).toBe("held");
    expect(lockSqliteFile(path)).toMatchObject({ ok: false, busy: true });
    holder.proc.kill("SIGKILL");
    await holder.proc.exited;
    expect(readdirSync(dir).filter((name) => name.startsWith("killed."))).toEqual(["killed.sqlite.lock"]);
    take(path).release();
  });
  test("two paths to one file take one lock: a link to the file, or to its folder, is refused while the file is held", () => {
    // Found in review: the lock was named from the path as written, so a DATABASE_PATH that linked to a running
    // instance's file took a lock of its own and both served from one file.
    const real = join(dir, "real");
    mkdirSync(real);
    const path = join(real, "linked.sqlite");
    openSqliteStorage(path).close();
    symlinkSync(path, join(dir, "file-link.sqlite"));
    symlinkSync(real, join(dir, "folder-link"));
    const lock = take(path);
    expect(lockSqliteFile(join(dir, "file-link.sqlite"))).toMatchObject({ ok: false, busy: true });
    expect(lockSqliteFile(join(dir, "folder-link", "linked.sqlite"))).toMatchObject({ ok: false, busy: true });
    lock.release();
    // A file not made yet, in a linked folder: the same lock as by the folder's real path.
    const fresh = take(join(dir, "folder-link", "fresh.sqlite"));
    expect(lockSqliteFile(join(real, "fresh.sqlite"))).toMatchObject({ ok: false, busy: true });
    fresh.release();
    take(join(dir, "file-link.sqlite")).release();
  });
});
