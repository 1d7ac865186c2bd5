import { existsSync, readFileSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { writeJsonFile } from "./_files.ts";

/**
 * What the lock file of a devnet's data directory records about the Anvil running there, so that the next start
 * can recognise one left behind by a service that was killed and stop it before loading the state.
 */
export type AnvilLock = {
  version: 1;
  pid: number;
  /** Null until Anvil listens. */
  port: number | null;
  /** Random; Anvil runs with `anvilMarker(lockFile, token)` as its argv[0], which is how we tell it is ours. */
  token: string;
  /** The service process that started it, and (Linux) that process's start time, against pid reuse. */
  ownerPid: number;
  ownerStartTime: string | null;
  /** The process that ends Anvil when its owner dies (see `_watchdog.ts`); null without one. */
  watchdogPid: number | null;
  startedAt: string;
};

/** Options of `clearLeftoverAnvil`. */
export type ClearLeftoverOptions = {
  log: (line: string) => void;
  /** Called with the leftover's RPC URL before it is stopped, to save what it holds; failures are logged. */
  salvage?: ((rpcUrl: string) => Promise<void>) | undefined;
  /** How long to wait after SIGTERM, then after SIGKILL; default 5000 ms. */
  killTimeoutMs?: number | undefined;
};

// Lock files of devnets this process runs, so a second start on one directory fails instead of killing the first.
const held = new Set<string>();

/** The argv[0] Anvil runs under: names the data directory and the token, so `ps` shows whose Anvil it is. */
export function anvilMarker(lockFile: string, token: string): string {
  return `ats-devnet-anvil ${dirname(lockFile)} ${token}`;
}

/** A fresh random lock token (hex). */
export function newLockToken(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");
}

/** Reads the lock file; a missing or malformed one is no lock. */
export function readAnvilLock(path: string): AnvilLock | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const lock = JSON.parse(readFileSync(path, "utf8")) as Partial<AnvilLock>;
    const valid = lock.version === 1 && Number.isSafeInteger(lock.pid) && (lock.pid ?? 0) > 1 &&
      typeof lock.token === "string" && /^[0-9a-f]{32}$/.test(lock.token) && Number.isSafeInteger(lock.ownerPid);
    return valid ? (lock as AnvilLock) : undefined;
  } catch {
    return undefined;
  }
}

/** Writes the lock file (atomically) and marks it held by this process. */
export function writeAnvilLock(path: string, lock: AnvilLock): void {
  writeJsonFile(path, lock);
  held.add(path);
}

/** Removes the lock file if it still names `token`, and releases it in this process. */
export function releaseAnvilLock(path: string, token: string): void {
  if (readAnvilLock(path)?.token === token) rmSync(path, { force: true });
  held.delete(path);
}

/** The lock fields describing this process as the owner. */
export function ownerFields(): { ownerPid: number; ownerStartTime: string | null } {
  return { ownerPid: process.pid, ownerStartTime: processStat(process.pid)?.startTime ?? null };
}

/**
 * Makes sure no Anvil of an earlier run still serves this data directory. If the lock names a live process whose
 * argv[0] is our marker, and its owner is gone, the leftover's state is salvaged, then it gets SIGTERM and, if it
 * is still there after the timeout, SIGKILL. If the owner is still alive the directory is in use and this throws.
 */
export async function clearLeftoverAnvil(lockFile: string, options: ClearLeftoverOptions): Promise<void> {
  const dataDir = dirname(lockFile);
  if (held.has(lockFile)) throw new Error(`Devnet data directory ${dataDir} is already in use by this process`);
  const lock = readAnvilLock(lockFile);
  if (lock === undefined) return;
  const marker = anvilMarker(lockFile, lock.token);
  if (!isOurAnvil(lock.pid, marker)) {
    rmSync(lockFile, { force: true });
    return;
  }
  if (ownerAlive(lock)) {
    throw new Error(`Devnet data directory ${dataDir} is in use by process ${lock.ownerPid} (its Anvil is process ${lock.pid})`);
  }
  options.log(`stopping anvil ${lock.pid} left running by process ${lock.ownerPid}`);
  if (options.salvage !== undefined && lock.port !== null) {
    try {
      await options.salvage(`http://127.0.0.1:${lock.port}`);
      options.log(`saved the state of anvil ${lock.pid}`);
    } catch (error) {
      options.log(`could not save the state of anvil ${lock.pid}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  await terminate(lock.pid, marker, options.killTimeoutMs ?? 5_000);
  rmSync(lockFile, { force: true });
}

async function terminate(pid: number, marker: string, timeoutMs: number): Promise<void> {
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    try {
      process.kill(pid, signal);
    } catch {
      return; // already gone
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!isOurAnvil(pid, marker)) return;
      await Bun.sleep(25);
    }
  }
  throw new Error(`Anvil ${pid} left by an earlier run does not stop`);
}

/** Whether `pid` is a running (not zombie) process whose argv[0] is `marker`. */
export function isOurAnvil(pid: number, marker: string): boolean {
  if (process.platform === "linux") {
    const stat = processStat(pid);
    if (stat === undefined || stat.state === "Z") return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0] === marker;
    } catch {
      return false;
    }
  }
  if (process.platform === "win32") return false; // no way to tell: leave it alone
  const ps = Bun.spawnSync(["ps", "-o", "command=", "-p", String(pid)], { stdout: "pipe", stderr: "ignore" });
  return ps.exitCode === 0 && ps.stdout.toString().trim().startsWith(marker);
}

function ownerAlive(lock: AnvilLock): boolean {
  // Not held here (checked above), so a lock naming this very pid comes from an earlier process that had it.
  if (lock.ownerPid === process.pid) return false;
  try {
    process.kill(lock.ownerPid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (process.platform !== "linux") return true;
  const stat = processStat(lock.ownerPid);
  if (stat === undefined || stat.state === "Z") return false;
  return lock.ownerStartTime === null || stat.startTime === lock.ownerStartTime;
}

/** Linux: a process's state letter and start time (clock ticks after boot) from /proc/<pid>/stat. */
function processStat(pid: number): { state: string; startTime: string } | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses; the fields after its last ')' are plain.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0];
    const startTime = fields[19];
    return state === undefined || startTime === undefined ? undefined : { state, startTime };
  } catch {
    return undefined;
  }
}
