import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteAccountStore, createSqliteWriteLedger } from "./sqlite_accounts.ts";
import { openSqlite } from "./sqlite_database.ts";

const dir = mkdtempSync(join(tmpdir(), "ats-accounts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The behaviour shared with PostgreSQL is in ../test_support/ (the storage contract); this file covers what is SQLite's own:
// reservations from several processes on one file.
describe("createSqliteWriteLedger()", () => {
  test("four processes racing for a hundred writes on one file get exactly a hundred", async () => {
    const path = join(dir, "race.sqlite");
    const db = openSqlite(path);
    await createSqliteAccountStore(db).findOrCreateAccount("0xaaa", "a", 0);
    db.close();
    const script = `
      import { openSqlite } from ${JSON.stringify(join(import.meta.dir, "sqlite_database.ts"))};
      import { createSqliteWriteLedger } from ${JSON.stringify(join(import.meta.dir, "sqlite_accounts.ts"))};
      const ledger = createSqliteWriteLedger(openSqlite(process.argv[2]));
      let won = 0;
      for (let i = 0; i < 40; i++) {
        if (await ledger.reserve({ id: process.argv[3] + i, accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 1 }, 100)) won++;
      }
      console.log(won);
    `;
    const file = join(dir, "race.ts");
    await Bun.write(file, script);
    const runs = await Promise.all(
      ["p", "q", "r", "s"].map(async (tag) => {
        const proc = Bun.spawn([process.execPath, file, path, tag], { stdout: "pipe", stderr: "pipe" });
        const [out, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
        if (code !== 0) console.log(await new Response(proc.stderr).text());
        expect(code).toBe(0);
        return Number(out.trim());
      }),
    );
    expect(runs.reduce((a, b) => a + b, 0)).toBe(100);
    const check = createSqliteWriteLedger(openSqlite(path));
    expect(await check.usage("a", 2026)).toEqual({ used: 0, reserved: 100 });
  });
});
