/**
 * Public reads at scale (issue 34, decisions §21), with the service as an operator runs it: `bun main.ts` processes
 * (`RPC_URL` on one Anvil with EAS deployed, mining a block a second; `DATABASE_URL` on one throwaway PostgreSQL; the
 * index follower on, `INDEX_POLL_MS=1000`), each JSON-RPC call counted by a proxy in front of Anvil. For
 * `GET /v1/artifact-trust` (an artifact with four assessments, one approved auditor), `GET /v1/key-status` (a key bound
 * by its did:pkh subject), `GET /v1/attestations` (a subject with ten reviews) and `GET /v1/trust-anchors` it prints:
 *
 * - reads per second of one instance, loaded directly, against a raw `Bun.serve` answering the exact bytes the
 *   service answered for the same request (fetched once), measured in the same run, and the ratio;
 * - JSON-RPC calls per read over that window (the follower's polls included), and the calls per second with no reads;
 * - one and then three instances behind HAProxy (Debian's `haproxy`, installed with apt-get when missing, which needs
 *   root; started here on loopback with a configuration written here): reads per second and the CPU per read of the
 *   service processes plus the PostgreSQL server processes (utime + stime from /proc/<pid>/stat, before and after
 *   each window), and the ratio three instances / one. HAProxy's own CPU is printed apart (the same proxy in both).
 *
 * The load: 32 keep-alive `fetch` loops, each window bounded in time and in count; every answer must be 200.
 * Everything (client, proxy, servers, database, chain) shares this machine's cores: read the ratios. Nothing is
 * read from the answers but the status and the bytes, so the bench runs on any version of the reads.
 *
 * Each instance keeps whole answers per poll generation of the index (http/index_answer_cache.ts); the direct table
 * also measures, in the same run, one more instance with that cache off (`INDEX_ANSWER_CACHE_MB=0`, started for that
 * table only). `--no-answer-cache` turns it off everywhere (the reads as they were before it).
 *
 *   bun run bench/reads.ts [seconds per window, default 3] [--no-answer-cache]
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createTestClient, type Hex, http, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { e2eArtifacts, freePort } from "../e2e/harness.ts";
import { writeAnchorsWithIssuers } from "../e2e/support/devnet_fixtures.ts";
import { easWriter } from "../e2e/support/eas_writer.ts";
import { postgresUnavailableReason, startPostgres } from "../e2e/support/postgres.ts";
import { type ServiceProcess, startServiceProcess } from "../e2e/support/service_process.ts";

const ARGS = process.argv.slice(2);
const NO_ANSWER_CACHE = ARGS.includes("--no-answer-cache");
const SECONDS = Number(ARGS.find((a) => !a.startsWith("--")) ?? 3);
const CONNECTIONS = 32;
/** A window's bound in count, beside its bound in time. */
const MAX_READS_PER_WINDOW = 2_000_000;
/** Warm-up before each measured window (JIT, connections), not counted. */
const WARMUP_SECONDS = 0.5;
/** How long an instance may take to answer every read with the seeded data (the index catching up). */
const READY_MS = 60_000;
/** The whole run's bound: start-up, 20 windows with their warm-ups, the waits. */
const RUN_LIMIT_MS = 120_000 + 20 * (SECONDS + WARMUP_SECONDS) * 1000;

if (!(SECONDS > 0 && SECONDS <= 60)) {
  console.error("usage: bun run bench/reads.ts [seconds per window, 0 < s ≤ 60] [--no-answer-cache]");
  process.exit(2);
}
const unavailable = postgresUnavailableReason();
if (unavailable !== undefined) {
  console.error(unavailable);
  process.exit(1);
}
const haproxy = haproxyBinary();
if (haproxy === undefined) {
  console.error("HAProxy is not installed and cannot be installed here (apt-get install haproxy, as root)");
  process.exit(1);
}

// Everything started is stopped by `cleanup`, newest first: at the end, on an error, on a signal, and at the run's bound.
const stoppers: (() => Promise<unknown> | unknown)[] = [];
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
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
const watchdog = setTimeout(() => {
  console.error(`reads bench: still running after ${RUN_LIMIT_MS / 1000} s, stopping`);
  void cleanup().finally(() => process.exit(1));
}, RUN_LIMIT_MS);
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void cleanup().finally(() => process.exit(130)));

/** A child Bun process running a bench helper that prints one JSON line once it listens. */
async function startHelper(file: string, args: string[]): Promise<{ port: number; proc: ReturnType<typeof Bun.spawn> }> {
  const proc = Bun.spawn([process.execPath, resolve(import.meta.dir, file), ...args], { stdout: "pipe", stderr: "inherit" });
  stoppers.push(async () => {
    proc.kill("SIGTERM");
    await proc.exited;
  });
  const { value } = await (proc.stdout as ReadableStream<Uint8Array>).getReader().read();
  return { port: (JSON.parse(new TextDecoder().decode(value)) as { port: number }).port, proc };
}

/** HAProxy's path: found, or installed from Debian's package when this process is root; undefined otherwise. */
function haproxyBinary(): string | undefined {
  const find = () => Bun.which("haproxy") ?? (existsSync("/usr/sbin/haproxy") ? "/usr/sbin/haproxy" : undefined);
  if (find() !== undefined || process.getuid?.() !== 0) return find();
  console.log("installing Debian's haproxy package (apt-get)");
  const apt = (args: string[]) =>
    Bun.spawnSync(["apt-get", ...args], { env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" }, stdout: "ignore", stderr: "ignore", timeout: 180_000 });
  const install = ["install", "-y", "--no-install-recommends", "haproxy"];
  if (apt(install).exitCode !== 0) {
    apt(["update"]);
    apt(install);
  }
  return find();
}

/** The fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses): state first. */
function statFields(pid: number): string[] {
  const text = readFileSync(`/proc/${pid}/stat`, "utf8");
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}
/** CPU time of processes in clock ticks, from /proc/<pid>/stat: utime + stime, and the reaped children's. */
function cpuTicks(pid: number): number {
  try {
    const fields = statFields(pid);
    return Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  } catch {
    return 0; // gone: a backend that exited is counted in its parent's reaped children
  }
}
/** The PostgreSQL postmaster listening on `port` (its command line names the port) and its children. */
function postgresPids(port: number): number[] {
  const pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number);
  const postmaster = pids.find((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      return argv[0]!.endsWith("/postgres") && argv.some((a, i) => a === "-p" && argv[i + 1] === String(port));
    } catch {
      return false;
    }
  });
  if (postmaster === undefined) throw new Error(`no PostgreSQL postmaster on port ${port} in /proc`);
  const children = pids.filter((pid) => {
    try {
      return statFields(pid)[1] === String(postmaster);
    } catch {
      return false;
    }
  });
  return [postmaster, ...children];
}
const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;

/** Drives `url` with CONNECTIONS keep-alive loops for `seconds` (and at most MAX_READS_PER_WINDOW reads); all 200. */
async function drive(url: string, seconds: number): Promise<{ reads: number; seconds: number }> {
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

/** One public read: its path, and a uid its answer must contain once the index holds the seeded data. */
type Read = { readonly name: string; readonly path: string; readonly expect: string | undefined };
// Set once the chain, the database and the data are there (below).
let READS: Read[] = [];
let counterPort = 0;
let dir = "";
let pgUrl = "";
let env: Record<string, string> = {};
const instances: ServiceProcess[] = [];

/** What the counting proxy has forwarded so far. */
async function rpcCount(): Promise<RpcCount> {
  return (await (await fetch(`http://127.0.0.1:${counterPort}/count`)).json()) as RpcCount;
}
/** What the counting proxy has forwarded: calls, HTTP exchanges (a batch is one), calls by method. */
type RpcCount = { calls: number; exchanges: number; byMethod: Record<string, number> };
/** The calls by method between two counts, per read: "eth_blockNumber 1.00, eth_getLogs 1.00". */
function perRead(before: Record<string, number>, after: Record<string, number>, reads: number): string {
  return Object.entries(after)
    .map(([method, n]) => [method, (n - (before[method] ?? 0)) / reads] as const)
    .filter(([, n]) => n >= 0.005)
    .map(([method, n]) => `${method} ${n.toFixed(2)}`)
    .join(", ") || "none";
}

/** Waits until every read answers 200 at `base` with its seeded attestation's uid among the bytes. */
async function readsAnswer(base: string): Promise<void> {
  const until = Date.now() + READY_MS;
  for (const read of READS) {
    for (;;) {
      const response = await fetch(`${base}${read.path}`).catch(() => undefined);
      const text = response === undefined ? "" : await response.text();
      if (response?.status === 200 && (read.expect === undefined || text.toLowerCase().includes(read.expect.toLowerCase()))) break;
      if (Date.now() > until) throw new Error(`${read.name} did not answer 200 with its data within ${READY_MS / 1000} s: ${response?.status} ${text.slice(0, 300)}`);
      await Bun.sleep(250);
    }
  }
}

async function startInstance(): Promise<ServiceProcess> {
  const instance = await startServiceProcess(env);
  stoppers.push(() => instance.stop());
  instances.push(instance);
  await readsAnswer(instance.url);
  return instance;
}

/** HAProxy on loopback in front of `backends`, round-robin, keep-alive both sides; resolves once it answers. */
async function startHaproxy(backends: ServiceProcess[]): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = freePort();
  const config = join(dir, `haproxy-${backends.length}.cfg`);
  writeFileSync(config, [
    "global",
    "  maxconn 4096",
    "defaults",
    "  mode http",
    "  timeout connect 5s",
    "  timeout client 30s",
    "  timeout server 30s",
    "  timeout http-keep-alive 30s",
    "frontend reads",
    `  bind 127.0.0.1:${port}`,
    "  default_backend ats",
    "backend ats",
    "  balance roundrobin",
    "  http-reuse always",
    "  option httpchk GET /healthz",
    ...backends.map((b, i) => `  server ats${i + 1} ${new URL(b.url).host} check inter 2s`),
    "",
  ].join("\n"));
  const proc = Bun.spawn([haproxy!, "-db", "-f", config], { stdout: "ignore", stderr: "pipe" });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    proc.kill("SIGTERM");
    await proc.exited;
  };
  stoppers.push(stop);
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 10_000;
  for (let ok = 0; ok < 2 * backends.length;) {
    const status = await fetch(`${url}/healthz`).then((r) => r.status, () => 0);
    ok = status === 200 ? ok + 1 : 0;
    if (proc.exitCode !== null || Date.now() > until) {
      throw new Error(`HAProxy did not answer: ${(await new Response(proc.stderr as ReadableStream).text()).slice(0, 500)}`);
    }
    if (status !== 200) await Bun.sleep(100);
  }
  return { url, pid: proc.pid, stop };
}

type Direct = {
  read: string;
  raw: number;
  app: number;
  /** Reads per second of the instance with the answer cache off; undefined when it is off everywhere. */
  uncached: number | undefined;
  callsPerRead: number;
  exchangesPerRead: number;
  methods: string;
};
type Balanced = {
  read: string;
  perSecond: number;
  serviceMsPerRead: number;
  postgresMsPerRead: number;
  haproxyMsPerRead: number;
  callsPerRead: number;
  exchangesPerRead: number;
};

/** One instance loaded directly, each read right after the raw floor answering its bytes (and the uncached instance's). */
async function direct(instance: ServiceProcess, uncached: ServiceProcess | undefined): Promise<Direct[]> {
  const bodies: Record<string, string> = {};
  for (const read of READS) bodies[read.path.split("?")[0]!] = await (await fetch(`${instance.url}${read.path}`)).text();
  writeFileSync(join(dir, "raw-bodies.json"), JSON.stringify(bodies));
  const raw = await startHelper("_raw_reads.ts", [join(dir, "raw-bodies.json")]);
  const rows: Direct[] = [];
  for (const read of READS) {
    const rawUrl = `http://127.0.0.1:${raw.port}${read.path}`;
    await drive(rawUrl, WARMUP_SECONDS);
    const floor = await drive(rawUrl, SECONDS);
    await drive(`${instance.url}${read.path}`, WARMUP_SECONDS);
    const count0 = await rpcCount();
    const app = await drive(`${instance.url}${read.path}`, SECONDS);
    const count = await rpcCount();
    let off: number | undefined;
    if (uncached !== undefined) {
      await drive(`${uncached.url}${read.path}`, WARMUP_SECONDS);
      const run = await drive(`${uncached.url}${read.path}`, SECONDS);
      off = run.reads / run.seconds;
    }
    rows.push({
      read: read.name,
      raw: floor.reads / floor.seconds,
      app: app.reads / app.seconds,
      uncached: off,
      callsPerRead: (count.calls - count0.calls) / app.reads,
      exchangesPerRead: (count.exchanges - count0.exchanges) / app.reads,
      methods: perRead(count0.byMethod, count.byMethod, app.reads),
    });
  }
  return rows;
}

/** Every read through HAProxy in front of the instances, with the CPU of the instances and PostgreSQL per read. */
async function balanced(lb: { url: string; pid: number }): Promise<Balanced[]> {
  const pgPort = Number(new URL(pgUrl).port);
  const sum = (pids: number[]) => pids.reduce((total, pid) => total + cpuTicks(pid), 0);
  const sample = async () => ({
    service: sum(instances.map((instance) => instance.proc.pid)),
    postgres: sum(postgresPids(pgPort)),
    haproxy: cpuTicks(lb.pid),
    rpc: await rpcCount(),
  });
  const msPerTick = 1000 / CLOCK_TICKS;
  const rows: Balanced[] = [];
  for (const read of READS) {
    await drive(`${lb.url}${read.path}`, WARMUP_SECONDS);
    const before = await sample();
    const run = await drive(`${lb.url}${read.path}`, SECONDS);
    const after = await sample();
    const perRead = (ticks: number) => (ticks * msPerTick) / run.reads;
    rows.push({
      read: read.name,
      perSecond: run.reads / run.seconds,
      serviceMsPerRead: perRead(after.service - before.service),
      postgresMsPerRead: perRead(after.postgres - before.postgres),
      haproxyMsPerRead: perRead(after.haproxy - before.haproxy),
      callsPerRead: (after.rpc.calls - before.rpc.calls) / run.reads,
      exchangesPerRead: (after.rpc.exchanges - before.rpc.exchanges) / run.reads,
    });
  }
  return rows;
}

/** The chain, the database, the counting proxy and the data each read answers with; sets the instances' environment. */
async function setUp(): Promise<void> {
  dir = mkdtempSync(join(tmpdir(), "ats-reads-"));
  stoppers.push(() => rmSync(dir, { recursive: true, force: true }));
  const pg = await startPostgres();
  pgUrl = pg.url;
  stoppers.push(() => pg.stop());
  const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
  stoppers.push(() => devnet.stop());
  counterPort = (await startHelper("_rpc_counter.ts", [devnet.rpcUrl])).port;

  const [auditor, reviewer, owner, signer] = devnet.keys.users as [Hex, Hex, Hex, Hex];
  const writer = easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress });
  const encode = (name: string, data: Record<string, unknown>) => (encodeSchemaData(findSchemaByName(name)!.schema, data) as { value: Hex }).value;
  const recipientOf = (did: string) => (didToAddress(did) as { value: Hex }).value;
  const pkh = (key: Hex) => `did:pkh:eip155:${devnet.chainId}:${privateKeyToAccount(key).address.toLowerCase()}`;

  const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("bench reads artifact")));
  const assessments = await writer.multiAttest(auditor, devnet.schemaUids["security-assessment"]!, Array.from({ length: 4 }, (_, i) => ({
    recipient: recipientOf(ARTIFACT),
    revocable: false,
    data: encode("security-assessment", {
      subject: ARTIFACT, organization: "Bench Audits", version: `1.${i}`, versionHW: "", payload: '{"findings":0}', payloadVersion: "1",
      payloadSpecURI: "", payloadSpecDigest: "", issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n,
    }),
  })));
  const SHOP = "did:web:shop.bench.example";
  const reviews = await writer.multiAttest(reviewer, devnet.schemaUids["user-review"]!, Array.from({ length: 10 }, (_, i) => ({
    recipient: recipientOf(SHOP),
    revocable: false,
    data: encode("user-review", { subject: SHOP, version: "1", ratingValue: BigInt(1 + (i % 5)), reviewBody: `review ${i}`, screenshotUrls: [], proofs: [] }),
  })));
  // A did:pkh subject binds its own key: key status reads the chain only (no DNS or did.json for a did:pkh).
  const KEY_SUBJECT = pkh(owner);
  const KEY = pkh(signer);
  const binding = await writer.attest(owner, devnet.schemaUids["key-binding"]!, {
    recipient: recipientOf(KEY_SUBJECT),
    revocable: true,
    data: encode("key-binding", {
      subject: KEY_SUBJECT, keyId: KEY, publicKeyJwk: "", keyPurpose: ["assertionMethod"], proofs: [], issuedAt: 0n, effectiveAt: 0n, expiresAt: 0n,
    }),
  });
  const anchorsPath = writeAnchorsWithIssuers(devnet.trustAnchorsPath, join(dir, "bench-reads-anchors.json"), [
    { key: auditor, label: "Bench Audits", schemas: ["security-assessment"] },
  ]);
  // From here on a block a second, as a live chain: the follower has a head to follow.
  await createTestClient({ mode: "anvil", transport: http(devnet.rpcUrl) }).setIntervalMining({ interval: 1 });

  const q = encodeURIComponent;
  READS = [
    { name: "GET /v1/artifact-trust", path: `/v1/artifact-trust?artifactDid=${q(ARTIFACT)}`, expect: assessments[0] },
    { name: "GET /v1/key-status", path: `/v1/key-status?subjectDid=${q(KEY_SUBJECT)}&keyDid=${q(KEY)}`, expect: binding.uid },
    { name: "GET /v1/attestations", path: `/v1/attestations?subject=${q(SHOP)}&schema=user-review&limit=25`, expect: reviews.at(-1) },
    { name: "GET /v1/trust-anchors", path: "/v1/trust-anchors", expect: undefined },
  ];

  env = {
    PORT: "0",
    RPC_URL: `http://127.0.0.1:${counterPort}`,
    TRUST_ANCHORS_PATH: anchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    DATABASE_URL: pg.url,
    DATA_DIR: dir,
    START_BLOCK: String(devnet.deployBlock),
    INDEX_POLL_MS: "1000",
    // One client address sends every read: the per-address and in-flight bounds of key status, and the list's
    // computations per address (issue 43), must not refuse them.
    KEY_STATUS_RATE_PER_MINUTE: "1000000",
    KEY_STATUS_MAX_IN_FLIGHT: "1000",
    INDEX_QUERY_RATE_PER_MINUTE: "1000000",
    LOG_LEVEL: process.env.LOG_LEVEL ?? "warn",
    ...(NO_ANSWER_CACHE ? { INDEX_ANSWER_CACHE_MB: "0" } : {}),
  };
}

/** Every figure, measured in one run; prints them. */
async function measure(): Promise<void> {
  const first = await startInstance();
  const idle0 = await rpcCount();
  await Bun.sleep(3_000);
  const idle = await rpcCount();

  // The same service with the answer cache off, for the direct table only (it does not follow: the first one does).
  let uncached: ServiceProcess | undefined;
  if (!NO_ANSWER_CACHE) {
    const off = await startServiceProcess({ ...env, INDEX_ANSWER_CACHE_MB: "0", INDEX_FOLLOW: "false" });
    stoppers.push(() => off.stop());
    uncached = off;
    await readsAnswer(uncached.url);
  }
  const one = await direct(first, uncached);
  await uncached?.stop();

  const lbOne = await startHaproxy(instances);
  const behindOne = await balanced(lbOne);
  await lbOne.stop();

  const added = await Promise.all([startInstance(), startInstance()]);
  // The new instances get the load the first one had before it was measured behind HAProxy (JIT, connections).
  for (const read of READS) await Promise.all(added.map((instance) => drive(`${instance.url}${read.path}`, SECONDS)));
  const lbThree = await startHaproxy(instances);
  const behindThree = await balanced(lbThree);
  await lbThree.stop();

  const f = (n: number, digits = 0) => n.toFixed(digits);
  console.log(
    `reads bench: ${CONNECTIONS} keep-alive connections, ${SECONDS} s a window (after ${WARMUP_SECONDS} s warm-up), ` +
      `PostgreSQL, Anvil mining a block a second, INDEX_POLL_MS=1000, LOG_LEVEL=${env.LOG_LEVEL}, ${navigator.hardwareConcurrency} cores, ` +
      `answer cache ${NO_ANSWER_CACHE ? "off" : "on"}`,
  );
  console.log(`JSON-RPC calls with no reads (one instance, 3 s): ${f((idle.calls - idle0.calls) / 3, 1)}/s (${perRead(idle0.byMethod, idle.byMethod, 3)})`);
  console.log(
    "\none instance, direct  | reads/s | raw Bun.serve, same bytes | ratio | cache off: reads/s, ratio | JSON-RPC calls/read (by method), HTTP exchanges/read",
  );
  for (const r of one) {
    const off = r.uncached === undefined ? "-" : `${f(r.uncached)}, ${f(r.uncached / r.raw, 2)}×`;
    console.log(
      `${r.read.padEnd(22)} | ${f(r.app).padStart(7)} | ${f(r.raw).padStart(25)} | ${f(r.app / r.raw, 2).padStart(4)}× | ${off.padStart(25)} | ` +
        `${f(r.callsPerRead, 3)} (${r.methods}), ${f(r.exchangesPerRead, 3)}`,
    );
  }
  console.log("\nbehind HAProxy: CPU ms per read = service processes + PostgreSQL server processes (/proc utime + stime)");
  console.log("read                   | instances | reads/s | CPU ms/read (service + PostgreSQL) | 3÷1 | JSON-RPC calls/read, exchanges/read | HAProxy CPU ms/read");
  for (const [i, a] of behindOne.entries()) {
    const b = behindThree[i]!;
    const cpu = (r: Balanced) => r.serviceMsPerRead + r.postgresMsPerRead;
    for (const [n, r] of [[1, a], [3, b]] as const) {
      console.log(
        `${(n === 1 ? r.read : "").padEnd(22)} | ${String(n).padStart(9)} | ${f(r.perSecond).padStart(7)} | ` +
          `${`${f(cpu(r), 3)} (${f(r.serviceMsPerRead, 3)} + ${f(r.postgresMsPerRead, 3)})`.padEnd(34)} | ` +
          `${(n === 3 ? `${f(cpu(b) / cpu(a), 2)}×` : "").padStart(5)} | ${`${f(r.callsPerRead, 3)}, ${f(r.exchangesPerRead, 3)}`.padEnd(35)} | ` +
          f(r.haproxyMsPerRead, 3),
      );
    }
  }
}

let failed = false;
try {
  await setUp();
  await measure();
} catch (error) {
  failed = true;
  // Once stopping began (a signal, the run's bound), the loads fail on the stopped servers: not worth printing.
  if (cleaning === undefined) console.error(error);
} finally {
  clearTimeout(watchdog);
  await cleanup();
}
process.exit(failed ? 1 : 0);
