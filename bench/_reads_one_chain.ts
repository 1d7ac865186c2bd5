// Part of bench/reads.ts: the default mode, one attestation chain. One instance loaded directly against the raw floor
// (and one more with the answer cache off), then one and three instances behind HAProxy.
import { startServiceProcess, type ServiceProcess } from "../e2e/support/service_process.ts";
import { type Balanced, balanced, startHaproxy } from "./_reads_balanced.ts";
import { drive, perRead, type Read, readsAnswer, rpcCount, WARMUP_SECONDS } from "./_reads_load.ts";
import { startRawFloor } from "./_reads_raw.ts";
import { type Direct, printOneChain } from "./_reads_report.ts";
import { onCleanup } from "./_reads_run.ts";
import type { ReadsBench } from "./_reads_setup.ts";

/** A service process with `env`, kept among the instances, once every read answers with its data. */
export async function startInstance(bench: ReadsBench, env: Record<string, string>, reads: readonly Read[]): Promise<ServiceProcess> {
  const instance = await startServiceProcess(env);
  onCleanup(() => instance.stop());
  bench.instances.push(instance);
  await readsAnswer(instance.url, reads);
  return instance;
}

/** One instance loaded directly, each read right after the raw floor answering its bytes (and the uncached instance's). */
async function direct(bench: ReadsBench, instance: ServiceProcess, uncached: ServiceProcess | undefined): Promise<Direct[]> {
  const raw = await startRawFloor(bench.dir, "", instance.url, bench.reads);
  const counterPort = bench.chains[0]!.counterPort;
  const rows: Direct[] = [];
  for (const read of bench.reads) {
    const rawUrl = `${raw}${read.path}`;
    await drive(rawUrl, WARMUP_SECONDS);
    const floor = await drive(rawUrl, bench.seconds);
    await drive(`${instance.url}${read.path}`, WARMUP_SECONDS);
    const count0 = await rpcCount(counterPort);
    const app = await drive(`${instance.url}${read.path}`, bench.seconds);
    const count = await rpcCount(counterPort);
    let off: number | undefined;
    if (uncached !== undefined) {
      await drive(`${uncached.url}${read.path}`, WARMUP_SECONDS);
      const run = await drive(`${uncached.url}${read.path}`, bench.seconds);
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

/** Every figure of the one-chain mode, measured in one run; prints them. */
export async function measureOneChain(bench: ReadsBench, haproxy: string): Promise<void> {
  const counterPort = bench.chains[0]!.counterPort;
  const first = await startInstance(bench, bench.env, bench.reads);
  const idle0 = await rpcCount(counterPort);
  await Bun.sleep(3_000);
  const idle = await rpcCount(counterPort);

  // The same service with the answer cache off, for the direct table only (it does not follow: the first one does).
  let uncached: ServiceProcess | undefined;
  if (!bench.noAnswerCache) {
    const off = await startServiceProcess({ ...bench.env, INDEX_ANSWER_CACHE_MB: "0", INDEX_FOLLOW: "false" });
    onCleanup(() => off.stop());
    uncached = off;
    await readsAnswer(uncached.url, bench.reads);
  }
  const one = await direct(bench, first, uncached);
  await uncached?.stop();

  const lbOne = await startHaproxy(haproxy, bench.dir, bench.instances);
  const behindOne: Balanced[] = await balanced(bench, lbOne);
  await lbOne.stop();

  const added = await Promise.all([startInstance(bench, bench.env, bench.reads), startInstance(bench, bench.env, bench.reads)]);
  // The new instances get the load the first one had before it was measured behind HAProxy (JIT, connections).
  for (const read of bench.reads) await Promise.all(added.map((instance) => drive(`${instance.url}${read.path}`, bench.seconds)));
  const lbThree = await startHaproxy(haproxy, bench.dir, bench.instances);
  const behindThree = await balanced(bench, lbThree);
  await lbThree.stop();

  printOneChain(bench, { idle0, idle, one, behindOne, behindThree });
}
