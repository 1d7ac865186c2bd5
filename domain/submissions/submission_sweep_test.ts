import { describe, expect, test } from "bun:test";
import type { HexString } from "../../ports/eas.ts";
import { fakeClock, fakeRandom, fakeReplayStore, fakeSubmissionRecords } from "../../ports/fakes/mod.ts";
import type { SubmissionOutcome } from "../../ports/submission_records.ts";
import { createSubmissionSweep, createSubmissionTracker } from "./mod.ts";

const tx = (n: number) => ({ txHash: `0x${n.toString(16).padStart(64, "0")}` as HexString, raw: "0x02" as HexString, wallet: "0xaa" as HexString, nonce: n });

function setup() {
  const records = fakeSubmissionRecords();
  const replay = fakeReplayStore();
  const clock = fakeClock();
  const told: { submissionId: string; outcome: SubmissionOutcome }[] = [];
  const onSettled = (event: { submissionId: string; outcome: SubmissionOutcome }) => Promise.resolve(void told.push(event));
  const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock, onSettled });
  const sweep = createSubmissionSweep({ records, replay, clock, onSettled, minAgeMs: 60_000 });
  /** A request that got as far as `state` and then its process died (nobody settled its submission). */
  const died = async (key: string, state: "sent" | "mined" | "reverted" | "released", n: number) => {
    await replay.claim({ key, chainId: 1, attester: `0x${key}`, nonce: BigInt(n), deadline: 2_000_000_000n, createdAtMs: clock.nowMs() });
    await replay.markSigned(1, key, tx(n));
    await replay.markSent(1, key);
    if (state === "mined") await replay.finish(1, key, { state: "mined", txHash: tx(n).txHash, uid: `0xuid-${key}`, blockNumber: 7n });
    if (state === "reverted") await replay.finish(1, key, { state: "reverted", txHash: tx(n).txHash, blockNumber: 7n });
    if (state === "released") await replay.release(1, key);
  };
  return { records, replay, clock, told, tracker, sweep, died };
}

describe("createSubmissionSweep() (decisions §23: an outcome nobody kept is settled, and told, once)", () => {
  test("a mined, a reverted and a released record settle their submissions; one still sent is left to the reconciler", async () => {
    const s = setup();
    const ids: Record<string, string> = {};
    for (const [n, [key, state]] of ([["k1", "mined"], ["k2", "reverted"], ["k3", "released"], ["k4", "sent"]] as const).entries()) {
      await s.died(key, state, n + 1);
      ids[key] = await s.tracker.open("account:a", 1, key);
    }
    // Too young: a relay may still be answering for them.
    expect(await s.sweep()).toBe(0);
    s.clock.set(s.clock.nowMs() + 60_001);
    expect(await s.sweep()).toBe(3);
    expect((await s.records.find(ids.k1!))?.outcome).toEqual({ state: "mined", txHash: tx(1).txHash, uid: "0xuid-k1", blockNumber: 7n, feeBumps: 0 });
    expect((await s.records.find(ids.k2!))?.outcome).toEqual({ state: "failed", txHash: tx(2).txHash, error: "SUBMISSION_FAILED", feeBumps: 0 });
    expect((await s.records.find(ids.k3!))?.outcome).toEqual({ state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps: 0 });
    expect((await s.records.find(ids.k4!))?.outcome).toBeNull();
    expect(s.told.map((e) => e.submissionId).sort()).toEqual([ids.k1!, ids.k2!, ids.k3!].sort());
    // Again: nothing more, nobody told twice.
    expect(await s.sweep()).toBe(0);
    expect(s.told).toHaveLength(3);
    expect(s.records.untoldIds.size).toBe(0);
  });

  test("a submission naming no chain (a previous version opened it) is swept by its replay record found by key: one in flight is left, one mined settled mined", async () => {
    const s = setup();
    const ids: Record<string, string> = {};
    for (const [n, [key, state]] of ([["k1", "sent"], ["k2", "mined"]] as const).entries()) {
      await s.died(key, state, n + 1);
      ids[key] = await s.tracker.open("account:a", 1, key);
      s.records.records.set(ids[key]!, { ...s.records.records.get(ids[key]!)!, chainId: null });
    }
    s.clock.set(s.clock.nowMs() + 60_001);
    expect(await s.sweep()).toBe(1);
    expect((await s.records.find(ids.k1!))?.outcome).toBeNull();
    expect((await s.records.find(ids.k2!))?.outcome).toEqual({ state: "mined", txHash: tx(2).txHash, uid: "0xuid-k2", blockNumber: 7n, feeBumps: 0 });
  });

  test("a settlement whose event could not be queued stays untold and is told by the next sweep", async () => {
    const records = fakeSubmissionRecords();
    const replay = fakeReplayStore();
    const clock = fakeClock();
    const told: string[] = [];
    let queueUp = false;
    const onSettled = (event: { submissionId: string }) => queueUp ? Promise.resolve(void told.push(event.submissionId)) : Promise.reject(new Error("queue down"));
    const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock, onSettled });
    const id = await tracker.open("account:a", 1, "k1");
    // The relay's answer does not wait on the queue, and does not fail with it.
    await tracker.settle(id, 1, "k1", { ok: true, value: { txHash: tx(1).txHash, uid: "0xuid-k1", blockNumber: 7n } });
    expect(records.untoldIds.has(id)).toBe(true);
    queueUp = true;
    clock.set(clock.nowMs() + 60_001);
    const sweep = createSubmissionSweep({ records, replay, clock, onSettled });
    expect(await sweep()).toBe(1);
    expect(told).toEqual([id]);
    expect(records.untoldIds.size).toBe(0);
    expect(await sweep()).toBe(0);
  });

  test("a batch's submission settles with each sent request's uid from its own record", async () => {
    const s = setup();
    await s.died("b1", "mined", 1);
    await s.died("b2", "mined", 2);
    const id = await s.tracker.open("account:a", 1, "b1", [{ ref: "b1" }, { refused: { code: "ATTESTER_MISMATCH", message: "Signer does not match attester" } }, { ref: "b2" }]);
    s.clock.set(s.clock.nowMs() + 60_001);
    expect(await s.sweep()).toBe(1);
    expect((await s.records.find(id))?.outcome).toMatchObject({ state: "mined", uid: "0xuid-b1", uids: { b1: "0xuid-b1", b2: "0xuid-b2" } });
  });

  test("a submission the relay settles and tells itself is not settled or told again by the sweep", async () => {
    const s = setup();
    await s.died("k1", "mined", 1);
    const id = await s.tracker.open("account:a", 1, "k1");
    await s.tracker.settle(id, 1, "k1", { ok: true, value: { txHash: tx(1).txHash, uid: "0xuid-k1", blockNumber: 7n } });
    s.clock.set(s.clock.nowMs() + 60_001);
    expect(await s.sweep()).toBe(0);
    expect(s.told).toHaveLength(1);
  });
});
