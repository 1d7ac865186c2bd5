/** The service as a separate process (`bun main.ts`), as an operator runs it; for multi-instance tests and benches. */
import { join } from "node:path";

/** A running service process. */
export type ServiceProcess = {
  readonly url: string;
  readonly proc: ReturnType<typeof Bun.spawn>;
  /** What the process printed on stdout up to its listening line (the devnet's RPC URL among it). */
  readonly banner: string;
  /** SIGTERM, then waits for the exit code. */
  readonly stop: () => Promise<number>;
  /** The last 64 KiB the process wrote on stderr (its log), for a failing test to show. */
  readonly stderrTail: () => string;
};

/** What a devnet gives a service process to serve it: the node (or `rpcUrl` in front of it), anchors, keys, and files in `dir`. */
export function devnetServiceEnv(
  devnet: { readonly rpcUrl: string; readonly trustAnchorsPath: string; readonly keys: { readonly delegate: string; readonly witness: string }; readonly deployBlock: bigint },
  dir: string,
  rpcUrl = devnet.rpcUrl,
): Record<string, string> {
  return {
    PORT: "0",
    RPC_URL: rpcUrl,
    TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    WITNESS_PRIVATE_KEY: devnet.keys.witness,
    DATABASE_PATH: join(dir, "ats.sqlite"),
    DATA_DIR: dir,
    START_BLOCK: String(devnet.deployBlock),
  };
}

/** Starts `main.ts` with `env` added to this process's environment; resolves once it prints where it listens. */
export async function startServiceProcess(env: Record<string, string>, timeoutMs = 30_000): Promise<ServiceProcess> {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "..", "..", "main.ts")], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  let text = "";
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    const match = /ats listening on (\S+)/.exec(text);
    // The banner is one write; with an embedded devnet it ends with the devnet's RPC URL.
    if (match && (!/SchemaRegistry/.test(text) || /devnet RPC \S+\n/.test(text))) {
      reader.releaseLock();
      // Keep draining stderr so a chatty logger never blocks the child on a full pipe; keep its tail.
      let tail = "";
      void (async () => {
        const decoder = new TextDecoder();
        const errors = (proc.stderr as ReadableStream<Uint8Array>).getReader();
        for (;;) {
          const { value, done } = await errors.read();
          if (done) return;
          tail = (tail + decoder.decode(value, { stream: true })).slice(-65_536);
        }
      })().catch(() => undefined);
      return {
        url: match[1]!,
        proc,
        banner: text,
        async stop() {
          proc.kill("SIGTERM");
          return await proc.exited;
        },
        stderrTail: () => tail,
      };
    }
  }
  proc.kill();
  throw new Error(`service did not start: ${text}${await new Response(proc.stderr).text()}`);
}
