import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { EMBEDDED_ANVIL, type EmbeddedFile } from "./_embedded_anvil.ts";
import { anvilMarker, clearLeftoverAnvil, newLockToken, ownerFields, releaseAnvilLock, writeAnvilLock } from "./_lock.ts";
import { dumpAnvilState } from "./_state.ts";
import { startWatchdog } from "./_watchdog.ts";

/** How to run one Anvil process. */
export type AnvilOptions = {
  chainId: number;
  port?: number | undefined;
  /**
   * The address Anvil listens on; default 127.0.0.1. `0.0.0.0` lets other containers reach it (the compose file's
   * devnet); `rpcUrl` stays on loopback either way.
   */
  host?: string | undefined;
  /**
   * Loaded at start (`--load-state`) when it exists; absent: an ephemeral chain. Anvil never writes it: the
   * caller saves it (see `_state.ts`), atomically, so an orphaned or killed Anvil cannot leave it torn or stale.
   */
  stateFile?: string | undefined;
  /**
   * Names the running Anvil (see `_lock.ts`). A start first stops an Anvil of ours that a killed run left behind
   * (saving its state to `stateFile` first), and refuses if the run that owns it is still alive.
   */
  lockFile?: string | undefined;
  log: (line: string) => void;
  startTimeoutMs?: number | undefined;
  /** Where a compiled executable extracts its embedded Anvil; unused from source. Default: the OS temp dir. */
  binaryDir?: string | undefined;
  /**
   * Where Anvil keeps the states it moves out of memory once a chain is a few hundred blocks long (`--cache-path`):
   * emptied before Anvil starts and removed once it ended. Default: a new directory in the OS temp dir.
   *
   * Anvil's own default, `~/.foundry/anvil/tmp`, is emptied only when Anvil ends by itself, and a chain that is not
   * kept ends with SIGKILL: every long test or bench chain left its states there, for good (76 GB on one
   * development machine, whose disk it filled).
   */
  cacheDir?: string | undefined;
};

/** A running Anvil on loopback. */
export type Anvil = {
  rpcUrl: string;
  /**
   * Where it keeps the states it moved out of memory (see {@link AnvilOptions.cacheDir}), gone once stopped; absent
   * where this machine keeps none (an Anvil in a container).
   */
  cacheDir?: string | undefined;
  /** Ends Anvil and waits for it. It saves nothing: save the state before. */
  stop(): Promise<void>;
};

const PLATFORM_PACKAGES: Record<string, Record<string, string>> = {
  linux: { x64: "linux-amd64", arm64: "linux-arm64" },
  darwin: { x64: "darwin-amd64", arm64: "darwin-arm64" },
  win32: { x64: "win32-amd64" },
};

/** Finds the native anvil binary of the `@foundry-rs/anvil` platform package (the node wrapper is slower to start). */
export function anvilBinary(): string {
  const suffix = PLATFORM_PACKAGES[process.platform]?.[process.arch];
  if (suffix === undefined) throw new Error(`No anvil package for ${process.platform}/${process.arch}`);
  const pkg = `@foundry-rs/anvil-${suffix}`;
  const require = createRequire(import.meta.url);
  let manifest: string;
  try {
    manifest = require.resolve(`${pkg}/package.json`);
  } catch {
    throw new Error(`Package ${pkg} is not installed (it comes with @foundry-rs/anvil)`);
  }
  const binary = join(dirname(manifest), "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
  if (!existsSync(binary)) throw new Error(`Anvil binary missing at ${binary}`);
  return binary;
}

/** The Anvil to run: the executable's embedded one extracted into `binaryDir`, else the npm package's. */
export async function resolveAnvilBinary(binaryDir: string | undefined): Promise<string> {
  if (EMBEDDED_ANVIL === undefined) return anvilBinary();
  return await extractEmbeddedFile(EMBEDDED_ANVIL, binaryDir ?? tmpdir(), "anvil");
}

/**
 * Copies an embedded file to `dir/<name>-<sha256 prefix>` with mode 0755 and returns its path. A copy whose size
 * and hash match is reused; anything else there is replaced through a temporary file and a rename, so a crash or
 * a concurrent start never leaves half a binary under the final name. Older extracted versions are removed.
 */
export async function extractEmbeddedFile(file: EmbeddedFile, dir: string, name: string): Promise<string> {
  const target = join(dir, `${name}-${file.sha256.slice(0, 16)}`);
  if (await isIntact(target, file)) {
    if ((statSync(target).mode & 0o111) === 0) chmodSync(target, 0o755);
    return target;
  }
  mkdirSync(dir, { recursive: true });
  const temporary = `${target}.${process.pid}.tmp`;
  try {
    await Bun.write(temporary, Bun.file(file.path));
    chmodSync(temporary, 0o755);
    if (!(await isIntact(temporary, file))) throw new Error(`Extracted ${name} does not match its embedded hash`);
    renameSync(temporary, target);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
  for (const entry of readdirSync(dir)) {
    if (entry.startsWith(`${name}-`) && entry !== basename(target) && !entry.endsWith(".tmp")) {
      rmSync(join(dir, entry), { force: true });
    }
  }
  return target;
}

async function isIntact(path: string, file: EmbeddedFile): Promise<boolean> {
  try {
    if (statSync(path).size !== file.size) return false;
  } catch {
    return false;
  }
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(await Bun.file(path).arrayBuffer());
  return hasher.digest("hex") === file.sha256;
}

// Anvils still running when the parent process exits. One shared handler, so many devnets in one
// test run do not pile up 'exit' listeners. (A process killed outright runs no handler: the watchdog
// and the lock file cover that.)
const live = new Set<Subprocess>();
let exitHookInstalled = false;
function trackUntilExit(proc: Subprocess): void {
  live.add(proc);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const p of live) {
      try {
        p.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
  });
}

/** Starts Anvil (on 127.0.0.1 unless `host` says otherwise) and resolves once it answers `eth_chainId`; moves an unreadable state file aside once. */
export async function startAnvil(options: AnvilOptions): Promise<Anvil> {
  if (options.lockFile !== undefined) {
    const stateFile = options.stateFile;
    await clearLeftoverAnvil(options.lockFile, {
      log: options.log,
      salvage: stateFile === undefined ? undefined : (rpcUrl) => dumpAnvilState(rpcUrl, stateFile, { timeoutMs: 5_000, neverOlder: true }),
    });
  }
  try {
    return await spawnAnvil(options);
  } catch (error) {
    // Only a complaint about the state (truncated or from an incompatible Anvil), not e.g. a busy port.
    const aboutState = error instanceof AnvilExitedError && /state/i.test(error.output);
    if (!aboutState || options.stateFile === undefined || !existsSync(options.stateFile)) throw error;
    // Keep the unreadable dump for inspection and start afresh.
    const aside = `${options.stateFile}.unreadable-${Date.now()}`;
    renameSync(options.stateFile, aside);
    options.log(`anvil could not load its state; moved it to ${aside} and starting a new chain`);
    return await spawnAnvil(options);
  }
}

class AnvilExitedError extends Error {
  constructor(readonly output: string, code: number) {
    super(`Anvil exited with code ${code} while starting: ${output}`);
  }
}

async function spawnAnvil(options: AnvilOptions): Promise<Anvil> {
  const args = ["--host", options.host ?? "127.0.0.1", "--port", String(options.port ?? 0), "--chain-id", String(options.chainId)];
  // Load only: `--state`/`--dump-state` would have Anvil rewrite the file in place, on exit and, with
  // `--state-interval`, for as long as it lives, even after the service that owns the file is gone.
  if (options.stateFile !== undefined && existsSync(options.stateFile)) args.push("--load-state", options.stateFile);
  const cacheDir = ownCacheDir(options.cacheDir);
  args.push("--cache-path", cacheDir);
  const lockFile = options.lockFile;
  const token = newLockToken();
  const proc = Bun.spawn([await resolveAnvilBinary(options.binaryDir), ...args], {
    // The marker in argv[0] is how a later start recognises this process as our Anvil (and `ps` shows whose it is).
    argv0: lockFile === undefined ? undefined : anvilMarker(lockFile, token),
    // A session of its own: a terminal's Ctrl-C reaches the service only, which saves the state and then ends Anvil.
    detached: true,
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  trackUntilExit(proc);
  const watchdog = startWatchdog(proc.pid, options.log);
  const lock = { version: 1 as const, pid: proc.pid, token, ...ownerFields(), watchdogPid: watchdog?.pid ?? null, startedAt: new Date().toISOString() };
  // Written before Anvil listens, so even a crash during start-up leaves it findable.
  if (lockFile !== undefined) writeAnvilLock(lockFile, { ...lock, port: null });

  const recent: string[] = [];
  let onListening: ((port: number) => void) | undefined;
  const listening = new Promise<number>((resolve) => {
    onListening = resolve;
  });
  const onLine = (line: string) => {
    options.log(line);
    recent.push(line);
    if (recent.length > 20) recent.shift();
    const match = /Listening on [0-9.]+:(\d+)/.exec(line);
    if (match) onListening?.(Number(match[1]));
  };
  // Both pipes must be drained for Anvil's whole life: it logs every RPC method.
  const drained = Promise.all([pumpLines(proc.stdout, onLine), pumpLines(proc.stderr, onLine)]);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await watchdog?.dismiss();
      if (proc.exitCode === null && proc.signalCode === null) {
        // Anvil writes nothing on the way out any more; SIGTERM only to let a persisted chain end politely.
        proc.kill(options.stateFile !== undefined ? "SIGTERM" : "SIGKILL");
        const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
        await proc.exited;
        clearTimeout(timer);
      }
      live.delete(proc);
      rmSync(cacheDir, { recursive: true, force: true });
      if (lockFile !== undefined) releaseAnvilLock(lockFile, token);
    })();
    return stopping;
  };

  try {
    const timeoutMs = options.startTimeoutMs ?? 15_000;
    const exited = proc.exited.then(async (code) => {
      await drained; // the last lines say why
      throw new AnvilExitedError(recent.join(" | "), code);
    });
    exited.catch(() => {});
    const port = await withTimeout(Promise.race([listening, exited]), timeoutMs, "Anvil did not start listening");
    const rpcUrl = `http://127.0.0.1:${port}`;
    await withTimeout(Promise.race([waitForRpc(rpcUrl, options.chainId), exited]), timeoutMs, "Anvil did not answer eth_chainId");
    if (lockFile !== undefined) writeAnvilLock(lockFile, { ...lock, port });
    return { rpcUrl, cacheDir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The states' directory of one Anvil run: `dir` emptied (a killed run's leftovers), or a new one in the OS temp dir. */
function ownCacheDir(dir: string | undefined): string {
  if (dir === undefined) return mkdtempSync(join(tmpdir(), "ats-anvil-states-"));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function waitForRpc(rpcUrl: string, chainId: number): Promise<void> {
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] });
  for (;;) {
    try {
      const response = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      const json = (await response.json()) as { result?: string };
      if (json.result !== undefined) {
        if (Number(json.result) !== chainId) throw new Error(`Anvil reports chain ${Number(json.result)}, expected ${chainId}`);
        return;
      }
    } catch (error) {
      if (error instanceof Error && error.message.startsWith("Anvil reports")) throw error;
    }
    await Bun.sleep(20);
  }
}

async function pumpLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = "";
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value: chunk } = await reader.read();
      if (done) break;
      buffered += decoder.decode(chunk, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline >= 0) {
        const line = buffered.slice(0, newline).trimEnd();
        buffered = buffered.slice(newline + 1);
        if (line !== "") onLine(line);
        newline = buffered.indexOf("\n");
      }
    }
  } catch {
    // the pipe closes when Anvil ends
  }
  if (buffered.trim() !== "") onLine(buffered.trimEnd());
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${message} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
