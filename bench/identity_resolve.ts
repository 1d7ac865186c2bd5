/**
 * HTTP efficiency of the RPC-free routes: requests per second for trust-anchors and for
 * identity-resolve with 100-identifier bodies, each as a ratio to a raw `Bun.serve` endpoint that
 * returns the same bytes, measured in the same run. The server runs in a child process (one core's
 * worth of work) and this process drives it with a fixed number of concurrent keep-alive requests;
 * raw and app runs are interleaved and the best of five is compared.
 *
 *   bun run bench/identity_resolve.ts [seconds-per-run]
 */
import { resolve } from "node:path";

const SECONDS = Number(process.argv[2] ?? 2);
const CONCURRENCY = 64;
const ROUNDS = 5;

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
const ports = JSON.parse(new TextDecoder().decode(value)) as { app: number; raw: number };

async function load(url: string, init: RequestInit): Promise<number> {
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
  return count / SECONDS;
}

async function compare(name: string, path: string, rawPath: string, init: RequestInit) {
  let bestApp = 0;
  let bestRaw = 0;
  for (let round = 0; round < ROUNDS; round++) {
    bestRaw = Math.max(bestRaw, await load(`http://127.0.0.1:${ports.raw}${rawPath}`, init));
    bestApp = Math.max(bestApp, await load(`http://127.0.0.1:${ports.app}${path}`, init));
  }
  console.log(
    `${name}: app ${bestApp.toFixed(0)} req/s, raw Bun.serve ${bestRaw.toFixed(0)} req/s, ratio ${(bestApp / bestRaw).toFixed(2)}×`,
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
