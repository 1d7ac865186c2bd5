import { describe, expect, test } from "bun:test";
import { encodePacked, getAddress, keccak256 } from "viem";
import type { ChainHistory, EasEvent, IndexedAttestation, WrittenAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeIndexStore } from "../../ports/fakes/mod.ts";
import { createIndexFollower } from "./attestation_index.ts";
import { easUid, writtenRecords } from "./written_records.ts";

const SCHEMA = `0x${"17".repeat(32)}` as HexString;
const RECIPIENT = `0x${"ab".repeat(20)}` as HexString;
const ATTESTER = `0x${"Cd".repeat(20)}` as HexString;

/** What the relay sent for an attestation mined in `blockNumber` (its uid as EAS gives it for the block's time). */
function sent(blockNumber: bigint, time: bigint, data: HexString = "0x00C0FFEE"): WrittenAttestation {
  const fields = { schema: SCHEMA, recipient: RECIPIENT, attester: ATTESTER, expirationTime: 0n, revocable: true, refUID: `0x${"00".repeat(32)}` as HexString, data };
  return { ...fields, uid: easUid({ ...fields, time }, keccak256), blockNumber };
}

const attested = (w: WrittenAttestation, blockNumber = w.blockNumber): EasEvent => ({
  kind: "attested",
  uid: w.uid,
  recipient: w.recipient,
  attester: w.attester,
  schemaUid: w.schema,
  blockNumber,
  logIndex: 0,
});

describe("easUid()", () => {
  test("is EAS's _getUID with bump 0: keccak-256 of the fields packed (viem's encodePacked)", () => {
    const a = { schema: SCHEMA, recipient: RECIPIENT, attester: ATTESTER, time: 1_700_000_123n, expirationTime: 1_800_000_000n, revocable: false, refUID: `0x${"5e".repeat(32)}` as HexString, data: "0x0102030405" as HexString };
    const packed = encodePacked(
      ["bytes32", "address", "address", "uint64", "uint64", "bool", "bytes32", "bytes", "uint32"],
      [a.schema, a.recipient, a.attester.toLowerCase() as HexString, a.time, a.expirationTime, a.revocable, a.refUID, a.data, 0],
    );
    expect(easUid(a, keccak256)).toBe(keccak256(packed));
    expect(easUid({ ...a, data: "0x" }, keccak256)).toBe(keccak256(encodePacked(
      ["bytes32", "address", "address", "uint64", "uint64", "bool", "bytes32", "bytes", "uint32"],
      [a.schema, a.recipient, a.attester.toLowerCase() as HexString, a.time, a.expirationTime, a.revocable, a.refUID, "0x", 0],
    )));
  });
});

describe("writtenRecords()", () => {
  const kept = (...written: WrittenAttestation[]) => {
    const map = new Map(written.map((w) => [w.uid.toLowerCase(), w]));
    const taken: string[] = [];
    return { taken, take: (uid: string) => (taken.push(uid), map.get(uid)) };
  };

  test("a written attestation whose uid EAS would give its fields at its block's time is its record, not revoked", () => {
    const w = sent(40n, 1_040n);
    const written = kept(w);
    const known = writtenRecords([attested(w)], new Map([[40n, 1_040n]]), written.take, keccak256);
    const { blockNumber: _b, ...fields } = w;
    // Spelled as the chain's read spells it: lowercase hex, checksummed addresses.
    expect(known.get(w.uid.toLowerCase())).toEqual({
      ...fields,
      uid: w.uid.toLowerCase() as HexString,
      recipient: getAddress(RECIPIENT),
      attester: getAddress(ATTESTER),
      data: "0x00c0ffee",
      time: 1_040n,
      revocationTime: 0n,
    } satisfies IndexedAttestation);
    expect(written.taken).toEqual([w.uid.toLowerCase()]);
  });

  test("anything the step cannot tell exactly is left to the chain's read", () => {
    const w = sent(40n, 1_040n);
    const times = new Map([[40n, 1_040n]]);
    // Fields that do not hash to the uid (another bump, a wrong time, other data): not taken for the record.
    expect(writtenRecords([attested(w)], new Map([[40n, 1_041n]]), kept(w).take, keccak256).size).toBe(0);
    expect(writtenRecords([attested(w)], times, kept({ ...w, data: "0x00" }).take, keccak256).size).toBe(0);
    // Its block's time not read by the step; logged in another block than the one it was sent in; revoked in the range.
    expect(writtenRecords([attested(w)], new Map(), kept(w).take, keccak256).size).toBe(0);
    expect(writtenRecords([attested(w, 41n)], new Map([[41n, 1_040n]]), kept(w).take, keccak256).size).toBe(0);
    expect(writtenRecords([attested(w), { ...attested(w), kind: "revoked", logIndex: 1 }], times, kept(w).take, keccak256).size).toBe(0);
    // Not this instance's write.
    expect(writtenRecords([attested(w)], times, kept().take, keccak256).size).toBe(0);
  });
});

describe("createIndexFollower() with this instance's writes", () => {
  /** A chain of 50 blocks (times 1,000 + n) with the attestations `written` by this instance and one by another. */
  function chainWith(written: readonly WrittenAttestation[], other: WrittenAttestation) {
    const calls: string[] = [];
    const hash = (n: bigint) => `0x${n.toString(16).padStart(64, "a")}` as HexString;
    const chain: ChainHistory = {
      head: () => Promise.resolve({ ok: true, value: 49n }),
      blockHash: (n) => Promise.resolve({ ok: true, value: hash(n) }),
      block: (n) => Promise.resolve({ ok: true, value: { blockNumber: n, blockHash: hash(n), timestamp: 1_000n + n, parentHash: hash(n - 1n) } }),
      events: (from, to) =>
        Promise.resolve({
          ok: true,
          value: { events: [...written, other].filter((w) => w.blockNumber >= from && w.blockNumber <= to).sort((a, b) => Number(a.blockNumber - b.blockNumber)).map((w) => attested(w)), toHash: hash(to), toTimestamp: 1_000n + to, toParentHash: hash(to - 1n) },
        }),
      attestations(uids, block) {
        calls.push(`attestations ${uids.join(",")} at ${block}`);
        const all = [...written, other];
        return Promise.resolve({
          ok: true,
          value: uids.map((uid) => {
            const { blockNumber, ...fields } = all.find((w) => w.uid.toLowerCase() === uid)!;
            return { ...fields, time: 1_000n + blockNumber, revocationTime: 0n };
          }),
        });
      },
    };
    return { chain, calls };
  }

  test("the step stores its own writes' records from what was sent when it read their blocks' times, and reads the rest, in order", async () => {
    // Blocks 48 (the tail, confirmations 2) and 49 (the range's last) have their times read; 46 has not.
    const mine = [sent(46n, 1_046n), sent(48n, 1_048n), sent(49n, 1_049n, "0xbeef")];
    const other = sent(45n, 1_045n, "0x0123");
    const { chain, calls } = chainWith(mine, other);
    const kept = new Map(mine.map((w) => [w.uid.toLowerCase(), w]));
    const store = fakeIndexStore();
    const take = (uid: string) => kept.get(uid);
    const step = createIndexFollower({ chain, store, startBlock: 40n, confirmations: 2, stepBlocks: 100n, written: { take, keccak: keccak256 } });
    expect(await step()).toMatchObject({ ok: true, ingested: { from: 40n, to: 49n, events: 4 }, caughtUp: true });
    expect(calls).toEqual([`attestations ${other.uid.toLowerCase()},${mine[0]!.uid.toLowerCase()} at 49`]);
    const uids = [other.uid, ...mine.map((w) => w.uid)];
    const stored = await store.records(uids);
    expect(stored.map((r) => [r?.blockNumber, r?.time, r?.data])).toEqual([
      [45n, 1_045n, "0x0123"],
      [46n, 1_046n, mine[0]!.data], // read from the fake chain, which answers what was sent
      [48n, 1_048n, "0x00c0ffee"],
      [49n, 1_049n, "0xbeef"],
    ]);

    // Without this instance's writes every record is read (the step as before).
    const plain = chainWith(mine, other);
    await createIndexFollower({ chain: plain.chain, store: fakeIndexStore(), startBlock: 40n, confirmations: 2, stepBlocks: 100n })();
    expect(plain.calls).toEqual([`attestations ${uids.map((u) => u.toLowerCase()).join(",")} at 49`]);
  });
});
