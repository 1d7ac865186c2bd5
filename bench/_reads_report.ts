// Part of bench/reads.ts: the printed report of each mode.
import type { Balanced } from "./_reads_balanced.ts";
import { CONNECTIONS, perRead, type RpcCount, WARMUP_SECONDS } from "./_reads_load.ts";
import type { ReadsBench } from "./_reads_setup.ts";

/** One read of one instance loaded directly, beside the raw floor answering its bytes. */
export type Direct = {
  read: string;
  raw: number;
  app: number;
  /** Reads per second of the instance with the answer cache off; undefined when it is off everywhere. */
  uncached: number | undefined;
  callsPerRead: number;
  exchangesPerRead: number;
  methods: string;
};

const f = (n: number, digits = 0) => n.toFixed(digits);

/** The run's first line: the load, the setting, the machine. */
export function printHeader(bench: ReadsBench, chains: string): void {
  console.log(
    `reads bench: ${CONNECTIONS} keep-alive connections, ${bench.seconds} s a window (after ${WARMUP_SECONDS} s warm-up), ` +
      `PostgreSQL, ${chains}, INDEX_POLL_MS=1000, LOG_LEVEL=${bench.env.LOG_LEVEL}, ${navigator.hardwareConcurrency} cores, ` +
      `answer cache ${bench.noAnswerCache ? "off" : "on"}`,
  );
}

/** The idle JSON-RPC calls per second of a chain over 3 s. */
export function idleLine(label: string, idle0: RpcCount, idle: RpcCount): string {
  return `JSON-RPC calls with no reads (${label}, 3 s): ${f((idle.calls - idle0.calls) / 3, 1)}/s (${perRead(idle0.byMethod, idle.byMethod, 3)})`;
}

/** The one-chain mode's figures. */
export type OneChainFigures = { idle0: RpcCount; idle: RpcCount; one: Direct[]; behindOne: Balanced[]; behindThree: Balanced[] };

/** Prints the one-chain mode's tables: direct, then behind HAProxy. */
export function printOneChain(bench: ReadsBench, figures: OneChainFigures): void {
  const { idle0, idle, one, behindOne, behindThree } = figures;
  printHeader(bench, "Anvil mining a block a second");
  console.log(idleLine("one instance", idle0, idle));
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

/** One read in the two-chain mode: each setting's reads per second and its own raw floor, and calls per read by chain. */
export type TwoChainRow = {
  read: string;
  settings: { label: string; app: number; raw: number; callsA: number; callsB: number | undefined }[];
};

/** Prints the two-chain mode's table: per read, one chain, then chain A and chain B of the two-chain instance. */
export function printTwoChains(bench: ReadsBench, idle: string[], rows: TwoChainRow[]): void {
  printHeader(bench, "two Anvils (EAS on each) mining a block a second");
  for (const line of idle) console.log(line);
  const [a, b] = bench.chains;
  console.log(`\nchain A ${a!.caip2} (the default, no chain parameter), chain B ${b!.caip2} (chain=${b!.caip2}); each ratio to its own raw Bun.serve, same bytes, same run`);
  console.log("read                   | instance, chain read        | reads/s | raw Bun.serve | ratio | JSON-RPC calls/read on A, on B");
  for (const row of rows) {
    for (const [i, s] of row.settings.entries()) {
      console.log(
        `${(i === 0 ? row.read : "").padEnd(22)} | ${s.label.padEnd(27)} | ${f(s.app).padStart(7)} | ${f(s.raw).padStart(13)} | ` +
          `${f(s.app / s.raw, 2).padStart(4)}× | ${f(s.callsA, 3)}, ${s.callsB === undefined ? "-" : f(s.callsB, 3)}`,
      );
    }
  }
}
