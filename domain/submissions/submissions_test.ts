import { describe, expect, test } from "bun:test";
import { fakeClock, fakeRandom, fakeReplayStore, fakeSubmissionRecords, fakeTxReplacements } from "../../ports/fakes/mod.ts";
import type { HexString } from "../../ports/eas.ts";
import type { TxReplacementStore } from "../../ports/tx_replacements.ts";
import { replayBook } from "../delegation/mod.ts";
import { createSubmissionStatus, createSubmissionTracker, isSubmissionId, newSubmissionId, RELAY_BOOK, trackedBook } from "./mod.ts";

const tx = (n: number) => ({ txHash: `0x${n.toString(16).padStart(64, "0")}` as HexString, raw: "0x02" as HexString, wallet: "0xaa" as HexString, nonce: 4 });

function setup(options: { head?: bigint; confirmations?: number } = {}) {
  const records = fakeSubmissionRecords();
  const replay = fakeReplayStore();
  const bumps = fakeTxReplacements();
  const clock = fakeClock();
  const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock, replacements: bumps });
  const status = createSubmissionStatus({ records, replay, replacements: bumps, head: () => Promise.resolve(options.head ?? 100n), confirmations: options.confirmations ?? 12 });
  const claim = (key: string) => replay.claim({ key, chainId: 1, attester: "0xa", nonce: BigInt(key.length), deadline: 2_000_000_000n, createdAtMs: clock.nowMs() });
  return { records, replay, bumps, clock, tracker, status, claim };
}

describe("newSubmissionId()", () => {
  test("is 128 random bits as 22 base64url characters", () => {
    const id = newSubmissionId({ bytes: (n) => new Uint8Array(n).fill(0xff) });
    expect(id).toBe("_____________________w");
    expect(isSubmissionId(id)).toBe(true);
    expect(isSubmissionId(newSubmissionId(fakeRandom()))).toBe(true);
    expect(isSubmissionId("0x1234")).toBe(false);
  });
});

describe("createSubmissionStatus()", () => {
  test("follows the replay record: pending, sent, replaced after a fee bump (the newest hash), then mined and confirmed with the bumps counted", async () => {
    const env = setup({ head: 110n, confirmations: 12 });
    await env.claim("0xkey");
    const id = await env.tracker.open("account:a", 1, "0xkey");
    expect((await env.status.read(id))).toMatchObject({ ok: true, value: { submissionId: id, state: "pending", txHash: null, feeBumps: 0 } });
    await env.replay.markSigned(1, "0xkey", tx(1));
    await env.replay.markSent(1, "0xkey");
    expect((await env.status.read(id))).toMatchObject({ ok: true, value: { state: "sent", txHash: tx(1).txHash, feeBumps: 0 } });
    await env.bumps.add(RELAY_BOOK, 1, "0xkey", { tx: tx(2), createdAtMs: 1 });
    expect((await env.status.read(id))).toMatchObject({ ok: true, value: { state: "replaced", txHash: tx(2).txHash, feeBumps: 1 } });
    await env.replay.finish(1, "0xkey", { state: "mined", txHash: tx(2).txHash, uid: "0xuid", blockNumber: 100n });
    expect((await env.status.read(id))).toMatchObject({ ok: true, value: { state: "mined", txHash: tx(2).txHash, uid: "0xuid", blockNumber: 100, confirmations: 11, feeBumps: 1 } });
    const deeper = createSubmissionStatus({ records: env.records, replay: env.replay, replacements: env.bumps, head: () => Promise.resolve(111n), confirmations: 12 });
    expect((await deeper.read(id))).toMatchObject({ ok: true, value: { state: "confirmed", confirmations: 12 } });
  });

  test("one signature live on two chains (decisions §30): each submission shows its own chain's fee bumps and hashes; a record naming no chain (an earlier version's) counts every chain's, as that version did", async () => {
    const env = setup();
    for (const [chainId, sent] of [[31337, tx(1)], [31338, tx(2)]] as const) {
      await env.replay.claim({ key: "0xtwo", chainId, attester: "0xa", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 0 });
      await env.replay.markSigned(chainId, "0xtwo", sent);
      await env.replay.markSent(chainId, "0xtwo");
    }
    const onA = await env.tracker.open("account:a", 31337, "0xtwo");
    const onB = await env.tracker.open("account:a", 31338, "0xtwo");
    await env.bumps.add(RELAY_BOOK, 31337, "0xtwo", { tx: tx(3), createdAtMs: 1 });
    expect(await env.status.read(onA)).toMatchObject({ ok: true, value: { state: "replaced", txHash: tx(3).txHash, feeBumps: 1 } });
    expect(await env.status.read(onB)).toMatchObject({ ok: true, value: { state: "sent", txHash: tx(2).txHash, feeBumps: 0 } });
    // Kept by the relay on B: B's count, not A's.
    await env.tracker.settle(onB, 31338, "0xtwo", { ok: true, value: { txHash: tx(2).txHash, uid: "0xub", blockNumber: 90n } });
    expect((await env.records.find(onB))?.outcome).toMatchObject({ state: "mined", feeBumps: 0 });
    const unnamed = await env.tracker.open("account:a", 31338, "0xtwo");
    env.records.records.set(unnamed, { ...env.records.records.get(unnamed)!, chainId: null });
    await env.bumps.add(RELAY_BOOK, 31338, "0xtwo", { tx: tx(4), createdAtMs: 2 });
    expect(await env.status.read(unnamed)).toMatchObject({ ok: true, value: { feeBumps: 2 } });
  });

  test("an outcome kept by the relay answers after the replay record is gone; a record given back is failed", async () => {
    const env = setup({ confirmations: 0 });
    await env.claim("0xk1");
    const kept = await env.tracker.open("account:a", 1, "0xk1");
    await env.tracker.settle(kept, 1, "0xk1", { ok: true, value: { txHash: tx(3).txHash, uid: "0xu", blockNumber: 90n } });
    env.replay.rows.clear();
    expect((await env.status.read(kept))).toMatchObject({ ok: true, value: { state: "confirmed", uid: "0xu", confirmations: 11 } });
    await env.claim("0xk2");
    const released = await env.tracker.open("account:a", 1, "0xk2");
    await env.replay.release(1, "0xk2");
    expect((await env.status.read(released))).toMatchObject({ ok: true, value: { state: "failed", error: "SUBMISSION_FAILED" } });
  });

  test("a settlement of a scope nobody is told of is kept told, without onSettled; an account's is told (issue 43)", async () => {
    const records = fakeSubmissionRecords();
    const told: { submissionId: string; scope?: string | undefined }[] = [];
    const tracker = createSubmissionTracker({
      records,
      random: fakeRandom(),
      clock: fakeClock(),
      onSettled: (event) => Promise.resolve(void told.push({ submissionId: event.submissionId, scope: event.scope })),
      tells: (scope) => scope.startsWith("account:"),
    });
    const mined = { ok: true, value: { txHash: tx(5).txHash, uid: "0xu5", blockNumber: 9n } } as const;
    const publicId = await tracker.open("client:127.0.0.1", 1, "0xp");
    await tracker.settle(publicId, 1, "0xp", mined, "client:127.0.0.1");
    expect((await records.find(publicId))?.outcome).toMatchObject({ state: "mined", uid: "0xu5" });
    expect(records.untoldIds.has(publicId)).toBe(false);
    const accountId = await tracker.open("account:a", 1, "0xa");
    await tracker.settle(accountId, 1, "0xa", mined, "account:a");
    // Told, then marked told; without the scope (as before) the settlement is told whatever its scope.
    const unnamed = await tracker.open("client:127.0.0.1", 1, "0xq");
    await tracker.settle(unnamed, 1, "0xq", mined);
    expect(told).toEqual([{ submissionId: accountId, scope: "account:a" }, { submissionId: unnamed, scope: undefined }]);
    expect([...records.untoldIds]).toEqual([]);
  });

  test("a relay that settles within half the reconciler's bump delay does not read the fee bumps (issue 43 item 4)", async () => {
    const records = fakeSubmissionRecords();
    const clock = fakeClock();
    const store = fakeTxReplacements();
    let lists = 0;
    const counted: TxReplacementStore = { ...store, list: (book, chainId, id) => (lists++, store.list(book, chainId, id)) };
    const mined = { ok: true, value: { txHash: tx(6).txHash, uid: "0xu6", blockNumber: 9n } } as const;
    const settleAfter = async (tracker: ReturnType<typeof createSubmissionTracker>, ref: string, elapsedMs: number) => {
      const start = tracker.began();
      const id = await tracker.open("client:127.0.0.1", 1, ref);
      clock.set(clock.nowMs() + elapsedMs);
      await tracker.settle(id, 1, ref, mined, "client:127.0.0.1", start);
      return (await records.find(id))?.outcome;
    };
    const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock, replacements: counted, bumpAfterMs: 120_000 });
    expect(await settleAfter(tracker, "0xa", 59_999)).toMatchObject({ state: "mined", feeBumps: 0 });
    expect(lists).toBe(0);
    // Half the delay or more since the relay began: a bump may have been made, and is counted.
    await store.add(RELAY_BOOK, 1, "0xb", { tx: tx(7), createdAtMs: clock.nowMs() });
    expect(await settleAfter(tracker, "0xb", 60_000)).toMatchObject({ state: "mined", feeBumps: 1 });
    expect(lists).toBe(1);
    // Without the relay's start, or without the reconciler's delay, the count is read.
    await tracker.settle(await tracker.open("client:127.0.0.1", 1, "0xc"), 1, "0xc", mined, "client:127.0.0.1");
    expect(lists).toBe(2);
    const unknownDelay = createSubmissionTracker({ records, random: fakeRandom(), clock, replacements: counted });
    expect(await settleAfter(unknownDelay, "0xd", 1)).toMatchObject({ state: "mined", feeBumps: 0 });
    expect(lists).toBe(3);
    // A reconciler that never replaces (FEE_BUMP_AFTER_SECONDS=0): never read by the relay.
    const never = createSubmissionTracker({ records, random: fakeRandom(), clock, replacements: counted, bumpAfterMs: Number.POSITIVE_INFINITY });
    expect(await settleAfter(never, "0xe", 86_400_000)).toMatchObject({ state: "mined", feeBumps: 0 });
    expect(lists).toBe(3);
  });

  test("the relay's failures are kept with their code and hash; an unknown outcome stays open", async () => {
    const env = setup();
    await env.claim("0xk");
    const id = await env.tracker.open("account:a", 1, "0xk");
    await env.tracker.settle(id, 1, "0xk", { ok: false, code: "OUTCOME_UNKNOWN", details: tx(4).txHash });
    expect((await env.records.find(id))?.outcome).toBeNull();
    await env.tracker.settle(id, 1, "0xk", { ok: false, code: "SUBMISSION_FAILED", details: tx(4).txHash });
    expect((await env.status.read(id))).toMatchObject({ ok: true, value: { state: "failed", txHash: tx(4).txHash, error: "SUBMISSION_FAILED" } });
  });

  test("an unknown id, or one of another shape, is NOT_FOUND", async () => {
    const env = setup();
    expect(await env.status.read("AAAAAAAAAAAAAAAAAAAAAA")).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(await env.status.read("../etc")).toMatchObject({ ok: false, code: "NOT_FOUND" });
  });

  test("lists an owner's submissions newest first, paged by cursor; a bad limit or cursor is INVALID_INPUT", async () => {
    const env = setup();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      env.clock.set(env.clock.nowMs() + 1);
      await env.claim(`0xk${i}`);
      ids.push(await env.tracker.open("account:a", 1, `0xk${i}`));
    }
    await env.tracker.open("account:b", 1, "0xother");
    const first = await env.status.list("account:a", { limit: 2 });
    if (!first.ok) throw new Error(first.message);
    expect(first.value.submissions.map((s) => s.submissionId)).toEqual([ids[2]!, ids[1]!]);
    expect(first.value.nextCursor).not.toBeNull();
    const second = await env.status.list("account:a", { limit: 2, cursor: first.value.nextCursor! });
    if (!second.ok) throw new Error(second.message);
    expect(second.value).toMatchObject({ submissions: [{ submissionId: ids[0]! }], nextCursor: null });
    expect(await env.status.list("account:a", { limit: 0 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await env.status.list("account:a", { limit: 101 })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await env.status.list("account:a", { cursor: "nope" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});

describe("trackedBook()", () => {
  test("what the reconciler settles is kept on the record's open submissions: mined with its bumps, released as failed", async () => {
    const env = setup({ confirmations: 0 });
    const book = trackedBook(replayBook(env.replay, 1), { records: env.records, clock: env.clock, replacements: env.bumps });
    await env.claim("0xm");
    const mined = await env.tracker.open("client:1.2.3.4", 1, "0xm");
    await env.bumps.add(RELAY_BOOK, 1, "0xm", { tx: tx(5), createdAtMs: 1 });
    await book.mined("0xm", { txHash: tx(5).txHash, uid: "0xu", blockNumber: 7n });
    expect((await env.records.find(mined))?.outcome).toEqual({ state: "mined", txHash: tx(5).txHash, uid: "0xu", blockNumber: 7n, feeBumps: 1 });
    await env.claim("0xr");
    const released = await env.tracker.open("client:1.2.3.4", 1, "0xr");
    await book.release("0xr");
    expect(await env.replay.find(1, "0xr")).toBeUndefined();
    expect((await env.records.find(released))?.outcome).toMatchObject({ state: "failed", error: "SUBMISSION_FAILED" });
  });
});

describe("a submission naming no chain (a previous version opened it, during a rolling restart too)", () => {
  /** A submission as the version before decisions §30's fix recorded it: no chain on its record. */
  const opened = async (env: ReturnType<typeof setup>, ref: string, items?: { ref: string }[]) => {
    const id = await env.tracker.open("account:a", 1, ref, items);
    env.records.records.set(id, { ...env.records.records.get(id)!, chainId: null });
    return id;
  };

  test("is followed by its replay record found by key: read as sent while in flight, then mined, each item's uid too", async () => {
    const env = setup({ confirmations: 0 });
    await env.claim("0xa");
    await env.claim("0xbb");
    const id = await opened(env, "0xa", [{ ref: "0xa" }, { ref: "0xbb" }]);
    await env.replay.markSigned(1, "0xa", tx(1));
    await env.replay.markSent(1, "0xa");
    expect(await env.status.read(id)).toMatchObject({ ok: true, value: { state: "sent", txHash: tx(1).txHash } });
    await env.replay.finish(1, "0xa", { state: "mined", txHash: tx(1).txHash, uid: "0xu0", blockNumber: 9n });
    await env.replay.finish(1, "0xbb", { state: "mined", txHash: tx(1).txHash, uid: "0xu1", blockNumber: 9n });
    const read = await env.status.read(id);
    expect(read).toMatchObject({ ok: true, value: { state: "confirmed", uid: "0xu0" } });
    expect(read.ok && read.value.items?.map((item) => item.uid)).toEqual(["0xu0", "0xu1"]);
  });

  test("the reconciler's settlement of its replay record is kept on it, and names the chain from then on", async () => {
    const env = setup({ confirmations: 0 });
    const book = trackedBook(replayBook(env.replay, 1), { records: env.records, clock: env.clock, replacements: env.bumps });
    await env.claim("0xm");
    const id = await opened(env, "0xm");
    await book.mined("0xm", { txHash: tx(5).txHash, uid: "0xu", blockNumber: 7n });
    expect(await env.records.find(id)).toMatchObject({ chainId: 1, outcome: { state: "mined", txHash: tx(5).txHash, uid: "0xu" } });
  });
});

describe("a batch's submission (decisions §23)", () => {
  const refused = { refused: { code: "ATTESTER_MISMATCH", message: "Signer does not match attester", status: 400 } };

  test("shows every request in order: the sent ones in the transaction's state, then each with its own uid once the relay kept them; the refused one as refused", async () => {
    const env = setup({ confirmations: 0 });
    await env.claim("0xa");
    await env.claim("0xbb");
    const id = await env.tracker.open("account:a", 1, "0xa", [{ ref: "0xa" }, refused, { ref: "0xbb" }]);
    const open = await env.status.read(id);
    expect(open).toMatchObject({ ok: true, value: { state: "pending" } });
    expect(open.ok && open.value.items).toEqual([
      { index: 0, state: "pending", uid: null },
      { index: 1, state: "refused", uid: null, status: 400, error: "ATTESTER_MISMATCH", message: "Signer does not match attester" },
      { index: 2, state: "pending", uid: null },
    ]);
    await env.tracker.settle(id, 1, "0xa", { ok: true, value: { txHash: tx(1).txHash, uid: "0xu0", blockNumber: 90n, uids: { "0xa": "0xu0", "0xbb": "0xu2" } } });
    env.replay.rows.clear();
    const read = await env.status.read(id);
    expect(read).toMatchObject({ ok: true, value: { state: "confirmed", uid: "0xu0", txHash: tx(1).txHash } });
    expect(read.ok && read.value.items?.map((item) => [item.state, item.uid])).toEqual([["confirmed", "0xu0"], ["refused", null], ["confirmed", "0xu2"]]);
    // A single send's view has no items.
    await env.claim("0xsingle");
    const single = await env.tracker.open("account:a", 1, "0xsingle");
    expect((await env.status.read(single)).ok && "items" in (await env.status.read(single) as { value: object }).value).toBe(false);
  });

  test("while its record is open (the relay died before keeping the outcome), each item's uid is read from its own replay record", async () => {
    const env = setup({ confirmations: 0 });
    await env.claim("0xa");
    await env.claim("0xbb");
    const id = await env.tracker.open("account:a", 1, "0xa", [{ ref: "0xa" }, { ref: "0xbb" }]);
    await env.replay.finish(1, "0xa", { state: "mined", txHash: tx(2).txHash, uid: "0xu0", blockNumber: 9n });
    await env.replay.finish(1, "0xbb", { state: "mined", txHash: tx(2).txHash, uid: "0xu1", blockNumber: 9n });
    const read = await env.status.read(id);
    expect(read.ok && read.value.items).toEqual([{ index: 0, state: "confirmed", uid: "0xu0" }, { index: 1, state: "confirmed", uid: "0xu1" }]);
  });

  test("the reconciler settling the batch's first item keeps every item's uid read off the receipt, whichever item it settled before", async () => {
    const env = setup({ confirmations: 0 });
    const book = trackedBook(replayBook(env.replay, 1), { records: env.records, clock: env.clock, replacements: env.bumps });
    await env.claim("0xa");
    await env.claim("0xbb");
    const id = await env.tracker.open("client:1.2.3.4", 1, "0xa", [{ ref: "0xa" }, refused, { ref: "0xbb" }]);
    const uids = new Map([["0xa", "0xu0"], ["0xbb", "0xu2"]]);
    await book.mined("0xbb", { txHash: tx(3).txHash, uid: "0xu2", blockNumber: 5n, uids });
    expect((await env.records.find(id))?.outcome).toBeNull();
    await book.mined("0xa", { txHash: tx(3).txHash, uid: "0xu0", blockNumber: 5n, uids });
    expect((await env.records.find(id))?.outcome).toEqual({ state: "mined", txHash: tx(3).txHash, uid: "0xu0", blockNumber: 5n, feeBumps: 0, uids: { "0xa": "0xu0", "0xbb": "0xu2" } });
    env.replay.rows.clear();
    const read = await env.status.read(id);
    expect(read.ok && read.value.items?.map((item) => item.uid)).toEqual(["0xu0", null, "0xu2"]);
  });

  test("a failed batch shows its sent items failed, its refused ones refused", async () => {
    const env = setup();
    await env.claim("0xa");
    const id = await env.tracker.open("account:a", 1, "0xa", [refused, { ref: "0xa" }]);
    await env.tracker.settle(id, 1, "0xa", { ok: false, code: "SUBMISSION_FAILED", details: tx(4).txHash });
    const read = await env.status.read(id);
    expect(read.ok && read.value.items?.map((item) => item.state)).toEqual(["refused", "failed"]);
  });
});

describe("onSettled (the seam of submission.settled)", () => {
  test("is called once per submission when its outcome is kept, by the relay or by the reconciler", async () => {
    const records = fakeSubmissionRecords();
    const replay = fakeReplayStore();
    const clock = fakeClock();
    const settled: string[] = [];
    const onSettled = ({ submissionId, outcome }: { submissionId: string; outcome: { state: string } }) => {
      settled.push(`${submissionId}:${outcome.state}`);
      return Promise.resolve();
    };
    const tracker = createSubmissionTracker({ records, random: fakeRandom(), clock, onSettled });
    const claim = (key: string) => replay.claim({ key, chainId: 1, attester: "0xa", nonce: BigInt(key.length), deadline: 2_000_000_000n, createdAtMs: 1 });
    await claim("0xa1");
    const a = await tracker.open("account:a", 1, "0xa1");
    await tracker.settle(a, 1, "0xa1", { ok: false, code: "OUTCOME_UNKNOWN", details: tx(9).txHash });
    await tracker.settle(a, 1, "0xa1", { ok: true, value: { txHash: tx(9).txHash, uid: null, blockNumber: 3n } });
    await tracker.settle(a, 1, "0xa1", { ok: false, code: "SUBMISSION_FAILED" });
    await claim("0xb22");
    const b = await tracker.open("account:a", 1, "0xb22");
    const book = trackedBook(replayBook(replay, 1), { records, clock, onSettled });
    await book.reverted("0xb22", tx(8).txHash, 4n);
    await book.reverted("0xb22", tx(8).txHash, 4n);
    expect(settled).toEqual([`${a}:mined`, `${b}:failed`]);
  });
});
