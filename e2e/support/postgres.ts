/**
 * A throwaway PostgreSQL server for tests: `initdb` into a temporary directory, `pg_ctl start` on a free
 * loopback port, trust authentication, fsync off. Uses Debian's `postgresql` package
 * (/usr/lib/postgresql/<version>/bin); as root the server runs as the `postgres` user.
 */
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./free_port.ts";

/** A running test server. */
export type TestPostgres = { readonly url: string; readonly stop: () => Promise<void> };

/** The directory holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function postgresBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export function postgresUnavailableReason(): string | undefined {
  return postgresBinDir() === undefined
    ? "PostgreSQL is not installed (apt-get install postgresql); the PostgreSQL storage tests are skipped"
    : undefined;
}

async function run(command: string[], asPostgres: boolean): Promise<void> {
  const argv = asPostgres ? ["runuser", "-u", "postgres", "--", ...command] : command;
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`${command[0]} failed (${code}): ${err.trim().slice(0, 500)}`);
}

/** Starts a fresh server; `database` is created and named in the URL. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBinDir();
  if (bin === undefined) throw new Error(postgresUnavailableReason());
  const asPostgres = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "ats-pg-"));
  if (asPostgres) {
    const uid = Number((await new Response(Bun.spawn(["id", "-u", "postgres"]).stdout).text()).trim());
    const gid = Number((await new Response(Bun.spawn(["id", "-g", "postgres"]).stdout).text()).trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  await run([join(bin, "initdb"), "-D", data, "-U", "ats", "--auth=trust", "-E", "UTF8", "--no-sync"], asPostgres);
  const port = freePort();
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  await run([join(bin, "pg_ctl"), "-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "30", "start"], asPostgres);
  return {
    url: `postgres://ats@127.0.0.1:${port}/postgres`,
    async stop() {
      try {
        await run([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"], asPostgres);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
