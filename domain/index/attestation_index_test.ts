import { describe, expect, test } from "bun:test";
import type { ChainHistory, EasEvent, IndexedAttestation, IndexRead } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeClock, fakeIndexStore } from "../../ports/fakes/mod.ts";
import { createIndexFollower, PROBE_BLOCKS } from "./attestation_index.ts";
import { createIndexAnswers } from "./store_reads.ts";

const hex = (n: number | bigint, fill = "0") => `0x${n.toString(16).padStart(64, fill)}` as HexString;
const RECIPIENT = `0x${"ab".repeat(20)}` as HexString;
const SCHEMA = hex(7);

/** The full record of an attestation of the fake chain. */
const record = (uid: HexString, revocationTime = 0n): IndexedAttestation => ({
  uid,
  schema: SCHEMA,
  time: 1n,
  expirationTime: 0n,
  revocationTime,
  refUID: hex(0),
  recipient: RECIPIENT,
  attester: RECIPIENT,
  revocable: true,
  data: "0x1234",
});

/** A chain of `length` blocks with an attestation in every block listed; `fork` changes the hashes from a block on. */
function fakeChain(length: number, attestedIn: number[]) {
  const chain = {
    length,
    fork: { from: Number.MAX_SAFE_INTEGER, tag: "b" },
    attestedIn,
    failEvents: 0,
    /** Whether block reads tell the parent's hash (the JSON-RPC adapter's do). */
    tellsParents: true,
    calls: [] as string[],
    hashOf(n: bigint): HexString {
      return hex(n, Number(n) >= chain.fork.from ? chain.fork.tag : "a");
    },
    head: () => {
      chain.calls.push("head");
      return Promise.resolve({ ok: true as const, value: BigInt(chain.length - 1) });
    },
    blockHash: (n: bigint) => {
      chain.calls.push(`hash ${n}`);
      return Promise.resolve({ ok: true as const, value: n < BigInt(chain.length) ? chain.hashOf(n) : null });
    },
    block: (n: bigint) => {
      chain.calls.push(`block ${n}`);
      return Promise.resolve({ ok: true as const, value: n < BigInt(chain.length) ? { blockNumber: n, blockHash: chain.hashOf(n), timestamp: 1_000n + n, ...chain.parentOf(n) } : null });
    },
    parentOf(n: bigint): { parentHash?: HexString } {
      return chain.tellsParents ? { parentHash: n === 0n ? hex(0) : chain.hashOf(n - 1n) } : {};
    },
    attestations(uids: readonly HexString[], block: bigint): Promise<IndexRead<IndexedAttestation[]>> {
      chain.calls.push(`attestations ${uids.length} at ${block}`);
      return Promise.resolve({ ok: true, value: uids.map((uid) => record(uid, chain.revokedAt.has(uid) && chain.revokedAt.get(uid)! <= block ? 1_000n + chain.revokedAt.get(uid)! : 0n)) });
    },
    /** Revocation blocks by uid. */
    revokedAt: new Map<string, bigint>(),
    events(from: bigint, to: bigint): Promise<IndexRead<{ events: EasEvent[]; toHash: HexString; toTimestamp: bigint; toParentHash?: HexString }>> {
      chain.calls.push(`events ${from}-${to}`);
      if (chain.failEvents > 0) {
        chain.failEvents--;
        return Promise.resolve({ ok: false, reason: "timeout" });
      }
      const events = chain.attestedIn
        .filter((b) => BigInt(b) >= from && BigInt(b) <= to)
        .map((b): EasEvent => ({
          kind: "attested",
          uid: hex(b, Number(b) >= chain.fork.from ? chain.fork.tag : "a"),
          recipient: RECIPIENT,
          attester: RECIPIENT,
          schemaUid: SCHEMA,
          blockNumber: BigInt(b),
          logIndex: 0,
        }));
      for (const [uid, b] of chain.revokedAt) {
        if (b >= from && b <= to) events.push({ kind: "revoked", uid: uid as HexString, recipient: RECIPIENT, attester: RECIPIENT, schemaUid: SCHEMA, blockNumber: b, logIndex: 1 });
      }
      events.sort((x, y) => (x.blockNumber < y.blockNumber ? -1 : x.blockNumber > y.blockNumber ? 1 : x.logIndex - y.logIndex));
      const parent = chain.parentOf(to).parentHash;
      return Promise.resolve({ ok: true, value: { events, toHash: chain.hashOf(to), toTimestamp: 1_000n + to, ...(parent === undefined ? {} : { toParentHash: parent }) } });
    },
  };
  return chain satisfies ChainHistory;
}

describe("createIndexFollower()", () => {
  test("ingests range by range up to the head, the tail included: its blocks each a checkpoint, its rows marked, full records stored", async () => {
    const chain = fakeChain(100, [5, 50, 95]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 3n, confirmations: 10, stepBlocks: 40n });
    expect(await step()).toMatchObject({ ok: true, ingested: { from: 3n, to: 42n, events: 1 }, indexedBlock: 42n, target: 99n, confirmedTo: 89n, caughtUp: false });
    expect(await step()).toMatchObject({ ingested: { from: 43n, to: 82n, events: 1 } });
    expect(await step()).toMatchObject({ ingested: { from: 83n, to: 99n, events: 1 }, indexedBlock: 99n, caughtUp: true });
    const idle = await step();
    expect(idle).toMatchObject({ ok: true, indexedBlock: 99n, caughtUp: true });
    expect("ingested" in idle).toBe(false);
    expect(store.rows().map((r) => [r.blockNumber, r.tail])).toEqual([[5n, false], [50n, false], [95n, true]]);
    expect(await store.checkpoint()).toEqual({ blockNumber: 99n, blockHash: chain.hashOf(99n), timestamp: 1_099n });
    // Every tail block (90-99) has its own checkpoint, so a reorg finds its exact fork point.
    expect((await store.history(11)).map((c) => c.blockNumber)).toEqual([99n, 98n, 97n, 96n, 95n, 94n, 93n, 92n, 91n, 90n, 82n]);
    // Each attestation's record was read once, at its range's last block.
    expect(chain.calls.filter((c) => c.startsWith("attestations"))).toEqual(["attestations 1 at 42", "attestations 1 at 82", "attestations 1 at 99"]);
    expect((await store.records([hex(95, "a")]))[0]).toMatchObject({ uid: hex(95, "a"), data: "0x1234", blockNumber: 95n, revokedBlock: null });
  });

  test("issue 45: a range holding more than stepEvents ends after the block of its stepEvents-th event, whole blocks, and the next range is narrowed", async () => {
    // 3 attestations in each of blocks 0-59 (180 in all); stepEvents 10: a step ends with a whole block, never mid-block.
    const attestedIn = Array.from({ length: 60 }, (_, b) => [b, b, b]).flat();
    const chain = fakeChain(60, []);
    const events = chain.events;
    chain.events = async (from, to) => {
      const read = await events(from, to);
      if (!read.ok) return read;
      const all = attestedIn.filter((b) => b >= Number(from) && b <= Number(to)).map((b, i): EasEvent => ({
        kind: "attested", uid: hex(BigInt(1_000 + b * 10 + (i % 3))), recipient: RECIPIENT, attester: RECIPIENT, schemaUid: SCHEMA,
        blockNumber: BigInt(b), logIndex: i % 3,
      }));
      return { ok: true, value: { ...read.value, events: all } };
    };
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n, stepEvents: 10 });
    const first = await step();
    // Blocks 0-59 read (60 blocks, 180 events): the 10th event is in block 3, so the step ends there with 12 events.
    expect(first).toMatchObject({ ok: true, ingested: { from: 0n, to: 3n, events: 12 }, indexedBlock: 3n, caughtUp: false });
    expect(await store.checkpoint()).toEqual({ blockNumber: 3n, blockHash: chain.hashOf(3n), timestamp: 1_003n });
    // Only the kept events' records were read, at the step's block.
    expect(chain.calls.filter((c) => c.startsWith("attestations"))).toEqual(["attestations 12 at 3"]);
    // The next range holds about 10 events: 60 blocks * 10 / 180 = 3 blocks.
    chain.calls.length = 0;
    expect(await step()).toMatchObject({ ingested: { from: 4n, to: 6n, events: 9 } });
    expect(chain.calls).toContain("events 4-6");
    let steps = 2;
    for (let s = await step(); s.ok && !s.caughtUp; s = await step()) steps++;
    expect(steps).toBeLessThan(25);
    expect(await store.counts()).toEqual({ attestations: 180, tail: 0 });
    expect(new Set(store.rows().map((r) => r.uid)).size).toBe(180);
  });

  test("issue 45: a follower far behind the head probes PROBE_BLOCKS first, then doubles its range while the history is sparse, up to stepBlocks", async () => {
    const chain = fakeChain(10_000, [10, 600, 5_000]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 4_000n });
    const ranges: [bigint, bigint][] = [];
    for (let s = await step(); s.ok; s = await step()) {
      if (s.ingested !== undefined) ranges.push([s.ingested.from, s.ingested.to]);
      if (s.caughtUp) break;
    }
    // PROBE_BLOCKS, then twice as many each step (a handful of events each), capped at stepBlocks, the last up to the head.
    const expected: [bigint, bigint][] = [];
    for (let from = 0n, width = PROBE_BLOCKS; from < 10_000n; from += width, width = width * 2n > 4_000n ? 4_000n : width * 2n) {
      expected.push([from, from + width - 1n < 9_999n ? from + width - 1n : 9_999n]);
    }
    expect(ranges).toEqual(expected);
    expect(ranges[0]).toEqual([0n, PROBE_BLOCKS - 1n]);
    expect(ranges.at(-2)![1] - ranges.at(-2)![0] + 1n).toBe(4_000n);
    expect(await store.counts()).toEqual({ attestations: 3, tail: 0 });
  });

  test("as blocks confirm, tail rows become confirmed rows", async () => {
    const chain = fakeChain(50, [45]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 10, stepBlocks: 100n });
    await step();
    expect(store.rows().map((r) => r.tail)).toEqual([true]);
    chain.length = 56;
    expect(await step()).toMatchObject({ ingested: { from: 50n, to: 55n }, confirmedTo: 45n });
    expect(store.rows().map((r) => r.tail)).toEqual([false]);
    expect(await store.counts()).toEqual({ attestations: 1, tail: 0 });
  });

  test("a revocation stores the revocation time read from the chain, at the block of its log", async () => {
    const chain = fakeChain(30, [5]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n });
    await step();
    chain.length = 40;
    chain.revokedAt.set(hex(5, "a"), 35n);
    await step();
    expect((await store.records([hex(5, "a")]))[0]).toMatchObject({ revocationTime: 1_035n, revokedBlock: 35n });
  });

  test("an upgraded database: rows stored without their record get it before the index moves on", async () => {
    const chain = fakeChain(30, [5, 7]);
    const store = fakeIndexStore();
    // As the follower before issue 34 wrote them: events and a checkpoint, no records.
    const old: EasEvent[] = [5, 7].map((b) => ({ kind: "attested", uid: hex(b, "a"), recipient: RECIPIENT, attester: RECIPIENT, schemaUid: SCHEMA, blockNumber: BigInt(b), logIndex: 0 }));
    await store.append(undefined, old, { blockNumber: 20n, blockHash: chain.hashOf(20n) });
    expect(await store.incomplete(10)).toHaveLength(2);
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n, fillBatch: 1 });
    expect(await step()).toMatchObject({ filled: 1, indexedBlock: 20n, caughtUp: false });
    expect(await step()).toMatchObject({ filled: 1 });
    expect(await step()).toMatchObject({ ingested: { from: 21n, to: 29n }, caughtUp: true });
    expect(await store.incomplete(10)).toEqual([]);
    expect(await store.records([hex(5, "a"), hex(7, "a")])).toHaveLength(2);
  });

  test("a failed read writes nothing and the next step fetches the same range: nothing skipped", async () => {
    const chain = fakeChain(30, [10]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n });
    chain.failEvents = 2;
    expect(await step()).toEqual({ ok: false, reason: "timeout" });
    expect(await step()).toEqual({ ok: false, reason: "timeout" });
    expect(await store.checkpoint()).toBeUndefined();
    expect(await step()).toMatchObject({ ingested: { from: 0n, to: 29n, events: 1 } });
    expect(chain.calls.filter((c) => c.startsWith("events"))).toEqual(["events 0-29", "events 0-29", "events 0-29"]);
  });

  /**
   * Attestations in blocks 15, 45 and 55 of 60, 12 confirmations; then blocks from 50 on are replaced (the attestation of
   * block 55 is now another one) and the chain grows by `grownBy` blocks: the index goes back to block 49 and re-ingests.
   */
  async function reorgInTail(grownBy: number) {
    const chain = fakeChain(60, [15, 45, 55]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 12, stepBlocks: 20n });
    while (!((await step()) as { caughtUp?: boolean }).caughtUp);
    expect(store.rows().map((r) => [r.uid, r.tail])).toEqual([[hex(15, "a"), false], [hex(45, "a"), false], [hex(55, "a"), true]]);
    chain.fork = { from: 50, tag: "b" };
    chain.length += grownBy;
    expect(await step()).toMatchObject({ ok: true, rewoundTo: 49n, indexedBlock: 49n });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(15, "a"), hex(45, "a")]);
    expect(await step()).toMatchObject({ ingested: { from: 50n, to: BigInt(chain.length - 1), events: 1 }, caughtUp: true });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(15, "a"), hex(45, "a"), hex(55, "b")]);
  }

  test("a reorg in the tail: the index goes back to the exact fork point, confirmed rows untouched, and re-ingests", async () => {
    await reorgInTail(0);
  });

  test("issue 43 item 5: a step that ingests checks its checkpoint by the parent hash of a block it reads anyway, not by a read of its own", async () => {
    const chain = fakeChain(40, [10, 38]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 5, stepBlocks: 100n });
    await step();
    // The first step after a start with a checkpoint looks for rows to fill, read at the checkpoint: its hash comes first.
    chain.length = 41;
    await step();
    expect(chain.calls.slice(-3)).toEqual(["head", "hash 39", "events 40-40"]);
    const steps: string[][] = [];
    // One new block (the range's last), then three (the first a tail block), then a catch-up past the tail.
    for (const length of [42, 45, 60]) {
      chain.length = length;
      chain.calls = [];
      expect(await step()).toMatchObject({ ok: true, caughtUp: true, indexedBlock: BigInt(length - 1) });
      steps.push(chain.calls);
    }
    expect(steps).toEqual([
      ["head", "events 41-41"],
      ["head", "events 42-44", "block 42", "block 43"],
      // Block 45 is confirmed (head 59, 5 confirmations): read with the range for its parent, not stored as a tail block.
      ["head", "events 45-59", "block 45", "block 55", "block 56", "block 57", "block 58"],
    ]);
    expect((await store.history(6)).map((c) => c.blockNumber)).toEqual([59n, 58n, 57n, 56n, 55n, 44n]);
    // Nothing new: the checkpoint's own hash, after the head.
    chain.calls = [];
    await step();
    expect(chain.calls).toEqual(["head", "hash 59"]);
  });

  test("issue 43 item 5: a fork below the checkpoint while the chain grows is seen through the new block's parent and rewinds to the fork point", async () => {
    await reorgInTail(2);
  });

  test("a chain read that does not tell parents: the checkpoint's hash is read before the range is stored, and a fork still rewinds", async () => {
    const chain = fakeChain(30, [10, 25]);
    chain.tellsParents = false;
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 3, stepBlocks: 100n });
    await step();
    await step();
    chain.length = 31;
    chain.calls = [];
    expect(await step()).toMatchObject({ ingested: { from: 30n, to: 30n, events: 0 } });
    expect(chain.calls).toEqual(["head", "events 30-30", "hash 29"]);
    chain.fork = { from: 28, tag: "c" };
    chain.length = 33;
    expect(await step()).toMatchObject({ rewoundTo: 27n, indexedBlock: 27n });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(10, "a"), hex(25, "a")]);
  });

  test("a reorg deeper than every stored checkpoint rebuilds from the start", async () => {
    const chain = fakeChain(30, [5]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n });
    await step();
    chain.fork = { from: 0, tag: "c" };
    expect(await step()).toMatchObject({ rewoundTo: -1n, indexedBlock: undefined });
    expect(await store.checkpoint()).toBeUndefined();
    await step();
    expect(store.rows().map((r) => r.uid)).toEqual([hex(5, "c")]);
  });
});

describe("createIndexAnswers()", () => {
  /** A store the follower filled from a 30-block chain with attestations in blocks 5 and 25, polled at `checkedAtMs`. */
  async function setUp(checkedAtMs = 1_000_000) {
    const chain = fakeChain(30, [5, 25]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n });
    await step();
    await store.checked(checkedAtMs, 29n);
    const clock = fakeClock(checkedAtMs);
    const schemaCalls: string[][] = [];
    const answers = createIndexAnswers({
      store,
      chainId: 31337,
      easAddress: RECIPIENT,
      startBlock: 0n,
      schemas: {
        schemaRecords: (uids) => {
          schemaCalls.push([...uids]);
          return Promise.resolve({ ok: true, value: uids.map((uid) => ({ uid, registered: true as const, schema: "string subject", revocable: true })) });
        },
      },
      clock,
      stallSeconds: 60,
    });
    return { chain, store, clock, answers, schemaCalls };
  }

  test("answers from the store alone, pinned to the index head, with its asOf; schema strings once per process", async () => {
    const { chain, answers, schemaCalls } = await setUp();
    chain.calls.length = 0;
    for (let i = 0; i < 2; i++) {
      const answer = await answers.answer(async (index) => {
        const head = await index.latestBlock();
        if (!head.ok) return { ok: false as const, code: "NETWORK_ERROR" as const, message: "x" };
        await index.schemaRecords([SCHEMA], head.value);
        const logs = await index.attestedUids({ recipients: [RECIPIENT], schemaUids: [SCHEMA], toBlock: head.value });
        const read = logs.ok ? await index.attestations(logs.value.map((l) => l.uid), head.value) : logs;
        return { ok: true as const, value: { head: head.value, uids: read.ok ? read.value.map((a) => a.uid) : [] } };
      });
      expect(answer).toEqual({
        ok: true,
        value: { head: 29n, uids: [hex(5, "a"), hex(25, "a")], asOf: { blockNumber: 29, blockHash: chain.hashOf(29n), timestamp: 1_029, checkedAt: 1_000 } },
      });
    }
    expect(chain.calls).toEqual([]);
    expect(schemaCalls).toEqual([[SCHEMA]]);
  });

  test("a revocation counts from its block on: an answer pinned before it sees the attestation unrevoked", async () => {
    const { chain, store, answers } = await setUp();
    chain.length = 40;
    chain.revokedAt.set(hex(5, "a"), 35n);
    await createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 100n })();
    const pinned = answers.pin();
    const at = (block: bigint) => pinned.reads.attestations([hex(5, "a")], block);
    expect(await at(34n)).toMatchObject({ ok: true, value: [{ revocationTime: 0n }] });
    expect(await at(39n)).toMatchObject({ ok: true, value: [{ revocationTime: 1_035n }] });
  });

  test("no completed poll for longer than the stall time: INDEX_STALE, never the old answer; an idle chain polled lately is fresh", async () => {
    const { clock, store, answers } = await setUp();
    const read = () => answers.answer(async (index) => ({ ok: true as const, value: { head: await index.latestBlock() } }));
    clock.set(1_000_000 + 60_000);
    expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 29 } } });
    clock.set(1_000_000 + 60_001);
    expect(await read()).toEqual({ ok: false, code: "INDEX_STALE", message: expect.any(String) });
    // The head has not moved, but a poll completed: fresh again.
    await store.checked(1_000_000 + 60_001, 29n);
    expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 29, checkedAt: 1_060 } } });
  });

  test("an index never polled is stale", async () => {
    const store = fakeIndexStore();
    const answers = createIndexAnswers({
      store,
      chainId: 1,
      easAddress: RECIPIENT,
      startBlock: 0n,
      schemas: { schemaRecords: () => Promise.resolve({ ok: true, value: [] }) },
      clock: fakeClock(0),
      stallSeconds: 60,
    });
    expect(await answers.answer(() => Promise.resolve({ ok: true as const, value: {} }))).toMatchObject({ ok: false, code: "INDEX_STALE" });
  });
});

describe("createIndexFollower(): the webhook boundary (issue 43)", () => {
  test("a chain younger than WEBHOOK_CONFIRMATIONS gives the store -1, never a boundary before it; rows the outbox skipped are in the step", async () => {
    const chain = fakeChain(11, [5]);
    const store = fakeIndexStore();
    const seen: (bigint | undefined)[] = [];
    const skip = { kind: "attested", uid: hex(5, "a"), blockNumber: 5n, error: "refused" };
    const step = createIndexFollower({
      chain,
      store: {
        ...store,
        append(expected, events, next, details) {
          seen.push(details?.webhookConfirmedTo);
          if (next.blockNumber === 30n) details?.onOutboxSkipped?.([skip]);
          return store.append(expected, events, next, details);
        },
      },
      startBlock: 0n,
      confirmations: 0,
      stepBlocks: 100n,
      webhookConfirmations: 12,
    });
    const first = await step();
    expect(first).toMatchObject({ ok: true, indexedBlock: 10n });
    expect("outboxSkipped" in first).toBe(false);
    chain.length = 31;
    expect(await step()).toMatchObject({ ok: true, indexedBlock: 30n, outboxSkipped: [skip] });
    expect(seen).toEqual([-1n, 18n]);
  });
});

describe("createIndexFollower(): a chain head below the checkpoint", () => {
  /** A 30-block chain with attestations in blocks 5 and 28, 10 confirmations (blocks 20-29 each a checkpoint), indexed. */
  async function indexed() {
    const chain = fakeChain(30, [5, 28]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 10, stepBlocks: 100n });
    expect(await step()).toMatchObject({ ok: true, indexedBlock: 29n, caughtUp: true });
    // An idle step: the one after a start also looks for rows to fill, reading the checkpoint's hash beside the head.
    expect(await step()).toMatchObject({ ok: true, indexedBlock: 29n, caughtUp: true });
    return { chain, store, step };
  }

  test("the chain rolled back to a shorter fork (another hash at the head's height): rewound to the fork point, the dropped attestation gone", async () => {
    const { chain, store, step } = await indexed();
    // Blocks from 24 on replaced, the chain now 27 blocks long (head 26): block 28's attestation is not the chain's.
    chain.fork = { from: 24, tag: "b" };
    chain.length = 27;
    chain.calls = [];
    expect(await step()).toMatchObject({ ok: true, head: 26n, rewoundTo: 23n, indexedBlock: 23n, caughtUp: false });
    // The node's hash of the newest stored block at or below its head, then the walk down to the fork point.
    expect(chain.calls).toEqual(["head", "hash 26", "hash 25", "hash 24", "hash 23"]);
    expect(store.rows().map((r) => r.uid)).toEqual([hex(5, "a")]);
    expect(await step()).toMatchObject({ ok: true, ingested: { from: 24n, to: 26n, events: 0 }, indexedBlock: 26n, caughtUp: true });
    expect(await store.checkpoint()).toMatchObject({ blockNumber: 26n, blockHash: chain.hashOf(26n) });
  });

  test("the node's blocks up to its head are the index's (a backend behind, or a rollback not yet told apart): nothing rewound, behind, no completed poll", async () => {
    const { chain, store, step } = await indexed();
    chain.length = 27;
    chain.calls = [];
    const behind = await step();
    expect(behind).toMatchObject({ ok: true, head: 26n, indexedBlock: 29n, behind: true, caughtUp: false });
    expect("rewoundTo" in behind).toBe(false);
    expect(chain.calls).toEqual(["head", "hash 26"]);
    expect(store.rows().map((r) => r.uid)).toEqual([hex(5, "a"), hex(28, "a")]);
    expect(await store.checkpoint()).toMatchObject({ blockNumber: 29n });
    // The backend caught up: the same blocks, nothing to undo.
    chain.length = 31;
    expect(await step()).toMatchObject({ ok: true, ingested: { from: 30n, to: 30n }, caughtUp: true });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(5, "a"), hex(28, "a")]);
    // No stored checkpoint at or below the head (a node far behind, past the history compared): behind, never a rebuild.
    const far = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 10, stepBlocks: 100n, historyDepth: 3 });
    chain.length = 10;
    expect(await far()).toMatchObject({ ok: true, head: 9n, behind: true, indexedBlock: 30n });
    expect(await store.counts()).toEqual({ attestations: 2, tail: 1 });
  });

  test("a head doubted (the follower found the chain below the index for its grace) is stale for reads until a poll completes after it", async () => {
    const { store } = await indexed();
    const clock = fakeClock(1_000_000);
    await store.checked(1_000_000, 29n);
    const answers = createIndexAnswers({
      store,
      chainId: 31337,
      easAddress: RECIPIENT,
      startBlock: 0n,
      schemas: { schemaRecords: () => Promise.resolve({ ok: true, value: [] }) },
      clock,
      stallSeconds: 60,
    });
    const read = () => answers.answer(async (index) => ({ ok: true as const, value: { head: await index.latestBlock() } }));
    expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 29 } } });
    clock.set(1_001_000);
    // The doubt names the completed poll it doubts; another one (a poll completed since) is not doubted.
    expect(await store.doubted(999_000)).toBe(false);
    expect(await read()).toMatchObject({ ok: true });
    expect(await store.doubted(1_000_000)).toBe(true);
    expect(await read()).toEqual({ ok: false, code: "INDEX_STALE", message: expect.any(String) });
    clock.set(1_002_000);
    await store.checked(1_002_000, 29n);
    expect(await read()).toMatchObject({ ok: true, value: { asOf: { blockNumber: 29, checkedAt: 1_002 } } });
  });
});
