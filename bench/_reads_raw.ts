// Part of bench/reads.ts: the raw floor each read is compared with, a bare `Bun.serve` in a process of its own
// (bench/_raw_reads.ts) answering the exact bytes the service answered for the same request, fetched once.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Read } from "./_reads_load.ts";
import { startHelper } from "./_reads_run.ts";

/** A raw server answering, for each read's path, the bytes `base` answered for it; its base URL. */
export async function startRawFloor(dir: string, label: string, base: string, reads: readonly Read[]): Promise<string> {
  const bodies: Record<string, string> = {};
  for (const read of reads) bodies[read.path.split("?")[0]!] = await (await fetch(`${base}${read.path}`)).text();
  const file = join(dir, `raw-bodies${label}.json`);
  writeFileSync(file, JSON.stringify(bodies));
  const raw = await startHelper("_raw_reads.ts", [file]);
  return `http://127.0.0.1:${raw.port}`;
}
