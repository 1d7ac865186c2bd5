/**
 * HTTP efficiency of the RPC-free routes: requests per second for trust-anchors and for
 * identity-resolve with 100-identifier bodies, each as a ratio to a raw `Bun.serve` endpoint that
 * reads and parses the same body and returns the same bytes, measured in the same run; beside it, for
 * identity-resolve, the same app without its cache of whole answers (each answer parsed, checked and
 * assembled from the cached records: what a list not asked for before costs), and for both the same app
 * with every request through Elysia (what these routes cost before the server's edge answered them,
 * http/edge_routes.ts). The servers run in a child process and this process drives them with a fixed
 * number of concurrent keep-alive requests; the runs are interleaved, and the median of the rounds'
 * ratios is printed with the best of each and the servers' CPU per request.
 *
 *   bun run bench/identity_resolve.ts [seconds-per-run] [rounds]
 */
import { resolve } from "node:path";

const SECONDS = Number(process.argv[2] ?? 2);
const CONCURRENCY = 64;
const ROUNDS = Number(process.argv[3] ?? 5);

const identifiers = Array.from({ length: 100 }, (_, i) =>
  [
    `did:web:Service${i}.Example.com`,
    `0x${(i + 1).toString(16).padStart(40, "0")}`,
    `eip155:66238:0x${(i + 7).toString(16).padStart(40, "a")}`,
    `did:handle:github:user${i}`,
    `did:key:z6Mk${"x".repeat(40)}${i}`,
  ][i % 5]!
);
const resolveBody = JSON.stringify({ identifiers });

const child = Bun.spawn([process.execPath, resolve(import.meta.dir, "_http_servers.ts"), resolveBody], {
  stdout: "pipe",
  stderr: "inherit",
  // ATS_PROFILE_DIR=dir: the servers' process writes a CPU profile there when it stops.
  env: process.env.ATS_PROFILE_DIR
    ? { ...process.env, BUN_OPTIONS: `--cpu-prof --cpu-prof-md --cpu-prof-dir=${process.env.ATS_PROFILE_DIR}` }
    : process.env,
});
const reader = child.stdout.getReader();
const { value } = await reader.read();
const ports = JSON.parse(new TextDecoder().decode(value)) as { app: number; assembling: number; elysia: number; raw: number; cpu: number };
const serverCpuUs = async () => Number(await (await fetch(`http://127.0.0.1:${ports.cpu}/`)).text());

/** Requests per second of one load window, and the servers' process CPU per request over it (µs). */
async function load(url: string, init: RequestInit): Promise<{ perSecond: number; cpuUs: number }> {
  const cpu0 = await serverCpuUs();
  const deadline = performance.now() + SECONDS * 1000;
  let count = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      count++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return { perSecond: count / SECONDS, cpuUs: (await serverCpuUs() - cpu0) / count };
}

/** The servers compared with the raw floor, and how each is named in the output. */
const VARIANTS = {
  app: "app",
  assembling: "app without the answer cache (every answer assembled)",
  elysia: "through Elysia (before the edge routes)",
} as const;
type Variant = keyof typeof VARIANTS;

/** Rounds of raw and each variant in turn; the median of the rounds' ratios to raw, the best, and the CPU per request. */
async function compare(name: string, path: string, rawPath: string, init: RequestInit, variants: readonly Variant[]) {
  const runs: Record<"raw" | Variant, { perSecond: number; cpuUs: number }[]> = { raw: [], app: [], assembling: [], elysia: [] };
  for (let round = 0; round < ROUNDS; round++) {
    runs.raw.push(await load(`http://127.0.0.1:${ports.raw}${rawPath}`, init));
    for (const variant of variants) runs[variant].push(await load(`http://127.0.0.1:${ports[variant]}${path}`, init));
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
  const best = (key: "raw" | Variant) => Math.max(...runs[key].map((run) => run.perSecond));
  const cpuOf = (key: "raw" | Variant) => median(runs[key].map((run) => run.cpuUs));
  const ratioOf = (variant: Variant) => median(runs[variant].map((run, round) => run.perSecond / runs.raw[round]!.perSecond));
  console.log(`${name}: ratio to raw Bun.serve (best ${best("raw").toFixed(0)} req/s, ${cpuOf("raw").toFixed(1)} µs of server CPU a request):`);
  for (const variant of variants) {
    // The servers' CPU per request is steadier than throughput on a shared machine: the floor's divided by each.
    console.log(
      `  ${VARIANTS[variant]}: ${ratioOf(variant).toFixed(2)}× (median of ${ROUNDS} rounds); best ${best(variant).toFixed(0)} req/s ` +
        `(${(best(variant) / best("raw")).toFixed(2)}×); server CPU a request ${cpuOf(variant).toFixed(1)} µs ` +
        `(${(cpuOf("raw") / cpuOf(variant)).toFixed(2)}× the floor's efficiency)`,
    );
  }
}

await compare("trust-anchors", "/v1/trust-anchors", "/trust-anchors", {}, ["app", "elysia"]);
await compare("identity-resolve (100 identifiers)", "/v1/identity-resolve", "/identity-resolve", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: resolveBody,
}, ["app", "assembling", "elysia"]);
child.kill("SIGINT");
await child.exited;
process.exit(0);
