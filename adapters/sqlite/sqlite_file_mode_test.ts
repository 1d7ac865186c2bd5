import { expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { tempDirs } from "../../e2e/support/temp_dirs.ts";
import { openSqliteStorage } from "./mod.ts";

const dirs = tempDirs("ats-sqlite-mode-");

test("the service's SQLite file, its WAL and the folder made for it are its owner's alone, whatever the umask", async () => {
  // The file holds the OAuth signing keys' private JWKs, webhook secrets and the deployment's secrets: with the usual
  // umask (022) it was readable by every user of the host.
  const before = process.umask(0o022);
  try {
    const folder = join(dirs(), "data");
    const storage = await openSqliteStorage(join(folder, "ats.sqlite"));
    for (const file of ["ats.sqlite", "ats.sqlite-wal", "ats.sqlite-shm"]) {
      expect({ file, mode: (statSync(join(folder, file)).mode & 0o777).toString(8) }).toEqual({ file, mode: "600" });
    }
    expect((statSync(folder).mode & 0o777).toString(8)).toBe("700");
    await storage.close();
  } finally {
    process.umask(before);
  }
});
