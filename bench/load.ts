/**
 * Load run: requests per second and p99 latency of trust-anchors, identity-resolve (100 identifiers)
 * and artifact-trust (an artifact with no evidence, answered from the attestation index: no JSON-RPC call) against service
 * processes on one PostgreSQL and one devnet, with 1 and then 2 instances (the client balances
 * round-robin), each as a ratio to a raw `Bun.serve` answering precomputed bytes, measured in the
 * same run. Everything shares this machine's cores, so read the ratios, not the absolute numbers.
 *
 *   bun run bench/load.ts [seconds-per-run, default 3]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Hex, keccak256, stringToBytes } from "viem";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { artifactDidFromDigest } from "../domain/did/mod.ts";
import { e2eArtifacts } from "../e2e/harness.ts";
import { postgresUnavailableReason, startPostgres } from "../e2e/support/postgres.ts";
import { startServiceProcess } from "../e2e/support/service_process.ts";

const SECONDS = Number(process.argv[2] ?? 3);
const CONCURRENCY = 32;

const unavailable = postgresUnavailableReason();
if (unavailable !== undefined) {
  console.error(unavailable);
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "ats-load-"));
const [devnet, pg] = await Promise.all([
  startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() }),
  startPostgres(),
]);
const env = {
  PORT: "0",
  RPC_URL: devnet.rpcUrl,
  TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
  DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
  DATABASE_URL: pg.url,
  DATA_DIR: dir,
  START_BLOCK: String(devnet.deployBlock),
  LOG_LEVEL: process.env.LOG_LEVEL ?? "info",
};

const identifiers = Array.from({ length: 100 }, (_, i) =>
  [`did:web:Service${i}.Example.com`, `0x${(i + 1).toString(16).padStart(40, "0")}`, `did:handle:github:user${i}`][i % 3]!
);
const resolveBody = JSON.stringify({ identifiers });
const artifactDid = artifactDidFromDigest(keccak256(stringToBytes("no evidence")) as Hex);
const endpoints = [
  { name: "trust-anchors", path: "/v1/trust-anchors", init: {} as RequestInit },
  {
    name: "identity-resolve (100 ids)",
    path: "/v1/identity-resolve",
    init: { method: "POST", headers: { "content-type": "application/json" }, body: resolveBody } as RequestInit,
  },
  { name: "artifact-trust (no evidence)", path: `/v1/artifact-trust?artifactDid=${artifactDid}`, init: {} as RequestInit },
];

/** Drives `urls` round-robin with CONCURRENCY keep-alive workers for SECONDS; every answer must be 200. */
async function load(urls: string[], init: RequestInit) {
  const deadline = performance.now() + SECONDS * 1000;
  const latencies: number[] = [];
  let next = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const url = urls[next++ % urls.length]!;
      const started = performance.now();
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${url}: ${res.status}`);
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / SECONDS, p99: latencies[Math.floor(latencies.length * 0.99)] ?? 0 };
}

const first = await startServiceProcess(env);
// The raw baseline returns exactly what the service returns, precomputed.
const bodies = new Map<string, ArrayBuffer>();
for (const e of endpoints) bodies.set(e.name, await (await fetch(`${first.url}${e.path}`, e.init)).arrayBuffer());
const raw = Bun.spawn([process.execPath, "-e", `
  const bodies = ${JSON.stringify(Object.fromEntries([...bodies].map(([k, v]) => [endpoints.find((e) => e.name === k)!.path.split("?")[0], new TextDecoder().decode(v)])))};
  const headers = { "content-type": "application/json; charset=utf-8", "access-control-allow-origin": "*" };
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(r) {
    await r.arrayBuffer();
    return new Response(bodies[new URL(r.url).pathname], { headers });
  } });
  console.log(server.port);
`], { stdout: "pipe" });
const rawRead = await raw.stdout.getReader().read();
const rawBase = `http://127.0.0.1:${new TextDecoder().decode(rawRead.value).trim()}`;

const rows: string[] = [];
const measure = async (instances: string[]) => {
  for (const e of endpoints) {
    const baseline = await load([`${rawBase}${e.path}`], e.init);
    const app = await load(instances.map((u) => `${u}${e.path}`), e.init);
    rows.push(
      `${e.name.padEnd(30)} ${String(instances.length).padStart(9)} ${app.rps.toFixed(0).padStart(8)} ${app.p99.toFixed(1).padStart(8)}` +
        ` ${baseline.rps.toFixed(0).padStart(8)} ${baseline.p99.toFixed(1).padStart(8)} ${(app.rps / baseline.rps).toFixed(2).padStart(6)}×`,
    );
  }
};

try {
  await measure([first.url]);
  const second = await startServiceProcess(env);
  try {
    await measure([first.url, second.url]);
  } finally {
    await second.stop();
  }
} finally {
  await first.stop();
  raw.kill();
  await pg.stop();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
console.log(`load: ${CONCURRENCY} concurrent keep-alive clients, ${SECONDS} s per run, PostgreSQL storage, LOG_LEVEL=${env.LOG_LEVEL}`);
console.log(`${"endpoint".padEnd(30)} instances    req/s  p99(ms)  raw r/s  raw p99  ratio`);
for (const row of rows) console.log(row);
process.exit(0);
