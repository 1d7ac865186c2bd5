/**
 * Where a delegated attestation's CPU goes, native code included (issue 43 item 4, seventh look). Not a benchmark: it
 * prints shares of the service's own CPU, so a noisy machine moves both sides of every figure alike.
 *
 * The service runs as in bench/attest_cpu.ts (`bun main.ts` on an Anvil with the real EAS, SQLite, default settings),
 * with JavaScriptCore's JITDump on (`BUN_JSC_useJITDump`): the runtime writes the name and address of every function
 * it compiles. After the warm-up, Linux `perf` samples every thread of the service (`cpu-clock`, call stacks) while
 * this process sends delegated attestations one after the other. Each sample of the main thread is then put down to
 *   - where it was: compiled JavaScript, JIT stubs, the runtime's native code (`bun.exe`: the interpreter, bun:sqlite
 *     and SQLite, JSON, sockets, the collector), the kernel (by system call) or a library (libsecp256k1, libc);
 *   - the innermost JavaScript function on its stack, which owns the native work it called (a SQLite statement under
 *     `#run`, a socket write under the JSON-RPC `exchange`), or none (the event loop, the HTTP server's own writes);
 *   - every JavaScript function on its stack (the steps of a write: `claim`, `markSigned`, `settleSubmission`).
 * The sampling profile of `ATS_PROFILE_DIR` (bench/attest_cpu.ts) sees only samples with JavaScript on the stack and
 * counts wall time in native calls; this one counts CPU time only, everywhere.
 *
 * Needs `perf` (Debian: `apt-get install linux-perf`) and the right to use it (root, or `kernel.perf_event_paranoid`
 * at most 1). Bun's own binary carries no symbols, so its native code stays one row.
 *
 *   bun run bench/attest_profile.ts [writes profiled, default 300] [warm-up writes, default 60]
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { startDevnet } from "../adapters/devnet/mod.ts";
import { e2eArtifacts, TEST_RELAY_LIMITS } from "../e2e/harness.ts";
import { devnetServiceEnv, startServiceProcess } from "../e2e/support/service_process.ts";
import { postDelegatedAttest, signedReviewBody } from "../e2e/support/review_signer.ts";

const WRITES = Number(process.argv[2] ?? 300);
const WARMUP = Number(process.argv[3] ?? 60);
/** Samples a second per thread; each sample stands for 1/HZ s of CPU. */
const HZ = 4999;
/** The name prefix of a JavaScript function's compiled code (the other code loads are stubs and regular expressions). */
const JS_TIER = /^JSC-(Baseline|DFG|FTL): /;

/** `take#Bto1mE` → `take`; an anonymous function's bare hash → `(anonymous)`. */
const jsName = (name: string) => name.replace(JS_TIER, "").replace(/#\w+$/, "") || "(anonymous)";

const perf = Bun.which("perf");
if (perf === null) {
  console.error("attest_profile: needs Linux perf (Debian: apt-get install linux-perf)");
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "ats-attest-profile-"));
const jitDir = join(dir, "jit");
mkdirSync(jitDir);
const devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
const service = await startServiceProcess({
  ...devnetServiceEnv(devnet, dir),
  ...TEST_RELAY_LIMITS,
  BUN_JSC_useJITDump: "1",
  BUN_JSC_jitDumpDirectory: jitDir,
});
const pid = service.proc.pid;
try {
  const anchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8"));
  const chainKey = Object.keys(anchors.chains)[0]!;
  const target = { chainId: Number(chainKey.split(":")[1]), easAddress: anchors.chains[chainKey].easContract, schemaUids: devnet.schemaUids };
  const bodies = await Promise.all(Array.from({ length: WARMUP + WRITES }, () => signedReviewBody(target, generatePrivateKey() as Hex)));
  const send = async (body: unknown) => {
    const answer = await postDelegatedAttest(service.url, body);
    if (answer.status !== 200) throw new Error(`status ${answer.status}: ${JSON.stringify(answer.body)}`);
  };
  for (const body of bodies.splice(0, WARMUP)) await send(body);

  const data = join(dir, "perf.data");
  const recorder = Bun.spawn([perf, "record", "-k", "1", "-e", "cpu-clock", "-F", String(HZ), "-g", "-p", String(pid), "-o", data], {
    stdout: "ignore",
    stderr: "pipe",
  });
  // perf makes its file once it runs (a write sent before it is attached is only left out of the shares).
  while (!existsSync(data) && recorder.exitCode === null) await Bun.sleep(20);
  const perfFailed = async () => new Error(`perf record failed: ${await new Response(recorder.stderr).text()}`);
  if (recorder.exitCode !== null) throw await perfFailed();
  for (const body of bodies) await send(body);
  recorder.kill("SIGINT");
  await recorder.exited;

  const script = Bun.spawnSync([perf, "script", "-i", data, "-F", "comm,tid,ip,sym,dso"], { stdout: "pipe", stderr: "ignore" });
  const compiled = readJitDumps(jitDir);
  const found = attribute(script.stdout.toString(), compiled, pid);
  // No sample of the service's main thread: perf was refused (kernel.perf_event_paranoid) after making its file.
  if (found.mainSamples === 0) throw await perfFailed();
  report(found, WRITES);
} finally {
  await service.stop();
  await devnet.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);

/** A function the runtime compiled: its code's address range and its name (`JSC-DFG: take#Bto1mE`). */
type Compiled = { readonly start: number; readonly end: number; readonly name: string };

/**
 * The code loads of every JITDump file in `dir` (the format perf's `inject --jit` reads: a header of `total_size`
 * bytes, then records of {id, total_size, timestamp}; id 0 is a code load: pid, tid, vma, code address, code size,
 * code index, the name up to a NUL, the code). Sorted by address; a later load over the same addresses wins.
 */
function readJitDumps(dir: string): Compiled[] {
  const loads: Compiled[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".dump"))) {
    const bytes = readFileSync(join(dir, file));
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let at = view.getUint32(8, true);
    while (at + 16 <= bytes.length) {
      const id = view.getUint32(at, true);
      const size = view.getUint32(at + 4, true);
      if (size === 0 || at + size > bytes.length) break;
      if (id === 0) {
        const start = Number(view.getBigUint64(at + 32, true));
        const length = Number(view.getBigUint64(at + 40, true));
        const nameAt = at + 56;
        const name = bytes.toString("utf8", nameAt, bytes.indexOf(0, nameAt));
        loads.push({ start, end: start + length, name });
      }
      at += size;
    }
  }
  return loads.sort((a, b) => a.start - b.start);
}

/** The compiled function holding `address`, if any (binary search over loads sorted by start). */
function compiledAt(loads: readonly Compiled[], address: number): Compiled | undefined {
  let low = 0;
  let high = loads.length - 1;
  let found: Compiled | undefined;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (loads[mid]!.start <= address) {
      found = loads[mid];
      low = mid + 1;
    } else high = mid - 1;
  }
  return found !== undefined && address < found.end ? found : undefined;
}

type Attributed = {
  /** Samples per thread name (a trailing number dropped). */
  readonly threads: Map<string, number>;
  /** The main thread's samples by where they were. */
  readonly where: Map<string, number>;
  /** The main thread's samples by innermost JavaScript function, and by where within it. */
  readonly owners: Map<string, Map<string, number>>;
  /** The main thread's samples by JavaScript function anywhere on the stack (a sample counts once per function). */
  readonly within: Map<string, number>;
  mainSamples: number;
};

/** Puts each sample of `perf script` output down to its thread, and the main thread's to a place and an owner. */
function attribute(text: string, loads: readonly Compiled[], mainTid: number): Attributed {
  const result: Attributed = { threads: new Map(), where: new Map(), owners: new Map(), within: new Map(), mainSamples: 0 };
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  for (const block of text.split("\n\n")) {
    const lines = block.split("\n").map((l) => l.trim()).filter((l) => l !== "");
    if (lines.length < 2) continue;
    const head = lines[0]!.split(/\s+/);
    const tid = Number(head.at(-1));
    add(result.threads, head.slice(0, -1).join(" ").replace(/[0-9]+$/, "#"));
    if (tid !== mainTid) continue;
    result.mainSamples++;
    const frames = lines.slice(1).map((line) => {
      const space = line.indexOf(" ");
      return { address: Number.parseInt(line.slice(0, space), 16), rest: line.slice(space + 1) };
    });
    const top = frames[0]!;
    const where = placeOf(top, frames, loads);
    add(result.where, where);
    const functions = frames.map((f) => compiledAt(loads, f.address)).filter((c): c is Compiled => c !== undefined && JS_TIER.test(c.name));
    const key = functions.length === 0 ? "(no JavaScript on the stack)" : jsName(functions[0]!.name);
    const within = result.owners.get(key) ?? result.owners.set(key, new Map()).get(key)!;
    add(within, where.startsWith("kernel") ? "kernel" : where);
    for (const name of new Set(functions.map((f) => jsName(f.name)))) add(result.within, name);
  }
  return result;
}

/** Where a sample's innermost frame was: compiled JavaScript, a stub, the runtime, the kernel (by call), a library. */
function placeOf(top: { address: number; rest: string }, frames: readonly { rest: string }[], loads: readonly Compiled[]): string {
  const compiled = compiledAt(loads, top.address);
  if (compiled !== undefined) return JS_TIER.test(compiled.name) ? "JavaScript, compiled" : "JIT stubs and regular expressions";
  if (top.rest.includes("[kernel.kallsyms]")) {
    for (const frame of frames) {
      const call = /(__x64_sys_\w+|exc_page_fault|asm_sysvec_\w+)/.exec(frame.rest);
      if (call !== null) return `kernel: ${call[1]!.replace("__x64_sys_", "")}`;
    }
    return "kernel: other";
  }
  if (top.rest.includes("bun.exe") || top.rest.includes("/bun ")) return "runtime (bun.exe)";
  const library = /\(([^)]+)\)\s*$/.exec(top.rest)?.[1] ?? "?";
  return library.startsWith("/tmp/perf-") ? "JIT code not in the dump" : library.split("/").at(-1)!;
}

function report(found: Attributed, writes: number) {
  const usPerWrite = (samples: number) => ((samples / HZ) * 1e6) / writes;
  const share = (samples: number) => `${((100 * samples) / found.mainSamples).toFixed(1).padStart(5)} %`;
  const all = [...found.threads.values()].reduce((a, b) => a + b, 0);
  console.log(`${writes} delegated attestations profiled: the service's CPU ${(usPerWrite(all) / 1000).toFixed(2)} ms a write (perf cpu-clock at ${HZ} Hz)`);
  console.log("  by thread, µs a write:", [...found.threads].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${usPerWrite(n).toFixed(0)}`).join(", "));
  console.log(`\nThe main thread (${(usPerWrite(found.mainSamples) / 1000).toFixed(2)} ms a write), by where its samples were:`);
  for (const [where, n] of [...found.where].sort((a, b) => b[1] - a[1]).slice(0, 16)) {
    console.log(`  ${share(n)}  ${usPerWrite(n).toFixed(0).padStart(5)} µs  ${where}`);
  }
  console.log("\nBy the innermost JavaScript function on the stack (with the native code it called):");
  const owners = [...found.owners].map(([name, within]) => [name, within, [...within.values()].reduce((a, b) => a + b, 0)] as const);
  for (const [name, within, n] of owners.sort((a, b) => b[2] - a[2]).slice(0, 30)) {
    const parts = [...within].sort((a, b) => b[1] - a[1]).map(([w, k]) => `${w} ${((100 * k) / n).toFixed(0)}%`).join(", ");
    console.log(`  ${share(n)}  ${usPerWrite(n).toFixed(0).padStart(5)} µs  ${name}  (${parts})`);
  }
  // An awaited step's continuation runs from the event loop: a function's share is its work up to its first await
  // and after each, not the steps it awaited (those show under their own names).
  console.log("\nBy JavaScript function anywhere on the stack (what it ran itself and what it called, between its awaits):");
  for (const [name, n] of [...found.within].sort((a, b) => b[1] - a[1]).slice(0, 40)) {
    console.log(`  ${share(n)}  ${usPerWrite(n).toFixed(0).padStart(5)} µs  ${name}`);
  }
}
