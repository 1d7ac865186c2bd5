/**
 * One service process per SQLite file (no `DATABASE_URL`): two `bun main.ts` on one `DATA_DIR` both started, both
 * answered /readyz 200, and handed out the same delegate-wallet nonces (about one write in six failed with 500
 * `SUBMISSION_FAILED`, "nonce too low"). Now the second stops at its start with one line while the first serves on,
 * the operator's commands still open the file beside the running service, and a `kill -9` of the holder leaves no
 * stale lock: the next start serves.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { e2eArtifacts } from "./harness.ts";
import { devnetServiceEnv, type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { tempDirs } from "./support/temp_dirs.ts";
import { waitFor } from "./support/wait_for.ts";

const MAIN = join(import.meta.dir, "..", "main.ts");
const tempDir = tempDirs("ats-sqlite-instance-");
let devnet: Devnet;
let dataDir: string;
let env: Record<string, string>;
const started: ServiceProcess[] = [];

beforeAll(async () => {
  const root = tempDir();
  devnet = await startDevnet({ dataDir: join(root, "devnet"), persist: false, artifacts: e2eArtifacts() });
  dataDir = join(root, "data");
  env = { ...devnetServiceEnv(devnet, dataDir), LOG_LEVEL: "error" };
}, 120_000);

afterAll(async () => {
  for (const service of started) {
    if (service.proc.exitCode === null && service.proc.signalCode === null) service.proc.kill("SIGKILL");
    await service.proc.exited;
  }
  await devnet?.stop();
});

async function start(): Promise<ServiceProcess> {
  const service = await startServiceProcess(env, 60_000);
  started.push(service);
  return service;
}

/**
 * `bun main.ts` with the test's environment, until it exits or prints that it listens (then it is stopped: it must
 * not serve). Counts on the process's own output, never on a time.
 */
async function secondStart(): Promise<{ served: boolean; code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, MAIN], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
  const stderr = new Response(proc.stderr).text();
  const reader = proc.stdout.getReader();
  let text = "";
  let served = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    if (/ats listening on /.test(text)) {
      served = true;
      proc.kill("SIGKILL");
    }
  }
  return { served, code: await proc.exited, stderr: await stderr };
}

async function readyz(service: ServiceProcess): Promise<number> {
  return (await fetch(`${service.url}/readyz`)).status;
}

describe("SQLite storage serves one instance", () => {
  test("a second process on the same DATA_DIR stops at its start with one line; the first serves on and ops still open the file", async () => {
    const first = await start();
    await waitFor("the first instance is ready", async () => (await readyz(first)) === 200 ? true : undefined);

    const second = await secondStart();
    expect(second.served).toBe(false);
    expect(second.code).toBe(1);
    const lines = second.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(lines).toEqual([
      `ats: DATABASE_PATH: ${join(dataDir, "ats.sqlite")} is used by another running instance (it holds ${join(dataDir, "ats.sqlite.lock")}); SQLite storage serves one instance, use DATABASE_URL for several`,
    ]);
    expect(await readyz(first)).toBe(200);

    // The operator's commands open the same file while the service runs (they take no lock).
    const ops = Bun.spawn([process.execPath, MAIN, "ops", "accounts", "list"], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" });
    expect(await ops.exited).toBe(0);

    // A kill -9 leaves no stale lock: the next start serves, and it holds the lock in turn.
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    const next = await start();
    await waitFor("the next instance is ready", async () => (await readyz(next)) === 200 ? true : undefined);
    const third = await secondStart();
    expect({ served: third.served, code: third.code }).toEqual({ served: false, code: 1 });

    // A clean stop releases it too.
    expect(await next.stop()).toBe(0);
    const last = await start();
    await waitFor("the instance after a clean stop is ready", async () => (await readyz(last)) === 200 ? true : undefined);
    expect(await last.stop()).toBe(0);
  }, 180_000);
});
