// Part of bench/reads.ts: HAProxy in front of the instances, and the CPU per read of the service processes and the
// PostgreSQL server processes (utime + stime from /proc/<pid>/stat, before and after each window).
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../e2e/harness.ts";
import type { ServiceProcess } from "../e2e/support/service_process.ts";
import { drive, rpcCount, WARMUP_SECONDS } from "./_reads_load.ts";
import { onCleanup } from "./_reads_run.ts";
import type { ReadsBench } from "./_reads_setup.ts";

/** One read behind HAProxy: reads per second, CPU per read by part, JSON-RPC calls per read. */
export type Balanced = {
  read: string;
  perSecond: number;
  serviceMsPerRead: number;
  postgresMsPerRead: number;
  haproxyMsPerRead: number;
  callsPerRead: number;
  exchangesPerRead: number;
};

/** HAProxy's path: found, or installed from Debian's package when this process is root; undefined otherwise. */
export function haproxyBinary(): string | undefined {
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

/** HAProxy on loopback in front of `backends`, round-robin, keep-alive both sides; resolves once it answers. */
export async function startHaproxy(
  haproxy: string,
  dir: string,
  backends: ServiceProcess[],
): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
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
  const proc = Bun.spawn([haproxy, "-db", "-f", config], { stdout: "ignore", stderr: "pipe" });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    proc.kill("SIGTERM");
    await proc.exited;
  };
  onCleanup(stop);
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

/** Every read through HAProxy in front of the instances, with the CPU of the instances and PostgreSQL per read. */
export async function balanced(bench: ReadsBench, lb: { url: string; pid: number }): Promise<Balanced[]> {
  const pgPort = Number(new URL(bench.pgUrl).port);
  const counterPort = bench.chains[0]!.counterPort;
  const sum = (pids: number[]) => pids.reduce((total, pid) => total + cpuTicks(pid), 0);
  const sample = async () => ({
    service: sum(bench.instances.map((instance) => instance.proc.pid)),
    postgres: sum(postgresPids(pgPort)),
    haproxy: cpuTicks(lb.pid),
    rpc: await rpcCount(counterPort),
  });
  const msPerTick = 1000 / CLOCK_TICKS;
  const rows: Balanced[] = [];
  for (const read of bench.reads) {
    await drive(`${lb.url}${read.path}`, WARMUP_SECONDS);
    const before = await sample();
    const run = await drive(`${lb.url}${read.path}`, bench.seconds);
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
