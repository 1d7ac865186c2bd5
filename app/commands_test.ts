import { expect, test } from "bun:test";
import { join } from "node:path";
import { tempDirs } from "../e2e/support/temp_dirs.ts";

const dirs = tempDirs("ats-commands-");
const ROOT = join(import.meta.dir, "..");

/** `bun main.ts <args>` as the image runs `ats <args>`: its exit code and what it printed. */
async function ats(args: string[], env: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, "main.ts", ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? "", ...env }, stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

test("`ats ops …` runs the operator's commands in the binary (the image has no npm): on the instance's database, with its usage when wrong", async () => {
  const dir = dirs();
  const listed = await ats(["ops", "accounts", "list"], { DATA_DIR: dir, HOME: dir });
  expect([listed.code, listed.stdout, listed.stderr]).toEqual([0, "", ""]);
  const wrong = await ats(["ops", "nothing"], { DATA_DIR: dir, HOME: dir });
  expect(wrong.code).toBe(2);
  expect(wrong.stdout).toContain("usage:");
  // `signers` on the devnet names none (the devnet gives its keys at the service's start): said, not silence.
  const signers = await ats(["ops", "signers"], { DATA_DIR: dir, HOME: dir });
  expect([signers.code, signers.stdout.trim()]).toEqual([0, "ats ops: no signer is configured; the embedded devnet gives its own keys when the service starts"]);
  const unknown = await ats(["opz"], { DATA_DIR: dir, HOME: dir });
  expect([unknown.code, unknown.stderr.trim()]).toEqual([2, 'ats: unknown command "opz" (expected none, healthcheck, devnet or ops)']);
});
