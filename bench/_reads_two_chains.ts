// Part of bench/reads.ts: the two-chain mode (issue 48 item 6). One instance serves two attestation chains
// (`CHAINS_FILE`, following both); one more serves the default chain alone (`RPC_URL`, not following: the first
// instance follows for both, on the same PostgreSQL). Per read, in the same run and each against a raw server
// answering its own bytes: the one-chain instance, the two-chain instance on chain A (no `chain`), and on chain B.
import type { ServiceProcess } from "../e2e/support/service_process.ts";
import { drive, type Read, rpcCount, WARMUP_SECONDS } from "./_reads_load.ts";
import { startInstance } from "./_reads_one_chain.ts";
import { startRawFloor } from "./_reads_raw.ts";
import { idleLine, printTwoChains, type TwoChainRow } from "./_reads_report.ts";
import type { ReadsBench } from "./_reads_setup.ts";

/** One setting of a read: which instance, which read of it, which raw floor. */
type Setting = { label: string; instance: ServiceProcess; read: Read; raw: string };

/** Loads `setting`'s raw floor and then the instance; the calls per read on each chain over the instance's window. */
async function measureSetting(bench: ReadsBench, setting: Setting): Promise<TwoChainRow["settings"][number]> {
  const [a, b] = bench.chains as [ReadsBench["chains"][number], ReadsBench["chains"][number]];
  const rawUrl = `${setting.raw}${setting.read.path}`;
  await drive(rawUrl, WARMUP_SECONDS);
  const floor = await drive(rawUrl, bench.seconds);
  const url = `${setting.instance.url}${setting.read.path}`;
  await drive(url, WARMUP_SECONDS);
  const [a0, b0] = [await rpcCount(a.counterPort), await rpcCount(b.counterPort)];
  const run = await drive(url, bench.seconds);
  const [a1, b1] = [await rpcCount(a.counterPort), await rpcCount(b.counterPort)];
  return {
    label: setting.label,
    app: run.reads / run.seconds,
    raw: floor.reads / floor.seconds,
    callsA: (a1.calls - a0.calls) / run.reads,
    callsB: (b1.calls - b0.calls) / run.reads,
  };
}

/** Every figure of the two-chain mode, measured in one run; prints them. */
export async function measureTwoChains(bench: ReadsBench): Promise<void> {
  const readsB = bench.readsB!;
  const [a, b] = bench.chains as [ReadsBench["chains"][number], ReadsBench["chains"][number]];
  const two = await startInstance(bench, bench.twoChainEnv!, [...bench.reads, ...readsB]);
  const idle0 = [await rpcCount(a.counterPort), await rpcCount(b.counterPort)] as const;
  await Bun.sleep(3_000);
  const idle = [await rpcCount(a.counterPort), await rpcCount(b.counterPort)] as const;
  const one = await startInstance(bench, { ...bench.env, INDEX_FOLLOW: "false" }, bench.reads);

  const rawOne = await startRawFloor(bench.dir, "-one", one.url, bench.reads);
  const rawA = await startRawFloor(bench.dir, "-a", two.url, bench.reads);
  const rawB = await startRawFloor(bench.dir, "-b", two.url, readsB);
  const rows: TwoChainRow[] = [];
  for (const [i, read] of bench.reads.entries()) {
    const settings: Setting[] = [
      { label: "one chain", instance: one, read, raw: rawOne },
      { label: "two chains, A (default)", instance: two, read, raw: rawA },
    ];
    // A read that names no chain (trust anchors) is the same read on B: measured once.
    if (readsB[i]!.path !== read.path) settings.push({ label: "two chains, B (chain=B)", instance: two, read: readsB[i]!, raw: rawB });
    const measured: TwoChainRow["settings"] = [];
    for (const setting of settings) measured.push(await measureSetting(bench, setting));
    rows.push({ read: read.name, settings: measured });
  }
  printTwoChains(bench, [
    idleLine(`two-chain instance, chain A ${a.caip2}`, idle0[0], idle[0]),
    idleLine(`two-chain instance, chain B ${b.caip2}`, idle0[1], idle[1]),
  ], rows);
}
