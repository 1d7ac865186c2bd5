// The rolling restart of decisions §28, on the compose devnet that scripts/compose_test.sh started: with reads and
// delegated writes running through the balancer, each of ats1, ats2, ats3 in turn is stopped (SIGTERM, exit code 0
// required) and replaced by a new container, and the next goes only once the balancer counts the new one
// up. Then: no read failed (INDEX_STALE included: the index's lease moved in time), every write answered 200 is on
// the chain exactly once, and every other write was answered 503 SHUTTING_DOWN (nothing done) or, cut mid-send,
// OUTCOME_UNKNOWN. Bounded: each phase has its own deadline. Prints one line per step and a summary; exit 1 on failure.
// Environment: ROLLING_PROJECT (the compose project), ROLLING_STATS_URL (the
// balancer's CSV statistics), ROLLING_RPC_URL (the devnet's JSON-RPC), ROLLING_NEXT_IMAGE (optional: the new containers
// run this image, a new version whose PostgreSQL schema differs; then its migration must run exactly once, at the
// first new instance's start, while the old ones go on serving). Usage: bun scripts/rolling_restart.ts <balancer URL>
import { join } from "node:path";
import { createPublicClient, getAddress, http, parseAbiItem, type Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { ANVIL_DEV_KEYS } from "../adapters/devnet/mod.ts";
import { attestDelegated } from "../client/delegated_attest.ts";

const baseUrl = process.argv[2] ?? "http://127.0.0.1:8080";
const project = process.env.ROLLING_PROJECT ?? "";
const statsUrl = process.env.ROLLING_STATS_URL ?? "";
const rpcUrl = process.env.ROLLING_RPC_URL ?? "";
const nextImage = process.env.ROLLING_NEXT_IMAGE?.trim() || undefined;
const INSTANCES = ["ats1", "ats2", "ats3"];
const READY_DEADLINE_MS = 180_000;
const MAX_WRITES = 300;

function log(message: string): void {
  console.log(`rolling: ${message}`);
}

function run(argv: string[], cwd?: string): { code: number; out: string } {
  const result = Bun.spawnSync(argv, { cwd, stdout: "pipe", stderr: "pipe" });
  return { code: result.exitCode ?? -1, out: `${result.stdout.toString()}${result.stderr.toString()}` };
}

/** Waits until `condition` holds, checking every 250 ms, at most `ms`. */
async function until(what: string, ms: number, condition: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return;
    await Bun.sleep(250);
  }
  throw new Error(`${what}: not within ${ms / 1000} s`);
}

/** The balancer's own view of a server: UP, DOWN, MAINT, … (HAProxy's CSV statistics). */
async function balancerStatus(server: string): Promise<string | undefined> {
  const csv = await fetch(statsUrl, { signal: AbortSignal.timeout(5_000) }).then((r) => r.text()).catch(() => "");
  const header = csv.split("\n")[0]?.replace(/^# /, "").split(",") ?? [];
  const status = header.indexOf("status");
  const row = csv.split("\n").map((line) => line.split(",")).find((cells) => cells[0] === "ats" && cells[1] === server);
  return row?.[status];
}

type Tally = { reads: number; readFailures: string[]; ok: Map<Hex, string>; shuttingDown: number; unknown: number; writeFailures: string[] };
const tally: Tally = { reads: 0, readFailures: [], ok: new Map(), shuttingDown: 0, unknown: 0, writeFailures: [] };
let running = true;
/** Writes sent and not yet answered: a stop is sent while one is, so the drain has a write to finish. */
let writesInFlight = 0;

async function reader(paths: () => string[]): Promise<void> {
  while (running) {
    for (const path of paths()) {
      try {
        const response = await fetch(`${baseUrl}${path}`, { signal: AbortSignal.timeout(30_000) });
        const text = await response.text();
        tally.reads++;
        if (response.status !== 200) tally.readFailures.push(`GET ${path}: ${response.status} ${text.slice(0, 200)}`);
      } catch (error) {
        tally.reads++;
        tally.readFailures.push(`GET ${path}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }
}

/** Writes one after another until told to stop (at most MAX_WRITES each: the chain's history stays small). */
async function writer(key: Hex, index: number): Promise<void> {
  for (let n = 0; running && n < MAX_WRITES; n++) await writeOnce(key, index, n);
}

/** One delegated write through the balancer, tallied; counted in `writesInFlight` until it is answered. */
async function writeOnce(key: Hex, index: number, n: number): Promise<void> {
  const user = privateKeyToAccount(key);
  writesInFlight++;
  try {
    const result = await attestDelegated(
      {
        schemaName: "user-review",
        data: { subject: `did:web:rolling-${index}.example`, version: "1", ratingValue: 1 + (n % 5), reviewBody: `write ${n}`, screenshotUrls: [], proofs: [] },
        attester: user.address,
        sign: (typedData) => user.signTypedData(typedData),
      },
      { baseUrl },
    );
    if (result.success && result.uid !== null) tally.ok.set(result.uid.toLowerCase() as Hex, user.address);
    else tally.writeFailures.push(`write ${index}/${n}: ${JSON.stringify(result)}`);
  } catch (error) {
    const body = (error as { body?: { code?: string } }).body;
    const code = body?.code ?? (error as { code?: string }).code;
    if (code === "SHUTTING_DOWN") tally.shuttingDown++;
    else if (code === "OUTCOME_UNKNOWN") tally.unknown++;
    else tally.writeFailures.push(`write ${index}/${n}: ${code ?? ""} ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    writesInFlight--;
  }
}

/** The writers' keys (two of Anvil's dev accounts). */
const WRITER_KEYS = [ANVIL_DEV_KEYS[4]!, ANVIL_DEV_KEYS[5]!];
/** The writes started by `replace` once the writers were done; awaited with the load. */
const extraWrites: Promise<void>[] = [];

async function replace(service: string): Promise<void> {
  const container = `${project}_${service}_1`;
  // The new container is made the way compose made the old one: Podman keeps that command line. (Asking
  // podman-compose to `up` one service would restart its dependencies, PostgreSQL among them.)
  const create = JSON.parse(run(["podman", "inspect", "--format", "{{json .Config.CreateCommand}}", container]).out) as string[];
  if (!Array.isArray(create) || create.length < 3) throw new Error(`no create command recorded for ${container}`);
  const image = run(["podman", "inspect", "--format", "{{.ImageName}}", container]).out.trim();
  // The writers stop after MAX_WRITES each; on a fast machine they were done before the last stop, and this waited 60 s
  // for a write that never came (CI went red). A write is then started here: every stop still has one in flight.
  if (writesInFlight === 0) extraWrites.push(writeOnce(WRITER_KEYS[0]!, 0, MAX_WRITES + extraWrites.length));
  await until("a write in flight", 60_000, () => writesInFlight > 0);
  const started = Date.now();
  // SHUTDOWN_GRACE_MS (20 s) + 5 s, then SIGKILL (exit code 137): exit code 0 shows the drain ended in time.
  const stop = run(["podman", "stop", "-t", "25", container]);
  if (stop.code !== 0) throw new Error(`podman stop ${container}: ${stop.out}`);
  const code = run(["podman", "inspect", "--format", "{{.State.ExitCode}}", container]).out.trim();
  if (code !== "0") throw new Error(`${container} exited with ${code} after SIGTERM, expected 0`);
  log(`${service} stopped by SIGTERM in ${((Date.now() - started) / 1000).toFixed(1)} s, exit code 0`);
  const removed = run(["podman", "rm", "-v", container]);
  if (removed.code !== 0) throw new Error(`podman rm ${container}: ${removed.out}`);
  const argv = nextImage === undefined ? create.slice(1) : create.slice(1).map((arg) => (arg === image || `localhost/${arg}` === image ? nextImage : arg));
  if (nextImage !== undefined && !argv.includes(nextImage)) throw new Error(`${container}'s create command does not name its image ${image}`);
  const up = run(["podman", ...argv], join(import.meta.dir, "..", "deploy"));
  if (up.code !== 0) throw new Error(`re-creating ${service}: ${up.out.slice(-2000)}`);
  await until(`${service}'s new container ready`, READY_DEADLINE_MS, () => run(["podman", "exec", container, "/usr/local/bin/ats", "healthcheck"]).code === 0);
  await until(`the balancer counting ${service} up`, READY_DEADLINE_MS, async () => (await balancerStatus(service)) === "UP");
  log(`${service} replaced by a new container${nextImage === undefined ? "" : ` of ${nextImage}`}, ready and UP at the balancer ${((Date.now() - started) / 1000).toFixed(1)} s after the stop`);
}

/** One value from the deployment's PostgreSQL (psql in its container, as the database's owner). */
function sqlValue(query: string): string {
  const result = run(["podman", "exec", `${project}_postgres_1`, "psql", "-U", "ats", "-d", "ats", "-tAc", query]);
  if (result.code !== 0) throw new Error(`psql ${query}: ${result.out}`);
  return result.out.trim();
}

/** The storage schema's recorded digest and the transaction that last wrote it (xmin: a second migration changes it). */
function storageMigration(): { digest: string; xmin: string; probe: boolean } {
  const [digest, xmin] = sqlValue("SELECT digest || ' ' || xmin FROM schema_migrations WHERE name = 'storage'").split(" ");
  return { digest: digest ?? "", xmin: xmin ?? "", probe: sqlValue("SELECT to_regclass('rolling_upgrade_probe') IS NOT NULL") === "t" };
}

async function main(): Promise<void> {
  if (project === "" || statsUrl === "" || rpcUrl === "") {
    throw new Error("ROLLING_PROJECT, ROLLING_STATS_URL and ROLLING_RPC_URL are required");
  }
  for (const service of INSTANCES) {
    await until(`the balancer counting ${service} up`, READY_DEADLINE_MS, async () => (await balancerStatus(service)) === "UP");
  }
  const readPaths = () => {
    const uid = tally.ok.keys().next().value as Hex | undefined;
    return uid === undefined ? ["/v1/trust-anchors", "/readyz"] : ["/v1/trust-anchors", `/v1/attestations/${uid}`];
  };
  const load = [...WRITER_KEYS.map((key, i) => writer(key, i)), reader(readPaths), reader(readPaths), reader(readPaths)];
  await until("a first write through the balancer", 60_000, () => tally.ok.size > 0 || tally.writeFailures.length > 0);
  const original = nextImage === undefined ? undefined : storageMigration();
  if (original?.probe === true) throw new Error("the new version's table exists before any new instance started");
  let migrated: ReturnType<typeof storageMigration> | undefined;
  for (const service of INSTANCES) {
    const before = tally.ok.size;
    await replace(service);
    if (original !== undefined) {
      const now = storageMigration();
      if (migrated === undefined) {
        // The first new instance migrated; the old ones are still in the pool.
        if (!now.probe || now.digest === original.digest) throw new Error(`${service} of ${nextImage} started without migrating`);
        for (const old of INSTANCES.filter((name) => name !== service)) {
          const status = await balancerStatus(old);
          if (status !== "UP") throw new Error(`${old} (the old version) is ${status} at the balancer after the migration`);
        }
        migrated = now;
        log(`the new schema migrated once, by ${service}; the old instances stay UP`);
      } else if (now.digest !== migrated.digest || now.xmin !== migrated.xmin) {
        throw new Error(`${service} of ${nextImage} migrated again (schema_migrations rewritten)`);
      }
    }
    // Writes go on between replacements: at least one more through the renewed pool.
    await until(`a write after replacing ${service}`, 60_000, () => tally.ok.size > before || tally.writeFailures.length > 0);
  }
  running = false;
  await Promise.race([Promise.all([...load, ...extraWrites]), Bun.sleep(60_000)]);
  log(`load: ${tally.reads} reads, ${tally.readFailures.length} failed; writes: ${tally.ok.size} answered 200, ` +
    `${tally.shuttingDown} answered 503 SHUTTING_DOWN, ${tally.unknown} OUTCOME_UNKNOWN, ${tally.writeFailures.length} failed otherwise`);

  // Every 200 on the chain exactly once, and nothing else from these attesters but writes cut mid-send.
  const client = createPublicClient({ transport: http(rpcUrl) });
  const attesters = WRITER_KEYS.map((key) => getAddress(privateKeyToAccount(key).address));
  const logs = await client.getLogs({
    event: parseAbiItem("event Attested(address indexed recipient, address indexed attester, bytes32 uid, bytes32 indexed schemaUID)"),
    args: { attester: attesters },
    fromBlock: 0n,
  });
  const onChain = logs.map((entry) => (entry.args.uid as Hex).toLowerCase() as Hex);
  const counts = new Map<Hex, number>();
  for (const uid of onChain) counts.set(uid, (counts.get(uid) ?? 0) + 1);
  const problems = [
    ...tally.readFailures.slice(0, 10).map((failure) => `read failed: ${failure}`),
    ...tally.writeFailures.slice(0, 10).map((failure) => `write failed: ${failure}`),
    ...[...tally.ok.keys()].filter((uid) => counts.get(uid) !== 1).map((uid) => `answered 200 but on chain ${counts.get(uid) ?? 0} times: ${uid}`),
  ];
  const extra = onChain.filter((uid) => !tally.ok.has(uid));
  if (extra.length > tally.unknown) problems.push(`${extra.length} attestations on chain that no 200 answered, with ${tally.unknown} OUTCOME_UNKNOWN`);
  if (tally.ok.size < INSTANCES.length + 1) problems.push(`only ${tally.ok.size} writes answered 200`);
  log(`chain: ${onChain.length} attestations from the writers, ${extra.length} without a 200 (settled from cut sends)`);
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

try {
  await main();
  log("ok");
  process.exit(0);
} catch (error) {
  running = false;
  console.error(`rolling: FAILED: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
