/**
 * HTTP efficiency of the RPC-free routes: requests per second for trust-anchors and for
 * identity-resolve with 100-identifier bodies, each as a ratio to a raw `Bun.serve` endpoint that
 * reads and parses the same body and returns the same bytes, measured in the same run; beside it the
 * same app with every request through Elysia (what these routes cost before the server's edge answered
 * them, http/edge_routes.ts). The servers run in a child process and this process drives them with a
 * fixed number of concurrent keep-alive requests; raw, app and Elysia runs are interleaved, and the
 * median of the rounds' ratios is printed with the best of each.
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
const ports = JSON.parse(new TextDecoder().decode(value)) as { app: number; elysia: number; raw: number; cpu: number };
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

/** Rounds of raw, app and app-through-Elysia in turn; the median of the rounds' ratios to raw, and the best. */
async function compare(name: string, path: string, rawPath: string, init: RequestInit) {
  const ratios: { app: number; elysia: number }[] = [];
  const cpu: { raw: number; app: number; elysia: number }[] = [];
  let best = { raw: 0, app: 0, elysia: 0 };
  for (let round = 0; round < ROUNDS; round++) {
    const rawRun = await load(`http://127.0.0.1:${ports.raw}${rawPath}`, init);
    const appRun = await load(`http://127.0.0.1:${ports.app}${path}`, init);
    const elysiaRun = await load(`http://127.0.0.1:${ports.elysia}${path}`, init);
    const [raw, app, elysia] = [rawRun.perSecond, appRun.perSecond, elysiaRun.perSecond];
    ratios.push({ app: app / raw, elysia: elysia / raw });
    cpu.push({ raw: rawRun.cpuUs, app: appRun.cpuUs, elysia: elysiaRun.cpuUs });
    best = { raw: Math.max(best.raw, raw), app: Math.max(best.app, app), elysia: Math.max(best.elysia, elysia) };
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[values.length >> 1]!;
  const cpuOf = (key: "raw" | "app" | "elysia") => median(cpu.map((c) => c[key]));
  console.log(
    `${name}: ratio to raw Bun.serve, median of ${ROUNDS} rounds: app ${median(ratios.map((r) => r.app)).toFixed(2)}×, ` +
      `through Elysia (before the edge routes) ${median(ratios.map((r) => r.elysia)).toFixed(2)}×; ` +
      `best req/s: raw ${best.raw.toFixed(0)}, app ${best.app.toFixed(0)} (${(best.app / best.raw).toFixed(2)}×), ` +
      `through Elysia ${best.elysia.toFixed(0)} (${(best.elysia / best.raw).toFixed(2)}×)`,
  );
  // The servers' CPU per request is steadier than throughput on a shared machine: the floor's divided by each.
  console.log(
    `  server CPU per request, median of rounds: raw ${cpuOf("raw").toFixed(1)} µs, app ${cpuOf("app").toFixed(1)} µs ` +
      `(${(cpuOf("raw") / cpuOf("app")).toFixed(2)}× the raw floor's efficiency), through Elysia ${cpuOf("elysia").toFixed(1)} µs ` +
      `(${(cpuOf("raw") / cpuOf("elysia")).toFixed(2)}×)`,
  );
}

await compare("trust-anchors", "/v1/trust-anchors", "/trust-anchors", {});
await compare("identity-resolve (100 identifiers)", "/v1/identity-resolve", "/identity-resolve", {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: resolveBody,
});
child.kill("SIGINT");
await child.exited;
process.exit(0);
