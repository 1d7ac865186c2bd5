import { expect, test } from "bun:test";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteIndexStore } from "../adapters/sqlite/mod.ts";
import type { ChainHistory, EasEvent, HeadSignal } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import type { Logger } from "../ports/logger.ts";
import { fail, ok } from "../domain/result.ts";
import { createSubjectOf, isFresh } from "../domain/index/mod.ts";
import { wireIndex } from "./index_follower.ts";
import { HEAD_SIGHTING_MS } from "./_index_follower.ts";

const hash = (n: bigint) => `0x${n.toString(16).padStart(64, "a")}` as HexString;

/** A chain of 1,000 blocks, one attestation every 10; every head read moves the clock 2 s on. */
function setup(options: { follow?: boolean; heads?: HeadSignal } = {}) {
  const clock = fakeClock(0);
  /** Resolved at the next read of events (a poll finds new blocks). */
  let eventsRead: (() => void) | undefined;
  const lines: { event: string; fields: Record<string, unknown> }[] = [];
  const record = (event: string, fields: Record<string, unknown> = {}) => void lines.push({ event, fields });
  const log: Logger = { debug: record, info: record, warn: record, error: record };
  let failNext = 0;
  let head = 999n;
  let headReads = 0;
  const chain: ChainHistory = {
    head: () => {
      headReads++;
      clock.set(clock.nowMs() + 2_000);
      return Promise.resolve({ ok: true, value: head });
    },
    blockHash: (n) => Promise.resolve({ ok: true, value: hash(n) }),
    block: (n) => Promise.resolve({ ok: true, value: { blockNumber: n, blockHash: hash(n), timestamp: n } }),
    attestations: (uids) =>
      Promise.resolve({
        ok: true,
        value: uids.map((uid) => ({
          uid,
          schema: hash(3n),
          time: 1n,
          expirationTime: 0n,
          revocationTime: 0n,
          refUID: hash(0n),
          recipient: hash(1n).slice(0, 42) as HexString,
          attester: hash(2n).slice(0, 42) as HexString,
          revocable: true,
          data: "0x" as HexString,
        })),
      }),
    events(from, to) {
      eventsRead?.();
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
    schemas: { schemaRecords: () => Promise.resolve({ ok: false, reason: "rpc-error" }) },
    chainId: 31337,
    easAddress: "0x0000000000000000000000000000000000000001",
    settings: { startBlock: 0n, confirmations: 0, pollMs: 3_600_000, stallSeconds: 30, leaseSeconds: 3_600, stepBlocks: 50n, follow: options.follow ?? false },
    clock,
    log,
    heads: options.heads,
  });
  const nextPoll = () => new Promise<void>((resolve) => (eventsRead = resolve));
  return { clock, lines, runner, store, nextPoll, failWith: (n: number) => void (failNext = n), setHead: (n: bigint) => void (head = n), headReads: () => headReads };
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

test("wireIndex() is unhealthy until a first poll completes, and again once polling has failed for longer than the stall time", async () => {
  const { clock, lines, runner, failWith, setHead } = setup();
  expect(await runner.healthy()).toBe(false);
  expect(await runner.catchUp()).toBe(true);
  expect(await runner.healthy()).toBe(true);
  setHead(1_010n);
  failWith(100);
  expect(await runner.catchUp()).toBe(false);
  expect(lines.some((l) => l.event === "index_follow_failed")).toBe(true);
  clock.set(clock.nowMs() + 20_000);
  expect(await runner.healthy()).toBe(true);
  clock.set(clock.nowMs() + 11_000);
  expect(await runner.healthy()).toBe(false);
  expect(runner.status()).toMatchObject({ stale: true });
  failWith(0);
  expect(await runner.catchUp()).toBe(true);
  expect(await runner.healthy()).toBe(true);
});

test("wireIndex(): an idle chain whose head does not move stays fresh, each completed poll recorded", async () => {
  const { clock, runner } = setup();
  expect(await runner.catchUp()).toBe(true);
  const first = runner.status().checkedAt!;
  clock.set(clock.nowMs() + 25_000);
  expect(await runner.catchUp()).toBe(true);
  expect(runner.status()).toMatchObject({ indexedBlock: 999, stale: false });
  expect(runner.status().checkedAt!).toBeGreaterThanOrEqual(first + 25);
  clock.set(clock.nowMs() + 25_000);
  expect(await runner.healthy()).toBe(true);
});

test("wireIndex(): a new head announced over the WebSocket (RPC_WS_URL) makes the follower poll at once, not at its next tick", async () => {
  let announce: (head: bigint | null) => void = () => {};
  let unsubscribed = false;
  const heads: HeadSignal = {
    subscribe(onHead) {
      announce = onHead;
      return () => void (unsubscribed = true);
    },
  };
  const { runner, store, nextPoll, setHead, headReads } = setup({ follow: true, heads });
  try {
    // The loop polls once at start, queued while the first catch-up ran (the second comes after it); then it sleeps: an
    // hour's poll, an hour's lease.
    await runner.catchUp();
    await runner.catchUp();
    expect((await store.checkpoint())?.blockNumber).toBe(999n);
    const reads = headReads();
    setHead(1_005n);
    // Only the announcement can start a poll now: without it these events would never be read.
    const polled = nextPoll();
    announce(1_005n);
    await polled;
    // The head announced stood for the head: the poll it started did not read it again (issue 43 item 5).
    expect(headReads()).toBe(reads);
    await runner.catchUp(); // serialized after that poll
    expect((await store.checkpoint())?.blockNumber).toBe(1_005n);
  } finally {
    await runner.stop();
  }
  expect(unsubscribed).toBe(true);
});

test("issue 45: while a deployment catches up its reads answer 503 INDEX_STALE, at 97 % too, and it is not ready; caught up, they answer at the head", async () => {
  const { clock, runner, store, setHead } = setup();
  const read = () =>
    runner.answers.answer(async (index) => {
      const block = await index.latestBlock();
      return block.ok ? ok({ block: block.value }) : fail("NOT_READ", "not read");
    });
  // A new deployment 97 % through its history: steps stored up to block 969 of 999, no poll completed yet (a step that
  // does not reach the head records none), exactly what the store holds between two steps of a catch-up.
  const events: EasEvent[] = [];
  for (let b = 0n; b <= 969n; b += 10n) {
    events.push({ kind: "attested", uid: hash(b), recipient: hash(1n).slice(0, 42) as HexString, attester: hash(2n).slice(0, 42) as HexString, schemaUid: hash(3n), blockNumber: b, logIndex: 0 });
  }
  expect(await store.append(undefined, events, { blockNumber: 969n, blockHash: hash(969n), timestamp: 969n })).toBe(true);
  expect(await read()).toMatchObject({ ok: false, code: "INDEX_STALE" });
  expect(await runner.healthy()).toBe(false);
  expect(runner.status()).toMatchObject({ indexedBlock: 969, stale: true });

  expect(await runner.catchUp()).toBe(true);
  const caughtUp = await read();
  expect(caughtUp).toMatchObject({ ok: true, value: { block: 999n, asOf: { blockNumber: 999, checkedAt: Math.floor(clock.nowMs() / 1000) } } });
  expect(await runner.healthy()).toBe(true);

  // Behind again (a burst of blocks) within INDEX_STALL_SECONDS of the last completed poll: the answer names the head it
  // stands on and when that poll completed, never a newer one; once the stall time passes without a poll, 503 again.
  const polledAt = Math.floor(clock.nowMs() / 1000);
  setHead(1_100n);
  clock.set(clock.nowMs() + 20_000);
  expect(await read()).toMatchObject({ ok: true, value: { block: 999n, asOf: { blockNumber: 999, checkedAt: polledAt } } });
  clock.set(clock.nowMs() + 11_000);
  expect(await read()).toMatchObject({ ok: false, code: "INDEX_STALE" });
});

test("issue 43 item 5: a write's block seen mined stands for the head of the poll it sets off, once and only while fresh", async () => {
  // Followed (a write is polled for only then); the loop polls at start, then sleeps an hour.
  const followed = setup({ follow: true });
  try {
    await sightings(followed);
  } finally {
    await followed.runner.stop();
  }
});

async function sightings({ clock, runner, store, setHead, headReads }: ReturnType<typeof setup>) {
  const read = () => runner.answers.answer(async (index) => ok({ block: (await index.latestBlock()).ok }));
  // The loop's first poll was queued while the first catch-up ran: the second comes after it.
  expect(await runner.catchUp()).toBe(true);
  expect(await runner.catchUp()).toBe(true);
  const reads = headReads();

  // The write's receipt names block 1,005: the read after it polls up to there without asking the node for its head.
  setHead(1_005n);
  runner.wrote(1_005n);
  expect(await read()).toMatchObject({ ok: true });
  expect((await store.checkpoint())?.blockNumber).toBe(1_005n);
  expect(headReads()).toBe(reads);
  expect(runner.status()).toMatchObject({ indexedBlock: 1_005, head: 1_005 });

  // Used once: the next poll reads the head (the chain went on meanwhile).
  setHead(1_007n);
  expect(await runner.catchUp()).toBe(true);
  expect(headReads()).toBe(reads + 1);
  expect((await store.checkpoint())?.blockNumber).toBe(1_007n);

  // Stale: seen more than HEAD_SIGHTING_MS before the poll, the head is read.
  setHead(1_010n);
  runner.sighted(1_010n);
  clock.set(clock.nowMs() + HEAD_SIGHTING_MS + 1);
  expect(await runner.catchUp()).toBe(true);
  expect(headReads()).toBe(reads + 2);

  // Not past the index (an announcement of an older block): the head is read, and the index never goes back.
  runner.sighted(1_008n);
  expect(await runner.catchUp()).toBe(true);
  expect(headReads()).toBe(reads + 3);
  expect((await store.checkpoint())?.blockNumber).toBe(1_010n);
  expect(runner.status()).toMatchObject({ indexedBlock: 1_010, head: 1_010 });
}

test("wireIndex(): a head below the index is no completed poll; the second such poll in a row makes reads 503 INDEX_STALE, through the store, until a poll completes", async () => {
  const { lines, runner, store, setHead } = setup();
  const read = () => runner.answers.answer(async (index) => ok({ block: (await index.latestBlock()).ok }));
  expect(await runner.catchUp()).toBe(true);
  const polled = runner.status().checkedAt;
  // The node's head 995, its blocks the index's: a backend behind, or a chain rolled back, not told apart yet.
  setHead(995n);
  expect(await runner.catchUp()).toBe(false);
  // One poll of grace (a load-balanced provider's backend behind is usually caught up by the next): reads answer.
  expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 999 } } });
  expect(await runner.healthy()).toBe(true);
  expect(await runner.catchUp()).toBe(false);
  expect(await read()).toMatchObject({ ok: false, code: "INDEX_STALE" });
  expect(await runner.healthy()).toBe(false);
  // The head and the poll time are the last completed poll's; the doubt is in the store, which every instance reads.
  expect(runner.status()).toMatchObject({ indexedBlock: 999, head: 999, stale: true, checkedAt: polled });
  expect((await store.head())?.doubtedAtMs).toBeGreaterThan((await store.head())!.checkedAtMs!);
  // The node answered: no failure counted (no backoff before the next poll, which sees the chain grow again).
  expect(lines.filter((l) => l.event === "index_follow_failed")).toEqual([]);
  expect(lines.filter((l) => l.event === "index_head_behind").map((l) => l.fields.polls)).toEqual([1, 2]);
  setHead(1_001n);
  expect(await runner.catchUp()).toBe(true);
  expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 1_001 } } });
  expect(await runner.healthy()).toBe(true);
  // The count starts again after a completed poll.
  setHead(1_000n);
  expect(await runner.catchUp()).toBe(false);
  expect(await runner.healthy()).toBe(true);
});

test("a refill of stored subjects over many steps keeps reads fresh: each step at the head is a completed poll, recorded once a poll interval", async () => {
  // 3,500 rows whose subjects were stored under other anchors: the follower forgets and fills them, 1,000 a step. Every
  // head read moves the clock 10 s on, a third of the stall time; reads must never have gone stale meanwhile.
  const clock = fakeClock(0);
  const store = createSqliteIndexStore(openSqlite(":memory:"), { chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" });
  const rows = Array.from({ length: 3_500 }, (_, i) => BigInt(i + 1)).map((n) => ({
    uid: hash(n), schema: hash(3n), time: n, expirationTime: 0n, revocationTime: 0n, refUID: hash(0n),
    recipient: hash(1n).slice(0, 42) as HexString, attester: hash(2n).slice(0, 42) as HexString, revocable: true, data: "0x" as HexString,
  }));
  const events: EasEvent[] = rows.map((r) => ({ kind: "attested", uid: r.uid, recipient: r.recipient, attester: r.attester, schemaUid: r.schema, blockNumber: r.time, logIndex: 0 }));
  expect(await store.resetSubjectsUnless!(createSubjectOf({}).rule)).toBe(false);
  expect(await store.append(undefined, events, { blockNumber: 3_500n, blockHash: hash(3_500n), timestamp: 3_500n }, { attestations: rows, subjects: new Map() })).toBe(true);
  await store.checked(clock.nowMs(), 3_500n);
  const stale: boolean[] = [];
  const never = () => Promise.reject(new Error("no chain read expected"));
  const chain: ChainHistory = {
    async head() {
      clock.set(clock.nowMs() + 10_000);
      stale.push(!isFresh(await store.head(), { nowMs: clock.nowMs(), stallSeconds: 30 }));
      return { ok: true, value: 3_500n };
    },
    blockHash: (n) => Promise.resolve({ ok: true, value: hash(n) }),
    block: never,
    attestations: never,
    events: never,
  };
  const log: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
  const runner = wireIndex({
    store,
    chain,
    schemas: { schemaRecords: () => Promise.resolve({ ok: false, reason: "rpc-error" }) },
    chainId: 31337,
    easAddress: "0x0000000000000000000000000000000000000001",
    settings: { startBlock: 0n, confirmations: 0, pollMs: 1_000, stallSeconds: 30, leaseSeconds: 3_600, stepBlocks: 50n, follow: false, subjectOf: createSubjectOf({ "user-review": hash(3n) }) },
    clock,
    log,
  });
  expect(await runner.catchUp()).toBe(true);
  // Four steps, each at the head (ranges of 1,000, 1,000, 1,000 and 500 rows, each forgotten and filled).
  expect(stale).toEqual([false, false, false, false]);
  expect(await store.subjectsKnown!(hash(1n).slice(0, 42) as HexString)).toBe(createSubjectOf({ "user-review": hash(3n) }).rule);
  expect(await runner.healthy()).toBe(true);
});
