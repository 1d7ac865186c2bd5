import { describe, expect, test } from "bun:test";
import type { IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeAttestationIndex, fakeIndexStore } from "../../ports/fakes.ts";
import { didToAddress } from "../did.ts";
import { createListAttestations, decodeCursor, encodeCursor } from "./list_attestations.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

const SUBJECT = "did:web:shop.example";
const RECIPIENT = (didToAddress(SUBJECT) as { value: HexString }).value.toLowerCase() as HexString;
const REVIEW = findSchemaByName("user-review")!;
const SCHEMA_UID = `0x${"5".repeat(64)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;

function review(n: number, subject = SUBJECT, revoked = false): IndexedAttestation {
  const data = encodeSchemaData(REVIEW.schema, { subject, version: "1", ratingValue: 5, reviewBody: `review ${n}`, screenshotUrls: [], proofs: [] });
  return {
    uid: uid(n),
    schema: SCHEMA_UID,
    time: BigInt(1_000 + n),
    expirationTime: 0n,
    revocationTime: revoked ? 5n : 0n,
    refUID: uid(0),
    recipient: RECIPIENT,
    attester: `0x${"a".repeat(40)}` as HexString,
    revocable: false,
    data: (data as { value: HexString }).value,
  };
}

/** Reviews 1..n, one per block 10, 20, …; those up to `indexedTo` are in the store, the rest only on the chain. */
async function setup(n: number, indexedTo: bigint, extra: (a: IndexedAttestation) => IndexedAttestation = (a) => a) {
  const reads = fakeAttestationIndex({ head: BigInt(n * 10 + 5) });
  const store = fakeIndexStore();
  const events = [];
  for (let i = 1; i <= n; i++) {
    const a = extra(review(i));
    reads.add(a, BigInt(i * 10));
    if (BigInt(i * 10) <= indexedTo) {
      events.push({ kind: "attested" as const, uid: a.uid, recipient: RECIPIENT, attester: a.attester, schemaUid: SCHEMA_UID, blockNumber: BigInt(i * 10), logIndex: 0 });
    }
  }
  await store.append(undefined, events, { blockNumber: indexedTo, blockHash: uid(999) });
  const list = createListAttestations({ reads, store, schemaUids: { "user-review": SCHEMA_UID }, startBlock: 0n });
  return { reads, store, list };
}

const bodies = (items: readonly { attestation: { data: Readonly<Record<string, unknown>> } }[]) => items.map((i) => i.attestation.data.reviewBody);

describe("createListAttestations()", () => {
  test("pages newest first across the live tail and the index, with no gap or repeat", async () => {
    const { list } = await setup(12, 75n);
    const seen: unknown[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const result = await list({ subject: SUBJECT, schema: "user-review", limit: "5", ...(cursor === undefined ? {} : { cursor }) });
      if (!result.ok) throw new Error(result.message);
      seen.push(...bodies(result.value.items));
      if (result.value.nextCursor === null) break;
      cursor = result.value.nextCursor;
    }
    expect(seen).toEqual(Array.from({ length: 12 }, (_, i) => `review ${12 - i}`));
  });

  test("keeps only attestations whose decoded subject is the DID, flags revoked ones, keeps the record shape", async () => {
    const { list } = await setup(4, 100n, (a) => (a.uid === uid(2) ? review(2, "did:web:other.example") : a.uid === uid(3) ? review(3, SUBJECT, true) : a));
    const result = await list({ subject: "shop.example", schema: "user-review" });
    if (!result.ok) throw new Error(result.message);
    expect(result.value.subject).toBe(SUBJECT);
    expect(result.value.items.map((i) => [i.attestation.data.reviewBody, i.revoked])).toEqual([["review 4", false], ["review 3", true], ["review 1", false]]);
    expect(Object.keys(result.value.items[0]!.attestation).sort()).toEqual(
      ["attester", "data", "expirationTime", "recipient", "revocationTime", "schema", "schemaName", "time", "uid"],
    );
    expect(result.value.nextCursor).toBeNull();
  });

  test("a bad subject, schema, limit or cursor is a 400 code; a chain failure is NETWORK_ERROR, never an empty page", async () => {
    const { list, reads } = await setup(3, 10n);
    expect(await list({ schema: "user-review" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await list({ subject: "did:", schema: "user-review" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    expect(await list({ subject: SUBJECT, schema: "no-such-schema" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    for (const limit of ["0", "101", "-1", "1.5", "x"]) {
      expect(await list({ subject: SUBJECT, schema: "user-review", limit })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
    for (const cursor of ["nope", encodeCursor({ blockNumber: 1n, logIndex: 0 }).slice(1), "e30"]) {
      expect(await list({ subject: SUBJECT, schema: "user-review", cursor })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
    reads.failWhen = (method) => method === "attestedUids";
    expect(await list({ subject: SUBJECT, schema: "user-review" })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    reads.failWhen = (method) => method === "attestations";
    expect(await list({ subject: SUBJECT, schema: "user-review" })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
  });

  test("cursors round-trip and refuse anything else", () => {
    expect(decodeCursor(encodeCursor({ blockNumber: 123456789n, logIndex: 7 }))).toEqual({ blockNumber: 123456789n, logIndex: 7 });
    expect(decodeCursor("")).toBeUndefined();
    expect(decodeCursor("x".repeat(500))).toBeUndefined();
  });
});
