// Part of bench/reads.ts: the load generator (keep-alive fetch loops), the wait for the seeded data, and the
// JSON-RPC counts of the counting proxies (bench/_rpc_counter.ts).

/** Keep-alive `fetch` loops per window. */
export const CONNECTIONS = 32;
/** A window's bound in count, beside its bound in time. */
const MAX_READS_PER_WINDOW = 2_000_000;
/** Warm-up before each measured window (JIT, connections), not counted. */
export const WARMUP_SECONDS = 0.5;
/** How long an instance may take to answer every read with the seeded data (the index catching up). */
const READY_MS = 60_000;

/** One public read: its path, and a uid its answer must contain once the index holds the seeded data. */
export type Read = { readonly name: string; readonly path: string; readonly expect: string | undefined };

/** Drives `url` with CONNECTIONS keep-alive loops for `seconds` (and at most MAX_READS_PER_WINDOW reads); all 200. */
export async function drive(url: string, seconds: number): Promise<{ reads: number; seconds: number }> {
  const abort = new AbortController();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  // A request that does not come back within 10 s of the window's end fails the run instead of holding it.
  const hang = setTimeout(() => abort.abort(), seconds * 1000 + 10_000);
  let reads = 0;
  const loop = async () => {
    while (performance.now() < deadline && reads < MAX_READS_PER_WINDOW) {
      const response = await fetch(url, { signal: abort.signal });
      const body = await response.arrayBuffer();
      if (response.status !== 200) {
        throw new Error(`${url}: ${response.status} ${new TextDecoder().decode(body).slice(0, 300)}`);
      }
      reads++;
    }
  };
  try {
    await Promise.all(Array.from({ length: CONNECTIONS }, loop));
  } finally {
    clearTimeout(hang);
  }
  return { reads, seconds: (performance.now() - started) / 1000 };
}

/** Waits until every read answers 200 at `base` with its seeded attestation's uid among the bytes. */
export async function readsAnswer(base: string, reads: readonly Read[]): Promise<void> {
  const until = Date.now() + READY_MS;
  for (const read of reads) {
    for (;;) {
      const response = await fetch(`${base}${read.path}`).catch(() => undefined);
      const text = response === undefined ? "" : await response.text();
      if (response?.status === 200 && (read.expect === undefined || text.toLowerCase().includes(read.expect.toLowerCase()))) break;
      if (Date.now() > until) throw new Error(`${read.name} did not answer 200 with its data within ${READY_MS / 1000} s: ${response?.status} ${text.slice(0, 300)}`);
      await Bun.sleep(250);
    }
  }
}

/** What a counting proxy has forwarded: calls, HTTP exchanges (a batch is one), calls by method. */
export type RpcCount = { calls: number; exchanges: number; byMethod: Record<string, number> };

/** What the counting proxy on `port` has forwarded so far. */
export async function rpcCount(port: number): Promise<RpcCount> {
  return (await (await fetch(`http://127.0.0.1:${port}/count`)).json()) as RpcCount;
}

/** The calls by method between two counts, per read: "eth_blockNumber 1.00, eth_getLogs 1.00". */
export function perRead(before: Record<string, number>, after: Record<string, number>, reads: number): string {
  return Object.entries(after)
    .map(([method, n]) => [method, (n - (before[method] ?? 0)) / reads] as const)
    .filter(([, n]) => n >= 0.005)
    .map(([method, n]) => `${method} ${n.toFixed(2)}`)
    .join(", ") || "none";
}
