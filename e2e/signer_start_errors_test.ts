/**
 * A signer that cannot be opened stops the process at start (decisions §27): `bun main.ts` exits 1 with one line
 * naming the role and what is wrong, never the PIN or the password, before any chain is started. The keys are real:
 * SoftHSM2 tokens and keystore files in a temp folder.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keystore } from "ox";
import { generatePrivateKey } from "viem/accounts";
import { createSoftHsm, type SoftHsm, softHsmAvailable } from "./support/softhsm.ts";

const ROOT = join(import.meta.dir, "..");
let dir: string;
let hsm: SoftHsm | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "ats-signer-start-"));
  if (softHsmAvailable()) {
    hsm = createSoftHsm();
    hsm.createToken("ats", "4711");
    hsm.generateKey("ats", "4711", "delegate", "secp256k1", "01");
    hsm.generateKey("ats", "4711", "oauth", "P-256", "02");
  }
});
afterAll(() => {
  hsm?.remove();
  rmSync(dir, { recursive: true, force: true });
});

/** Starts the service with `env` and returns its exit code and what it printed on stderr. */
async function start(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const proc = Bun.spawn([process.execPath, "main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: dir, DATA_DIR: join(dir, "data"), PORT: "0", LOG_LEVEL: "error", ...(hsm ? { SOFTHSM2_CONF: hsm.conf } : {}), ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stderr] = await Promise.all([proc.exited, new Response(proc.stderr).text()]);
  return { code, stderr: stderr.trim() };
}

describe("a signer that cannot be opened stops the start", () => {
  test("an unknown scheme", async () => {
    const { code, stderr } = await start({ DELEGATE_SIGNER: "vault:secret/delegate" });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^ats: DELEGATE_SIGNER: /);
    expect(stderr.split("\n")).toHaveLength(1);
  });

  test("a keystore with the wrong password: one line, never the password", async () => {
    const [key, options] = Keystore.pbkdf2({ password: "right horse", iterations: 1000 });
    writeFileSync(join(dir, "key.json"), JSON.stringify(Keystore.encrypt(generatePrivateKey(), key, options)));
    writeFileSync(join(dir, "password"), "battery staple\n");
    const { code, stderr } = await start({ WITNESS_SIGNER: `keystore:${join(dir, "key.json")}?password-file=${join(dir, "password")}` });
    expect(code).toBe(1);
    expect(stderr).toMatch(/^ats: WITNESS_SIGNER: .*MAC does not match/);
    expect(stderr).not.toContain("battery staple");
    expect(stderr.split("\n")).toHaveLength(1);
  });

  test.skipIf(!softHsmAvailable())("a PKCS#11 module that is not there, a wrong PIN, a key of the wrong curve: one line each, never the PIN", async () => {
    const uri = (label: string, pin: string, module = hsm!.modulePath) => `pkcs11:token=ats;object=${label}?module-path=${module}&pin-value=${pin}`;
    const missing = await start({ DELEGATE_SIGNER: uri("delegate", "4711", "/nonexistent/libpkcs11.so") });
    const wrongPin = await start({ DELEGATE_SIGNER: uri("delegate", "0815") });
    const wrongCurve = await start({ DELEGATE_SIGNER: uri("oauth", "4711") });
    for (const [what, outcome] of [["missing", missing], ["pin", wrongPin], ["curve", wrongCurve]] as const) {
      expect({ what, code: outcome.code, lines: outcome.stderr.split("\n").length }).toEqual({ what, code: 1, lines: 1 });
      expect(outcome.stderr).toMatch(/^ats: DELEGATE_SIGNER: /);
      expect(outcome.stderr).not.toContain("4711");
      expect(outcome.stderr).not.toContain("0815");
    }
    expect(wrongCurve.stderr).toMatch(/secp256k1|curve|P-256/);
  });
});
