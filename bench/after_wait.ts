/**
 * What the machine charges for work that follows a wait (twenty-first look in docs/performance.md): the same small
 * unit of work timed back to back and after waits of 1 to 100 ms, as ratios to back to back in the same run.
 *
 * A delegated attestation waits on its node twice, and everything it runs after each answer (and after the request
 * arrives) pays what this prints. On a machine where the ratios are near 1, that is nothing; on the 2-core
 * virtual machines these figures come from, memory and code untouched for 30 ms cost many times more to touch again.
 *
 * The units, each timed alone (wall clock; each is far shorter than a scheduler's slice):
 * - pages: one byte read in each 4 KiB page of a 4 MiB buffer (1,024 pages), nothing allocated;
 * - runtime: a small JSON round trip, a URL parsed, bytes to hex and back: native code of the runtime, little data;
 * - sqlite: one row inserted into an indexed table in a WAL file, committed.
 *
 *   bun run bench/after_wait.ts [units per wait, default 60]
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const PER_WAIT = Number(process.argv[2] ?? 60);
if (!Number.isInteger(PER_WAIT) || PER_WAIT < 1) {
  console.error("after_wait: the units per wait must be a whole number, 1 or more");
  process.exit(2);
}
const WAITS_MS = [1, 5, 30, 100];

const dir = mkdtempSync(join(tmpdir(), "ats-after-wait-"));
const db = new Database(join(dir, "units.sqlite"));
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
db.exec("CREATE TABLE units (id INTEGER PRIMARY KEY, key TEXT NOT NULL, body TEXT NOT NULL); CREATE INDEX units_key ON units (key)");
const insert = db.prepare("INSERT INTO units (key, body) VALUES (?, ?)");

const PAGES = 1_024;
const buffer = new Uint8Array(PAGES * 4_096).fill(1);
let sink = 0;
let counter = 0;

const units: Record<string, () => void> = {
  pages: () => {
    for (let i = 0; i < buffer.length; i += 4_096) sink += buffer[i]!;
  },
  runtime: () => {
    const n = counter++;
    const text = JSON.stringify({ id: n, method: "eth_call", params: [{ to: "0x00", data: `0x${n.toString(16)}` }] });
    sink += (JSON.parse(text) as { id: number }).id;
    sink += new URL(`http://127.0.0.1:8545/v1/x?subject=did:web:example.com&n=${n}`).searchParams.size;
    sink += Buffer.from(Buffer.from(text).toString("hex"), "hex").length;
  },
  sqlite: () => {
    const n = counter++;
    insert.run(`key-${n % 997}-${n}`, `{"n":${n}}`);
  },
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Microseconds per unit (the median of `PER_WAIT`), each unit followed by a wait of `waitMs` (0: none). */
async function timed(unit: () => void, waitMs: number): Promise<number> {
  const each: number[] = [];
  for (let i = 0; i < PER_WAIT; i++) {
    const t0 = performance.now();
    unit();
    each.push((performance.now() - t0) * 1_000);
    if (waitMs > 0) await Bun.sleep(waitMs);
    else await Promise.resolve();
  }
  return median(each);
}

for (const [name, unit] of Object.entries(units)) {
  for (let i = 0; i < 2_000; i++) unit(); // the JIT settles
  // Back to back before the waits (the ratios' base) and after them (a check: a machine that changed meanwhile shows).
  const first = await timed(unit, 0);
  const after: number[] = [];
  for (const wait of WAITS_MS) after.push(await timed(unit, wait));
  for (let i = 0; i < 200; i++) unit(); // warm again after the longest wait
  const last = await timed(unit, 0);
  console.log(
    `${name.padEnd(8)} back to back ${first.toFixed(1)} µs (${last.toFixed(1)} after the waits); after a wait of ` +
      WAITS_MS.map((wait, i) => `${wait} ms ${(after[i]! / first).toFixed(1)}×`).join(", "),
  );
}
db.close();
rmSync(dir, { recursive: true, force: true });
if (sink === -1) console.log(sink);
