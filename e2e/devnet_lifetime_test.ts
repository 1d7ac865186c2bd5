// The embedded devnet's Anvil does not outlive the service, and what a checkpoint saved survives `kill -9` of both
// (issue 15 item 5). The "service" is e2e/support/devnet_child.ts, a process that only runs a persisted devnet.
import { afterEach, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type Hex, createPublicClient, createTestClient, createWalletClient, defineChain, http, parseEther } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { AnvilLock } from "../adapters/devnet/mod.ts";
import { ANVIL_DEV_KEYS, type Devnet, startDevnet } from "../adapters/devnet/mod.ts";
import { rpcAnswers } from "./support/devnet_fixtures.ts";
import { tempDirs } from "./support/temp_dirs.ts";

const CHILD = join(import.meta.dir, "support", "devnet_child.ts");
const forgeBuilt = existsSync(join(import.meta.dir, "..", "out", "EAS.sol", "EAS.json"));
const artifacts = forgeBuilt ? "forge" : "npm";

const pids = new Set<number>();
const devnets: Devnet[] = [];
afterEach(async () => {
  for (const devnet of devnets.splice(0)) await devnet.stop();
  // Whatever a test left running (children, Anvils, watchdogs) is killed, by pid.
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  pids.clear();
});
const tempDir = tempDirs("ats-devnet-lifetime-");

type Child = {
  proc: Bun.Subprocess<"pipe", "pipe", "pipe">;
  rpcUrl: string;
  lock: AnvilLock;
  /** The next line the child prints. */
  nextLine(): Promise<string>;
  send(command: string): void;
};

/** Starts the stand-in service on `dataDir` and waits for its first line. */
async function startChild(dataDir: string, env: Record<string, string> = {}): Promise<Child> {
  const proc = Bun.spawn([process.execPath, CHILD, dataDir], {
    env: { ...process.env, ...env },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  pids.add(proc.pid);
  // The child's log (its devnet's lines), drained and kept, so a start that fails or hangs says where it was (one
  // fresh-clone CI run had a child print nothing for 30 s, its log ignored).
  let log = "";
  void (async () => {
    const errors = new TextDecoder();
    const lines = proc.stderr.getReader();
    for (;;) {
      const { done, value } = await lines.read();
      if (done) return;
      log = (log + errors.decode(value, { stream: true })).slice(-8_192);
    }
  })();
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  let buffered = "";
  const nextLine = async (): Promise<string> => {
    while (!buffered.includes("\n")) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the child ended (code ${await proc.exited}) before printing a line; its log:\n${log}`);
      buffered += decoder.decode(value, { stream: true });
    }
    const newline = buffered.indexOf("\n");
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    return line;
  };
  // A cap below the tests' 30 s, so a start that hangs fails with the child's log rather than as a bare timeout.
  const cap = setTimeout(() => proc.kill("SIGKILL"), START_CAP_MS);
  const { rpcUrl } = JSON.parse(await nextLine().finally(() => clearTimeout(cap))) as { rpcUrl: string };
  const lock = readLock(dataDir)!;
  pids.add(lock.pid);
  if (lock.watchdogPid !== null) pids.add(lock.watchdogPid);
  return {
    proc,
    rpcUrl,
    lock,
    nextLine,
    send: (command) => {
      proc.stdin.write(`${command}\n`);
      proc.stdin.flush();
    },
  };
}

function readLock(dataDir: string): AnvilLock | undefined {
  const path = join(dataDir, "anvil.lock");
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as AnvilLock) : undefined;
}

async function restart(dataDir: string): Promise<Devnet> {
  const devnet = await startDevnet({ dataDir, artifacts, checkpointIntervalMs: 0 });
  devnets.push(devnet);
  return devnet;
}

/** Whether a process runs (a zombie waiting to be reaped does not). */
function running(pid: number): boolean {
  if (process.platform === "linux") {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** How long a wait may run before it is a failure: most of a test's 30 s, so a loaded machine's pauses never decide. */
const WAIT_CAP_MS = 25_000;
/** How long a child may take to start its devnet (a few seconds on a busy machine). */
const START_CAP_MS = 20_000;

async function waitUntil(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await Bun.sleep(20);
  }
  return condition();
}


function clients(rpcUrl: string) {
  const chain = defineChain({
    id: 31337,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  const transport = http(rpcUrl);
  return {
    public: createPublicClient({ cacheTime: 0, chain, transport, pollingInterval: 50 }),
    test: createTestClient({ chain, transport, mode: "anvil" }),
    wallet: createWalletClient({ chain, transport, account: privateKeyToAccount(ANVIL_DEV_KEYS[3]!) }),
  };
}

/** A plain ETH transfer from a funded dev account, mined (automine) before it returns. */
async function transfer(rpcUrl: string, to: Hex, value: bigint): Promise<Hex> {
  const c = clients(rpcUrl);
  const hash = await c.wallet.sendTransaction({ to, value });
  await c.public.waitForTransactionReceipt({ hash });
  return hash;
}

function killNow(pid: number | null): void {
  if (pid === null) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

test("a new start stops the Anvil a killed service left behind, keeping its chain", async () => {
  const dataDir = tempDir();
  // No periodic checkpoint: what the leftover held can only come back through the new start.
  const child = await startChild(dataDir, { CHECKPOINT_INTERVAL_MS: "0" });
  expect(child.lock.ownerPid).toBe(child.proc.pid);
  expect(child.rpcUrl).toBe(`http://127.0.0.1:${child.lock.port}`);
  if (process.platform === "linux") {
    const argv = readFileSync(`/proc/${child.lock.pid}/cmdline`, "utf8").split("\0");
    expect(argv[0]).toBe(`ats-devnet-anvil ${dataDir} ${child.lock.token}`);
    // Anvil never writes the state file; that is the service's job.
    expect(argv).not.toContain("--state");
    expect(argv).not.toContain("--dump-state");
  }
  const probe = privateKeyToAccount(generatePrivateKey()).address;
  const c = clients(child.rpcUrl);
  await c.test.setBalance({ address: probe, value: 4_242n });
  await c.test.mine({ blocks: 3 });
  const blockBefore = await c.public.getBlockNumber({ cacheTime: 0 });

  // The service dies without its watchdog (as where there is none): only the lock file is left to find Anvil.
  killNow(child.lock.watchdogPid);
  killNow(child.proc.pid);
  await child.proc.exited;
  expect(running(child.lock.pid)).toBe(true);
  expect(await rpcAnswers(child.rpcUrl)).toBe(true);

  const devnet = await restart(dataDir);
  expect(running(child.lock.pid)).toBe(false);
  expect(devnet.rpcUrl === child.rpcUrl || !(await rpcAnswers(child.rpcUrl))).toBe(true);
  const lock = readLock(dataDir)!;
  expect(lock.pid).not.toBe(child.lock.pid);
  expect(lock.ownerPid).toBe(process.pid);
  if (process.platform === "linux") {
    const argv = readFileSync(`/proc/${lock.pid}/cmdline`, "utf8").split("\0");
    expect(argv.slice(argv.indexOf("--load-state"), argv.indexOf("--load-state") + 2)).toEqual(["--load-state", join(dataDir, "anvil-state.json")]);
  }
  const now = clients(devnet.rpcUrl).public;
  expect(await now.getBalance({ address: probe })).toBe(4_242n);
  expect(await now.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(blockBefore);

  await devnet.stop();
  expect(readLock(dataDir)).toBeUndefined();
}, 30_000);

test("a transaction saved by checkpoint() survives kill -9 of the service and its Anvil", async () => {
  const dataDir = tempDir();
  const child = await startChild(dataDir, { CHECKPOINT_INTERVAL_MS: "0" });
  const saved = privateKeyToAccount(generatePrivateKey()).address;
  const unsaved = privateKeyToAccount(generatePrivateKey()).address;
  const savedHash = await transfer(child.rpcUrl, saved, parseEther("1.5"));
  child.send("checkpoint");
  expect(await child.nextLine()).toBe("checkpointed");
  // Mined but never checkpointed: the control that shows what a crash loses.
  await transfer(child.rpcUrl, unsaved, parseEther("2"));

  // A machine crash: everything ends at once, nothing gets to save anything.
  killNow(child.lock.pid);
  killNow(child.lock.watchdogPid);
  killNow(child.proc.pid);
  await child.proc.exited;
  expect(await waitUntil(() => !running(child.lock.pid), WAIT_CAP_MS)).toBe(true);

  const devnet = await restart(dataDir);
  const now = clients(devnet.rpcUrl).public;
  expect(await now.getBalance({ address: saved })).toBe(parseEther("1.5"));
  expect((await now.getTransactionReceipt({ hash: savedHash })).status).toBe("success");
  expect(await now.getBalance({ address: unsaved })).toBe(0n);
  expect(existsSync(join(dataDir, "anvil-state.json.tmp"))).toBe(false);
}, 30_000);

test("the periodic checkpoint saves blocks nobody checkpointed", async () => {
  const dataDir = tempDir();
  const child = await startChild(dataDir, { CHECKPOINT_INTERVAL_MS: "100" });
  const c = clients(child.rpcUrl);
  await c.test.mine({ blocks: 5 });
  const mined = await c.public.getBlockNumber({ cacheTime: 0 });
  const statePath = join(dataDir, "anvil-state.json");
  // The dump's head block is what --load-state restores; wait until the file holds the mined one.
  const head = () => {
    try {
      return Number(JSON.parse(readFileSync(statePath, "utf8")).block.number);
    } catch {
      return -1; // not written yet
    }
  };
  expect(await waitUntil(() => head() >= Number(mined), WAIT_CAP_MS)).toBe(true);

  killNow(child.lock.pid);
  killNow(child.proc.pid);
  await child.proc.exited;

  const devnet = await restart(dataDir);
  expect(await clients(devnet.rpcUrl).public.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(mined);
}, 30_000);

test.skipIf(process.platform === "win32")("Anvil ends soon after its service is killed", async () => {
  const dataDir = tempDir();
  const child = await startChild(dataDir);
  expect(child.lock.watchdogPid).not.toBeNull();
  killNow(child.proc.pid);
  await child.proc.exited;
  expect(await waitUntil(() => !running(child.lock.pid), WAIT_CAP_MS)).toBe(true);
  expect(await rpcAnswers(child.rpcUrl)).toBe(false);
  expect(await waitUntil(() => !running(child.lock.watchdogPid!), WAIT_CAP_MS)).toBe(true);
  // The stale lock names a dead process: the next start just goes ahead.
  const devnet = await restart(dataDir);
  expect(readLock(dataDir)?.ownerPid).toBe(process.pid);
  await devnet.stop();
}, 30_000);

test("a start on a data directory whose service is alive fails and leaves that devnet alone", async () => {
  const dataDir = tempDir();
  const child = await startChild(dataDir);
  await expect(startDevnet({ dataDir, artifacts })).rejects.toThrow(`is in use by process ${child.proc.pid}`);
  expect(await rpcAnswers(child.rpcUrl)).toBe(true);
  expect(readLock(dataDir)?.pid).toBe(child.lock.pid);
  // Within one process, too.
  const devnet = await restart(tempDir());
  await expect(startDevnet({ dataDir: join(devnet.trustAnchorsPath, ".."), artifacts })).rejects.toThrow("already in use by this process");

  child.send("stop");
  expect(await child.proc.exited).toBe(0);
  expect(running(child.lock.pid)).toBe(false);
  expect(readLock(dataDir)).toBeUndefined();
}, 30_000);
