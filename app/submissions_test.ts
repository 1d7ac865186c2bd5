/** The reconciler's wiring: every chain's round run even when one fails, and the minute's timer never overlapping. */
import { describe, expect, test } from "bun:test";
import { createPublicClient, http } from "viem";
import { createSubmissionReconciler, type ReconcileReport, replayBook } from "../domain/delegation/mod.ts";
import { fakeClock, fakeReplayStore, NO_BLOCK_READS } from "../ports/fakes/mod.ts";
import type { OpenSubmission } from "../ports/submissions.ts";
import { everyChain, minesOnDemand, oneAtATime, type RoundStep } from "./submissions.ts";

const report = (open: number): ReconcileReport => ({ mined: 0, reverted: 0, released: 1, rebroadcast: 0, bumped: 0, open });

describe("everyChain()", () => {
  test("a chain whose round throws is logged naming it, and the chains after it are still reconciled", async () => {
    const ran: number[] = [];
    const warned: { event: string; fields?: Record<string, unknown> }[] = [];
    const reconcile = everyChain([
      { chainId: 1, reconcile: () => (ran.push(1), Promise.resolve(report(2))) },
      { chainId: 2, reconcile: () => (ran.push(2), Promise.reject(new TypeError("Cannot convert null to a BigInt"))) },
      { chainId: 3, reconcile: () => (ran.push(3), Promise.resolve(report(5))) },
    ], { warn: (event, fields) => void warned.push({ event, fields }) });
    const { report: total, failed } = await reconcile();
    expect(ran).toEqual([1, 2, 3]);
    expect(total).toMatchObject({ released: 2, open: 7 });
    expect(failed).toBe(true);
    expect(warned).toEqual([{ event: "reconcile_failed", fields: { chainId: 2, error: "Cannot convert null to a BigInt" } }]);
  });

  test("every chain's round done: not failed, the grace passed on", async () => {
    const graces: (number | undefined)[] = [];
    const reconcile = everyChain([{ chainId: 1, reconcile: (options) => (graces.push(options?.graceMs), Promise.resolve(report(0))) }], { warn: () => {} });
    expect(await reconcile({ graceMs: 0 })).toEqual({ report: report(0), failed: false });
    await reconcile();
    expect(graces).toEqual([0, undefined]);
  });
});

describe("oneAtATime()", () => {
  test("a tick while the last run has not ended is skipped; the next after it ends runs", async () => {
    let runs = 0;
    let end = () => {};
    const tick = oneAtATime(() => {
      runs++;
      return new Promise<void>((resolve) => end = resolve);
    });
    tick();
    tick();
    tick();
    expect(runs).toBe(1);
    end();
    // Its end is seen once the promise jobs ran (a macrotask comes after them all).
    await Bun.sleep(0);
    tick();
    expect(runs).toBe(2);
  });
});

describe("a round of the minute's work that never ends (found in review)", () => {
  const MINUTE = 60_000;

  test("a step running 10 minutes is told once; at 15 a tick gives the round up and starts the next, whose chain round is its own", async () => {
    const clock = fakeClock(0);
    // The chain's book answers its first read never (a query whose database vanished: Bun SQL has no query timeout).
    let opens = 0;
    const book = {
      ...replayBook(fakeReplayStore(), 1),
      open: () => ++opens === 1 ? new Promise<OpenSubmission[]>(() => {}) : Promise.resolve([]),
    };
    const txStatus = { ...NO_BLOCK_READS, status: () => Promise.resolve({ status: "not-found" as const }) };
    const reconcile = createSubmissionReconciler({ chainId: 7, books: [book], txStatus, clock, graceMs: 0, lostAfterMs: 600_000 });
    const chains = everyChain([{ chainId: 7, reconcile }], { warn: () => {} });
    const told: { ageMs: number; at: RoundStep | undefined; abandoned: boolean }[] = [];
    let swept = 0;
    const tick = oneAtATime(async (at) => {
      await chains({ at });
      at({ step: "sweep" });
      swept++;
    }, { clock, overdue: (late) => void told.push(late) });
    tick();
    for (let minute = 1; minute < 10; minute++) {
      clock.set(minute * MINUTE);
      tick();
    }
    expect({ opens, told }).toEqual({ opens: 1, told: [] });
    for (const minute of [10, 11, 14]) {
      clock.set(minute * MINUTE);
      tick();
    }
    // Told once, naming the chain; before, every tick skipped in silence, for good.
    expect(told).toEqual([{ ageMs: 10 * MINUTE, at: { chainId: 7 }, abandoned: false }]);
    expect(opens).toBe(1);
    clock.set(15 * MINUTE);
    tick();
    expect(told[1]).toEqual({ ageMs: 15 * MINUTE, at: { chainId: 7 }, abandoned: true });
    // The chain's reconciler did not hand the new run its stuck round: it read its book again.
    expect(opens).toBe(2);
    await Bun.sleep(0);
    expect(swept).toBe(1);
    // The next minute's round runs as usual.
    clock.set(16 * MINUTE);
    tick();
    expect(opens).toBe(3);
    expect(told).toHaveLength(2);
  });

  test("a run given up on whose call answers at last ends at its next step, and leaves the run after it running", async () => {
    const clock = fakeClock(0);
    const ends: (() => void)[] = [];
    const swept: number[] = [];
    const tick = oneAtATime(async (at) => {
      const run = ends.length;
      at({ chainId: 1 });
      await new Promise<void>((resolve) => ends.push(resolve));
      at({ step: "sweep" });
      swept.push(run);
    }, { clock, overdue: () => {} });
    tick();
    clock.set(15 * MINUTE);
    tick();
    expect(ends).toHaveLength(2);
    ends[0]!();
    await Bun.sleep(0);
    expect(swept).toEqual([]);
    // The second run still runs: this tick is skipped.
    tick();
    expect(ends).toHaveLength(2);
    ends[1]!();
    await Bun.sleep(0);
    expect(swept).toEqual([1]);
    tick();
    expect(ends).toHaveLength(3);
  });

  test("each step is timed from its own start: a round of steps each under 10 minutes is never told", () => {
    const clock = fakeClock(0);
    let step: ((at: RoundStep) => void) | undefined;
    const told: unknown[] = [];
    const tick = oneAtATime((at) => (step = at, new Promise(() => {})), { clock, overdue: (late) => void told.push(late) });
    tick();
    for (let minute = 1; minute <= 30; minute++) {
      clock.set(minute * MINUTE);
      // A chain's round ends and the next begins every 9 minutes.
      if (minute % 9 === 0) step!({ chainId: minute });
      tick();
    }
    expect(told).toEqual([]);
  });
});

describe("minesOnDemand(): an Anvil or Hardhat node reached through RPC_URL (found in review)", () => {
  /** A node on loopback answering `web3_clientVersion` with `version` (an error when undefined), counting the calls. */
  function node(version: string | undefined) {
    let calls = 0;
    const server = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (request) => {
        const call = (await request.json()) as { id: number; method: string };
        calls++;
        return Response.json(version === undefined || call.method !== "web3_clientVersion"
          ? { jsonrpc: "2.0", id: call.id, error: { code: -32601, message: "the method does not exist" } }
          : { jsonrpc: "2.0", id: call.id, result: version });
      },
    });
    const client = createPublicClient({ transport: http(`http://127.0.0.1:${server.port}`, { retryCount: 0 }) });
    return { client, calls: () => calls, stop: () => server.stop(true) };
  }

  test("asked once: an Anvil or a Hardhat node mines on demand, another node or no answer does not; CHAINS_FILE overrides either way", async () => {
    const cases: [string | undefined, boolean | undefined, boolean, number][] = [
      ["anvil/v1.2.3", undefined, true, 1],
      ["HardhatNetwork/2.22.0/@ethereumjs/vm/7.0.0", undefined, true, 1],
      ["Geth/v1.14.11-stable/linux-amd64/go1.23.2", undefined, false, 1],
      ["reth/v1.1.0", undefined, false, 1],
      [undefined, undefined, false, 1],
      // Declared in CHAINS_FILE: the node is not asked.
      ["anvil/v1.2.3", false, false, 0],
      ["Geth/v1.14.11-stable/linux-amd64/go1.23.2", true, true, 0],
    ];
    for (const [version, configured, expected, calls] of cases) {
      const answering = node(version);
      try {
        const found: string[] = [];
        expect({ version, configured, onDemand: await minesOnDemand({ configured, devnet: false }, answering.client, { found: (v) => void found.push(v) }) })
          .toEqual({ version, configured, onDemand: expected });
        expect(answering.calls()).toBe(calls);
        expect(found).toEqual(expected && calls === 1 ? [version!] : []);
      } finally {
        answering.stop();
      }
    }
  });

  test("the embedded devnet mines on demand without asking; a node not asked (its chain held at start) does not", async () => {
    const answering = node("Geth/v1.14.11-stable/linux-amd64/go1.23.2");
    try {
      expect(await minesOnDemand({ configured: undefined, devnet: true }, answering.client)).toBe(true);
      expect(answering.calls()).toBe(0);
      expect(await minesOnDemand({ configured: undefined, devnet: false }, undefined)).toBe(false);
    } finally {
      answering.stop();
    }
  });
});
