/**
 * CPU per delegated attestation, as a ratio to its floor measured in the same run (issue 28).
 *
 * The service runs as an operator runs it: `bun main.ts` in its own process, `RPC_URL` pointing at an Anvil with
 * the real EAS contracts, SQLite, the default log level, the index follower and the reconciler on. This process
 * sends delegated attestations one after the other (each from a fresh attester) and reads the CPU the service's
 * process tree used from /proc (utime + stime of the process and of every live descendant, plus what exited
 * children left in cutime + cstime). The floor is the one thing the service cannot avoid: recovering the EIP-712
 * signer of the same typed data, in the same runtime (Bun, viem), warm. Each round measures both; the figure is the
 * median over rounds of (service CPU per attestation) / (one warm recovery), so a busy machine moves both sides.
 * The service's idle CPU over the same wall time (timers: index follower, reconciler, pruning) is printed apart.
 *
 * The service finds libsecp256k1 when the machine has it (adapters/crypto): its own recovery then costs a small
 * fraction of the floor, which stays viem's recovery, the unit. One native recovery is printed beside it.
 * `SECP256K1_LIBRARY=none` in ATS_SERVICE_ENV runs the service on @noble/curves instead.
 *
 * `ATS_BENCH_RPC_DELAY_MS=n` puts a proxy in this process between the service and Anvil that holds every JSON-RPC
 * answer n ms: what a write costs against a provider that far away (twenty-first look in docs/performance.md). The
 * default (0) has no proxy, so the figure stays the issue's.
 *
 *   bun run bench/attest_cpu.ts [requests-per-round, default 30] [rounds, default 10] [warm-up requests, default 60]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { recoverTypedDataAddress } from "viem/utils";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { prepareDelegatedAttestation, signableTypedData } from "../client/delegated_attest.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { e2eArtifacts, TEST_RELAY_LIMITS } from "../e2e/harness.ts";
import { devnetServiceEnv, startServiceProcess } from "../e2e/support/service_process.ts";
import { openNativeSecp256k1 } from "../adapters/crypto/mod.ts";

const PER_ROUND = Number(process.argv[2] ?? 30);
const ROUNDS = Number(process.argv[3] ?? 10);
const WARMUP = Number(process.argv[4] ?? 60);
const TICKS_PER_SECOND = 100; // USER_HZ on Linux

const RPC_DELAY_MS = Number(process.env.ATS_BENCH_RPC_DELAY_MS ?? 0);
if (!Number.isFinite(RPC_DELAY_MS) || RPC_DELAY_MS < 0) {
  console.error("attest_cpu: ATS_BENCH_RPC_DELAY_MS must be a number of milliseconds, 0 or more");
  process.exit(2);
}
const dir = mkdtempSync(join(tmpdir(), "ats-attest-cpu-"));
const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
const delayed = RPC_DELAY_MS > 0 ? delayingProxy(devnet.rpcUrl, RPC_DELAY_MS) : undefined;
const service = await startServiceProcess({
  ...devnetServiceEnv(devnet, dir, delayed === undefined ? devnet.rpcUrl : `http://127.0.0.1:${delayed.port}`),
  // Every request comes from 127.0.0.1: the public relay's per-address limits would refuse most of them.
  ...TEST_RELAY_LIMITS,
  // ATS_PROFILE_DIR=dir: the service writes a CPU profile (.cpuprofile and markdown) there when it stops, sampled every
  // ATS_PROFILE_INTERVAL microseconds (default 1000; fewer give more samples of a short run).
  ...(process.env.ATS_PROFILE_DIR ? { BUN_OPTIONS: `--cpu-prof --cpu-prof-interval=${process.env.ATS_PROFILE_INTERVAL ?? 1000} --cpu-prof-md --cpu-prof-dir=${process.env.ATS_PROFILE_DIR}` } : {}),
  // ATS_SERVICE_ENV="NAME=value,NAME=value": more environment for the service (experiments with runtime settings).
  ...Object.fromEntries((process.env.ATS_SERVICE_ENV ?? "").split(",").filter((p) => p.includes("=")).map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)])),
});
const pid = service.proc.pid;

/** A JSON-RPC proxy to `rpcUrl` that answers each request `delayMs` after it arrived, or later when the node is slower. */
function delayingProxy(rpcUrl: string, delayMs: number): ReturnType<typeof Bun.serve> {
  return Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      const held = Bun.sleep(delayMs);
      const answer = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: await request.text() });
      const text = await answer.text();
      await held;
      return new Response(text, { status: answer.status, headers: { "content-type": "application/json" } });
    },
  });
}

/** The process `root` and all its descendants (a child's parent is field 4 of its /proc stat). */
function tree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    try {
      const text = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(text.slice(text.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // exited meanwhile
    }
  }
  const all: number[] = [];
  const pending = [root];
  while (pending.length > 0) {
    const id = pending.pop()!;
    all.push(id);
    pending.push(...(children.get(id) ?? []));
  }
  return all;
}

/** The last CPU time seen of every thread ever seen, so a thread that exits keeps what it used until then. */
const seenThreads = new Map<string, { readonly name: string; ms: number }>();

/**
 * CPU milliseconds of every thread of `root`'s process tree, by thread name (a trailing number dropped), from
 * /proc/<pid>/task/<tid>/schedstat: nanoseconds on a CPU, current for a thread that is not running (the service is
 * idle whenever this process reads it, between requests), so short rounds still measure precisely. Threads that
 * exited count with their last reading.
 */
function threadCpuMs(root: number): Map<string, number> {
  for (const id of tree(root)) {
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${id}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const key = `${id}/${task}`;
        const ns = Number(readFileSync(`/proc/${id}/task/${task}/schedstat`, "utf8").split(" ")[0]);
        const seen = seenThreads.get(key);
        if (seen !== undefined) seen.ms = ns / 1e6;
        else {
          const name = readFileSync(`/proc/${id}/task/${task}/comm`, "utf8").trim().replace(/[0-9]+$/, "#");
          seenThreads.set(key, { name, ms: ns / 1e6 });
        }
      } catch {
        // exited meanwhile
      }
    }
  }
  const byName = new Map<string, number>();
  for (const { name, ms } of seenThreads.values()) byName.set(name, (byName.get(name) ?? 0) + ms);
  return byName;
}

const treeCpuMs = (root: number) => [...threadCpuMs(root).values()].reduce((a, b) => a + b, 0);

/** utime and stime of the tree in ms (clock ticks; also counts threads and children that exited): the cross-check. */
function treeTicksMs(root: number): { user: number; system: number } {
  let user = 0;
  let system = 0;
  for (const id of tree(root)) {
    try {
      const text = readFileSync(`/proc/${id}/stat`, "utf8");
      const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
      user += Number(f[11]) + Number(f[13]);
      system += Number(f[12]) + Number(f[14]);
    } catch {
      // exited meanwhile
    }
  }
  return { user: (user * 1000) / TICKS_PER_SECOND, system: (system * 1000) / TICKS_PER_SECOND };
}

const def = findSchemaByName("user-review")!;
const trustAnchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8"));
const chainKey = Object.keys(trustAnchors.chains)[0]!;
const chainId = Number(chainKey.split(":")[1]);
const easAddress = trustAnchors.chains[chainKey].easContract as Hex;

async function signed() {
  const account = privateKeyToAccount(generatePrivateKey());
  const prepared = prepareDelegatedAttestation({
    schema: { uid: devnet.schemaUids["user-review"] as Hex, schema: def.schema, revocable: def.revocable },
    data: { subject: "did:web:bench.example", version: "1", ratingValue: 4, reviewBody: "ok", screenshotUrls: [], proofs: [] },
    attester: account.address,
    nonce: 0n,
    chainId,
    easAddress,
  });
  const typedData = signableTypedData(prepared);
  const signature = await account.signTypedData(typedData);
  return { body: JSON.stringify({ prepared, signature, attester: account.address }), typedData, signature };
}

async function post(body: string): Promise<void> {
  const response = await fetch(`${service.url}/v1/delegated-attest`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`status ${response.status}: ${text}`);
}

/**
 * CPU milliseconds of one warm signer recovery in this runtime: the median of three batches, each timed with
 * getrusage (process.cpuUsage; /proc's schedstat of a running thread lags by up to a scheduler tick).
 */
async function recoveryMs(samples: Awaited<ReturnType<typeof signed>>[]): Promise<number> {
  const perOp: number[] = [];
  for (let batch = 0; batch < 3; batch++) {
    const before = process.cpuUsage();
    for (const s of samples) await recoverTypedDataAddress({ ...s.typedData, signature: s.signature });
    const used = process.cpuUsage(before);
    perOp.push((used.user + used.system) / 1000 / samples.length);
  }
  return median(perOp);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const bodies = await Promise.all(Array.from({ length: PER_ROUND * ROUNDS + WARMUP }, () => signed()));
const recoverySamples = bodies.slice(0, 40);
// Warm-up: the service's code paths (its JIT settles) and this process's recovery.
for (const b of bodies.splice(0, WARMUP)) await post(b.body);
for (let i = 0; i < 10; i++) await recoveryMs(recoverySamples);

const threads0 = threadCpuMs(pid);
const ticks0 = treeTicksMs(pid);
const ratios: number[] = [];
const perAttest: number[] = [];
const recoveries: number[] = [];
let attestWall = 0;
for (let round = 0; round < ROUNDS; round++) {
  const before = await recoveryMs(recoverySamples);
  const jit0 = threadCpuMs(pid).get("JITWorker") ?? 0;
  const cpu0 = treeCpuMs(pid);
  const t0 = performance.now();
  for (const b of bodies.splice(0, PER_ROUND)) await post(b.body);
  const wall = performance.now() - t0;
  const cpuMs = (treeCpuMs(pid) - cpu0) / PER_ROUND;
  const jitMs = ((threadCpuMs(pid).get("JITWorker") ?? 0) - jit0) / PER_ROUND;
  attestWall += wall;
  // The floor measured on both sides of the round, so both see the same machine.
  const floor = (before + (await recoveryMs(recoverySamples))) / 2;
  recoveries.push(floor);
  perAttest.push(cpuMs);
  ratios.push(cpuMs / floor);
  console.log(
    `round ${round + 1}: ${PER_ROUND} attestations in ${wall.toFixed(0)} ms, service CPU ${cpuMs.toFixed(2)} ms per attestation ` +
      `(JIT compiler threads ${jitMs.toFixed(2)}), ` +
      `one warm signer recovery ${floor.toFixed(3)} ms: ${(cpuMs / floor).toFixed(1)}×`,
  );
}
const count = PER_ROUND * ROUNDS;
/** One native recovery (libsecp256k1, what the service uses when it finds it), timed like the floor. */
async function nativeRecoveryMs(): Promise<number | undefined> {
  const native = openNativeSecp256k1();
  if (native === undefined) return undefined;
  const { hashTypedData } = await import("viem");
  const digests = recoverySamples.map((s) => hashTypedData(s.typedData));
  const perOp: number[] = [];
  for (let batch = 0; batch < 5; batch++) {
    const before = process.cpuUsage();
    for (let i = 0; i < 20; i++) for (let j = 0; j < digests.length; j++) native.recoverAddress(digests[j]!, recoverySamples[j]!.signature);
    const used = process.cpuUsage(before);
    perOp.push((used.user + used.system) / 1000 / (20 * digests.length));
  }
  return median(perOp.slice(1));
}
const threads1 = threadCpuMs(pid);
const ticks1 = treeTicksMs(pid);
const userPerAttest = (ticks1.user - ticks0.user) / count;
const systemPerAttest = (ticks1.system - ticks0.system) / count;
// Idle: what the service's timers (index follower, reconciler, pruning) cost whether or not anyone attests.
const idle0 = treeTicksMs(pid);
const idleStart = performance.now();
await Bun.sleep(5_000);
const idle1 = treeTicksMs(pid);
const idlePerSecond = ((idle1.user + idle1.system - idle0.user - idle0.system) / (performance.now() - idleStart)) * 1000;

console.log(
  `service CPU per delegated attestation: median ${median(perAttest).toFixed(2)} ms = ${median(ratios).toFixed(2)}× one warm signer recovery ` +
    `(median ${median(recoveries).toFixed(3)} ms; goal ≤ 3×); ratios per round ${ratios.map((r) => r.toFixed(1)).join(", ")}`,
);
console.log(
  `  wall time per attestation ${(attestWall / count).toFixed(1)} ms` +
    (delayed === undefined ? "" : `, every JSON-RPC answer held ${RPC_DELAY_MS} ms by a proxy (ATS_BENCH_RPC_DELAY_MS)`),
);
console.log(
  `  cross-check from clock ticks (exited threads included): ${(userPerAttest + systemPerAttest).toFixed(2)} ms per attestation, ` +
    `${userPerAttest.toFixed(2)} in user space and ${systemPerAttest.toFixed(2)} in the kernel`,
);
const native = await nativeRecoveryMs();
if (native !== undefined) {
  console.log(
    `  one native recovery (libsecp256k1) ${native.toFixed(3)} ms: the service's CPU is ${(median(perAttest) / native).toFixed(0)}× that ` +
      `(its own recovery is ${((native / median(perAttest)) * 100).toFixed(1)} % of it)`,
  );
}
const threadLines = [...threads1]
  .map(([name, ms]) => [name, ms - (threads0.get(name) ?? 0)] as const)
  .filter(([, ms]) => ms >= 0.005 * count)
  .sort((a, b) => b[1] - a[1])
  .map(([name, ms]) => `${name} ${(ms / count).toFixed(2)}`);
console.log(`  by thread, ms per attestation: ${threadLines.join(", ")}`);
console.log(
  `  service CPU while idle: ${idlePerSecond.toFixed(1)} ms per second, ${((idlePerSecond * attestWall) / 1000 / count).toFixed(2)} ms ` +
    "per attestation of the rounds' wall time (included above)",
);
await service.stop();
delayed?.stop(true);
await devnet.stop();
rmSync(dir, { recursive: true, force: true });
process.exit(0);
