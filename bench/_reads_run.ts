// Part of bench/reads.ts: what the run started and how it is stopped (newest first: at the end, on an error, on a
// signal, and at the run's bound), and its child helper processes.
import { resolve } from "node:path";

const stoppers: (() => Promise<unknown> | unknown)[] = [];
let cleaning: Promise<void> | undefined;

/** Registers `stop` to run at cleanup (newest first). */
export function onCleanup(stop: () => Promise<unknown> | unknown): void {
  stoppers.push(stop);
}

/** Stops everything started, once; later calls get the same promise. */
export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const stop of stoppers.reverse()) {
      try {
        await Promise.race([stop(), Bun.sleep(15_000)]);
      } catch {
        // keep stopping the rest
      }
    }
  })();
  return cleaning;
}

/** Whether stopping began (a signal, the run's bound): the loads then fail on stopped servers. */
export function stopping(): boolean {
  return cleaning !== undefined;
}

/** Stops everything at `limitMs` (a watchdog) and on SIGINT/SIGTERM; returns the watchdog to clear. */
export function guardRun(limitMs: number): ReturnType<typeof setTimeout> {
  const watchdog = setTimeout(() => {
    console.error(`reads bench: still running after ${limitMs / 1000} s, stopping`);
    void cleanup().finally(() => process.exit(1));
  }, limitMs);
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void cleanup().finally(() => process.exit(130)));
  return watchdog;
}

/** A child Bun process running a bench helper that prints one JSON line once it listens. */
export async function startHelper(file: string, args: string[]): Promise<{ port: number; proc: ReturnType<typeof Bun.spawn> }> {
  const proc = Bun.spawn([process.execPath, resolve(import.meta.dir, file), ...args], { stdout: "pipe", stderr: "inherit" });
  onCleanup(async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  });
  const { value } = await (proc.stdout as ReadableStream<Uint8Array>).getReader().read();
  return { port: (JSON.parse(new TextDecoder().decode(value)) as { port: number }).port, proc };
}
