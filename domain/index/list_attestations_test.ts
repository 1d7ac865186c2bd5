import { describe, expect, test } from "bun:test";
import type { EasEvent, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeAttestationIndex, fakeClock, fakeIndexStore } from "../../ports/fakes/mod.ts";
import { keccak256, stringToBytes } from "viem/utils";
import { didToAddress } from "../did/mod.ts";
import { createCountAttestations, createGetAttestation, createListAttestations, decodeCursor, encodeCursor, type ListQuery } from "./list_attestations.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import { createIndexAnswers } from "./store_reads.ts";

const SUBJECT = "did:web:shop.example";
const RECIPIENT = (didToAddress(SUBJECT) as { value: HexString }).value.toLowerCase() as HexString;
const REVIEW = findSchemaByName("user-review")!;
const SCHEMA_UID = `0x${"5".repeat(64)}` as HexString;
const OTHER_SCHEMA = `0x${"6".repeat(64)}` as HexString;
const ALICE = `0x${"a".repeat(40)}` as HexString;
const BOB = `0x${"b".repeat(40)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;

type Spec = { subject?: string; attester?: HexString; schema?: HexString; revokedAt?: bigint; logIndex?: number; block?: bigint };

function review(n: number, spec: Spec = {}): IndexedAttestation {
  const data = encodeSchemaData(REVIEW.schema, { subject: spec.subject ?? SUBJECT, version: "1", ratingValue: 5, reviewBody: `review ${n}`, screenshotUrls: [], proofs: [] });
  return {
    uid: uid(n),
    schema: spec.schema ?? SCHEMA_UID,
    time: 1_000n + BigInt(n),
    expirationTime: 0n,
    revocationTime: spec.revokedAt === undefined ? 0n : 5n,
    refUID: uid(0),
    recipient: RECIPIENT,
    attester: spec.attester ?? ALICE,
    revocable: true,
    data: (data as { value: HexString }).value,
  };
}

/**
 * Reviews 1..n in the store (the one source of reads, decisions §21), review i at block 10·i unless `spec` says;
 * read through the store-backed reads as the service reads them.
 */
/** The deployment's cursor secret in these tests (app/index.ts reads the real one from the shared store). */
const CURSOR_KEY = new Uint8Array(32).fill(3);

async function setup(n: number, spec: (i: number) => Spec = () => ({}), cursorKey: Uint8Array = CURSOR_KEY) {
  const store = fakeIndexStore();
  const clock = fakeClock();
  let last = 0n;
  const add = async (from: number, to: number) => {
    const events: EasEvent[] = [];
    const records: IndexedAttestation[] = [];
    for (let i = from; i <= to; i++) {
      const s = spec(i);
      const a = review(i, s);
      const block = s.block ?? BigInt(i * 10);
      events.push({ kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: block, logIndex: s.logIndex ?? 0 });
      if (s.revokedAt !== undefined) events.push({ kind: "revoked", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: s.revokedAt, logIndex: 9 });
      records.push(a);
    }
    const next = BigInt(to * 10 + 5);
    await store.append(last === 0n ? undefined : last, events, { blockNumber: next, blockHash: uid(900 + to) }, { attestations: records });
    last = next;
    await store.checked(clock.nowMs(), next);
  };
  await add(1, n);
  const answers = createIndexAnswers({
    store, chainId: 31337, easAddress: `0x${"e".repeat(40)}`, startBlock: 0n, schemas: fakeAttestationIndex(), clock, stallSeconds: 120,
  });
  const deps = (reads: Parameters<Parameters<typeof answers.answer>[0]>[0]) => ({ reads, store, schemaUids: { "user-review": SCHEMA_UID }, startBlock: 0n, cursorKey });
  const list = (q: ListQuery) => answers.answer((reads) => createListAttestations(deps(reads))(q));
  const count = (q: ListQuery) => answers.answer((reads) => createCountAttestations(deps(reads))(q));
  const one = (u: string) => answers.answer((reads) => createGetAttestation(deps(reads))(u));
  return { store, list, count, one, add, clock };
}

const bodies = (items: readonly { attestation: { data: Readonly<Record<string, unknown>> } }[]) => items.map((i) => i.attestation.data.reviewBody);

async function all(list: (q: ListQuery) => Promise<{ ok: boolean }>, q: ListQuery, between?: () => Promise<void>) {
  const seen: unknown[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 50; page++) {
    const result = await list({ ...q, ...(cursor === undefined ? {} : { cursor }) }) as Awaited<ReturnType<ReturnType<typeof createListAttestations>>>;
    if (!result.ok) throw new Error(result.message);
    seen.push(...bodies(result.value.items));
    if (result.value.nextCursor === null) return seen;
    cursor = result.value.nextCursor;
    await between?.();
  }
  throw new Error("no last page");
}

describe("createListAttestations()", () => {
  test("pages newest first by block then log position, with no gap or repeat; the subject + schema form answers as before", async () => {
    // Reviews 7 and 8 share block 70, 8 logged first.
    const { list } = await setup(12, (i) => (i === 7 ? { block: 70n, logIndex: 3 } : i === 8 ? { block: 70n, logIndex: 1 } : {}));
    expect(await all(list, { subject: SUBJECT, schema: "user-review", limit: "5" })).toEqual(
      [12, 11, 10, 9, 7, 8, 6, 5, 4, 3, 2, 1].map((n) => `review ${n}`),
    );
    const first = await list({ subject: "shop.example", schema: "user-review", limit: "2" });
    if (!first.ok) throw new Error(first.message);
    expect(Object.keys(first.value).sort()).toEqual(["asOf", "items", "nextCursor", "schema", "subject"]);
    expect(first.value).toMatchObject({ subject: SUBJECT, schema: "user-review", asOf: { blockNumber: 125 } });
    expect(Object.keys(first.value.items[0]!.attestation).sort()).toEqual(
      ["attester", "data", "expirationTime", "recipient", "revocationTime", "schema", "schemaName", "time", "uid"],
    );
  });

  test("oldest first walks the same list backwards", async () => {
    const { list } = await setup(7);
    expect(await all(list, { attester: ALICE, order: "oldest", limit: "3" })).toEqual([1, 2, 3, 4, 5, 6, 7].map((n) => `review ${n}`));
  });

  test("filters combine: attester, schema as name or UID, recipient, revoked, since (inclusive) and until (exclusive)", async () => {
    const { list } = await setup(10, (i) => ({
      attester: i % 2 === 0 ? BOB : ALICE,
      schema: i === 9 ? OTHER_SCHEMA : SCHEMA_UID,
      ...(i === 4 || i === 6 ? { revokedAt: 99n } : {}),
    }));
    const names = async (q: ListQuery) => {
      const r = await list({ ...q, limit: "100" });
      if (!r.ok) throw new Error(r.message);
      return r.value.items.map((i) => Number(BigInt(i.attestation.uid)));
    };
    expect(await names({ attester: BOB })).toEqual([10, 8, 6, 4, 2]);
    expect(await names({ attester: BOB.toUpperCase().replace("0X", "0x") })).toEqual([10, 8, 6, 4, 2]);
    expect(await names({ attester: ALICE, schema: "user-review" })).toEqual([7, 5, 3, 1]);
    expect(await names({ schema: OTHER_SCHEMA })).toEqual([9]);
    expect(await names({ schema: SCHEMA_UID.toUpperCase().replace("0X", "0x"), revoked: "true" })).toEqual([6, 4]);
    expect(await names({ attester: BOB, revoked: "false" })).toEqual([10, 8, 2]);
    expect(await names({ recipient: RECIPIENT, since: "1003", until: "1007" })).toEqual([6, 5, 4, 3]);
    expect(await names({ subject: SUBJECT, recipient: BOB })).toEqual([]);
    // A name of every JavaScript object is no schema name: 400, as any unknown name (it was 500).
    for (const schema of ["constructor", "__proto__", "toString", "hasOwnProperty"]) {
      expect(await list({ schema })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
    // A schema the trust anchors do not name: listed with its data undecoded.
    const other = await list({ schema: OTHER_SCHEMA });
    expect(other.ok && other.value.items[0]!.attestation).toMatchObject({ schemaName: null, data: {} });
  });

  test("with subject, attestations naming another subject are left out and the page filled from further back", async () => {
    const { list } = await setup(6, (i) => (i === 5 || i === 2 ? { subject: "did:web:other.example" } : i === 3 ? { revokedAt: 40n } : {}));
    const result = await list({ subject: SUBJECT, limit: "3" });
    if (!result.ok) throw new Error(result.message);
    expect(result.value.items.map((i) => [i.attestation.data.reviewBody, i.revoked])).toEqual([["review 6", false], ["review 4", false], ["review 3", true]]);
    expect(await all(list, { subject: SUBJECT, limit: "3" })).toEqual(["review 6", "review 4", "review 3", "review 1"]);
  });

  test("attestations indexed between two pages neither repeat nor shift what was seen, newest or oldest first", async () => {
    const newest = await setup(9);
    let next = 10;
    const grow = async () => {
      await newest.add(next, next);
      next++;
    };
    expect(await all(newest.list, { attester: ALICE, limit: "4" }, grow)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1].map((n) => `review ${n}`));
    const oldest = await setup(5);
    next = 6;
    const growOld = async () => {
      if (next <= 8) await oldest.add(next, next);
      next++;
    };
    // Oldest first, the new ones come at the end of the list, once each.
    expect(await all(oldest.list, { attester: ALICE, order: "oldest", limit: "2" }, growOld)).toEqual([1, 2, 3, 4, 5, 6, 7, 8].map((n) => `review ${n}`));
  });

  test("bad input is 400 naming the parameter; a cursor tampered with or from other filters is INVALID_INPUT", async () => {
    const { list } = await setup(3);
    expect(await list({})).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("subject, attester, recipient or schema") });
    expect(await list({ limit: "5" })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await list({ subject: "did:", schema: "user-review" })).toMatchObject({ ok: false, code: "INVALID_DID" });
    const refused: [ListQuery, string][] = [
      [{ subject: SUBJECT, schema: "no-such-schema" }, "schema"],
      [{ attester: "0x1234" }, "attester"],
      [{ recipient: "bob" }, "recipient"],
      [{ attester: ALICE, revoked: "yes" }, "revoked"],
      [{ attester: ALICE, since: "-1" }, "since"],
      [{ attester: ALICE, until: "1.5" }, "until"],
      [{ attester: ALICE, since: "99999999999999999999" }, "since"],
      [{ attester: ALICE, order: "random" }, "order"],
      ...["0", "101", "-1", "1.5", "x"].map((limit): [ListQuery, string] => [{ attester: ALICE, limit }, "limit"]),
      ...["nope", "e30", "e30.0000000000000000"].map((cursor): [ListQuery, string] => [{ attester: ALICE, cursor }, "cursor"]),
    ];
    for (const [q, name] of refused) expect(await list(q)).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining(name) });
    const page = await list({ attester: ALICE, limit: "1" });
    const cursor = page.ok ? page.value.nextCursor! : "";
    expect(await list({ attester: ALICE, limit: "1", cursor })).toMatchObject({ ok: true });
    // The position changed by hand, keeping the check: refused.
    const [body, check] = cursor.split(".");
    const json = JSON.parse(Buffer.from(body!, "base64url").toString()) as { b: string };
    const forged = `${Buffer.from(JSON.stringify({ ...json, b: "5" })).toString("base64url")}.${check}`;
    expect(await list({ attester: ALICE, cursor: forged })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("cursor") });
    for (const q of [{ attester: BOB }, { attester: ALICE, revoked: "false" }, { attester: ALICE, order: "oldest" }] as ListQuery[]) {
      expect(await list({ ...q, cursor })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("other filters") });
    }
  });

  test("cursors round-trip and refuse anything else", () => {
    expect(decodeCursor(encodeCursor({ blockNumber: 123456789n, logIndex: 7 }, "q1", CURSOR_KEY), CURSOR_KEY)).toEqual({ blockNumber: 123456789n, logIndex: 7, query: "q1" });
    expect(decodeCursor("", CURSOR_KEY)).toBeUndefined();
    expect(decodeCursor("x".repeat(500), CURSOR_KEY)).toBeUndefined();
  });

  test("a cursor's check is keyed with the deployment's secret (issue 43 item 10): minted by hand or by another deployment, refused", async () => {
    const { list } = await setup(6);
    const page = await list({ attester: ALICE, limit: "2" });
    const cursor = page.ok ? page.value.nextCursor! : "";
    const [body, check] = cursor.split(".") as [string, string];
    // 128 bits of HMAC-SHA256, base64url.
    expect(check).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const position = JSON.parse(Buffer.from(body, "base64url").toString()) as { b: string; i: number; q: string };
    // The right format and the query's own digest, for a position of the forger's choosing, with the check as the
    // source says it was computed before (keccak256 of a fixed prefix and the body, unkeyed): refused.
    const mintedBody = Buffer.from(JSON.stringify({ ...position, b: "25" })).toString("base64url");
    const unkeyed = keccak256(stringToBytes(`ats-attestations-cursor\n${mintedBody}`)).slice(2, 18);
    // Or with a check of the right length made under a guessed key.
    const guessed = encodeCursor({ blockNumber: 25n, logIndex: 0 }, position.q, new Uint8Array(32));
    for (const forged of [`${mintedBody}.${unkeyed}`, guessed, `${mintedBody}.${check}`]) {
      expect(await list({ attester: ALICE, cursor: forged })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("cursor") });
    }
    // Another deployment (another secret, the same chain and query) gives its own cursors; neither takes the other's.
    const other = await setup(6, () => ({}), new Uint8Array(32).fill(9));
    const theirs = await other.list({ attester: ALICE, limit: "2" });
    const theirCursor = theirs.ok ? theirs.value.nextCursor! : "";
    expect(theirCursor.split(".")[0]).toBe(body);
    expect(theirCursor).not.toBe(cursor);
    expect(await list({ attester: ALICE, cursor: theirCursor })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("cursor") });
    expect(await other.list({ attester: ALICE, cursor })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("cursor") });
    // Each deployment follows its own.
    expect(await list({ attester: ALICE, limit: "2", cursor })).toMatchObject({ ok: true, value: { items: [{}, {}] } });
    expect(await other.list({ attester: ALICE, limit: "2", cursor: theirCursor })).toMatchObject({ ok: true, value: { items: [{}, {}] } });
  });

  test("a stale index is INDEX_STALE, never an old page", async () => {
    const { list, clock } = await setup(2);
    clock.set(clock.nowMs() + 121_000);
    expect(await list({ attester: ALICE })).toMatchObject({ ok: false, code: "INDEX_STALE" });
  });
});

describe("createCountAttestations() and createGetAttestation()", () => {
  test("counts what the list would list, with the same filters, subject's decoded check included", async () => {
    const { count, list } = await setup(8, (i) => ({ attester: i <= 3 ? BOB : ALICE, ...(i === 2 ? { subject: "did:web:other.example" } : {}), ...(i === 7 ? { revokedAt: 75n } : {}) }));
    expect(await count({ attester: ALICE })).toMatchObject({ ok: true, value: { count: 5, asOf: { blockNumber: 85 } } });
    expect(await count({ attester: ALICE, revoked: "true" })).toMatchObject({ ok: true, value: { count: 1 } });
    expect(await count({ schema: "user-review", since: "1004" })).toMatchObject({ ok: true, value: { count: 5 } });
    expect(await count({ subject: SUBJECT })).toMatchObject({ ok: true, value: { count: 7 } });
    const listed = await list({ subject: SUBJECT, limit: "100" });
    expect(listed.ok && listed.value.items.length).toBe(7);
    expect(await count({})).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await count({ attester: "x" })).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("attester") });
  });

  test("one attestation by uid: the list's item shape; unknown 404, malformed 400", async () => {
    const { one, list } = await setup(3, (i) => (i === 2 ? { revokedAt: 25n } : {}));
    const got = await one(uid(2));
    const listed = await list({ attester: ALICE, limit: "100" });
    if (!got.ok || !listed.ok) throw new Error("read failed");
    const { asOf, ...item } = got.value;
    expect(asOf).toMatchObject({ blockNumber: 35 });
    expect(item).toEqual(listed.value.items[1]!);
    expect(item.revoked).toBe(true);
    expect(await one(uid(77))).toMatchObject({ ok: false, code: "NOT_FOUND" });
    expect(await one("0x12")).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("uid") });
  });
});
