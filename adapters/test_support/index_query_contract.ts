import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of the attestation index's queries (issue 37); registered inside its describe, `open` gives the storage under test. */
export function indexQueryContract(open: () => Promise<Storage>) {
  test("index queries (issue 37): each filter and their combinations, newest or oldest first by block then log position, keyset pages, counts", async () => {
    const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
    const uid = (n: number) => `0x${"2".repeat(56)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
    const address = (n: number) => `0x${"c".repeat(32)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
    const schema = (n: number) => `0x${"d".repeat(56)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
    // 60 attestations, three per block (blocks 1-20), logged at positions 5, 2 and 7 in that order; block b at time 1000 + b.
    type Row = { n: number; block: number; logIndex: number; attester: `0x${string}`; recipient: `0x${string}`; schemaUid: `0x${string}`; revoked: boolean };
    const rows: Row[] = Array.from({ length: 60 }, (_, n) => ({
      n, block: Math.floor(n / 3) + 1, logIndex: [5, 2, 7][n % 3]!, attester: address(n % 2), recipient: address(10 + (n % 3)),
      schemaUid: schema(n % 4), revoked: n % 5 === 0,
    }));
    const append = async (part: Row[], expected: bigint | undefined, next: bigint) => {
      const events = part.flatMap((r) => [
        { kind: "attested" as const, uid: uid(r.n), recipient: r.recipient, attester: r.attester, schemaUid: r.schemaUid, blockNumber: BigInt(r.block), logIndex: r.logIndex },
        ...(r.revoked ? [{ kind: "revoked" as const, uid: uid(r.n), recipient: r.recipient, attester: r.attester, schemaUid: r.schemaUid, blockNumber: BigInt(r.block), logIndex: r.logIndex + 20 }] : []),
      ]);
      const attestations = part.map((r) => ({
        uid: uid(r.n), schema: r.schemaUid, time: 1_000n + BigInt(r.block), expirationTime: 0n, revocationTime: r.revoked ? 1_000n + BigInt(r.block) : 0n,
        refUID: uid(0), recipient: r.recipient, attester: r.attester, revocable: true, data: "0x01" as const,
      }));
      expect(await store.append(expected, events, { blockNumber: next, blockHash: schema(Number(next)) }, { attestations })).toBe(true);
    };
    await append(rows.slice(0, 45), undefined, 15n);
    const byPosition = (a: Row, b: Row) => (a.block - b.block) || (a.logIndex - b.logIndex);
    const expected = (f: (r: Row) => boolean, order: "newest" | "oldest", upTo = 15) => {
      const sorted = rows.filter((r) => r.block <= upTo && f(r)).sort(byPosition).map((r) => uid(r.n));
      return order === "newest" ? sorted.reverse() : sorted;
    };
    const cases: [Partial<import("../../ports/attestation_index.ts").IndexFilter>, (r: Row) => boolean][] = [
      [{ attester: address(1) }, (r) => r.attester === address(1)],
      [{ attester: address(1).toUpperCase().replace("0X", "0x") as `0x${string}` }, (r) => r.attester === address(1)],
      [{ recipient: address(11) }, (r) => r.recipient === address(11)],
      [{ schemaUid: schema(2) }, (r) => r.schemaUid === schema(2)],
      [{ attester: address(0), schemaUid: schema(2) }, (r) => r.attester === address(0) && r.schemaUid === schema(2)],
      [{ recipient: address(10), attester: address(0), revoked: true }, (r) => r.recipient === address(10) && r.attester === address(0) && r.revoked],
      [{ schemaUid: schema(1), revoked: false }, (r) => r.schemaUid === schema(1) && !r.revoked],
      [{ attester: address(1), since: 1_004n, until: 1_009n }, (r) => r.attester === address(1) && r.block >= 4 && r.block < 9],
      [{ recipient: address(12), since: 1_013n }, (r) => r.recipient === address(12) && r.block >= 13],
      [{ recipient: address(12), until: 1_001n }, () => false],
      [{ recipient: address(12), since: 5_000n }, () => false],
      [{ attester: address(9) }, () => false],
    ];
    for (const [filter, f] of cases) {
      for (const order of ["newest", "oldest"] as const) {
        const got = await store.query({ ...filter, toBlock: 15n, order, limit: 100 });
        expect({ filter, order, uids: got.map((l) => l.uid) }).toEqual({ filter, order, uids: expected(f, order) });
      }
      expect(await store.count({ ...filter, toBlock: 15n })).toBe(expected(f, "newest").length);
    }
    // Pinned: nothing past toBlock, and revocations as of toBlock.
    expect((await store.query({ attester: address(0), toBlock: 6n, order: "newest", limit: 100 })).map((l) => l.uid)).toEqual(expected((r) => r.attester === address(0), "newest", 6));
    expect(await store.count({ schemaUid: schema(0), revoked: true, toBlock: 15n })).toBe(rows.filter((r) => r.block <= 15 && r.schemaUid === schema(0) && r.revoked).length);
    // A log carries its position, for the cursor.
    const [newest] = await store.query({ attester: address(0), toBlock: 15n, order: "newest", limit: 1 });
    expect(newest).toMatchObject({ uid: uid(44), blockNumber: 15n, logIndex: 7, attester: address(0), schemaUid: schema(0) });

    // Keyset pages of 4, newest first, while blocks 16-20 are indexed between pages: each item once, none shifted.
    const walk = async (order: "newest" | "oldest", grow: (page: number) => Promise<bigint>) => {
      const seen: string[] = [];
      let after: import("../../ports/attestation_index.ts").PageCursor | undefined;
      let toBlock = 15n;
      for (let page = 0; page < 100; page++) {
        const logs = await store.query({ recipient: address(10), toBlock, order, after, limit: 4 });
        seen.push(...logs.map((l) => l.uid));
        if (logs.length < 4) return seen;
        after = logs.at(-1);
        toBlock = await grow(page);
      }
      throw new Error("no last page");
    };
    let head = 15n;
    const seenNewest = await walk("newest", async (page) => {
      if (page < 5) {
        await append(rows.filter((r) => r.block === Number(head) + 1), head, head + 1n);
        head += 1n;
      }
      return head;
    });
    expect(seenNewest).toEqual(expected((r) => r.recipient === address(10), "newest", 15));
    expect(head).toBeGreaterThan(15n);
    for (; head < 20n; head += 1n) await append(rows.filter((r) => r.block === Number(head) + 1), head, head + 1n);
    // Oldest first, the rows indexed meanwhile come at the end, once each.
    expect(await store.query({ recipient: address(10), toBlock: 20n, order: "oldest", limit: 100 }).then((l) => l.map((x) => x.uid)))
      .toEqual(expected((r) => r.recipient === address(10), "oldest", 20));
    const oldestPages: string[] = [];
    let after: import("../../ports/attestation_index.ts").PageCursor | undefined;
    for (let page = 0; page < 100; page++) {
      const logs = await store.query({ recipient: address(10), toBlock: 20n, order: "oldest", after, limit: 3 });
      oldestPages.push(...logs.map((l) => l.uid));
      if (logs.length < 3) break;
      after = logs.at(-1);
    }
    expect(oldestPages).toEqual(expected((r) => r.recipient === address(10), "oldest", 20));
  });
}
