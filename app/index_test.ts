import { expect, test } from "bun:test";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteIndexStore } from "../adapters/sqlite/mod.ts";
import type { AttestationIndex, ChainHistory, EasEvent } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { fakeClock } from "../ports/fakes.ts";
import type { Logger } from "../ports/logger.ts";
import { wireIndex } from "./index.ts";

const hash = (n: bigint) => `0x${n.toString(16).padStart(64, "a")}` as HexString;

/** A chain of 1,000 blocks, one attestation every 10; every head read moves the clock 2 s on. */
function setup() {
  const clock = fakeClock(0);
  const lines: { event: string; fields: Record<string, unknown> }[] = [];
  const record = (event: string, fields: Record<string, unknown> = {}) => void lines.push({ event, fields });
  const log: Logger = { debug: record, info: record, warn: record, error: record };
  let failNext = 0;
  const chain: ChainHistory = {
    head: () => {
      clock.set(clock.nowMs() + 2_000);
      return Promise.resolve({ ok: true, value: 999n });
    },
    blockHash: (n) => Promise.resolve({ ok: true, value: hash(n) }),
    events(from, to) {
      if (failNext > 0) {
        failNext--;
        return Promise.resolve({ ok: false, reason: "rpc-error" });
      }
      const events: EasEvent[] = [];
      for (let b = from; b <= to; b++) {
        if (b % 10n !== 0n) continue;
        events.push({ kind: "attested", uid: hash(b), recipient: hash(1n).slice(0, 42) as HexString, attester: hash(2n).slice(0, 42) as HexString, schemaUid: hash(3n), blockNumber: b, logIndex: 0 });
      }
      return Promise.resolve({ ok: true, value: { events, toHash: hash(to) } });
    },
  };
  const store = createSqliteIndexStore(openSqlite(":memory:"), { chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" });
  const runner = wireIndex({
    store,
    chain,
    live: {} as AttestationIndex,
    settings: { startBlock: 0n, confirmations: 0, pollMs: 1_000, stallSeconds: 30, leaseSeconds: 15, stepBlocks: 50n, follow: false },
    clock,
    log,
  });
  return { clock, lines, runner, failWith: (n: number) => void (failNext = n) };
}

test("wireIndex() logs backfill progress every few seconds with blocks done, percent and an ETA, then that it caught up", async () => {
  const { lines, runner } = setup();
  expect(await runner.catchUp()).toBe(true);
  const progress = lines.filter((l) => l.event === "index_backfill").map((l) => l.fields);
  expect(progress.length).toBeGreaterThan(3);
  expect(progress.length).toBeLessThan(20);
  for (const fields of progress) expect(Object.keys(fields).sort()).toEqual(["blocksDone", "blocksPerSecond", "etaSeconds", "indexedBlock", "percent", "target"]);
  const percents = progress.map((f) => f.percent as number);
  expect(percents).toEqual([...percents].sort((a, b) => a - b));
  expect(percents.at(-1)).toBeLessThan(100);
  expect(lines.at(-1)?.event).toBe("index_caught_up");
  expect(runner.status()).toMatchObject({ indexedBlock: 999, head: 999, lagBlocks: 0, catchingUp: false });
});

test("wireIndex() is unhealthy only once following has failed for longer than the stall time", async () => {
  const { clock, lines, runner, failWith } = setup();
  failWith(100);
  expect(await runner.catchUp()).toBe(false);
  expect(lines.some((l) => l.event === "index_follow_failed")).toBe(true);
  expect(runner.healthy()).toBe(true);
  clock.set(clock.nowMs() + 31_000);
  expect(runner.healthy()).toBe(false);
  failWith(0);
  expect(await runner.catchUp()).toBe(true);
  expect(runner.healthy()).toBe(true);
});
