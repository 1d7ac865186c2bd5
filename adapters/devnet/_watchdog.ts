import type { Subprocess } from "bun";

/**
 * The watchdog's script: `read` blocks on a pipe whose only writer is this (the parent) process and which it never
 * writes to. When the parent ends, however it ends (`kill -9` included), the kernel closes its end, `read` returns
 * and Anvil gets SIGTERM, then SIGKILL if it is still there after 5 s. No polling, and nothing to clean up after a
 * crash: the watchdog exits on its own. `$1` is Anvil's pid.
 */
const SCRIPT = [
  "read -r line",
  'kill -TERM "$1" 2>/dev/null || exit 0',
  "i=0",
  'while [ "$i" -lt 50 ] && kill -0 "$1" 2>/dev/null; do sleep 0.1; i=$((i+1)); done',
  'kill -KILL "$1" 2>/dev/null',
  "exit 0",
].join("\n");

const running = new Set<Subprocess>();

/** A process that ends another one when this process dies. */
export type Watchdog = {
  pid: number;
  /** Ends the watchdog (the watched process is left alone) and waits for it. */
  dismiss(): Promise<void>;
};

/**
 * Starts a watchdog that ends `pid` when this process dies; undefined where there is no POSIX shell (Windows) or
 * it cannot be spawned, in which case the lock file alone catches a leftover Anvil at the next start.
 *
 * Why a separate `sh` and not Anvil's own death signal: Bun.spawn cannot set `PR_SET_PDEATHSIG`, and Anvil runs
 * in a session of its own (so a terminal's Ctrl-C reaches only the service, which then saves the state before it
 * ends Anvil), hence a dead parent would not take it along. The watchdog is detached the same way for the same
 * reason; it is dismissed on every clean stop.
 */
export function startWatchdog(pid: number, log: (line: string) => void): Watchdog | undefined {
  if (process.platform === "win32") return undefined;
  let proc: Subprocess<"pipe", "ignore", "ignore">;
  try {
    proc = Bun.spawn(["/bin/sh", "-c", SCRIPT, "ats-anvil-watchdog", String(pid)], {
      stdin: "pipe",
      stdout: "ignore",
      stderr: "ignore",
      detached: true,
    });
  } catch (error) {
    log(`no anvil watchdog: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  // Neither the watchdog nor its pipe should keep this process alive; the set keeps the pipe from being collected.
  proc.unref();
  running.add(proc);
  let dismissing: Promise<void> | undefined;
  return {
    pid: proc.pid,
    dismiss: () => {
      dismissing ??= (async () => {
        if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
        await proc.exited;
        running.delete(proc);
      })();
      return dismissing;
    },
  };
}
