import { describe, expect, test } from "bun:test";
import { fakeClock, fakeRandom, fakeReplayStore, fakeSubmissionRecords } from "../../ports/fakes/mod.ts";
import { replayBook } from "../delegation/mod.ts";
import { type ChainHead, createSubmissionStatus, createSubmissionTracker } from "./mod.ts";

/** A chain's head for the views, counting its reads. */
function chain(chainId: number, head: bigint, confirmations: number, reads: number[]): ChainHead {
  return {
    answer: { chainId, caip2: `eip155:${chainId}`, easContract: `0x${chainId.toString(16).padStart(40, "0")}` },
    head: () => {
      reads.push(chainId);
      return Promise.resolve(head);
    },
    confirmations,
  };
}

function setup() {
  const records = fakeSubmissionRecords();
  const replay = fakeReplayStore();
  const clock = fakeClock();
  const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock });
  const reads: number[] = [];
  const defaultChain = chain(31337, 200n, 12, reads);
  const status = createSubmissionStatus({
    records,
    replay,
    head: () => defaultChain.head(),
    confirmations: 12,
    defaultChain,
    otherChains: new Map([[31338, chain(31338, 105n, 3, reads)]]),
  });
  const mined = async (key: string, chainId: number, deadline = 2_000_000_000n) => {
    await replay.claim({ key, chainId, attester: "0xa", nonce: BigInt(key), deadline, createdAtMs: clock.nowMs() });
    const id = await tracker.open("account:a", chainId, key);
    await replay.finish(chainId, key, { state: "mined", txHash: "0x01", uid: "0xuid", blockNumber: 100n });
    return id;
  };
  return { records, replay, status, reads, mined };
}

describe("submissions on several chains (decisions §30)", () => {
  test("a submission names the chain of its replay record and counts its confirmations on that chain's head", async () => {
    const env = setup();
    const onB = await env.mined("0xb", 31338);
    const onA = await env.mined("0xa", 31337);
    expect(await env.status.read(onB)).toMatchObject({ ok: true, value: { state: "confirmed", confirmations: 6, chain: { chainId: 31338, caip2: "eip155:31338" } } });
    expect(await env.status.read(onA)).toMatchObject({ ok: true, value: { state: "confirmed", confirmations: 101, chain: { chainId: 31337 } } });
    expect(env.reads).toEqual([31338, 31337]);
  });

  test("a list reads each chain's head once; a submission whose replay record is gone still names its chain (kept on its record) and reads no head; one naming none (a previous version's) names its replay record's, or none (null) once that is gone", async () => {
    const env = setup();
    await env.mined("0xb1", 31338);
    await env.mined("0xb2", 31338);
    await env.mined("0xa1", 31337);
    const page = await env.status.list("account:a", {});
    expect(page.ok && page.value.submissions.map((s) => s.chain?.chainId).sort()).toEqual([31337, 31338, 31338]);
    expect(env.reads.sort()).toEqual([31337, 31338]);
    const gone = await env.mined("0xc1", 31338, 10n);
    expect(await env.replay.prune(1_000n)).toBe(1);
    env.reads.length = 0;
    expect(await env.status.read(gone)).toMatchObject({ ok: true, value: { state: "failed", chain: { chainId: 31338 } } });
    expect(env.reads).toEqual([]);
    const unnamed = await env.mined("0xc2", 31338);
    env.records.records.set(unnamed, { ...env.records.records.get(unnamed)!, chainId: null });
    // Its replay record, found by key, says where it stands and on which chain (as the version that opened it read it).
    expect(await env.status.read(unnamed)).toMatchObject({ ok: true, value: { state: "confirmed", confirmations: 6, chain: { chainId: 31338 } } });
    expect(env.reads).toEqual([31338]);
    env.reads.length = 0;
    const unnamedGone = await env.mined("0xc3", 31338, 10n);
    env.records.records.set(unnamedGone, { ...env.records.records.get(unnamedGone)!, chainId: null });
    expect(await env.replay.prune(1_000n)).toBe(1);
    expect(await env.status.read(unnamedGone)).toMatchObject({ ok: true, value: { state: "failed", chain: null } });
    expect(env.reads).toEqual([]);
  });

  test("with one chain, views name none (as before)", async () => {
    const records = fakeSubmissionRecords();
    const replay = fakeReplayStore();
    const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock: fakeClock() });
    await replay.claim({ key: "0xk", chainId: 1, attester: "0xa", nonce: 1n, deadline: 2_000_000_000n, createdAtMs: 1 });
    const id = await tracker.open("account:a", 1, "0xk");
    const status = createSubmissionStatus({ records, replay, head: () => Promise.resolve(1n), confirmations: 0 });
    const read = await status.read(id);
    expect(read.ok && "chain" in read.value).toBe(false);
  });

  test("each chain's replay book holds that chain's open records only, so each is followed on its own chain", async () => {
    const replay = fakeReplayStore();
    for (const [key, chainId] of [["0x1", 31337], ["0x2", 31338], ["0x3", 31338]] as const) {
      await replay.claim({ key, chainId, attester: "0xa", nonce: BigInt(key), deadline: 2_000_000_000n, createdAtMs: 1 });
    }
    expect((await replayBook(replay, 31338).open(10)).map((r) => r.id).sort()).toEqual(["0x2", "0x3"]);
    expect((await replayBook(replay, 31337).open(10)).map((r) => r.id)).toEqual(["0x1"]);
    expect((await replayBook(replay, 1).open(10)).length).toBe(0);
  });
});
