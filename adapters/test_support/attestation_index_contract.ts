import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of the attestation index's writes: a step's rows together, tail rows, reorgs; registered inside its describe, `open` gives the storage under test. */
export function attestationIndexContract(open: () => Promise<Storage>) {
  test("index: a step's events, full records and tail blocks are written together; tail rows are marked until confirmed (issue 34)", async () => {
    const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
    const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as `0x${string}`;
    const hash = (n: number, tag = "a") => `0x${n.toString(16).padStart(64, tag)}` as `0x${string}`;
    const recipient = "0x00000000000000000000000000000000000000aa" as const;
    const event = (n: number, kind: "attested" | "revoked" = "attested") =>
      ({ kind, uid: uid(n), recipient, attester: recipient, schemaUid: hash(7), blockNumber: BigInt(n), logIndex: kind === "attested" ? 0 : 1 });
    const record = (n: number, revocationTime = 0n) => ({
      uid: uid(n), schema: hash(7), time: 1_700_000_000n + BigInt(n), expirationTime: 18_446_744_073_709_551_615n, revocationTime,
      refUID: uid(0), recipient, attester: recipient, revocable: true, data: "0xabcdef" as const,
    });
    expect(await store.head()).toBeUndefined();
    // Blocks 1-10 with head 10 and 5 confirmations: 6-10 are the tail.
    const blocks = [6, 7, 8, 9].map((n) => ({ blockNumber: BigInt(n), blockHash: hash(n), timestamp: 1_000n + BigInt(n) }));
    expect(await store.append(undefined, [event(3), event(8)], { blockNumber: 10n, blockHash: hash(10), timestamp: 1_010n }, {
      attestations: [record(3), record(8)], blocks, confirmedTo: 5n,
    })).toBe(true);
    expect(await store.counts()).toEqual({ attestations: 2, tail: 1 });
    expect((await store.history(10)).map((c) => [c.blockNumber, c.timestamp])).toEqual([10n, 9n, 8n, 7n, 6n].map((n) => [n, 1_000n + n]));
    const stored = await store.records([uid(3), uid(8), uid(99)]);
    expect(stored.sort((a, b) => Number(a.blockNumber - b.blockNumber))).toEqual([
      { ...record(3), blockNumber: 3n, revokedBlock: null },
      { ...record(8), blockNumber: 8n, revokedBlock: null },
    ]);
    // Not polled yet; then a completed poll, shared through the store (never moved back).
    expect(await store.head()).toEqual({ blockNumber: 10n, blockHash: hash(10), timestamp: 1_010n, checkedAtMs: null, chainHead: null, doubtedAtMs: null });
    await store.checked(5_000, 10n);
    await store.checked(4_000, 10n);
    expect(await store.head()).toMatchObject({ checkedAtMs: 5_000, chainHead: 10n });
    // Head 20: block 8 is confirmed now; attestation 3 revoked in block 12.
    expect(await store.append(10n, [{ ...event(3, "revoked"), blockNumber: 12n }], { blockNumber: 20n, blockHash: hash(20), timestamp: 1_020n }, {
      attestations: [record(3, 1_012n)], confirmedTo: 15n,
    })).toBe(true);
    expect(await store.counts()).toEqual({ attestations: 2, tail: 0 });
    expect((await store.records([uid(3)]))[0]).toMatchObject({ revocationTime: 1_012n, revokedBlock: 12n });
    // A rewind forgets what came after its block, revocations included.
    await store.rewind({ blockNumber: 9n, blockHash: hash(9), timestamp: 1_009n });
    expect((await store.records([uid(3)]))[0]).toMatchObject({ revocationTime: 0n, revokedBlock: null });
    expect(await store.checkpoint()).toEqual({ blockNumber: 9n, blockHash: hash(9), timestamp: 1_009n });
    expect(await store.incomplete(10)).toEqual([]);
  });

  test("index: a subject holding U+0000 never fails a step: the block is passed, the subject names none", async () => {
    // Written by anyone straight to EAS: PostgreSQL's text refuses U+0000, and the follower retried that block forever.
    const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
    const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as `0x${string}`;
    const recipient = "0x00000000000000000000000000000000000000aa" as const;
    const event = (n: number) => ({ kind: "attested" as const, uid: uid(n), recipient, attester: recipient, schemaUid: uid(7), blockNumber: BigInt(n), logIndex: 0 });
    const record = (n: number) => ({
      uid: uid(n), schema: uid(7), time: 1_700_000_000n + BigInt(n), expirationTime: 0n, revocationTime: 0n,
      refUID: uid(0), recipient, attester: recipient, revocable: true, data: "0xabcdef" as const,
    });
    const subjects = new Map([[uid(1), "did:web:shop.example\u0000"], [uid(2), "did:web:shop.example"]]);
    expect(await store.append(undefined, [event(1), event(2)], { blockNumber: 5n, blockHash: uid(5) }, { attestations: [record(1), record(2)], subjects })).toBe(true);
    expect((await store.checkpoint())?.blockNumber).toBe(5n);
    await store.setSubjects?.([{ uid: uid(1), subject: "did:web:x\u0000" }]);
    expect((await store.records([uid(1), uid(2)])).map((r) => r.uid).sort()).toEqual([uid(1), uid(2)]);
  });

  test("index: a reorg of the tail rewinds tail rows only; confirmed rows and their records stay", async () => {
    const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
    const uid = (n: number) => `0x${n.toString(16).padStart(64, "1")}` as `0x${string}`;
    const hash = (n: number) => `0x${n.toString(16).padStart(64, "b")}` as `0x${string}`;
    const recipient = "0x00000000000000000000000000000000000000bb" as const;
    const event = (n: number) => ({ kind: "attested" as const, uid: uid(n), recipient, attester: recipient, schemaUid: hash(7), blockNumber: BigInt(n), logIndex: 0 });
    const record = (n: number) => ({ uid: uid(n), schema: hash(7), time: 1n, expirationTime: 0n, revocationTime: 0n, refUID: uid(0), recipient, attester: recipient, revocable: false, data: "0x" as const });
    const tail = [18, 19].map((n) => ({ blockNumber: BigInt(n), blockHash: hash(n), timestamp: BigInt(n) }));
    await store.append(undefined, [event(4), event(19)], { blockNumber: 20n, blockHash: hash(20), timestamp: 20n }, { attestations: [record(4), record(19)], blocks: tail, confirmedTo: 17n });
    await store.rewind({ blockNumber: 18n, blockHash: hash(18), timestamp: 18n });
    expect(await store.counts()).toEqual({ attestations: 1, tail: 0 });
    expect((await store.records([uid(4), uid(19)])).map((r) => r.uid)).toEqual([uid(4)]);
  });

  test("index: a doubt names the completed poll it doubts (its own time, no instance's clock); any poll completed after it clears it", async () => {
    const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
    const hash = (n: number) => `0x${n.toString(16).padStart(64, "c")}` as `0x${string}`;
    await store.append(undefined, [], { blockNumber: 30n, blockHash: hash(30), timestamp: 30n });
    // Before a first completed poll there is nothing to doubt (reads are stale anyway).
    expect(await store.doubted(1_000)).toBe(false);
    expect(await store.head()).toMatchObject({ checkedAtMs: null, doubtedAtMs: null });
    await store.checked(2_000, 30n);
    // Not the last completed poll (another completed after the doubting instance read it): nothing recorded.
    expect(await store.doubted(1_500)).toBe(false);
    expect(await store.head()).toMatchObject({ checkedAtMs: 2_000, chainHead: 30n, doubtedAtMs: null });
    expect(await store.doubted(2_000)).toBe(true);
    expect(await store.head()).toMatchObject({ checkedAtMs: 2_000, chainHead: 30n, doubtedAtMs: 2_000 });
    // A poll completed on an instance whose clock is behind: the poll time is never moved back, and the doubt is gone.
    await store.checked(1_800, 31n);
    expect(await store.head()).toMatchObject({ checkedAtMs: 2_000, chainHead: 31n, doubtedAtMs: null });
    await store.checked(4_000, 32n);
    expect(await store.doubted(2_000)).toBe(false);
    expect(await store.head()).toMatchObject({ checkedAtMs: 4_000, chainHead: 32n, doubtedAtMs: null });
  });
}
