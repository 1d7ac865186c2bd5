/**
 * The deployment's secrets (issue 43 item 10), for each database: stored once, the same through every connection
 * (instance) on the database, and the query cursors made under one instance's read of the secret accepted by another,
 * while a cursor of another deployment is refused.
 */
import { describe, expect, test } from "bun:test";
import { createIndexAnswers, createListAttestations, type ListQuery } from "../../domain/index/mod.ts";
import { fakeAttestationIndex, fakeClock, fakeIndexStore } from "../../ports/fakes/mod.ts";
import type { Storage } from "../../ports/storage.ts";
import type { EasEvent, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { openSqliteStorage } from "../sqlite/mod.ts";

const bytes = (fill: number) => new Uint8Array(32).fill(fill);

/** Runs the contract over two storages on one database (two instances of a deployment). */
export function deploymentSecretsContract(name: string, open: () => Promise<readonly [Storage, Storage]>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`deployment secrets: ${name}${options.skip ? ` (skipped: ${options.skip})` : ""}`, () => {
    test("the first secret stored under a name is every instance's, racing or not; names are independent", async () => {
      const [first, second] = await open();
      const tag = `t-${Math.random()}`;
      expect(await first.secrets.secret(`${tag}-a`, bytes(1))).toEqual(bytes(1));
      expect(await second.secrets.secret(`${tag}-a`, bytes(2))).toEqual(bytes(1));
      expect(await first.secrets.secret(`${tag}-a`, bytes(3))).toEqual(bytes(1));
      expect(await second.secrets.secret(`${tag}-b`, bytes(4))).toEqual(bytes(4));
      const raced = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? first : second).secrets.secret(`${tag}-c`, bytes(10 + i))));
      expect(new Set(raced.map((s) => s.join(","))).size).toBe(1);
      expect(raced[0]!.length).toBe(32);
    });

    test("a cursor one instance gave, another accepts; a cursor of another deployment is refused", async () => {
      const [first, second] = await open();
      const other = openSqliteStorage(":memory:");
      const tag = `cursors-${Math.random()}`;
      const store = fakeIndexStore();
      const clock = fakeClock();
      const attester = `0x${"a".repeat(40)}` as HexString;
      const records: IndexedAttestation[] = Array.from({ length: 3 }, (_, i) => ({
        uid: `0x${(i + 1).toString(16).padStart(64, "0")}` as HexString, schema: `0x${"5".repeat(64)}` as HexString, time: 1_000n, expirationTime: 0n,
        revocationTime: 0n, refUID: `0x${"0".repeat(64)}` as HexString, recipient: `0x${"b".repeat(40)}` as HexString, attester, revocable: true, data: "0x",
      }));
      const events: EasEvent[] = records.map((a, i) => ({
        kind: "attested", uid: a.uid, recipient: a.recipient, attester, schemaUid: a.schema, blockNumber: BigInt(10 * (i + 1)), logIndex: 0,
      }));
      await store.append(undefined, events, { blockNumber: 40n, blockHash: `0x${"9".repeat(64)}` }, { attestations: records });
      await store.checked(clock.nowMs(), 40n);
      const answers = createIndexAnswers({ store, chainId: 31337, easAddress: `0x${"e".repeat(40)}`, startBlock: 0n, schemas: fakeAttestationIndex(), clock, stallSeconds: 120 });
      const listOf = async (storage: Storage, candidate: number) => {
        const cursorKey = await storage.secrets.secret(tag, bytes(candidate));
        return (q: ListQuery) => answers.answer((reads) => createListAttestations({ reads, store, schemaUids: {}, startBlock: 0n, cursorKey })(q));
      };
      const [viaFirst, viaSecond, viaOther] = [await listOf(first, 1), await listOf(second, 2), await listOf(other, 3)];
      const page = await viaFirst({ attester, limit: "1" });
      const cursor = page.ok ? page.value.nextCursor : null;
      expect(cursor).toEqual(expect.any(String));
      const query = { attester, limit: "1", cursor: cursor! };
      expect(await viaSecond(query)).toMatchObject({ ok: true });
      expect(await viaOther(query)).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("cursor") });
      await other.close();
    });
  });
}
