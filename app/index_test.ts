import { expect, test } from "bun:test";
import { openSqlite } from "../adapters/sqlite/mod.ts";
import { createSqliteIndexStore } from "../adapters/sqlite/mod.ts";
import type { ChainHistory, EasEvent, HeadSignal } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import type { Logger } from "../ports/logger.ts";
import { fail, ok } from "../domain/result.ts";
import { createSubjectOf, isFresh } from "../domain/index/mod.ts";
import { type IndexSettings, wireIndex } from "./index_follower.ts";
import { HEAD_SIGHTING_MS } from "./_index_follower.ts";

const hash = (n: bigint) => `0x${n.toString(16).padStart(64, "a")}` as HexString;

/**
 * The index of chain 31337's EAS (at 0x…01) over `parts`, its schema reads failing; `settings` over these tests' own
 * (from block 0, no confirmations, an hourly poll, a 30 s stall, not following).
 */
function wireTestIndex(parts: Pick<Parameters<typeof wireIndex>[0], "store" | "chain" | "clock" | "log" | "heads">, settings: Partial<IndexSettings> = {}) {
  return wireIndex({
    ...parts,
    schemas: { schemaRecords: () => Promise.resolve({ ok: false, reason: "rpc-error" }) },
    chainId: 31337,
    easAddress: "0x0000000000000000000000000000000000000001",
    settings: { startBlock: 0n, confirmations: 0, pollMs: 3_600_000, stallSeconds: 30, leaseSeconds: 3_600, stepBlocks: 50n, follow: false, ...settings },
  });
}

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
  const runner = wireTestIndex({ store, chain, clock, log, heads: options.heads }, { follow: options.follow ?? false });
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

/**
 * Instances over one SQLite index, each with its own clock (the same one unless told), reading a chain of the same
 * blocks through a provider whose backends may be behind: `world.route()` says, per JSON-RPC call, how many blocks
 * behind the backend that answers it is. A backend knows no block past its head; `world.tip` lowered is a chain rolled
 * back to a shorter one that stays short (its blocks otherwise the same). Polls are driven by `catchUp`, `nudge` and
 * reads, never by a timer (the loop, where it runs, sleeps an hour).
 */
function cluster(options: { graceSeconds?: number; confirmations?: number } = {}) {
  const db = openSqlite(":memory:");
  const scope = { chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" as HexString };
  const world = { tip: 1_000n, route: (): bigint => 0n };
  const top = () => world.tip - world.route();
  const chain: ChainHistory = {
    head: () => Promise.resolve({ ok: true, value: top() }),
    blockHash: (n) => Promise.resolve({ ok: true, value: n <= top() ? hash(n) : null }),
    block: (n) => Promise.resolve({ ok: true, value: n <= top() ? { blockNumber: n, blockHash: hash(n), timestamp: n } : null }),
    attestations: () => Promise.resolve({ ok: true, value: [] }),
    events: (_from, to) => Promise.resolve({ ok: true, value: { events: [], toHash: hash(to) } }),
  };
  const lines: string[] = [];
  const sharedClock = fakeClock(1_800_000_000_000);
  const instance = (name: string, opts: { follow?: boolean; clock?: ReturnType<typeof fakeClock> } = {}) => {
    const clock = opts.clock ?? sharedClock;
    const record = (event: string) => void lines.push(`${name} ${event}`);
    const runner = wireIndex({
      store: createSqliteIndexStore(db, scope),
      chain,
      schemas: { schemaRecords: () => Promise.resolve({ ok: false, reason: "rpc-error" }) },
      chainId: scope.chainId,
      easAddress: scope.easAddress,
      settings: {
        startBlock: 0n,
        confirmations: options.confirmations ?? 3,
        pollMs: 3_600_000,
        stallSeconds: 120,
        behindGraceSeconds: options.graceSeconds ?? 30,
        leaseSeconds: 3_600,
        stepBlocks: 10_000n,
        follow: opts.follow ?? false,
      },
      clock,
      log: { debug: record, info: () => {}, warn: record, error: record },
    });
    return { runner, clock };
  };
  return { world, instance, lines, clock: sharedClock, store: createSqliteIndexStore(db, scope) };
}

/** Moves each clock on by `ms`. */
const tick = (ms: number, ...clocks: ReturnType<typeof fakeClock>[]) => {
  for (const clock of clocks) clock.set(clock.nowMs() + ms);
};

test("wireIndex(): a head below the index is read once more in the same poll before it counts (the next call often reaches a backend caught up)", async () => {
  const { world, instance, lines } = cluster();
  const { runner } = instance("one");
  expect(await runner.catchUp()).toBe(true);
  let calls = 0;
  // The poll's first call (its head read) reaches a backend two blocks behind, every later one a backend caught up.
  world.route = () => (calls++ === 0 ? 2n : 0n);
  world.tip += 1n;
  expect(await runner.catchUp()).toBe(true);
  expect(runner.status()).toMatchObject({ indexedBlock: 1_001, head: 1_001, stale: false, doubted: false });
  expect(lines.filter((l) => l.includes("index_head"))).toEqual([]);
});

test("wireIndex(): a provider with a backend a block behind, each call to either at random (seeded) or in turn, or sticky for 5 polls, never makes reads stale; a chain that stays short does once the grace is over", async () => {
  for (const routing of ["random", "in turn", "sticky"] as const) {
    const { world, instance, lines, store } = cluster();
    const { runner, clock } = instance("one");
    expect(await runner.catchUp()).toBe(true);
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    let turn = 0;
    let polls = 0;
    // Each call to either backend at random, or to each in turn, or each backend for 5 polls in turn (sticky sessions).
    const routes = {
      random: () => (random() < 0.5 ? 1n : 0n),
      "in turn": () => BigInt((turn++ + 1) % 2),
      sticky: () => BigInt(Math.floor(polls / 5) % 2),
    };
    world.route = routes[routing];
    // 12 s blocks, a poll a second, for 20 minutes: the index keeps the tail up to the head, so the lagging backend's
    // head is often below it (two such polls in a row made reads 503 29 % of the time).
    const startMs = clock.nowMs();
    const staleAt: number[] = [];
    for (let second = 1; second <= 1_200; second++) {
      clock.set(startMs + second * 1_000);
      world.tip = 1_000n + BigInt(Math.floor(second / 12));
      polls = second;
      await runner.catchUp();
      if (!(await runner.healthy())) staleAt.push(second);
    }
    expect({ routing, staleAt }).toEqual({ routing, staleAt: [] });
    // The lagging backend's head was below the index many times (random: 272 polls, in turn: 11, sticky: 480).
    expect(lines.filter((l) => l.endsWith("index_head_behind")).length).toBeGreaterThan(routing === "in turn" ? 5 : 100);
    expect((await store.head())?.doubtedAtMs).toBeNull();
    if (routing !== "random") continue;

    // Rolled back two blocks, and it stays short (every backend agrees): stale from the poll the grace is over at, not
    // before; the dropped blocks' answers were served for the grace and up to a poll.
    world.route = () => 0n;
    world.tip -= 2n;
    const rolledBackAt = clock.nowMs();
    const served: boolean[] = [];
    for (let second = 1; second <= 32; second++) {
      clock.set(rolledBackAt + second * 1_000);
      expect(await runner.catchUp()).toBe(false);
      served.push(await runner.healthy());
    }
    // The first poll that found it was at 1 s; 30 s later the doubt is recorded.
    expect(served.indexOf(false)).toBe(30);
    expect(served.slice(30)).toEqual([false, false]);
    expect(runner.status()).toMatchObject({ stale: true, doubted: true });
    expect(lines.filter((l) => l.endsWith("index_head_doubted"))).toEqual(["one index_head_doubted"]);
    // The chain grows past the index again: a completed poll clears the doubt.
    world.tip += 3n;
    expect(await runner.catchUp()).toBe(true);
    expect(runner.status()).toMatchObject({ stale: false, doubted: false });
    expect((await store.head())?.doubtedAtMs).toBeNull();
  }
});

test("wireIndex(): a poll completed on another instance starts the grace again, and clears a doubt another instance recorded, whatever their clocks", async () => {
  const { world, instance, store } = cluster();
  const a = instance("a");
  // b's clock is 10 s behind a's.
  const b = instance("b", { clock: fakeClock(a.clock.nowMs() - 10_000) });
  const both = [a.clock, b.clock];
  expect(await a.runner.catchUp()).toBe(true);
  const fresh = async () => [await a.runner.healthy(), await b.runner.healthy()];

  // a's polls find the chain's head below the index for 19 s...
  world.tip -= 2n;
  for (let i = 0; i < 20; i++) {
    tick(1_000, ...both);
    expect(await a.runner.catchUp()).toBe(false);
  }
  // ...then a poll completes on b (the backend it reached caught up).
  world.tip += 2n;
  tick(1_000, ...both);
  expect(await b.runner.catchUp()).toBe(true);
  // Below again: a's grace starts at its first poll after b's, not at its first 20 s ago (30 polls: 0 to 29 s).
  world.tip -= 2n;
  for (let i = 0; i < 30; i++) {
    tick(1_000, ...both);
    expect(await a.runner.catchUp()).toBe(false);
    expect(await fresh()).toEqual([true, true]);
  }
  tick(1_000, ...both);
  await a.runner.catchUp();
  expect(await fresh()).toEqual([false, false]);
  // Every instance sees why: the last completed poll (b's) is doubted.
  expect(await b.runner.refresh()).toMatchObject({ stale: true, doubted: true });
  const doubted = await store.head();
  expect(doubted?.doubtedAtMs).toBe(doubted!.checkedAtMs);

  // b completes a poll at its clock, 10 s behind the one that recorded the doubt: reads are fresh on both.
  world.tip += 2n;
  tick(1_000, ...both);
  expect(await b.runner.catchUp()).toBe(true);
  expect(await fresh()).toEqual([true, true]);
  expect(await a.runner.refresh()).toMatchObject({ stale: false, doubted: false });
});

test("wireIndex(): a write's poll on an instance that does not hold the lease never doubts, its sighted block below the index or its node behind", async () => {
  const { world, instance, store, lines, clock } = cluster();
  const leader = instance("leader", { follow: true });
  const other = instance("other", { follow: true });
  try {
    // The leader's loop took the lease at start and polls once; the second catch-up comes after that poll.
    expect(await leader.runner.catchUp()).toBe(true);
    expect(await leader.runner.catchUp()).toBe(true);
    expect(await other.runner.refresh()).toMatchObject({ follower: false, indexedBlock: 1_000 });
    expect(leader.runner.status().follower).toBe(true);
    const read = (r: typeof leader.runner) => r.answers.answer(async (index) => ok({ block: (await index.latestBlock()).ok }));

    for (let i = 0; i < 3; i++) {
      // `other` wrote an attestation mined a block ago; the leader has indexed past it, `other` has not looked since.
      const mined = world.tip + 1n;
      world.tip += 2n;
      expect(await leader.runner.catchUp()).toBe(true);
      // PostgreSQL: the writer's sighting and its poll before the answer (app/attestation_index.ts afterMinedOf).
      other.runner.sighted(mined);
      await other.runner.nudge();
      // SQLite: the writer's next read polls first.
      other.runner.wrote(mined);
      expect(await read(other.runner)).toMatchObject({ ok: true });
      expect(await read(leader.runner)).toMatchObject({ ok: true });
      // An hour later, the leader's polls completing all along.
      tick(3_600_000, clock);
      expect(await leader.runner.catchUp()).toBe(true);
    }
    // `other`'s node behind for longer than the grace: its writes' polls find the head below, and count for nothing.
    world.tip -= 2n;
    for (let i = 0; i < 40; i++) {
      tick(1_000, clock);
      await other.runner.nudge();
    }
    expect(lines.filter((l) => l === "other index_head_behind").length).toBeGreaterThan(0);
    expect(lines.filter((l) => l.includes("index_head_doubted"))).toEqual([]);
    expect((await store.head())?.doubtedAtMs).toBeNull();
    expect(await leader.runner.refresh()).toMatchObject({ doubted: false });
  } finally {
    await leader.runner.stop();
    await other.runner.stop();
  }
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
  const runner = wireTestIndex({ store, chain, clock, log }, { pollMs: 1_000, subjectOf: createSubjectOf({ "user-review": hash(3n) }) });
  expect(await runner.catchUp()).toBe(true);
  // Four steps, each at the head (ranges of 1,000, 1,000, 1,000 and 500 rows, each forgotten and filled).
  expect(stale).toEqual([false, false, false, false]);
  expect(await store.subjectsKnown!(hash(1n).slice(0, 42) as HexString)).toBe(createSubjectOf({ "user-review": hash(3n) }).rule);
  expect(await runner.healthy()).toBe(true);
});

test("the stored subjects are kept to the rule once a poll interval, not at every poll (a write's poll paid two statements for it, found in review)", async () => {
  const clock = fakeClock(0);
  const base = createSqliteIndexStore(openSqlite(":memory:"), { chainId: 31337, easAddress: "0x0000000000000000000000000000000000000001" });
  const reads: string[] = [];
  const store = {
    ...base,
    resetSubjectsUnless: (...args: Parameters<NonNullable<typeof base.resetSubjectsUnless>>) => {
      reads.push("rule");
      return base.resetSubjectsUnless!(...args);
    },
    unsubjected: (limit: number) => {
      reads.push("unsubjected");
      return base.unsubjected!(limit);
    },
  };
  const never = () => Promise.reject(new Error("no chain read expected"));
  const chain: ChainHistory = {
    head: () => Promise.resolve({ ok: true, value: 10n }),
    blockHash: (n) => Promise.resolve({ ok: true, value: hash(n) }),
    block: never,
    attestations: never,
    events: never,
  };
  // Indexed up to the head: each poll reads the head and the checkpoint's hash, nothing to ingest.
  expect(await base.append(undefined, [], { blockNumber: 10n, blockHash: hash(10n), timestamp: 10n })).toBe(true);
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
  expect(reads).toEqual(["rule", "unsubjected"]);
  // Polls within the interval (a write's, at each block): the rule row is not read again.
  for (let i = 0; i < 3; i++) expect(await runner.catchUp()).toBe(true);
  clock.set(999);
  expect(await runner.catchUp()).toBe(true);
  expect(reads).toEqual(["rule", "unsubjected"]);
  // A poll interval on: read again (another instance may have changed the rule).
  clock.set(1_000);
  expect(await runner.catchUp()).toBe(true);
  expect(reads).toEqual(["rule", "unsubjected", "rule", "unsubjected"]);
});
