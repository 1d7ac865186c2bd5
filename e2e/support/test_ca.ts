/**
 * A throwaway certificate authority for HTTPS tests, made with the `openssl` CLI, each call in a temp directory
 * removed when it returns. The CA is created once per process and kept in memory; leaves are cheap P-256
 * certificates valid for two days.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A PEM certificate with its PEM private key. */
export type KeyPair = { readonly cert: string; readonly key: string };

/** The test CA: its certificate is the root tests pass as `ca`. */
export type TestCa = KeyPair;

let cached: Promise<TestCa> | undefined;

/** Returns this process's test CA, creating it on first use. */
export function getTestCa(): Promise<TestCa> {
  cached ??= createCa();
  return cached;
}

/**
 * Runs `work` in a new temp directory and removes it afterwards, whatever happens: the CA is kept in memory, and no
 * key outlives the call that wrote it (a directory removed only at the process's exit was left behind by the test
 * runner, nine a suite run).
 */
async function inTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "ats-test-ca-"));
  try {
    return await work(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Issues a server certificate signed by the test CA for the DNS names given (plus IP 127.0.0.1). */
export async function issueLeaf(names: readonly string[]): Promise<KeyPair> {
  const ca = await getTestCa();
  return await inTempDir(async (dir) => {
    const base = join(dir, "leaf");
    writeFileSync(join(dir, "ca.crt"), ca.cert);
    writeFileSync(join(dir, "ca.key"), ca.key);
    const san = [...names.map((n) => `DNS:${n}`), "IP:127.0.0.1"].join(",");
    writeFileSync(
      `${base}.ext`,
      `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=${san}\n`,
    );
    await openssl([
      "req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
      "-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", `/CN=${names[0] ?? "localhost"}`,
    ]);
    await openssl([
      "x509", "-req", "-in", `${base}.csr`, "-CA", join(dir, "ca.crt"), "-CAkey", join(dir, "ca.key"),
      "-set_serial", `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(8))).toString("hex")}`,
      "-days", "2", "-sha256", "-extfile", `${base}.ext`, "-out", `${base}.crt`,
    ]);
    return { cert: readFileSync(`${base}.crt`, "utf8"), key: readFileSync(`${base}.key`, "utf8") };
  });
}

async function createCa(): Promise<TestCa> {
  return await inTempDir(async (dir) => {
    await openssl([
      "req", "-x509", "-new", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
      "-keyout", join(dir, "ca.key"), "-out", join(dir, "ca.crt"), "-days", "2", "-sha256",
      "-subj", "/CN=ATS Test CA", "-addext", "basicConstraints=critical,CA:TRUE",
      "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    return { cert: readFileSync(join(dir, "ca.crt"), "utf8"), key: readFileSync(join(dir, "ca.key"), "utf8") };
  });
}

async function openssl(args: string[]): Promise<void> {
  const child = Bun.spawn(["openssl", ...args], { stdout: "ignore", stderr: "pipe" });
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  if (code !== 0) throw new Error(`openssl ${args[0]} failed (${code}): ${stderr.trim()}`);
}
