import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStorage } from "./mod.ts";
import { SQLITE_PAGE_BYTES } from "./sqlite_database.ts";

// Issue 47 item 4: the tables are now written once for both engines (adapters/sql/). A database made before that
// change (its schema as main d49cf14 made it, kept in testdata/) must open, keep its rows and gain nothing but
// what a fresh database has.
const dir = mkdtempSync(join(tmpdir(), "ats-upgrade-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const schemaOf = (path: string) => {
  const db = new Database(path);
  const rows = db.query<{ type: string; name: string; sql: string | null }, []>("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").all();
  db.close();
  return rows.map((r) => `${r.type} ${r.name} ${(r.sql ?? "").replace(/\s+/g, " ")}`);
};

test("a SQLite file made before the shared schema opens with its rows, and its schema is a fresh one's", async () => {
  const old = join(dir, "old.sqlite");
  const db = new Database(old, { create: true });
  db.exec(readFileSync(join(import.meta.dir, "testdata", "schema_d49cf14.sql"), "utf8"));
  db.exec("INSERT INTO accounts (id, address, plan, created_at_ms, updated_at_ms, display_name) VALUES ('acct-1', '0xaa', 'free', 1, 1, 'Ann')");
  db.exec("INSERT INTO sessions (token_hash, account_id, created_at_ms, expires_at_ms) VALUES ('th-1', 'acct-1', 1, 9999999999999)");
  db.exec(`INSERT INTO replay (key, chain_id, attester, nonce, deadline, state, created_at_ms) VALUES ('0xkey', 1, '0xatt', '1', 2000000000, 'checked', 1)`);
  db.exec(`INSERT INTO x402_payments (key, purpose, network, asset, payer, pay_to, amount, state, created_at_ms, updated_at_ms)
           VALUES ('eip155:1:0xt:0x01', 'witness', 'eip155:1', '0xt', '0xp', '0xq', '10', 'reserved', 1, 1)`);
  db.close();

  const storage = openSqliteStorage(old);
  await storage.indexStore({ chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" });
  expect(await storage.accounts.findAccount("acct-1")).toMatchObject({ id: "acct-1", displayName: "Ann" });
  expect((await storage.accounts.findSession("th-1"))?.account.id).toBe("acct-1");
  expect(await storage.replay.find(1, "0xkey")).toMatchObject({ key: "0xkey", state: "checked", nonce: 1n });
  // A payment reserved before its Idempotency-Key record was recorded names none (decisions §23 with §13).
  expect(await storage.payments.find("eip155:1:0xt:0x01")).toMatchObject({ state: "reserved", idempotencyRef: null });
  await storage.close();

  const fresh = join(dir, "fresh.sqlite");
  const made = openSqliteStorage(fresh);
  await made.indexStore({ chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" }); // the index makes its tables
  await made.close();
  expect(schemaOf(old)).toEqual(schemaOf(fresh));
});

// Issue 43 item 4 (eighteenth look): a new file is made with 1 KiB pages; a file made with SQLite's default 4 KiB keeps
// its pages (SQLite would change them only by VACUUM, which WAL forbids) and works as before.
test("a new SQLite file has 1 KiB pages, and a file with 4 KiB pages keeps them and takes writes", async () => {
  const pageSize = (path: string) => {
    const db = new Database(path);
    const size = db.query<{ page_size: number }, []>("PRAGMA page_size").get()!.page_size;
    db.close();
    return size;
  };
  const fresh = join(dir, "fresh.sqlite");
  const storage = openSqliteStorage(fresh);
  await storage.close();
  expect(pageSize(fresh)).toBe(SQLITE_PAGE_BYTES);
  expect(SQLITE_PAGE_BYTES).toBe(1024);

  const older = join(dir, "four-kib.sqlite");
  const db = new Database(older, { create: true });
  db.exec("PRAGMA page_size = 4096");
  db.exec("CREATE TABLE kept (x INTEGER)");
  db.close();
  expect(pageSize(older)).toBe(4096);
  const reopened = openSqliteStorage(older);
  const made = (await reopened.accounts.findOrCreateAccount("0x00000000000000000000000000000000000000aa", "acct-4k", 1)).account;
  expect((await reopened.accounts.findAccount("acct-4k"))?.id).toBe(made.id);
  await reopened.close();
  expect(pageSize(older)).toBe(4096);
  expect(schemaOf(older).some((row) => row.startsWith("table accounts "))).toBe(true);
});
