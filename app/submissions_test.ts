/** The reconciler's wiring: every chain's round run even when one fails, and the minute's timer never overlapping. */
import { describe, expect, test } from "bun:test";
import type { ReconcileReport } from "../domain/delegation/mod.ts";
import { everyChain, oneAtATime } from "./submissions.ts";

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
