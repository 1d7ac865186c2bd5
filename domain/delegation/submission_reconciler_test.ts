import { describe, expect, test } from "bun:test";
import { encodeFunctionData, serializeTransaction } from "viem";
import type { HexString, SignedTx } from "../../ports/eas.ts";
import { fakeClock, fakeEasReader, fakeReplayStore, fakeTxReplacements, fakeWriteLedger, NO_BLOCK_READS } from "../../ports/fakes/mod.ts";
import type { BlockStamp, PendingBlock, Rebroadcast, TxStatus, TxStatusReader } from "../../ports/submissions.ts";
import { EAS_ABI } from "../eas_abi.ts";
import { createSubmissionReconciler, replayBook, type SubmissionReconcilerDeps, witnessBook } from "./submission_reconciler.ts";

const tx = (name: string, nonce: number): SignedTx => ({
  txHash: `0x${name}` as HexString,
  raw: `0x02${name}` as HexString,
  wallet: "0x00000000000000000000000000000000000000aa",
  nonce,
});

/** A chain answering from a table, recording rebroadcasts. */
function fakeChain(statuses: Record<string, TxStatus>, rebroadcastAnswer: Rebroadcast = "accepted") {
  const chain = {
    ...NO_BLOCK_READS,
    statuses,
    rebroadcasts: [] as string[],
    rebroadcastAnswer,
    status: (hash: HexString) => Promise.resolve(chain.statuses[hash] ?? { status: "not-found" as const }),
    rebroadcast(signed: SignedTx) {
      chain.rebroadcasts.push(signed.txHash);
      return Promise.resolve(chain.rebroadcastAnswer);
    },
  };
  return chain;
}

const claim = (key: string, nonce: bigint, createdAtMs: number) => ({
  key,
  chainId: 1,
  attester: "0xatt",
  nonce,
  deadline: 2_000_000_000n,
  createdAtMs,
});

describe("createSubmissionReconciler()", () => {
  test("settles delegated submissions: mined recorded, replaced and checked released, lost rebroadcast, pending kept", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    const rows: [string, number, string | undefined][] = [
      ["mined", 0, "sent"],
      ["reverted", 1, "sent"],
      ["replaced", 2, "sent"],
      ["lost", 3, "signed"],
      ["pending", 4, "sent"],
      ["down", 5, "sent"],
      ["checked", 6, undefined],
    ];
    for (const [key, nonce, state] of rows) {
      await replay.claim(claim(key, BigInt(nonce), 0));
      if (state !== undefined) await replay.markSigned(1, key, tx(key, nonce));
      if (state === "sent") await replay.markSent(1, key);
    }
    const chain = fakeChain({
      "0xmined": { status: "success", blockNumber: 9n, uid: `0x${"9".repeat(64)}` },
      "0xreverted": { status: "reverted", blockNumber: 9n },
      "0xreplaced": { status: "replaced" },
      "0xpending": { status: "pending" },
      "0xdown": { status: "rpc-error" },
    });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    // Its nonce taken is read once here: a relay record is released as `replaced` only on a second reading, five minutes on.
    expect(await reconcile()).toEqual({ mined: 1, reverted: 1, released: 1, rebroadcast: 1, bumped: 0, open: 4 });
    expect(Object.fromEntries([...replay.rows.values()].map((r) => [r.key, r.state]))).toEqual({
      mined: "mined",
      reverted: "reverted",
      replaced: "sent",
      lost: "signed",
      pending: "sent",
      down: "sent",
    });
    expect((await replay.find(1, "mined"))?.uid).toBe(`0x${"9".repeat(64)}`);
    expect(chain.rebroadcasts).toEqual(["0xlost"]);
    clock.set(1_000_000 + 5 * 60_000);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect(await replay.find(1, "replaced")).toBeUndefined();
  });

  test("the items of a batch share one transaction: each is recorded with its own uid (issue 36)", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    for (const [i, key] of ["0xsig-a", "0xsig-b"].entries()) {
      await replay.claim({ ...claim(key, BigInt(i), 0) });
      await replay.markSigned(1, key, tx("batch", 0));
      await replay.markSent(1, key);
    }
    const uids = new Map([["0xsig-a", `0x${"a".repeat(64)}` as HexString], ["0xsig-b", `0x${"b".repeat(64)}` as HexString]]);
    const chain = fakeChain({ "0xbatch": { status: "success", blockNumber: 3n, uid: `0x${"a".repeat(64)}`, uidsBySignature: uids } });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ mined: 2 });
    expect([(await replay.find(1, "0xsig-a"))?.uid, (await replay.find(1, "0xsig-b"))?.uid]).toEqual([uids.get("0xsig-a"), uids.get("0xsig-b")]);
  });

  test("a batch's item is handed to its book with every item's uid of the receipt, so the batch's submission keeps them all (issue 36)", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    for (const [i, key] of ["0xsig-a", "0xsig-b"].entries()) {
      await replay.claim({ ...claim(key, BigInt(i), 0) });
      await replay.markSigned(1, key, tx("batch", 0));
      await replay.markSent(1, key);
    }
    const uids = new Map([["0xsig-a", `0x${"a".repeat(64)}` as HexString], ["0xsig-b", `0x${"b".repeat(64)}` as HexString]]);
    const chain = fakeChain({ "0xbatch": { status: "success", blockNumber: 3n, uid: `0x${"a".repeat(64)}`, uidsBySignature: uids } });
    const seen: { id: string; uid: string | null; uids: ReadonlyMap<string, string> | undefined }[] = [];
    const book = replayBook(replay, 1);
    const watched = { ...book, mined: async (id: string, outcome: Parameters<typeof book.mined>[1]) => {
      seen.push({ id, uid: outcome.uid, uids: outcome.uids });
      await book.mined(id, outcome);
    } };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [watched], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    await reconcile();
    expect(seen.map((s) => [s.id, s.uid, s.uids]).sort()).toEqual([["0xsig-a", uids.get("0xsig-a"), uids], ["0xsig-b", uids.get("0xsig-b"), uids]]);
  });

  test("a lost transaction whose every rebroadcast answers no verdict (rpc-error) is kept open, then released once that lasted lostAfterMs without a break", async () => {
    // A node whose reads work and whose sends answer -32603, -32005 or 429 kept the record open for ever: 409 DUPLICATE,
    // the bytes sent again every round. Counted from the first such round, never from the record's creation (found in
    // review: an old record whose bytes the pool evicted was released on its first rate-limited resend).
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    await replay.claim(claim("stuck", 0n, 0));
    await replay.markSigned(1, "stuck", tx("stuck", 0));
    await replay.markSent(1, "stuck");
    const chain = fakeChain({ "0xstuck": { status: "pending" } }, "rpc-error");
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    // Pending a long while, then evicted: the first silent round is long past the record's creation, and keeps it.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    chain.statuses = {};
    clock.set(1_260_000);
    expect(await reconcile()).toMatchObject({ released: 0, rebroadcast: 0, open: 1 });
    clock.set(1_500_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // A break (the node holds it again) starts the count anew.
    chain.statuses = { "0xstuck": { status: "pending" } };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    chain.statuses = {};
    clock.set(1_800_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(2_399_999);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(replay.rows.size).toBe(1);
    clock.set(2_400_000);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(replay.rows.size).toBe(0);
    expect(chain.rebroadcasts).toEqual(["0xstuck", "0xstuck", "0xstuck", "0xstuck", "0xstuck"]);
  });

  test("a lost transaction the node refuses again is released; rows younger than the grace are left to their request", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    await replay.claim(claim("old", 0n, 0));
    await replay.markSigned(1, "old", tx("old", 0));
    await replay.claim(claim("young", 1n, 990_000));
    await replay.claim(claim("young-signed", 2n, 990_000));
    await replay.markSigned(1, "young-signed", tx("young-signed", 2));
    const chain = fakeChain({}, "refused");
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ released: 1, rebroadcast: 0 });
    expect([...replay.rows.values()].map((r) => r.key).sort()).toEqual(["young", "young-signed"]);
    // At start-up on a database of its own, nothing is in flight: everything open is settled.
    expect(await reconcile({ graceMs: 0 })).toMatchObject({ released: 2 });
    expect(replay.rows.size).toBe(0);
  });

  test("witness writes: mined is charged, reverted and replaced given back, pending kept reserved whatever its age", async () => {
    const clock = fakeClock(10_000_000);
    const ledger = fakeWriteLedger();
    const add = async (id: string, nonce: number | undefined, sent = true) => {
      await ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs: 0 }, 100);
      if (nonce !== undefined) await ledger.markSigned(id, tx(id, nonce), 0);
      if (nonce !== undefined && sent) await ledger.markSent(id, 0);
    };
    await add("mined", 0);
    await add("reverted", 1);
    await add("replaced", 2);
    await add("pending", 3);
    await add("crashed-before-signing", undefined);
    await add("crashed-before-sending", 4, false);
    const chain = fakeChain({
      "0xmined": { status: "success", blockNumber: 77n, uid: `0x${"7".repeat(64)}` },
      "0xreverted": { status: "reverted", blockNumber: 9n },
      "0xreplaced": { status: "replaced" },
      "0xpending": { status: "pending" },
    });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    // Its nonce taken is read twice, five minutes apart, before a sponsored write is given back as `replaced`.
    expect(await reconcile()).toEqual({ mined: 1, reverted: 1, released: 1, rebroadcast: 1, bumped: 0, open: 3 });
    expect(Object.fromEntries([...ledger.writes.values()].map((w) => [w.id, w.state]))).toEqual({
      mined: "committed",
      reverted: "released",
      replaced: "broadcast",
      pending: "broadcast",
      "crashed-before-signing": "released",
      "crashed-before-sending": "signed",
    });
    expect(await ledger.usage("a", 2026)).toEqual({ used: 1, reserved: 3 });
    expect(chain.rebroadcasts).toEqual(["0xcrashed-before-sending"]);
    chain.statuses["0xcrashed-before-sending"] = { status: "success", blockNumber: 78n, uid: null };
    chain.statuses["0xpending"] = { status: "success", blockNumber: 78n, uid: null };
    clock.set(10_300_000);
    expect(await reconcile()).toMatchObject({ mined: 2, released: 1, open: 0 });
    expect((await ledger.find("replaced"))?.state).toBe("released");
    expect(await ledger.usage("a", 2026)).toEqual({ used: 3, reserved: 0 });
  });

  test("a write stored with its hash only (before transactions were stored) is released once stale, never rebroadcast", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    for (const [id, createdAtMs] of [["stale", 0], ["recent", 900_000]] as const) {
      await ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs }, 100);
      ledger.writes.set(id, { ...ledger.writes.get(id)!, state: "broadcast", txHash: `0x${id}` });
    }
    const chain = fakeChain({});
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ released: 1, rebroadcast: 0, bumped: 0, open: 1 });
    expect([(await ledger.find("stale"))?.state, (await ledger.find("recent"))?.state]).toEqual(["released", "broadcast"]);
    expect(chain.rebroadcasts).toEqual([]);
  });

  test("a delegated transaction the node no longer finds, its wallet nonce spent: mined when the attester's EAS nonce moved past the signature's", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    for (const [key, nonce] of [["landed", 0n], ["never", 1n]] as const) {
      await replay.claim({ ...claim(key, nonce, 0), attester: key });
      await replay.markSigned(1, key, tx(key, Number(nonce)));
      await replay.markSent(1, key);
    }
    const eas = fakeEasReader();
    eas.nonces.set("landed", 1n);
    eas.nonces.set("never", 1n);
    const chain = fakeChain({ "0xlanded": { status: "replaced" }, "0xnever": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1, eas)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ mined: 1, released: 0 });
    expect(await replay.find(1, "landed")).toMatchObject({ state: "mined", txHash: "0xlanded", uid: null });
    // Its nonce read taken again five minutes on: released.
    clock.set(1_000_000 + 5 * 60_000);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect(await replay.find(1, "never")).toBeUndefined();
    eas.failing = true;
    await replay.claim({ ...claim("unknown", 0n, 0), attester: "unknown" });
    await replay.markSigned(1, "unknown", tx("unknown", 2));
    chain.statuses["0xunknown"] = { status: "replaced" };
    expect(await reconcile()).toMatchObject({ open: 1, released: 0 });
  });
});

describe("createSubmissionReconciler() fee bumps", () => {
  async function pendingSubmission(createdAtMs = 0) {
    const replay = fakeReplayStore();
    await replay.claim(claim("stuck", 0n, createdAtMs));
    await replay.markSigned(1, "stuck", tx("stuck", 0));
    await replay.markSent(1, "stuck");
    return replay;
  }
  /** A chain where the stuck transaction stays pending; replacements are named bump1, bump2, ... */
  function bumpingChain(statuses: Record<string, TxStatus>) {
    const chain = fakeChain({ "0xstuck": { status: "pending" }, ...statuses });
    const signed: string[] = [];
    return {
      chain,
      signed,
      reader: {
        ...NO_BLOCK_READS,
        status: chain.status,
        rebroadcast: chain.rebroadcast,
        replacement(of: SignedTx) {
          signed.push(of.txHash);
          return Promise.resolve(tx(`bump${signed.length}`, of.nonce));
        },
      },
    };
  }

  test("a transaction pending past the threshold is replaced (stored, then sent); not before; at most maxBumps times", async () => {
    const clock = fakeClock(60_000);
    const replay = await pendingSubmission();
    const replacements = fakeTxReplacements();
    const { chain, signed, reader } = bumpingChain({ "0xbump1": { status: "pending" }, "0xbump2": { status: "pending" } });
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000, maxBumps: 2,
    });
    expect(await reconcile()).toMatchObject({ bumped: 0, open: 1 });
    clock.set(120_000);
    expect(await reconcile()).toMatchObject({ bumped: 1, open: 1 });
    expect(replacements.rows.map((r) => r.tx.txHash)).toEqual(["0xbump1"]);
    expect(chain.rebroadcasts).toEqual(["0xbump1"]);
    // The next bump waits for the threshold again, counted from the last replacement, and replaces the newest.
    clock.set(200_000);
    expect(await reconcile()).toMatchObject({ bumped: 0 });
    clock.set(240_000);
    expect(await reconcile()).toMatchObject({ bumped: 1 });
    expect(signed).toEqual(["0xstuck", "0xbump1"]);
    clock.set(1_000_000);
    expect(await reconcile()).toMatchObject({ bumped: 0, open: 1 });
    expect((await replay.find(1, "stuck"))?.state).toBe("sent");
  });

  test("the items of one batch share its fee bumps: one replacement signed and sent per round, kept for every item, which all settle with their uids (issue 36)", async () => {
    const clock = fakeClock(60_000);
    const replay = fakeReplayStore();
    for (const [i, key] of ["0xsig-a", "0xsig-b", "0xsig-c"].entries()) {
      await replay.claim(claim(key, BigInt(i), 0));
      await replay.markSigned(1, key, tx("stuck", 0));
      await replay.markSent(1, key);
    }
    const replacements = fakeTxReplacements();
    const { chain, signed, reader } = bumpingChain({ "0xbump1": { status: "pending" } });
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    clock.set(120_000);
    expect(await reconcile()).toMatchObject({ bumped: 1, open: 3 });
    expect([signed, chain.rebroadcasts]).toEqual([["0xstuck"], ["0xbump1"]]);
    expect(replacements.rows.map((r) => [r.id, r.tx.txHash]).sort()).toEqual([["0xsig-a", "0xbump1"], ["0xsig-b", "0xbump1"], ["0xsig-c", "0xbump1"]]);
    const uids = new Map([["0xsig-a", `0x${"a".repeat(64)}` as HexString], ["0xsig-b", `0x${"b".repeat(64)}` as HexString], ["0xsig-c", `0x${"c".repeat(64)}` as HexString]]);
    chain.statuses["0xbump1"] = { status: "success", blockNumber: 9n, uid: uids.get("0xsig-a")!, uidsBySignature: uids };
    chain.statuses["0xstuck"] = { status: "replaced" };
    expect(await reconcile()).toMatchObject({ mined: 3, open: 0 });
    for (const [key, uid] of uids) expect(await replay.find(1, key)).toMatchObject({ state: "mined", txHash: "0xbump1", uid });
  });

  test("the other items of a batch keep the round's replacement even though the node no longer holds the transaction it replaced; none is released (issue 36)", async () => {
    const clock = fakeClock(120_000);
    const replay = fakeReplayStore();
    const keys = ["0xsig-a", "0xsig-b", "0xsig-c"];
    for (const [i, key] of keys.entries()) {
      await replay.claim(claim(key, BigInt(i), 0));
      await replay.markSigned(1, key, tx("stuck", 0));
      await replay.markSent(1, key);
    }
    const replacements = fakeTxReplacements();
    const { chain, reader } = bumpingChain({});
    // As a node does: the replacement takes the stuck transaction's place in its pool (the nonce still free, the
    // stuck hash unknown), and the stuck bytes sent again are refused as underpriced.
    reader.rebroadcast = (signed: SignedTx) => {
      chain.rebroadcasts.push(signed.txHash);
      if (signed.txHash === "0xstuck") return Promise.resolve("refused" as const);
      chain.statuses["0xstuck"] = { status: "not-found" };
      chain.statuses[signed.txHash] = { status: "pending" };
      return Promise.resolve("accepted" as const);
    };
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    expect(await reconcile()).toMatchObject({ bumped: 1, released: 0, rebroadcast: 0, open: 3 });
    expect(chain.rebroadcasts).toEqual(["0xbump1"]);
    for (const key of keys) {
      expect((await replay.find(1, key))?.state).toBe("sent");
      expect((await replacements.list("delegated_attestations", 1, key)).map((r) => r.tx.txHash)).toEqual(["0xbump1"]);
    }
    // The next round finds every item's newest transaction pending, and bumps nothing before its time.
    expect(await reconcile()).toMatchObject({ bumped: 0, released: 0, open: 3 });
  });

  test("silence is broken for every item of a batch when the first finds their transaction pending, and not by a failed status read", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    for (const [i, key] of ["0xsig-a", "0xsig-b"].entries()) {
      await replay.claim(claim(key, BigInt(i), 0));
      await replay.markSigned(1, key, tx("stuck", 0));
      await replay.markSent(1, key);
    }
    const replacements = fakeTxReplacements();
    const { chain, reader } = bumpingChain({ "0xstuck": { status: "not-found" } });
    let sends: "accepted" | "rpc-error" = "rpc-error";
    reader.rebroadcast = (signed: SignedTx) => {
      chain.rebroadcasts.push(signed.txHash);
      return Promise.resolve(sends);
    };
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    // Both items silent from 1,000,000.
    expect(await reconcile()).toMatchObject({ released: 0, open: 2 });
    // Six minutes on the node holds the transaction again: the first item bumps it, the second keeps the round's bump.
    clock.set(1_360_000);
    chain.statuses = { "0xstuck": { status: "pending" }, "0xbump1": { status: "pending" } };
    sends = "accepted";
    expect(await reconcile()).toMatchObject({ bumped: 1, released: 0, open: 2 });
    // Then both are evicted and every resend gets no verdict: both silent again from 1,420,000.
    clock.set(1_420_000);
    chain.statuses = { "0xstuck": { status: "not-found" }, "0xbump1": { status: "not-found" } };
    sends = "rpc-error";
    expect(await reconcile()).toMatchObject({ released: 0, open: 2 });
    // Past ten minutes from the first silence, not from the second: neither is released (the second item was, before).
    clock.set(1_700_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 2 });
    // A status read that fails is no break.
    clock.set(1_800_000);
    chain.statuses = { "0xbump1": { status: "rpc-error" } };
    expect(await reconcile()).toMatchObject({ released: 0, open: 2 });
    chain.statuses = { "0xstuck": { status: "not-found" }, "0xbump1": { status: "not-found" } };
    clock.set(2_020_000);
    expect(await reconcile()).toMatchObject({ released: 2, open: 0 });
    expect(replay.rows.size).toBe(0);
  });

  test("whichever transaction of the submission is mined settles it: the replacement, or the original after all", async () => {
    for (const [mined, expected] of [["0xbump1", "0xbump1"], ["0xstuck", "0xstuck"]] as const) {
      const clock = fakeClock(1_000_000);
      const replay = await pendingSubmission();
      const replacements = fakeTxReplacements();
      await replacements.add("delegated_attestations", 1, "stuck", { tx: tx("bump1", 0), createdAtMs: 500_000 });
      const { reader } = bumpingChain({
        "0xstuck": mined === "0xstuck" ? { status: "success", blockNumber: 5n, uid: null } : { status: "replaced" },
        "0xbump1": mined === "0xbump1" ? { status: "success", blockNumber: 5n, uid: null } : { status: "replaced" },
      });
      const reconcile = createSubmissionReconciler({
        chainId: 1,
        books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
      });
      expect(await reconcile()).toMatchObject({ mined: 1, released: 0 });
      expect(await replay.find(1, "stuck")).toMatchObject({ state: "mined", txHash: expected });
    }
  });

  test("a replacement the node refuses while the original is still in its pool keeps the submission open, never released", async () => {
    const clock = fakeClock(1_000_000);
    const replay = await pendingSubmission();
    const replacements = fakeTxReplacements();
    await replacements.add("delegated_attestations", 1, "stuck", { tx: tx("bump1", 0), createdAtMs: 900_000 });
    const { chain, reader } = bumpingChain({});
    chain.rebroadcastAnswer = "refused";
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect((await replay.find(1, "stuck"))?.state).toBe("sent");
    // Once neither is anywhere (dropped from the pool, the nonce free), it is released as before.
    chain.statuses["0xstuck"] = { status: "not-found" };
    expect(await reconcile()).toMatchObject({ released: 1 });
  });

  test("the newest replacement by time is the one the node should hold, in whatever order the store was given them", async () => {
    const clock = fakeClock(1_000_000);
    const replay = await pendingSubmission();
    const replacements = fakeTxReplacements();
    await replacements.add("delegated_attestations", 1, "stuck", { tx: tx("bump2", 0), createdAtMs: 900_000 });
    await replacements.add("delegated_attestations", 1, "stuck", { tx: tx("bump1", 0), createdAtMs: 500_000 });
    // As a node holds them: the newest in its pool, those it replaced gone from it (their nonce not taken yet).
    const { chain, signed, reader } = bumpingChain({ "0xstuck": { status: "not-found" }, "0xbump1": { status: "not-found" }, "0xbump2": { status: "pending" } });
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [replayBook(replay, 1)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    // 0xbump2 is pending and only 100 s old: nothing to bump, resend or give back.
    expect(await reconcile()).toMatchObject({ bumped: 0, released: 0, rebroadcast: 0, open: 1 });
    expect([signed, chain.rebroadcasts]).toEqual([[], []]);
    expect((await replay.find(1, "stuck"))?.state).toBe("sent");
  });

  test("a witness whose original transaction was mined after a bump is charged, not given back", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await ledger.reserve({ id: "w1", accountId: "a", year: 2027, fingerprint: "f", createdAtMs: 0 }, 10);
    await ledger.markSigned("w1", tx("w1", 3), 0);
    await ledger.markSent("w1", 0);
    const replacements = fakeTxReplacements();
    await replacements.add("sponsored_writes", 1, "w1", { tx: tx("w1bump", 3), createdAtMs: 500_000 });
    const { reader } = bumpingChain({ "0xw1": { status: "success", blockNumber: 7n, uid: null }, "0xw1bump": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000,
    });
    expect(await reconcile()).toMatchObject({ mined: 1, released: 0 });
    expect((await ledger.find("w1"))?.state).toBe("committed");
  });
});

describe("createSubmissionReconciler() fee bumps with one signature live on two chains (decisions §30)", () => {
  test("each chain's reconciler stores and reads its own bumps: B's transaction dropped from B's pool is sent again, not given back, and B's own is replaced", async () => {
    const clock = fakeClock(120_000);
    const replay = fakeReplayStore();
    const replacements = fakeTxReplacements();
    // The same signature accepted on chains A (31337) and B (31338): two records under one key, two transactions.
    for (const [chainId, sent] of [[31337, tx("a0", 5)], [31338, tx("b0", 9)]] as const) {
      await replay.claim({ ...claim("0xsig", 0n, 0), chainId });
      await replay.markSigned(chainId, "0xsig", sent);
      await replay.markSent(chainId, "0xsig");
    }
    /** A chain's node: its statuses; bytes of another chain are refused (their chain id is not its own). */
    const node = (prefix: string, statuses: Record<string, TxStatus>) => {
      const chain = fakeChain(statuses);
      const replaced: string[] = [];
      const reader = {
        ...NO_BLOCK_READS,
        status: chain.status,
        rebroadcast(signed: SignedTx) {
          chain.rebroadcasts.push(signed.txHash);
          if (!signed.txHash.startsWith(`0x${prefix}`)) return Promise.resolve("refused" as const);
          chain.statuses[signed.txHash] = { status: "pending" };
          return Promise.resolve("accepted" as const);
        },
        replacement(of: SignedTx) {
          replaced.push(of.txHash);
          return Promise.resolve(tx(`${prefix}${replaced.length}`, of.nonce));
        },
      };
      return { chain, replaced, reader };
    };
    const a = node("a", { "0xa0": { status: "pending" } });
    const b = node("b", {});
    const on = (chainId: number, txStatus: typeof a.reader) =>
      createSubmissionReconciler({ chainId, books: [replayBook(replay, chainId)], txStatus, clock, graceMs: 0, lostAfterMs: 600_000, replacements, bumpAfterMs: 120_000 });
    expect(await on(31337, a.reader)()).toMatchObject({ bumped: 1 });
    expect(replacements.rows.map((r) => [r.chainId, r.id, r.tx.txHash])).toEqual([[31337, "0xsig", "0xa1"]]);
    expect(await on(31338, b.reader)()).toMatchObject({ rebroadcast: 1, released: 0, bumped: 0 });
    expect(b.chain.rebroadcasts).toEqual(["0xb0"]);
    expect((await replay.find(31338, "0xsig"))?.state).toBe("sent");
    clock.set(240_000);
    expect(await on(31338, b.reader)()).toMatchObject({ bumped: 1, released: 0 });
    expect(b.replaced).toEqual(["0xb0"]);
    expect((await replacements.list("delegated_attestations", 31338, "0xsig")).map((r) => r.tx.txHash)).toEqual(["0xb1"]);
    expect((await replacements.list("delegated_attestations", 31337, "0xsig")).map((r) => r.tx.txHash)).toEqual(["0xa1"]);
  });
});

describe("createSubmissionReconciler() order", () => {
  test("lost transactions are resent lowest wallet nonce first, whatever order their submissions were created in", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    for (const [key, nonce, createdAtMs] of [["c", 7, 10], ["a", 5, 30], ["b", 6, 20]] as const) {
      await replay.claim({ ...claim(key, BigInt(nonce), createdAtMs), attester: `0x${key}` });
      await replay.markSigned(1, key, tx(key, nonce));
      await replay.markSent(1, key);
    }
    const chain = fakeChain({});
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    await reconcile();
    expect(chain.rebroadcasts).toEqual(["0xa", "0xb", "0xc"]);
  });
});

describe("createSubmissionReconciler() saves the chain before it records", () => {
  /** Three charged witnesses: one mined, one reverted, one lost that the resend mines (a devnet mines on arrival). */
  async function witnesses(saveChain: () => Promise<void>) {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    for (const [id, nonce] of [["w-mined", 0], ["w-reverted", 1], ["w-lost", 2]] as const) {
      await ledger.reserve({ id, accountId: "a", year: 2027, fingerprint: id, createdAtMs: 0 }, 10);
      await ledger.markSigned(id, tx(id.slice(2), nonce), 0);
      await ledger.markSent(id, 0);
    }
    const chain = fakeChain({
      "0xmined": { status: "success", blockNumber: 7n, uid: null },
      "0xreverted": { status: "reverted", blockNumber: 7n },
    });
    const resend = chain.rebroadcast;
    chain.rebroadcast = (signed: SignedTx) => {
      chain.statuses[signed.txHash] = { status: "success", blockNumber: 8n, uid: null };
      return resend(signed);
    };
    const events: string[] = [];
    const book = witnessBook(ledger, clock);
    const watched = {
      ...book,
      mined: (id: string, outcome: Parameters<typeof book.mined>[1]) => (events.push(`mined ${id}`), book.mined(id, outcome)),
      reverted: (id: string, txHash: string, blockNumber: bigint) => (events.push(`reverted ${id}`), book.reverted(id, txHash, blockNumber)),
    };
    const reconcile = createSubmissionReconciler({
      chainId: 1,
      books: [watched], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000,
      saveChain: async () => {
        events.push("save");
        await saveChain();
      },
    });
    return { reconcile, ledger, events, chain };
  }

  test("each outcome, a resent transaction's included, is recorded only after the chain is saved", async () => {
    const { reconcile, ledger, events, chain } = await witnesses(() => Promise.resolve());
    expect(await reconcile()).toMatchObject({ mined: 2, reverted: 1, rebroadcast: 1, open: 0 });
    expect(chain.rebroadcasts).toEqual(["0xlost"]);
    expect(events).toEqual(["save", "mined w-mined", "save", "reverted w-reverted", "save", "mined w-lost"]);
    expect((await ledger.find("w-lost"))?.state).toBe("committed");
  });

  test("a save that fails records nothing: every write stays open for the next round", async () => {
    const { reconcile, ledger, events } = await witnesses(() => Promise.reject(new Error("disk full")));
    await expect(reconcile()).rejects.toThrow("disk full");
    expect(events).toEqual(["save"]);
    for (const id of ["w-mined", "w-reverted", "w-lost"]) expect((await ledger.find(id))?.state).toBe("broadcast");
  });
});

describe("sponsored writes on several chains (decisions §30)", () => {
  test("each chain's book holds the rows written on that chain; a row that names none is the default chain's", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    const reserve = (id: string, chainId?: number) =>
      ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs: 1, ...(chainId === undefined ? {} : { chainId }) }, 10);
    await reserve("old");
    await reserve("on-a", 31337);
    await reserve("on-b", 31338);
    const ids = async (book: ReturnType<typeof witnessBook>) => (await book.open(clock.nowMs())).map((w) => w.id).sort();
    expect(await ids(witnessBook(ledger, clock, { chainId: 31337, isDefault: true }))).toEqual(["old", "on-a"]);
    expect(await ids(witnessBook(ledger, clock, { chainId: 31338, isDefault: false }))).toEqual(["on-b"]);
    expect(await ids(witnessBook(ledger, clock))).toEqual(["old", "on-a", "on-b"]);
  });

  test("a row left open on chain B is settled by chain B's reconciler, read on B; chain A's never asks for it", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await ledger.reserve({ id: "w-b", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 1, chainId: 31338 }, 10);
    await ledger.markSigned("w-b", tx("b1", 0), 2);
    await ledger.markSent("w-b", 2);
    const chainA = fakeChain({});
    const chainB = fakeChain({ "0xb1": { status: "success", blockNumber: 9n, uid: "0xu" } });
    const on = (chainId: number, isDefault: boolean, txStatus: ReturnType<typeof fakeChain>) =>
      createSubmissionReconciler({ chainId, books: [witnessBook(ledger, clock, { chainId, isDefault })], txStatus, clock, graceMs: 0, lostAfterMs: 600_000 });
    await on(31337, true, chainA)({});
    expect((await ledger.find("w-b"))?.state).toBe("broadcast");
    await on(31338, false, chainB)({});
    expect(await ledger.find("w-b")).toMatchObject({ state: "committed", txHash: "0xb1", blockNumber: 9n, chainId: 31338 });
  });
});

describe("a lost transaction carrying a signed deadline, whose resends get no verdict", () => {
  const EAS_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString;
  const SCHEMA = `0x${"5c".repeat(32)}` as HexString;
  const ZERO = `0x${"00".repeat(32)}` as HexString;
  const data = { recipient: EAS_ADDRESS, expirationTime: 0n, revocable: true, refUID: ZERO, data: "0x1234" as HexString, value: 0n };
  const signature = { v: 27, r: `0x${"01".repeat(32)}` as HexString, s: `0x${"11".repeat(32)}` as HexString };
  const attester = "0x00000000000000000000000000000000000000a1" as HexString;
  const DEADLINE = 2_000_000_000n;
  /** Our clock ten minutes before the deadline: close enough for the chain's blocks to be read for it. */
  const NEAR_MS = Number(DEADLINE) * 1000 - 600_000;

  /** A stored transaction carrying `data` (unsigned bytes suffice: only its calldata is read). */
  const stored = (name: string, nonce: number, call: HexString): SignedTx => ({
    txHash: `0x${name}` as HexString,
    raw: serializeTransaction({ chainId: 1, type: "eip1559", nonce, to: EAS_ADDRESS, data: call, gas: 300_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n }),
    wallet: "0x00000000000000000000000000000000000000aa",
    nonce,
  });
  const delegatedTx = (name: string, nonce: number, deadline: bigint) =>
    stored(name, nonce, encodeFunctionData({ abi: EAS_ABI, functionName: "attestByDelegation", args: [{ schema: SCHEMA, data, signature, attester, deadline }] }));
  const batchTx = (name: string, nonce: number, deadlines: bigint[]) =>
    stored(name, nonce, encodeFunctionData({
      abi: EAS_ABI,
      functionName: "multiAttestByDelegation",
      args: [deadlines.map((deadline) => ({ schema: SCHEMA, data: [data], signatures: [signature], attester, deadline }))],
    }));
  const witnessTx = (name: string, nonce: number) =>
    stored(name, nonce, encodeFunctionData({ abi: EAS_ABI, functionName: "attest", args: [{ schema: SCHEMA, data }] }));

  /**
   * Every hash unknown with its nonce free, every resend no verdict; the latest block (number `head`, timestamp `time`,
   * none while undefined), the `pending` block and the wallet's count at any block as set; each read counted.
   */
  function silentChain() {
    const chain = {
      ...fakeChain({}, "rpc-error"),
      time: undefined as bigint | undefined,
      head: 100n,
      pending: undefined as PendingBlock | undefined,
      count: 0n as bigint | undefined,
      timeReads: 0,
      pendingReads: 0,
      countReads: [] as string[],
      onTimeRead: () => {},
      latestBlock(): Promise<BlockStamp | undefined> {
        chain.timeReads++;
        chain.onTimeRead();
        return Promise.resolve(chain.time === undefined ? undefined : { number: chain.head, hash: blockHash(chain.head), timestamp: chain.time });
      },
      pendingBlock() {
        chain.pendingReads++;
        return Promise.resolve(chain.pending);
      },
      nonceAt(wallet: string, blockNumber: bigint) {
        chain.countReads.push(`${wallet}@${blockNumber}`);
        return Promise.resolve(chain.count);
      },
    };
    return chain;
  }
  const blockHash = (number: bigint) => `0x${number.toString(16).padStart(64, "0")}` as HexString;

  async function relayRecord(replay: ReturnType<typeof fakeReplayStore>, key: string, signed: SignedTx) {
    await replay.claim({ ...claim(key, 0n, 0), deadline: DEADLINE });
    await replay.markSigned(1, key, signed);
    await replay.markSent(1, key);
  }

  /**
   * The relay record `key` sent as `signed` (a signature's transaction of that name carrying DEADLINE unless given), a
   * silent chain whose latest block is stamped `time`, and chain 1's reconciler of the record: no grace, lostAfterMs 10
   * minutes, unless `options` say otherwise.
   */
  async function heldRecord(
    clock: ReturnType<typeof fakeClock>,
    key: string,
    time: bigint,
    options: { signed?: SignedTx } & Partial<SubmissionReconcilerDeps> = {},
  ) {
    const { signed = delegatedTx(key, 0, DEADLINE), ...deps } = options;
    const replay = fakeReplayStore();
    await relayRecord(replay, key, signed);
    const chain = silentChain();
    chain.time = time;
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000, ...deps });
    return { replay, chain, reconcile };
  }
  /** A quiet chain's `pending` block: built on the latest (100), stamped past the deadline, as the node would stamp it now. */
  const QUIET_PENDING: PendingBlock = { parentHash: blockHash(100n), timestamp: DEADLINE + 3_000n };

  test("a relay record with a future deadline is kept open past lostAfterMs, then released once the chain's latest block is past its deadline", async () => {
    const clock = fakeClock(1_000_000);
    const { replay, chain, reconcile } = await heldRecord(clock, "signed", DEADLINE - 600n);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // Silent for far longer than lostAfterMs: it could still land, so it is never released on that.
    for (const at of [1_600_000, 2_000_000, 5_000_000]) {
      clock.set(at);
      expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    }
    // The wall clock past the deadline proves nothing: the chain's clock is what EAS checks.
    clock.set(Number(DEADLINE + 3_600n) * 1000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // A block at the deadline still takes it (EAS refuses only `deadline < block.timestamp`), and a failed read says nothing.
    chain.time = DEADLINE;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    chain.time = undefined;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(await replay.find(1, "signed")).toMatchObject({ state: "sent" });
    // The latest block past the deadline, nothing on chain: no block to come can hold it.
    chain.time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(await replay.find(1, "signed")).toBeUndefined();
  });

  test("the deadline is the chain's, read before the transaction is asked about again: one mined in between is not released", async () => {
    const clock = fakeClock(NEAR_MS);
    const { replay, chain, reconcile } = await heldRecord(clock, "late", DEADLINE + 12n);
    // Mined in the last block at or before the deadline, between the round's first read and the block's.
    chain.onTimeRead = () => void (chain.statuses["0xlate"] = { status: "success", blockNumber: 5n, uid: `0x${"5".repeat(64)}` });
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(await reconcile()).toMatchObject({ mined: 1, released: 0 });
    expect(await replay.find(1, "late")).toMatchObject({ state: "mined", uid: `0x${"5".repeat(64)}` });
  });

  test("a batch's transaction is held until the chain passed its earliest deadline; a deadline of 0 (none in EAS) does not count", async () => {
    const clock = fakeClock(1_000_000);
    const { chain, reconcile } = await heldRecord(clock, "batch", DEADLINE, { signed: batchTx("batch", 0, [0n, DEADLINE + 100n, DEADLINE]) });
    clock.set(NEAR_MS);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    chain.time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 1 });
  });

  test("records with no deadline keep the silence release: a signature whose deadline is 0, a witness's own attest", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    await relayRecord(replay, "no-deadline", delegatedTx("no-deadline", 0, 0n));
    const ledger = fakeWriteLedger();
    await ledger.reserve({ id: "witness", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 0 }, 3);
    await ledger.markSigned("witness", witnessTx("witness", 1), 0);
    await ledger.markSent("witness", 0);
    // The chain's clock never reaches any deadline: only the silence can release these.
    const chain = silentChain();
    chain.time = 0n;
    const reconcile = createSubmissionReconciler({
      chainId: 1, books: [replayBook(replay, 1), witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000,
    });
    expect(await reconcile()).toMatchObject({ released: 0, open: 2 });
    clock.set(1_600_000);
    expect(await reconcile()).toMatchObject({ released: 2, open: 0 });
    expect([await replay.find(1, "no-deadline"), (await ledger.find("witness"))?.state]).toEqual([undefined, "released"]);
    expect(chain.timeReads).toBe(0);
  });

  test("a private relay's sponsored write carries its signature's deadline: held as the relay record is, given back once the chain passed it", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await ledger.reserve({ id: "private", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 0 }, 3);
    await ledger.markSigned("private", delegatedTx("private", 0, DEADLINE), 0);
    await ledger.markSent("private", 0);
    const chain = silentChain();
    chain.time = DEADLINE - 1n;
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(NEAR_MS);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect((await ledger.find("private"))?.state).toBe("broadcast");
    chain.time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect((await ledger.find("private"))?.state).toBe("released");
  });

  test("behind a load-balanced provider, a head past the deadline and an unknown transaction release nothing unless its nonce is free at that very block", async () => {
    const clock = fakeClock(NEAR_MS);
    // Backend A mined it in block 10, stamped at the deadline, its head (11) 12 s later; backend B, behind, knows
    // nothing of it and its latest count is 0: each status read reaches B, the block reads A.
    const { replay, chain, reconcile } = await heldRecord(clock, "balanced", DEADLINE + 12n);
    chain.head = 11n;
    chain.count = 1n;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(chain.countReads).toEqual(["0x00000000000000000000000000000000000000aa@11"]);
    // The count read at block 11 reaching B, which lacks that block: the call fails, nothing is proved.
    chain.count = undefined;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(await replay.find(1, "balanced")).toMatchObject({ state: "sent" });
    // Its nonce still free at a block past the deadline: no block to come can attest it.
    chain.count = 0n;
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
  });

  test("a chain that mines only on demand: released once its latest block stood still for QUIET_HEAD_MS and the pending block built on it is past the deadline", async () => {
    const clock = fakeClock(NEAR_MS + 3_600_000);
    // Its last block well before the deadline, none since; the node would stamp its next block now.
    const { chain, reconcile } = await heldRecord(clock, "quiet", DEADLINE - 100n, { minesOnDemand: true });
    chain.pending = QUIET_PENDING;
    // Still for less than QUIET_HEAD_MS (10 minutes): a backend behind the head would say the same.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(NEAR_MS + 3_600_000 + 599_999);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(chain.pendingReads).toBe(0);
    clock.set(NEAR_MS + 3_600_000 + 600_000);
    // A pending block built on another block (a backend whose head is elsewhere, or one answering `latest` for it).
    chain.pending = { parentHash: blockHash(99n), timestamp: DEADLINE + 3_000n };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // The node's own clock not past the deadline (a devnet running behind ours): our clock says nothing.
    chain.pending = { parentHash: blockHash(100n), timestamp: DEADLINE };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // A new block (still before the deadline): the count starts again.
    chain.head = 101n;
    chain.pending = { parentHash: blockHash(101n), timestamp: DEADLINE + 3_000n };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(NEAR_MS + 3_600_000 + 1_200_000);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(chain.countReads.at(-1)).toBe("0x00000000000000000000000000000000000000aa@101");
  });

  test("the block reads are required of every status reader: one without them held every record carrying a deadline for good", () => {
    // @ts-expect-error latestBlock, pendingBlock and nonceAt are required
    const reader: TxStatusReader = { status: () => Promise.resolve({ status: "not-found" }) };
    expect(reader.status).toBeDefined();
  });

  test("the chain's blocks are read once a round for all its rows, and not at all for a deadline still far ahead of our clock", async () => {
    const clock = fakeClock(NEAR_MS);
    const replay = fakeReplayStore();
    // Four attesters' records (each signature's EAS nonce 0), sent from the one delegate wallet.
    const record = async (key: string, nonce: number, deadline: bigint) => {
      await replay.claim({ ...claim(key, 0n, 0), attester: `0xatt${nonce}`, deadline });
      await replay.markSigned(1, key, delegatedTx(key, nonce, deadline));
      await replay.markSent(1, key);
    };
    for (const nonce of [0, 1, 2]) await record(`row${nonce}`, nonce, DEADLINE);
    await record("far", 3, DEADLINE + 7_200n);
    const chain = silentChain();
    chain.time = DEADLINE;
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ released: 0, open: 4 });
    expect([chain.timeReads, chain.countReads.length]).toEqual([1, 0]);
    chain.time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 3, open: 1 });
    // One latest block and one count (the rows share their wallet) for three rows.
    expect([chain.timeReads, chain.countReads.length]).toEqual([2, 1]);
    // Only the far one left: its deadline two hours ahead of our clock, nothing is read for it.
    chain.time = DEADLINE + 7_201n;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect([chain.timeReads, chain.countReads.length]).toEqual([2, 1]);
    clock.set(Number(DEADLINE + 7_200n) * 1000);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(chain.timeReads).toBe(3);
  });

  test("a chain not declared to mine on demand: a still head and a pending block past the deadline release nothing (a stalled node shows the same), a block past it does", async () => {
    const clock = fakeClock(NEAR_MS + 3_600_000);
    // A geth whose consensus client died: its latest frozen at 100, its pending built on it stamped by its own clock,
    // while the chain it no longer follows may have mined the transaction since.
    const { chain, reconcile } = await heldRecord(clock, "stalled", DEADLINE - 100n);
    chain.pending = QUIET_PENDING;
    for (const at of [0, 600_000, 3_600_000, 86_400_000]) {
      clock.set(NEAR_MS + 3_600_000 + at);
      expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    }
    expect(chain.pendingReads).toBe(0);
    // A block stamped past the deadline with the nonce free at it: proven.
    chain.head = 101n;
    chain.time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
  });

  test("the head's stillness is timed from when each block read resolved, not from the round's start", async () => {
    const start = NEAR_MS + 3_600_000;
    const clock = fakeClock(start);
    const { chain, reconcile } = await heldRecord(clock, "slow", DEADLINE - 100n, { minesOnDemand: true });
    chain.pending = QUIET_PENDING;
    // The first round's block read resolves five minutes after the round began (a slow node, many rows before it).
    chain.onTimeRead = () => {
      clock.set(start + 300_000);
      chain.onTimeRead = () => {};
    };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // Ten minutes after the first round began, five since the head was first seen: not yet still for QUIET_HEAD_MS.
    clock.set(start + 600_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(chain.pendingReads).toBe(0);
    clock.set(start + 900_000);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
  });

  test("the quiet head's wait is its own (10 minutes), not lostAfterMs", async () => {
    const start = NEAR_MS + 3_600_000;
    const clock = fakeClock(start);
    const { chain, reconcile } = await heldRecord(clock, "own", DEADLINE - 100n, { lostAfterMs: 60_000, minesOnDemand: true });
    chain.pending = QUIET_PENDING;
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(start + 60_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(start + 599_999);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(start + 600_000);
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
  });

  test("a round asked for while one runs is that round: its rows are not settled twice at once", async () => {
    const clock = fakeClock(NEAR_MS);
    const { chain, reconcile } = await heldRecord(clock, "once", DEADLINE - 100n);
    const [first, second] = await Promise.all([reconcile(), reconcile()]);
    expect(first).toMatchObject({ released: 0, open: 1 });
    expect(second).toEqual(first);
    expect(chain.rebroadcasts).toHaveLength(1);
    // Once it ended, the next call is a round of its own.
    await reconcile();
    expect(chain.rebroadcasts).toHaveLength(2);
  });

  test("a record held past its deadline by the wall clock, the chain proving nothing yet, is logged once (no signature in the line)", async () => {
    const clock = fakeClock(Number(DEADLINE) * 1000 - 1_000);
    const lines: { event: string; fields?: Record<string, unknown> }[] = [];
    const note = (event: string, fields?: Record<string, unknown>) => void lines.push({ event, fields });
    const log = { debug: note, info: note, warn: note, error: note };
    const { chain, reconcile } = await heldRecord(clock, "0xsignature", DEADLINE - 100n, { signed: delegatedTx("held", 0, DEADLINE), minesOnDemand: true, log });
    // Besu answers `pending` with its latest block: built on its parent, never on the head.
    chain.pending = { parentHash: blockHash(99n), timestamp: DEADLINE - 100n };
    // Before the deadline by our clock: nothing to say.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(lines).toEqual([]);
    for (const at of [2_000, 3_600_000, 7_200_000]) {
      clock.set(Number(DEADLINE) * 1000 + at);
      expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    }
    expect(lines).toEqual([{
      event: "submission_held_past_deadline",
      fields: { chainId: 1, txHash: "0xheld", deadline: Number(DEADLINE), latestBlock: { number: 100, timestamp: Number(DEADLINE) - 100 }, minesOnDemand: true },
    }]);
    expect(JSON.stringify(lines)).not.toContain("0xsignature");
  });
});

describe("writes given back on a cause that proves nothing (found in review)", () => {
  const DAY_MS = 24 * 60 * 60_000;
  /** A witness write signed and sent at 0; its stored bytes carry no deadline. */
  const sentWrite = async (ledger: ReturnType<typeof fakeWriteLedger>, id: string, nonce: number) => {
    await ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs: 0 }, 100);
    await ledger.markSigned(id, tx(id, nonce), 0);
    await ledger.markSent(id, 0);
  };
  /** Every resend of a stored transaction gets no verdict, but the ones named here, refused. */
  const chainRefusing = (refused: readonly string[], statuses: Record<string, TxStatus> = {}) => {
    const chain = fakeChain(statuses, "rpc-error");
    chain.rebroadcast = (signed: SignedTx) => {
      chain.rebroadcasts.push(signed.txHash);
      return Promise.resolve(refused.includes(signed.txHash) ? "refused" : "rpc-error");
    };
    return chain;
  };
  const causes = (ledger: ReturnType<typeof fakeWriteLedger>) => Object.fromEntries([...ledger.writes.values()].map((w) => [w.id, [w.state, w.releaseCause]]));

  test("each write is given back with why: its nonce taken (read twice) or nothing signed prove it cannot land; the silence, a refused resend and a hash-only row's loss prove nothing", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "silent", 0);
    await sentWrite(ledger, "refused", 1);
    await sentWrite(ledger, "replaced", 2);
    await ledger.reserve({ id: "unsigned", accountId: "a", year: 2026, fingerprint: "u", createdAtMs: 0 }, 100);
    await ledger.reserve({ id: "lost", accountId: "a", year: 2026, fingerprint: "l", createdAtMs: 0 }, 100);
    ledger.writes.set("lost", { ...ledger.writes.get("lost")!, state: "broadcast", txHash: "0xlost" });
    const chain = chainRefusing(["0xrefused"], { "0xreplaced": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 60_000, lostAfterMs: 600_000 });
    expect(await reconcile()).toMatchObject({ released: 3, open: 2 });
    clock.set(1_600_000);
    expect(await reconcile()).toMatchObject({ released: 2, open: 0 });
    // Before, a release kept no cause: a retry under the write's key was told "nothing of it was written" for each.
    expect(causes(ledger)).toEqual({
      silent: ["released", "silence"],
      refused: ["released", "resend-refused"],
      replaced: ["released", "replaced"],
      unsigned: ["released", "unsent"],
      lost: ["released", "lost"],
    });
  });

  test("a witness given back for its silence is still looked up by hash, never sent again, and charged once it lands", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "silent", 0);
    const chain = chainRefusing([]);
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    await reconcile();
    clock.set(1_600_000);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect(await ledger.usage("a", 2026)).toEqual({ used: 0, reserved: 0 });
    clock.set(2_000_000);
    expect(await reconcile()).toEqual({ mined: 0, reverted: 0, released: 0, rebroadcast: 0, bumped: 0, open: 0 });
    // It landed after all (sent through a backend that never answered): decisions §15 charges a mined witness. Before,
    // a write released for its silence was never asked about again.
    chain.statuses["0xsilent"] = { status: "success", blockNumber: 40n, uid: `0x${"4".repeat(64)}` };
    clock.set(3_000_000);
    expect(await reconcile()).toMatchObject({ mined: 1, released: 0 });
    expect(await ledger.find("silent")).toMatchObject({ state: "committed", txHash: "0xsilent", uid: `0x${"4".repeat(64)}`, blockNumber: 40n });
    expect(await ledger.usage("a", 2026)).toEqual({ used: 1, reserved: 0 });
    expect(chain.rebroadcasts).toEqual(["0xsilent", "0xsilent"]);
    // Settled: no longer looked up.
    expect(await reconcile()).toMatchObject({ mined: 0 });
  });

  test("found reverted or its nonce taken, the silence's release is proven; a proven one is never looked up, nor an unproven one past a day", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    for (const [i, id] of ["reverts", "replaced", "refused", "late"].entries()) await sentWrite(ledger, id, i);
    const chain = chainRefusing(["0xrefused"]);
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    await reconcile();
    clock.set(1_600_000);
    expect(await reconcile()).toMatchObject({ released: 3 });
    chain.statuses["0xreverts"] = { status: "reverted", blockNumber: 41n };
    chain.statuses["0xreplaced"] = { status: "replaced" };
    // A resend the node refused proves nothing (the first copy may have landed): it is looked up as a silent one is, and
    // charged once found mined. Before (found in review), it was released as proven, never asked about again.
    chain.statuses["0xrefused"] = { status: "success", blockNumber: 41n, uid: null };
    clock.set(2_200_000);
    expect(await reconcile()).toMatchObject({ mined: 1, reverted: 1 });
    // Its nonce taken is proven on a second reading, five minutes or more after the first.
    expect(causes(ledger).replaced).toEqual(["released", "silence"]);
    clock.set(2_800_000);
    await reconcile();
    expect(causes(ledger)).toEqual({
      reverts: ["released", "reverted"],
      replaced: ["released", "replaced"],
      refused: ["committed", "resend-refused"],
      late: ["released", "silence"],
    });
    // Past the day an Idempotency-Key lives, the last unproven one is no longer looked up: it stays given back.
    chain.statuses["0xlate"] = { status: "success", blockNumber: 42n, uid: null };
    clock.set(1_600_000 + DAY_MS + 1);
    expect(await reconcile()).toMatchObject({ mined: 0 });
    expect(causes(ledger).late).toEqual(["released", "silence"]);
  });
});

describe("a round that never ends (found in review)", () => {
  test("a round running 10 minutes is no longer shared: the call starts its own, and the stuck one ending later leaves it running", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    // The book's reads answer only when told: the first never on its own (a query whose database vanished).
    const answers: (() => void)[] = [];
    const book = { ...replayBook(replay, 1), open: () => new Promise<never[]>((resolve) => answers.push(() => resolve([]))) };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [book], txStatus: fakeChain({}), clock, graceMs: 0, lostAfterMs: 600_000 });
    const stuck = reconcile();
    clock.set(1_000_000 + 599_999);
    expect(reconcile()).toBe(stuck);
    expect(answers).toHaveLength(1);
    // Before, every later call was handed the stuck round: this chain was never reconciled again.
    clock.set(1_000_000 + 600_000);
    const next = reconcile();
    expect(next).not.toBe(stuck);
    expect(answers).toHaveLength(2);
    // The stuck round ends at last: the new one is still the one a call shares.
    answers[0]!();
    expect(await stuck).toMatchObject({ open: 0 });
    expect(reconcile()).toBe(next);
    answers[1]!();
    expect(await next).toMatchObject({ open: 0 });
    // Both ended: the next call is a round of its own.
    void reconcile();
    expect(answers).toHaveLength(3);
    answers[2]!();
  });
});

describe("a resend refused, the quota of a write that may land, the watch's cost, 'replaced' read twice (found in review)", () => {
  const MIN = 60_000;
  /** A witness write of account `a` signed and sent at 0 (its bytes carry no deadline). */
  const sentWrite = async (ledger: ReturnType<typeof fakeWriteLedger>, id: string, nonce: number, limit = 100) => {
    expect(await ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs: 0 }, limit)).toBe(true);
    await ledger.markSigned(id, tx(id, nonce), 0);
    await ledger.markSent(id, 0);
  };
  /** Every call the reconciler makes of the chain, counted by method (and each status read by hash). */
  const countingChain = (statuses: Record<string, TxStatus> = {}, rebroadcastAnswer: Rebroadcast = "rpc-error") => {
    const chain = fakeChain(statuses, rebroadcastAnswer);
    const calls = { status: [] as string[], latestBlock: 0, nonceAt: [] as string[] };
    const reader = {
      ...chain,
      head: undefined as bigint | undefined,
      count: 0n,
      status(hash: HexString) {
        calls.status.push(hash);
        return chain.status(hash);
      },
      latestBlock(): Promise<BlockStamp | undefined> {
        calls.latestBlock++;
        const head = reader.head;
        return Promise.resolve(head === undefined ? undefined : { number: head, hash: `0x${head.toString(16).padStart(64, "0")}` as HexString, timestamp: 0n });
      },
      nonceAt(wallet: string, blockNumber: bigint) {
        calls.nonceAt.push(`${wallet}@${blockNumber}`);
        return Promise.resolve(reader.count);
      },
    };
    return { chain, reader, calls };
  };

  test("a resend the node refuses proves nothing: the chain is asked again, its nonce taken or the transaction mined settles it, else it is given back unproven and looked up", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "landed", 0);
    await sentWrite(ledger, "taken", 1);
    await sentWrite(ledger, "unknown", 2);
    const { chain, reader } = countingChain({}, "refused");
    // "nonce too low": the first copy was mined between the status read and the resend (or sat in another node's pool).
    reader.rebroadcast = (signed: SignedTx) => {
      chain.rebroadcasts.push(signed.txHash);
      if (signed.txHash === "0xlanded") chain.statuses["0xlanded"] = { status: "success", blockNumber: 50n, uid: `0x${"5".repeat(64)}` };
      if (signed.txHash === "0xtaken") chain.statuses["0xtaken"] = { status: "replaced" };
      return Promise.resolve("refused" as const);
    };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000 });
    // Before, each was released as `refused` (proven): "nothing written", its payment forgotten, never looked up again.
    expect(await reconcile()).toMatchObject({ mined: 1, released: 1, open: 1 });
    expect(await ledger.find("landed")).toMatchObject({ state: "committed", blockNumber: 50n });
    expect((await ledger.find("taken"))?.state).toBe("broadcast");
    expect(await ledger.find("unknown")).toMatchObject({ state: "released", releaseCause: "resend-refused" });
    // Its nonce read taken again five minutes on: proven replaced. The one given back unproven lands: charged.
    chain.statuses["0xunknown"] = { status: "success", blockNumber: 51n, uid: null };
    clock.set(1_000_000 + 5 * MIN);
    expect(await reconcile()).toMatchObject({ mined: 1, released: 1 });
    expect(await ledger.find("taken")).toMatchObject({ state: "released", releaseCause: "replaced" });
    expect(await ledger.find("unknown")).toMatchObject({ state: "committed", blockNumber: 51n });
    expect(await ledger.usage("a", 2026)).toEqual({ used: 2, reserved: 0 });
  });

  test("a refused resend of bytes carrying a deadline is held until the chain passed it, as a silent one is: a relay record is never forgotten on the refusal", async () => {
    const DEADLINE = 2_000_000_000n;
    const EAS_ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString;
    const call = encodeFunctionData({
      abi: EAS_ABI,
      functionName: "attestByDelegation",
      args: [{
        schema: `0x${"5c".repeat(32)}`,
        data: { recipient: EAS_ADDRESS, expirationTime: 0n, revocable: true, refUID: `0x${"00".repeat(32)}`, data: "0x12", value: 0n },
        signature: { v: 27, r: `0x${"01".repeat(32)}`, s: `0x${"11".repeat(32)}` },
        attester: "0x00000000000000000000000000000000000000a1",
        deadline: DEADLINE,
      }],
    });
    const signed: SignedTx = {
      txHash: "0xrelay",
      raw: serializeTransaction({ chainId: 1, type: "eip1559", nonce: 0, to: EAS_ADDRESS, data: call, gas: 300_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n }),
      wallet: "0x00000000000000000000000000000000000000aa",
      nonce: 0,
    };
    const clock = fakeClock(Number(DEADLINE) * 1000 - 600_000);
    const replay = fakeReplayStore();
    await replay.claim({ ...claim("relay", 0n, 0), deadline: DEADLINE });
    await replay.markSigned(1, "relay", signed);
    await replay.markSent(1, "relay");
    let time = DEADLINE - 10n;
    const chain = {
      ...fakeChain({}, "refused"),
      latestBlock: () => Promise.resolve({ number: 7n, hash: `0x${"07".repeat(32)}` as HexString, timestamp: time }),
      nonceAt: () => Promise.resolve(0n as bigint | undefined),
    };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [replayBook(replay, 1)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    // Before, released on the refusal: the record forgotten, the signature accepted again though its first copy may land.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect(await replay.find(1, "relay")).toMatchObject({ state: "sent" });
    time = DEADLINE + 1n;
    expect(await reconcile()).toMatchObject({ released: 1, open: 0 });
    expect(await replay.find(1, "relay")).toBeUndefined();
  });

  test("a write given back on a cause that proves nothing holds its quota for the watch's day: another write cannot take it and then see the first one charged too", async () => {
    const DAY_MS = 24 * 60 * MIN;
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "first", 0, 1);
    await ledger.release("first", 1_000_000, "silence");
    // Before, the limit of 1 let a second write be reserved and committed, and the first, mined, made the account's 2.
    expect(await ledger.reserve({ id: "second", accountId: "a", year: 2026, fingerprint: "s", createdAtMs: 1_000_001 }, 1)).toBe(false);
    expect(await ledger.usage("a", 2026, { nowMs: 1_000_001 })).toEqual({ used: 0, reserved: 1 });
    const chain = fakeChain({ "0xfirst": { status: "success", blockNumber: 60n, uid: null } });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    clock.set(1_000_000 + MIN);
    expect(await reconcile()).toMatchObject({ mined: 1 });
    expect(await ledger.usage("a", 2026, { nowMs: clock.nowMs() })).toEqual({ used: 1, reserved: 0 });
    // One given back unproven and never found: its quota is free once the watch ends, and it is no longer charged then.
    await sentWrite(ledger, "third", 1, 2);
    await ledger.release("third", 2_000_000, "lost");
    expect(await ledger.reserve({ id: "fourth", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 2_000_000 + DAY_MS - 1 }, 2)).toBe(false);
    expect(await ledger.reserve({ id: "fourth", accountId: "a", year: 2026, fingerprint: "f", createdAtMs: 2_000_000 + DAY_MS + 1 }, 2)).toBe(true);
    await ledger.commit("third", { txHash: "0xthird", uid: null, blockNumber: 61n }, 2_000_000 + DAY_MS + 2);
    expect((await ledger.find("third"))?.state).toBe("released");
  });

  test("writes given back unproven are looked up at most 20 a round, the longest due first, each 1, 2, 4 … minutes after its release and then hourly", async () => {
    const clock = fakeClock(0);
    const ledger = fakeWriteLedger();
    for (let i = 0; i < 30; i++) {
      await sentWrite(ledger, `w${i}`, i);
      await ledger.release(`w${i}`, i * 1000, "silence");
    }
    // No block reads: every due write's transaction is asked about by hash.
    const { reader, calls } = countingChain();
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000 });
    clock.set(90_000);
    await reconcile();
    expect(calls.status).toEqual(Array.from({ length: 20 }, (_, i) => `0xw${i}`));
    let most = 0;
    for (let at = 150_000; at <= 24 * 60 * MIN + 30_000; at += MIN) {
      const before = calls.status.length;
      clock.set(at);
      await reconcile();
      most = Math.max(most, calls.status.length - before);
    }
    // Before, every write was asked about every round for its day: 30 a round, 1,440 rounds.
    expect(most).toBeLessThanOrEqual(20);
    const perWrite = (id: string) => calls.status.filter((hash) => hash === `0x${id}`).length;
    expect(Math.max(...Array.from({ length: 30 }, (_, i) => perWrite(`w${i}`)))).toBeLessThanOrEqual(32);
    expect(Math.min(...Array.from({ length: 30 }, (_, i) => perWrite(`w${i}`)))).toBeGreaterThanOrEqual(28);
    expect(calls.status.length).toBeLessThanOrEqual(30 * 32);
  });

  test("a wallet's count at the latest block, read once a round for all its given-back writes, spares asking about each while their nonces are free", async () => {
    const clock = fakeClock(0);
    const ledger = fakeWriteLedger();
    for (let i = 0; i < 5; i++) {
      await sentWrite(ledger, `w${i}`, i);
      await ledger.release(`w${i}`, 0, "silence");
    }
    const { chain, reader, calls } = countingChain();
    reader.head = 9n;
    reader.count = 0n;
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000 });
    clock.set(MIN);
    await reconcile();
    expect([calls.status.length, calls.latestBlock, calls.nonceAt]).toEqual([0, 1, ["0x00000000000000000000000000000000000000aa@9"]]);
    // The wallet's nonce 0 spent: only that write is asked about, and charged.
    reader.count = 1n;
    chain.statuses["0xw0"] = { status: "success", blockNumber: 9n, uid: null };
    clock.set(2 * MIN);
    expect(await reconcile()).toMatchObject({ mined: 1 });
    expect(calls.status).toEqual(["0xw0"]);
    expect(calls.nonceAt.length).toBe(2);
    expect((await ledger.find("w0"))?.state).toBe("committed");
  });

  test("a sponsored write's nonce taken is proven only when read so twice five minutes apart, on the open write and the given-back one alike; one in a block in between starts again", async () => {
    const clock = fakeClock(1_000_000);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "open", 0);
    await sentWrite(ledger, "given", 1);
    await ledger.release("given", 1_000_000, "silence");
    const chain = fakeChain({ "0xopen": { status: "replaced" } });
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    // A backend behind the head gives no receipt while another answers the wallet's nonce: one reading proves nothing.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(1_000_000 + 4 * MIN);
    chain.statuses["0xgiven"] = { status: "replaced" };
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect([(await ledger.find("open"))?.state, (await ledger.find("given"))?.releaseCause]).toEqual(["broadcast", "silence"]);
    // The node names a block for it (its receipt to come): the next "replaced" is a first reading. Held by the node or
    // unknown to it would not do (a lagging backend's answer, found in review).
    chain.statuses["0xopen"] = { status: "included", blockNumber: 5n };
    clock.set(1_000_000 + 5 * MIN);
    await reconcile();
    chain.statuses["0xopen"] = { status: "replaced" };
    clock.set(1_000_000 + 9 * MIN);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    // The given-back one's next look (as long after the first as that was after its release): proven.
    expect([(await ledger.find("open"))?.state, (await ledger.find("given"))?.releaseCause]).toEqual(["broadcast", "replaced"]);
    clock.set(1_000_000 + 14 * MIN);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect(await ledger.find("open")).toMatchObject({ state: "released", releaseCause: "replaced" });
  });
});

describe("a relay record's nonce taken is read twice too (found in review)", () => {
  test("a relay record read 'replaced' once is not released (its paid write would read failed, its payment forgotten); read so again five minutes on, it is", async () => {
    const clock = fakeClock(1_000_000);
    const replay = fakeReplayStore();
    await replay.claim(claim("taken", 0n, 0));
    await replay.markSigned(1, "taken", tx("taken", 0));
    await replay.markSent(1, "taken");
    const chain = fakeChain({ "0xtaken": { status: "replaced" } });
    const released: string[] = [];
    const book = replayBook(replay, 1);
    const watched = { ...book, release: async (id: string) => {
      released.push(id);
      await book.release(id);
    } };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [watched], txStatus: chain, clock, graceMs: 0, lostAfterMs: 600_000 });
    // A backend behind the head gives no receipt while another answers the wallet's nonce: one reading proves nothing.
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    clock.set(1_000_000 + 4 * 60_000);
    expect(await reconcile()).toMatchObject({ released: 0, open: 1 });
    expect([released, (await replay.find(1, "taken"))?.state]).toEqual([[], "sent"]);
    clock.set(1_000_000 + 5 * 60_000);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect([released, await replay.find(1, "taken")]).toEqual([["taken"], undefined]);
  });
});

describe("'replaced' read twice, each reading dated when taken; a lagging reading between does not start again (found in review)", () => {
  const MIN = 60_000;
  const T = 1_000_000;
  /** A witness write of account `a` signed and sent at 0 (its bytes carry no deadline). */
  const sentWrite = async (ledger: ReturnType<typeof fakeWriteLedger>, id: string, nonce: number) => {
    await ledger.reserve({ id, accountId: "a", year: 2026, fingerprint: id, createdAtMs: 0 }, 100);
    await ledger.markSigned(id, tx(id, nonce), 0);
    await ledger.markSent(id, 0);
  };
  const states = async (ledger: ReturnType<typeof fakeWriteLedger>, ids: readonly string[]) =>
    Object.fromEntries(await Promise.all(ids.map(async (id) => [id, [(await ledger.find(id))?.state, (await ledger.find(id))?.releaseCause]])));

  test("a slow round dates its late readings when they are taken: the next round's, seconds later, confirms nothing (nonce taken, silence, a given-back write's look)", async () => {
    const clock = fakeClock(T);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "slow", 0);
    await sentWrite(ledger, "taken", 1);
    await sentWrite(ledger, "silent", 2);
    await sentWrite(ledger, "given", 3);
    await ledger.release("given", T - MIN, "silence");
    const chain = fakeChain({ "0xslow": { status: "pending" }, "0xtaken": { status: "replaced" }, "0xgiven": { status: "replaced" } }, "rpc-error");
    // The first read of the first row takes six minutes (RPC timeouts, retries): the rows after it are read that late.
    let slowReads = 0;
    const reader = {
      ...chain,
      status(hash: HexString) {
        if (hash === "0xslow" && slowReads++ === 0) clock.set(clock.nowMs() + 6 * MIN);
        return chain.status(hash);
      },
    };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 5 * MIN });
    expect(await reconcile()).toMatchObject({ released: 0 });
    // Five seconds after those readings: before, each was dated at its round's start, six minutes back, and this round
    // released all three (two as proven "replaced": "nothing written", the payment forgotten).
    clock.set(T + 6 * MIN + 5_000);
    expect(await reconcile()).toMatchObject({ released: 0 });
    expect(await states(ledger, ["taken", "silent", "given"])).toEqual({
      taken: ["broadcast", undefined],
      silent: ["broadcast", undefined],
      given: ["released", "silence"],
    });
    // Five minutes and more after them (the given-back write's next look, as long after its first as that was after its
    // release): each is confirmed.
    clock.set(T + 13 * MIN);
    expect(await reconcile()).toMatchObject({ released: 2 });
    expect(await states(ledger, ["slow", "taken", "silent", "given"])).toEqual({
      slow: ["broadcast", undefined],
      taken: ["released", "replaced"],
      silent: ["released", "silence"],
      given: ["released", "replaced"],
    });
  });

  test("a round superseded (it ran ROUND_SHARED_MS) stops at its next row: it reads and settles nothing more on what it listed long ago", async () => {
    const clock = fakeClock(T);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "stuck", 0);
    await sentWrite(ledger, "next", 1);
    const chain = fakeChain({ "0xstuck": { status: "pending" }, "0xnext": { status: "reverted", blockNumber: 3n } });
    // The first round's first read never answers on its own (a call with no bound); every later read answers.
    const reads: string[] = [];
    let answer: (() => void) | undefined;
    const reader = {
      ...chain,
      status(hash: HexString) {
        reads.push(hash);
        if (reads.length > 1) return chain.status(hash);
        return new Promise<TxStatus>((resolve) => answer = () => resolve({ status: "pending" }));
      },
    };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: reader, clock, graceMs: 0, lostAfterMs: 600_000 });
    const stuck = reconcile();
    while (answer === undefined) await Promise.resolve();
    clock.set(T + 10 * MIN);
    chain.statuses["0xnext"] = { status: "pending" };
    expect(await reconcile()).toMatchObject({ reverted: 0, open: 2 });
    expect(reads).toEqual(["0xstuck", "0xstuck", "0xnext"]);
    // The stuck read answers at last: the round it belongs to stops there. Before, it went on to the next row and
    // settled it on what it read (a row the new round had found open).
    chain.statuses["0xnext"] = { status: "reverted", blockNumber: 3n };
    answer!();
    await stuck;
    expect(reads).toEqual(["0xstuck", "0xstuck", "0xnext"]);
    expect((await ledger.find("next"))?.state).toBe("broadcast");
  });

  test("readings of 'replaced' with unknown or pending ones between (a flapping provider) are confirmed five minutes after the first", async () => {
    const clock = fakeClock(T);
    const ledger = fakeWriteLedger();
    await sentWrite(ledger, "open", 0);
    await sentWrite(ledger, "given", 1);
    await ledger.release("given", T - MIN, "silence");
    const chain = fakeChain({}, "rpc-error");
    const read = (status: TxStatus) => {
      chain.statuses["0xopen"] = status;
      chain.statuses["0xgiven"] = status;
    };
    const reconcile = createSubmissionReconciler({ chainId: 1, books: [witnessBook(ledger, clock)], txStatus: chain, clock, graceMs: 0, lostAfterMs: 60 * MIN });
    // The given-back write is looked at T, T + 2 and T + 5 minutes (each gap as long as it has been since its release).
    read({ status: "replaced" });
    await reconcile();
    read({ status: "not-found" });
    clock.set(T + 2 * MIN);
    await reconcile();
    read({ status: "pending" });
    clock.set(T + 4 * MIN);
    await reconcile();
    // Before, the reading between started the count again: a provider whose backends answered so in turn held the
    // write whose nonce another transaction took open for good.
    read({ status: "replaced" });
    clock.set(T + 5 * MIN);
    expect(await reconcile()).toMatchObject({ released: 1 });
    expect(await states(ledger, ["open", "given"])).toEqual({ open: ["released", "replaced"], given: ["released", "replaced"] });
  });

  test("a row's first 'replaced' is forgotten when it is released", async () => {
    const { forgetReleased, replacedReadings } = await import("./_replaced_readings.ts");
    const clock = fakeClock(T);
    const round = { silentSince: new Map([["k", T]]), replaced: replacedReadings(clock) };
    expect(round.replaced.confirmed("k", T)).toBe(false);
    forgetReleased(round, "k");
    expect(round.silentSince.has("k")).toBe(false);
    // Kept, a record accepted again under the same key confirmed against the old one's reading.
    clock.set(T + 10 * MIN);
    expect(round.replaced.confirmed("k", T + 10 * MIN)).toBe(false);
  });
});
