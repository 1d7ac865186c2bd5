/**
 * A signer that cannot be opened stops the process at start (decisions §27): `bun main.ts` exits 1 with one line
 * naming the role and what is wrong, never the PIN or the password, before any chain is started. The keys are real:
 * SoftHSM2 tokens and keystore files in a temp folder. So does a raw key left in the environment beside a signer on a
 * chain that is not a devnet, against a node on loopback that answers as chain 8453 with EAS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Keystore } from "ox";
import { encodeAbiParameters } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { createSoftHsm, type SoftHsm, softHsmAvailable } from "./support/softhsm.ts";
import { fakeJsonRpcNode } from "./support/fake_node.ts";

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

/** A start that stopped (its exit code and all it printed on stderr), or one that listens at `url` until `stop`. */
type Launched = { readonly exited: { code: number; stderr: string } } | { readonly url: string; readonly stop: () => Promise<string> };

/**
 * Starts the service with `env` and resolves when it exits or once it listens, whichever comes first; `stop` ends it
 * and resolves with all it printed on stderr (read to the end, so a line is missing only if it was never written).
 */
async function launch(env: Record<string, string>): Promise<Launched> {
  const proc = Bun.spawn([process.execPath, "main.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: dir, PORT: "0", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const stderr = new Response(proc.stderr).text();
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return { exited: { code: await proc.exited, stderr: (await stderr).trim() } };
    text += decoder.decode(value, { stream: true });
    const url = /ats listening on (\S+)/.exec(text)?.[1];
    if (url === undefined) continue;
    reader.releaseLock();
    void proc.stdout.pipeTo(new WritableStream()).catch(() => undefined);
    const stop = async () => {
      proc.kill("SIGTERM");
      await proc.exited;
      return await stderr;
    };
    return { url, stop };
  }
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

/**
 * A node on loopback answering `eth_chainId` as `chainId` and every `eth_call` as EAS's `version()` (1.4.0), which is
 * all a start asks of it before the signers are judged; the methods asked are kept.
 */
function easNode(chainId: number) {
  const version = encodeAbiParameters([{ type: "string" }], ["1.4.0"]);
  return fakeJsonRpcNode((method) => (method === "eth_chainId" ? `0x${chainId.toString(16)}` : method === "eth_call" ? version : undefined));
}

/**
 * The environment of a start on `node` (chain `chainId`, anchors of the devnet's EAS moved there) whose delegate moved to
 * a keystore with its password in a file: a kept key, not a raw one.
 */
function leftBeside(node: { url: string }, chainId: number): Record<string, string> {
  const [derived, options] = Keystore.pbkdf2({ password: "strong horse", iterations: 1000 });
  writeFileSync(join(dir, "kept.json"), JSON.stringify(Keystore.encrypt(generatePrivateKey(), derived, options)));
  writeFileSync(join(dir, "kept-password"), "strong horse");
  const anchors = JSON.parse(readFileSync(join(ROOT, "deploy", "devnet", "trust-anchors.json"), "utf8")) as { chains: Record<string, unknown> };
  const file = join(dir, `anchors-${chainId}.json`);
  writeFileSync(file, JSON.stringify({ ...anchors, chains: { [`eip155:${chainId}`]: anchors.chains["eip155:31337"] } }));
  return {
    RPC_URL: node.url,
    TRUST_ANCHORS_PATH: file,
    DELEGATE_SIGNER: `keystore:${join(dir, "kept.json")}?password-file=${join(dir, "kept-password")}`,
  };
}

describe("a raw key left beside a signer on a chain that is not a devnet (decisions §27)", () => {
  test("DELEGATE_PRIVATE_KEY beside DELEGATE_SIGNER stops the start with one line naming it as set but unused, never its value", async () => {
    // Found by attack: the old key left in the environment after the move to a keystore started on 8453 without a word
    // (ats_raw_signing_keys 0), though whoever reads the environment can spend the wallet's gas money with it.
    const left = generatePrivateKey();
    const node = easNode(8453);
    try {
      const launched = await launch({ ...leftBeside(node, 8453), DELEGATE_PRIVATE_KEY: left, DATA_DIR: join(dir, "data-refused"), LOG_LEVEL: "error" });
      // Before, it started: it is stopped again and the test fails here.
      if ("url" in launched) await launched.stop();
      const { code, stderr } = "exited" in launched ? launched.exited : { code: 0, stderr: "it started" };
      expect([code, stderr.split("\n").length]).toEqual([1, 1]);
      expect(stderr).toMatch(/^ats: DELEGATE_PRIVATE_KEY: a raw key set but unused \(DELEGATE_SIGNER serves the delegate\); on chain 8453, which is not a devnet, it must be removed/);
      expect(stderr).not.toContain(left.slice(2));
      expect(stderr).not.toContain("strong horse");
      // The refusal comes once the node has said which chain it is and that EAS is there, before anything else is asked.
      expect(new Set(node.asked)).toEqual(new Set(["eth_chainId", "eth_call"]));
    } finally {
      await node.stop();
    }
  }, 60_000);

  test("with ALLOW_RAW_KEYS=true it starts, warning with the variable's name and counting it in ats_raw_signing_keys; on a devnet nothing changes", async () => {
    const left = generatePrivateKey();
    const cases = [[8453, { ALLOW_RAW_KEYS: "true" }, 1], [31337, {}, 0]] as const;
    for (const [chainId, allow, count] of cases) {
      const node = easNode(chainId);
      let [metrics, log] = ["", ""];
      try {
        const launched = await launch({ ...leftBeside(node, chainId), ...allow, DELEGATE_PRIVATE_KEY: left, DATA_DIR: join(dir, `data-${chainId}`), LOG_LEVEL: "warn" });
        if (!("url" in launched)) throw new Error(`the service did not start: ${launched.exited.stderr}`);
        try {
          metrics = await (await fetch(`${launched.url}/metrics`)).text();
        } finally {
          log = await launched.stop();
        }
      } finally {
        await node.stop();
      }
      expect({ chainId, gauge: /^ats_raw_signing_keys (\d+)$/m.exec(metrics)?.[1] }).toEqual({ chainId, gauge: String(count) });
      const warned = log.split("\n").filter((line) => line.includes('"raw_signing_key"')).map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(warned.map((w) => [w.variable, w.unused, w.chainId])).toEqual(count === 0 ? [] : [["DELEGATE_PRIVATE_KEY", true, 8453]]);
      expect(log).not.toContain(left.slice(2));
    }
  }, 60_000);
});
