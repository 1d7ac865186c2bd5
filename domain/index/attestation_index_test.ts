import { describe, expect, test } from "bun:test";
import type {
  AttestationIndex,
  AttestedLog,
  ChainHistory,
  EasEvent,
  IndexRead,
} from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeIndexStore } from "../../ports/fakes.ts";
import { createIndexedAttestations, createIndexFollower } from "./attestation_index.ts";

const hex = (n: number | bigint, fill = "0") => `0x${n.toString(16).padStart(64, fill)}` as HexString;
const RECIPIENT = `0x${"ab".repeat(20)}` as HexString;
const SCHEMA = hex(7);

/** A chain of `length` blocks with an attestation in every block listed; `fork` changes the hashes from a block on. */
function fakeChain(length: number, attestedIn: number[]) {
  const chain = {
    length,
    fork: { from: Number.MAX_SAFE_INTEGER, tag: "b" },
    attestedIn,
    failEvents: 0,
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
    events(from: bigint, to: bigint): Promise<IndexRead<{ events: EasEvent[]; toHash: HexString }>> {
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
      return Promise.resolve({ ok: true, value: { events, toHash: chain.hashOf(to) } });
    },
  };
  return chain satisfies ChainHistory;
}

describe("createIndexFollower()", () => {
  test("ingests range by range up to head - confirmations, checkpoint with each range, then waits", async () => {
    const chain = fakeChain(100, [5, 50, 95]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 3n, confirmations: 10, stepBlocks: 40n });
    expect(await step()).toMatchObject({ ok: true, ingested: { from: 3n, to: 42n, events: 1 }, indexedBlock: 42n, target: 89n });
    expect(await step()).toMatchObject({ ingested: { from: 43n, to: 82n, events: 1 } });
    expect(await step()).toMatchObject({ ingested: { from: 83n, to: 89n, events: 0 }, indexedBlock: 89n });
    const idle = await step();
    expect(idle).toMatchObject({ ok: true, indexedBlock: 89n });
    expect("ingested" in idle).toBe(false);
    expect(store.rows().map((r) => r.blockNumber)).toEqual([5n, 50n]);
    expect(await store.checkpoint()).toEqual({ blockNumber: 89n, blockHash: chain.hashOf(89n) });
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

  test("a reorg: the checkpoint's hash no longer matches, so the index goes back to the newest canonical checkpoint and re-ingests", async () => {
    const chain = fakeChain(60, [15, 45]);
    const store = fakeIndexStore();
    const step = createIndexFollower({ chain, store, startBlock: 0n, confirmations: 0, stepBlocks: 20n });
    while ((await step()).ok && (await store.checkpoint())!.blockNumber < 59n);
    expect(store.rows().map((r) => r.uid)).toEqual([hex(15, "a"), hex(45, "a")]);
    // Blocks from 41 on are replaced; the attestation of block 45 is now another one.
    chain.fork = { from: 41, tag: "b" };
    expect(await step()).toMatchObject({ ok: true, rewoundTo: 39n, indexedBlock: 39n });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(15, "a")]);
    expect(await step()).toMatchObject({ ingested: { from: 40n, to: 59n, events: 1 } });
    expect(store.rows().map((r) => r.uid)).toEqual([hex(15, "a"), hex(45, "b")]);
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

describe("createIndexedAttestations()", () => {
  const log = (block: number): AttestedLog => ({ uid: hex(block), recipient: RECIPIENT, attester: RECIPIENT, schemaUid: SCHEMA, blockNumber: BigInt(block) });
  const live = (calls: unknown[]) =>
    ({
      chainId: 1,
      easAddress: RECIPIENT,
      latestBlock: () => Promise.resolve({ ok: true, value: 100n }),
      schemaRecords: () => Promise.resolve({ ok: true, value: [] }),
      attestations: () => Promise.resolve({ ok: true, value: [] }),
      attestedUids(query) {
        calls.push([query.fromBlock, query.toBlock]);
        return Promise.resolve({ ok: true, value: [log(Number(query.toBlock))] });
      },
    }) satisfies AttestationIndex;

  test("reads the store up to the checkpoint and the chain only after it", async () => {
    const store = fakeIndexStore();
    await store.append(undefined, [{ ...log(20), kind: "attested", logIndex: 0 }], { blockNumber: 90n, blockHash: hex(90) });
    const calls: unknown[] = [];
    const reads = createIndexedAttestations({ live: live(calls), store, startBlock: 0n });
    const found = await reads.attestedUids({ recipients: [RECIPIENT], schemaUids: [SCHEMA], toBlock: 100n });
    expect(found.ok && found.value.map((l) => l.blockNumber)).toEqual([20n, 100n]);
    expect(calls).toEqual([[91n, 100n]]);
    // Pinned at or before the checkpoint: no chain read at all.
    const pinned = await reads.attestedUids({ recipients: [RECIPIENT], schemaUids: [SCHEMA], toBlock: 50n });
    expect(pinned.ok && pinned.value.map((l) => l.blockNumber)).toEqual([20n]);
    expect(calls).toHaveLength(1);
  });

  test("with nothing indexed yet (or a start before the index), the chain is scanned as before", async () => {
    const calls: unknown[] = [];
    const reads = createIndexedAttestations({ live: live(calls), store: fakeIndexStore(), startBlock: 5n });
    await reads.attestedUids({ recipients: [RECIPIENT], schemaUids: [SCHEMA], toBlock: 100n });
    expect(calls).toEqual([[5n, 100n]]);
  });
});
