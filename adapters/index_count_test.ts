/**
 * Issue 43 item 8: `GET /v1/attestations/count?subject=` read and decoded every attestation sent to the subject's
 * address (400–500 ms at 3,000, growing with the history). The subject each record names is now stored with it at
 * ingest, so the count is one COUNT over an index that holds every column it checks: no row read, nothing decoded.
 * On the real SQLite and PostgreSQL stores: the count answers what the list lists (subjects naming another DID,
 * revocations, a reorg, `since`, schema filters), with one `count` of the store and no record read, its plan an
 * index-only scan; a database stored before subjects were kept counts correctly by decoding until the follower has
 * filled them in.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { createSqliteIndexStore, openSqlite } from "./sqlite/mod.ts";
import { indexQuerySql } from "./sql/index_query.ts";
import type { EasEvent, IndexedAttestation, IndexStore } from "../ports/attestation_index.ts";
import type { HexString } from "../ports/eas.ts";
import { fakeAttestationIndex, fakeClock } from "../ports/fakes/mod.ts";
import { didToAddress, normalizeDid, normalizeSubjectDid } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { createCountAttestations, createIndexAnswers, createIndexFollower, createListAttestations, createSubjectOf, type ListQuery } from "../domain/index/mod.ts";
import { postgresForTests } from "../e2e/support/postgres_storage.ts";

const SUBJECT = "did:web:shop.example";
const RECIPIENT = (didToAddress(SUBJECT) as { value: HexString }).value.toLowerCase() as HexString;
const REVIEW = findSchemaByName("user-review")!;
const REVIEW_UID = `0x${"5".repeat(64)}` as HexString;
/** A schema the trust anchors do not name: its data is not decoded, so it names no subject. */
const OTHER_SCHEMA = `0x${"6".repeat(64)}` as HexString;
const SCHEMA_UIDS = { "user-review": REVIEW_UID };
const ALICE = `0x${"a".repeat(40)}` as HexString;
const EAS = `0x${"e".repeat(40)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;
const subjectOf = createSubjectOf(SCHEMA_UIDS);

/** Attestation n: block 10·n, time 1,000 + 10·n; a review of SUBJECT unless said otherwise, sent to its address. */
function record(n: number, spec: { subject?: string; schema?: HexString } = {}): IndexedAttestation {
  const data = encodeSchemaData(REVIEW.schema, { subject: spec.subject ?? SUBJECT, version: "1", ratingValue: 5, reviewBody: `r${n}`, screenshotUrls: [], proofs: [] });
  return {
    uid: uid(n),
    schema: spec.schema ?? REVIEW_UID,
    time: 1_000n + BigInt(n) * 10n,
    expirationTime: 0n,
    revocationTime: 0n,
    refUID: uid(0),
    recipient: RECIPIENT,
    attester: ALICE,
    revocable: true,
    data: (data as { value: HexString }).value,
  };
}
const attested = (a: IndexedAttestation): EasEvent => ({
  kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: (a.time - 1_000n), logIndex: 0,
});
const revoked = (a: IndexedAttestation, block: bigint): EasEvent => ({ ...attested(a), kind: "revoked", blockNumber: block, logIndex: 1 });

/** The store with every call counted (what a read costs, in statements of the store). */
function counted(store: IndexStore) {
  const calls: string[] = [];
  const wrapped = new Proxy(store, {
    get(target, name: string) {
      const value = (target as unknown as Record<string, unknown>)[name];
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.push(name);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store: wrapped, calls };
}

/** The count and the list, read as the service reads them. */
function reads(store: IndexStore) {
  const clock = fakeClock();
  const answers = createIndexAnswers({ store, chainId: 31337, easAddress: EAS, startBlock: 0n, schemas: fakeAttestationIndex(), clock, stallSeconds: 1e9 });
  const deps = (r: Parameters<Parameters<typeof answers.answer>[0]>[0]) => ({ reads: r, store, schemaUids: SCHEMA_UIDS, startBlock: 0n, cursorKey: new Uint8Array(32) });
  const count = async (q: ListQuery) => {
    const result = await answers.answer((r) => createCountAttestations(deps(r))(q));
    if (!result.ok) throw new Error(result.message);
    return result.value.count;
  };
  const listed = async (q: ListQuery) => {
    let n = 0;
    let cursor: string | undefined;
    for (;;) {
      const page = await answers.answer((r) => createListAttestations(deps(r))({ ...q, limit: "100", ...(cursor === undefined ? {} : { cursor }) }));
      if (!page.ok) throw new Error(page.message);
      n += page.value.items.length;
      if (page.value.nextCursor === null) return n;
      cursor = page.value.nextCursor;
    }
  };
  return { count, listed, checked: (head: bigint) => store.checked(clock.nowMs(), head) };
}

/** 1–30: reviews of SUBJECT, except 5 and 6 (naming another subject) and 7–9 (a schema the anchors do not name). */
const HISTORY = Array.from({ length: 30 }, (_, i) => i + 1).map((n) =>
  record(n, n === 5 || n === 6 ? { subject: "did:web:spoof.example" } : n >= 7 && n <= 9 ? { schema: OTHER_SCHEMA } : {})
);
const cp = (n: bigint) => ({ blockNumber: n, blockHash: uid(Number(n) + 9_000), timestamp: 1_000n + n });

const QUERIES: ListQuery[] = [
  { subject: SUBJECT },
  { subject: SUBJECT, schema: "user-review" },
  { subject: SUBJECT, schema: OTHER_SCHEMA },
  { subject: SUBJECT, revoked: "true" },
  { subject: SUBJECT, revoked: "false" },
  { subject: SUBJECT, since: "1105" },
  { subject: SUBJECT, since: "1100", until: "1200", schema: "user-review" },
  { subject: "did:web:spoof.example" },
  { schema: "user-review", since: "1150" },
  { recipient: RECIPIENT, revoked: "false" },
];

function countCases(name: string, open: () => Promise<IndexStore>, plan: (store: IndexStore) => Promise<string>, skip?: string) {
  describe.skipIf(skip !== undefined)(`the count of a subject is one index count (issue 43): ${name}`, () => {
    test("it answers what the list lists (other subjects, schemas, revocations, since/until, a reorg), with one count and no record read", async () => {
      const base = await open();
      const { store, calls } = counted(base);
      const { count, listed, checked } = reads(store);
      const subjects = new Map<string, string>();
      for (const a of HISTORY) {
        const s = subjectOf(a);
        if (s !== null) subjects.set(a.uid.toLowerCase(), s);
      }
      expect(subjects.size).toBe(27);
      // The rule the subjects follow, kept as the follower keeps it (a store that kept none counts by decoding).
      expect(await base.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
      // Ingest in two steps, with revocations of 3 (by 12) and 20 (by 31) and the tail after block 250.
      expect(await store.append(undefined, HISTORY.slice(0, 15).map(attested), cp(150n), { attestations: HISTORY.slice(0, 15), subjects })).toBe(true);
      const more = [...HISTORY.slice(15).map(attested), revoked(HISTORY[2]!, 255n), revoked(HISTORY[19]!, 310n)];
      const revokedRecords = [{ ...HISTORY[2]!, revocationTime: 1_255n }, ...HISTORY.slice(15).map((a) => a.uid === uid(20) ? { ...a, revocationTime: 1_310n } : a)];
      expect(await store.append(150n, more, cp(310n), { attestations: revokedRecords, subjects, confirmedTo: 250n })).toBe(true);
      await checked(310n);
      for (const q of QUERIES) {
        calls.length = 0;
        const n = await count(q);
        const made = [...calls];
        expect({ q, n }).toEqual({ q, n: await listed(q) });
        // Statements of the store: the head, the checkpoint, whether the address's subjects are known, the count, and
        // the rule row alone (a change of rule between them counted forgotten subjects); nothing read.
        if (q.subject !== undefined) expect({ q, made }).toEqual({ q, made: ["head", "checkpoint", "subjectsKnown", "count", "subjectRule"] });
      }
      expect(await count({ subject: SUBJECT })).toBe(25);
      expect(await count({ subject: SUBJECT, revoked: "true" })).toBe(2);
      // A reorg: blocks after 250 go (attestations 26–30 and both revocations of the second step).
      await store.rewind(cp(250n));
      await checked(250n);
      expect(await count({ subject: SUBJECT })).toBe(await listed({ subject: SUBJECT }));
      expect(await count({ subject: SUBJECT })).toBe(20);
      expect(await count({ subject: SUBJECT, revoked: "true" })).toBe(0);
      expect(await count({ subject: SUBJECT, since: "1105" })).toBe(await listed({ subject: SUBJECT, since: "1105" }));
    });

    test("a database stored before subjects were kept counts by decoding until the follower has stored them", async () => {
      const base = await open();
      const { store, calls } = counted(base);
      const { count, listed, checked } = reads(store);
      expect(await store.append(undefined, HISTORY.slice(0, 12).map(attested), cp(120n), { attestations: HISTORY.slice(0, 12) })).toBe(true);
      await checked(120n);
      calls.length = 0;
      expect(await count({ subject: SUBJECT })).toBe(await listed({ subject: SUBJECT }));
      expect(calls).toContain("records");
      // The follower's step stores every subject before it moves on (no chain read: the chain is never asked).
      const never = () => Promise.reject(new Error("no chain read expected"));
      const step = createIndexFollower({
        chain: { head: () => Promise.resolve({ ok: true as const, value: 120n }), blockHash: () => Promise.resolve({ ok: true as const, value: cp(120n).blockHash }), events: never, block: never, attestations: never },
        store,
        startBlock: 0n,
        confirmations: 0,
        stepBlocks: 100n,
        subjectOf,
      });
      expect(await step()).toMatchObject({ ok: true, subjectsFilled: 12 });
      expect(await step()).toMatchObject({ ok: true, caughtUp: true });
      calls.length = 0;
      expect(await count({ subject: SUBJECT })).toBe(7);
      expect(calls.filter((c) => c === "query" || c === "records")).toEqual([]);
      expect(await plan(base)).toContain("index_attestations_subject");
    });

    test("subjects stored under other trust anchors are forgotten at the follower's first step and stored again: the count answers what the list lists", async () => {
      const base = await open();
      const { count, listed, checked } = reads(base);
      const never = () => Promise.reject(new Error("no chain read expected"));
      const follower = (rule: ReturnType<typeof createSubjectOf>) => createIndexFollower({
        chain: { head: () => Promise.resolve({ ok: true as const, value: 120n }), blockHash: () => Promise.resolve({ ok: true as const, value: cp(120n).blockHash }), events: never, block: never, attestations: never },
        store: base,
        startBlock: 0n,
        confirmations: 0,
        stepBlocks: 100n,
        subjectOf: rule,
      });
      // Anchors that named no review schema: their follower kept its rule, and the reviews were stored naming nobody.
      expect(await base.resetSubjectsUnless!(createSubjectOf({}).rule)).toBe(false);
      expect(await base.append(undefined, HISTORY.slice(0, 12).map(attested), cp(120n), { attestations: HISTORY.slice(0, 12), subjects: new Map() })).toBe(true);
      await checked(120n);
      expect(await listed({ subject: SUBJECT })).toBe(7);
      // The anchors now name it (the list decodes with them): the first step forgets the stored subjects and fills them.
      const step = follower(subjectOf);
      expect(await step()).toMatchObject({ ok: true, subjectsFilled: 12 });
      expect(await step()).toMatchObject({ ok: true, caughtUp: true });
      expect(await count({ subject: SUBJECT })).toBe(7);
      expect(await listed({ subject: SUBJECT })).toBe(7);
      // The same rule again (a restart) forgets nothing.
      expect(await base.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
    });
  });
}

let nextChain = 8_000;
const db = openSqlite(":memory:");
const sqliteStores = new Map<IndexStore, number>();
countCases("sqlite", () => {
  const chainId = ++nextChain;
  const store = createSqliteIndexStore(db, { chainId, easAddress: EAS });
  sqliteStores.set(store, chainId);
  return Promise.resolve(store);
}, (store) => {
  const { text, params } = indexQuerySql("sqlite", { chainId: sqliteStores.get(store)!, eas: EAS.toLowerCase() }, { count: true, subject: SUBJECT, recipient: RECIPIENT, schemaUid: REVIEW_UID, revoked: false, toBlock: 1_000n }, { since: 100n });
  const rows = db.query<{ detail: string }, (string | number)[]>(`EXPLAIN QUERY PLAN ${text}`).all(...params);
  const detail = rows.map((r) => r.detail).join("\n");
  // Every column the count checks is in the index: no row is read.
  expect(detail).toContain("COVERING INDEX index_attestations_subject");
  return Promise.resolve(detail);
});

const pg = postgresForTests();
const pgSkip = pg.skip;
const pgStores = new Map<IndexStore, number>();
afterAll(() => db.close());
countCases("postgres", async () => {
  const chainId = ++nextChain;
  const store = await pg.storage().indexStore({ chainId, easAddress: EAS });
  pgStores.set(store, chainId);
  return store;
}, async (store) => {
  const { text, params } = indexQuerySql("postgres", { chainId: pgStores.get(store)!, eas: EAS.toLowerCase() }, { count: true, subject: SUBJECT, recipient: RECIPIENT, schemaUid: REVIEW_UID, revoked: false, toBlock: 1_000n }, { since: 100n });
  // A table this small is cheaper to scan: with scans off, the plan shows the index serves the whole count (VACUUM
  // sets the visibility map an index-only scan relies on, as autovacuum does on a live table).
  await pg.raw().unsafe("VACUUM ANALYZE index_attestations");
  const plan = await pg.raw().begin(async (tx) => {
    await tx`SET LOCAL enable_seqscan = off`;
    await tx`SET LOCAL enable_bitmapscan = off`;
    return (await tx.unsafe(`EXPLAIN ${text}`, params)) as { "QUERY PLAN": string }[];
  });
  const detail = plan.map((r) => r["QUERY PLAN"]).join("\n");
  expect(detail).toContain("Index Only Scan using index_attestations_subject");
  return detail;
}, pgSkip);

/**
 * A record's subject is data anyone writes (found by attack): `did:web:count.test#<TAB>x` was listed under
 * `did:web:count.test` (the list cut the fragment) but not counted (the stored subject refused the tab). Hostile payload
 * subjects, each sent to the DID address of what it names (or of COUNT_SUBJECT): for every subject a caller can name
 * among them, the count is the list's length, on the real SQLite and PostgreSQL stores; and a database whose subjects
 * were stored under the earlier rule is filled again at the follower's first step.
 */
const COUNT_SUBJECT = "did:web:count.test";
const PKH = "did:pkh:eip155:1:0x00000000000000000000000000000000000000c0";
const HOSTILE = [
  COUNT_SUBJECT, `${COUNT_SUBJECT}#\tx`, `${COUNT_SUBJECT}#\u00a0`, `${COUNT_SUBJECT}#\u0000`, `${COUNT_SUBJECT}#`, `${COUNT_SUBJECT}#key-1`,
  `${COUNT_SUBJECT}# x`, ` ${COUNT_SUBJECT}\t`, `${COUNT_SUBJECT}\u00a0`, `${COUNT_SUBJECT}\u0000`, `${COUNT_SUBJECT}\t#x`, "did:web:COUNT.Test",
  "did:web:count.test.", "did:web:count.test..", "did:web:www.count.test", "did:web:www.www.count.test", "count.test", "COUNT.TEST.#x",
  "did:web:count.test?x=1", "did:web:count.test?x=1#\ty", "did:web:count%2Etest", "did:web:count.test%20", "did:web:count.test%09#x",
  "did:web:c\u043eunt.test", "did:web:count.test\u200b", "did:web:count.test:user#\t", "did:web:count.test/", "did:web:count.test#".padEnd(3_000, "a"),
  PKH, `${PKH.toUpperCase().replace("DID:PKH:EIP155", "did:pkh:eip155")}#\t`, "did:pkh:eip155:01:0x00000000000000000000000000000000000000c0",
  "did:key:z6MkCount#\u00a0", "did:key:z6MkCount", "did:ethr:0x00000000000000000000000000000000000000c0#\n",
];

/** What a caller can name of a hostile subject (the list's and count's query), or undefined. */
const nameable = (s: string) => {
  const named = normalizeSubjectDid(s);
  return named.ok ? named.value : undefined;
};
/** Attestation n naming `subject`, sent to the DID address of what it names (else of COUNT_SUBJECT). */
function hostile(n: number, subject: string): IndexedAttestation {
  const hashed = normalizeDid(subject);
  const to = hashed.ok ? didToAddress(hashed.value) : undefined;
  const recipient = to?.ok ? to.value : (didToAddress(COUNT_SUBJECT) as { value: string }).value;
  return { ...record(n, { subject }), recipient: recipient.toLowerCase() as HexString };
}
const HOSTILE_RECORDS = HOSTILE.map((s, i) => hostile(i + 1, s));
const HOSTILE_QUERIES = [...new Set([COUNT_SUBJECT, "count.test", PKH, "did:key:z6MkCount", ...HOSTILE.map(nameable).filter((s) => s !== undefined)])];

function hostileCases(name: string, open: () => Promise<IndexStore>, skip?: string) {
  describe.skipIf(skip !== undefined)(`the count of a hostile payload subject is the list's length: ${name}`, () => {
    test("for every subject a caller can name, the count equals the list's length (tabs, NBSP, U+0000, case, dots, fragments, queries, escapes)", async () => {
      const store = await open();
      const { count, listed, checked } = reads(store);
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
      const subjects = new Map<string, string>();
      for (const a of HOSTILE_RECORDS) {
        const s = subjectOf(a);
        if (s !== null) subjects.set(a.uid.toLowerCase(), s);
      }
      const last = BigInt(HOSTILE_RECORDS.length) * 10n;
      expect(await store.append(undefined, HOSTILE_RECORDS.map(attested), cp(last), { attestations: HOSTILE_RECORDS, subjects })).toBe(true);
      await checked(last);
      const seen: Record<string, [number, number]> = {};
      for (const subject of HOSTILE_QUERIES) seen[subject] = [await count({ subject }), await listed({ subject })];
      for (const [subject, [n, listedN]] of Object.entries(seen)) expect({ subject, n }).toEqual({ subject, n: listedN });
      // The attack's three reviews all name the subject (a fragment is not part of it), listed and counted alike.
      expect(seen[COUNT_SUBJECT]![0]).toBeGreaterThanOrEqual(3);
    });

    test("subjects stored under the earlier rule (a fragment's whitespace named nobody) are stored again at the follower's first step", async () => {
      const store = await open();
      const { count, listed, checked } = reads(store);
      const attack = [COUNT_SUBJECT, `${COUNT_SUBJECT}#\tx`, `${COUNT_SUBJECT}#\u00a0`].map((s, i) => hostile(i + 1, s));
      // As the earlier rule stored them: the two with whitespace in their fragment named nobody, under its rule text.
      expect(await store.resetSubjectsUnless!(JSON.stringify([[REVIEW_UID, REVIEW.schema]]))).toBe(false);
      const earlier = new Map([[attack[0]!.uid.toLowerCase(), COUNT_SUBJECT]]);
      expect(await store.append(undefined, attack.map(attested), cp(30n), { attestations: attack, subjects: earlier })).toBe(true);
      await checked(30n);
      expect(await listed({ subject: COUNT_SUBJECT })).toBe(3);
      const never = () => Promise.reject(new Error("no chain read expected"));
      const step = createIndexFollower({
        chain: { head: () => Promise.resolve({ ok: true as const, value: 30n }), blockHash: () => Promise.resolve({ ok: true as const, value: cp(30n).blockHash }), events: never, block: never, attestations: never },
        store,
        startBlock: 0n,
        confirmations: 0,
        stepBlocks: 100n,
        subjectOf,
      });
      // Only the two v1 stored as naming nobody are forgotten and filled (v2 reads the third as v1 did), at the head.
      expect(await step()).toMatchObject({ ok: true, subjectsForgotten: 2, subjectsFilled: 2, caughtUp: true });
      expect(await step()).toMatchObject({ ok: true, caughtUp: true });
      expect(await count({ subject: COUNT_SUBJECT })).toBe(3);
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
    });
  });
}

hostileCases("sqlite", () => Promise.resolve(createSqliteIndexStore(db, { chainId: ++nextChain, easAddress: EAS })));
hostileCases("postgres", async () => await pg.storage().indexStore({ chainId: ++nextChain, easAddress: EAS }), pgSkip);

/**
 * Keeping stored subjects to the rule (found in review of the v2 reading): a database whose subjects were stored before
 * rules were kept forgets them all; a change of reading alone forgets only the rows it reads otherwise, a range of the
 * primary key a step; every step of a refill ingests what is new and completes a poll at the head; a count read while
 * a change commits decodes; a rule another instance put back is seen at the next step.
 */
const V1_RULE = JSON.stringify([[REVIEW_UID, REVIEW.schema]]);
const COUNT_ADDRESS = hostile(1, COUNT_SUBJECT).recipient;
/** A follower at `head` (the checkpoint's block), with `chain` for what it reads past it. */
function followerAt(store: IndexStore, head: bigint, chain: Partial<Parameters<typeof createIndexFollower>[0]["chain"]> = {}) {
  const never = () => Promise.reject(new Error("no chain read expected"));
  return createIndexFollower({
    chain: { head: () => Promise.resolve({ ok: true as const, value: head }), blockHash: (n) => Promise.resolve({ ok: true as const, value: cp(n).blockHash }), events: never, block: never, attestations: never, ...chain },
    store,
    startBlock: 0n,
    confirmations: 0,
    stepBlocks: 100n,
    subjectOf,
  });
}
/** 2,500 reviews of SUBJECT, but 500 and 1,500 (the attack's whitespace in a fragment), 20 and 30 (another schema) and 2,400 (a subject over the length). */
function v1History() {
  const long = `example.com:${"a".repeat(2_036)}`;
  const records = Array.from({ length: 2_500 }, (_, i) => i + 1).map((n) =>
    n === 500 || n === 1_500 ? hostile(n, `${COUNT_SUBJECT}#\tx`) : n === 20 || n === 30 ? record(n, { schema: OTHER_SCHEMA }) : n === 2_400 ? hostile(n, long) : record(n)
  );
  // As v1 stored them: '' for the two with whitespace (and the other schema), the long one as v1 named it (2,056 characters).
  const v1 = new Map<string, string>();
  for (const a of records) {
    const n = Number(BigInt(a.uid));
    if (n === 2_400) v1.set(a.uid.toLowerCase(), `did:web:${long}`);
    else if (n !== 500 && n !== 1_500 && subjectOf(a) !== null) v1.set(a.uid.toLowerCase(), subjectOf(a)!);
  }
  return { records, v1 };
}

function refillCases(name: string, open: () => Promise<IndexStore>, skip?: string) {
  describe.skipIf(skip !== undefined)(`stored subjects kept to the rule: ${name}`, () => {
    test("a database whose subjects were stored before rules were kept (no rule row) forgets them all at the first step: listed 3, counted 3", async () => {
      const store = await open();
      const { count, listed, checked } = reads(store);
      const attack = [COUNT_SUBJECT, `${COUNT_SUBJECT}#\tx`, `${COUNT_SUBJECT}#\u00a0`].map((s, i) => hostile(i + 1, s));
      const earlier = new Map([[attack[0]!.uid.toLowerCase(), COUNT_SUBJECT]]);
      expect(await store.append(undefined, attack.map(attested), cp(30n), { attestations: attack, subjects: earlier })).toBe(true);
      await checked(30n);
      expect(await listed({ subject: COUNT_SUBJECT })).toBe(3);
      // No rule kept: the stored subjects follow one no one knows, and the count decodes until they are filled again.
      expect(await count({ subject: COUNT_SUBJECT })).toBe(3);
      const step = followerAt(store, 30n);
      expect(await step()).toMatchObject({ ok: true, subjectsForgotten: 3, subjectsFilled: 3, caughtUp: true });
      expect(await count({ subject: COUNT_SUBJECT })).toBe(3);
      expect(await store.subjectsKnown!(COUNT_ADDRESS)).toBe(subjectOf.rule);
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
    });

    test("v1 → v2 forgets only what v1 stored as naming nobody under the schemas and what is over the length, a range of 1,000 rows a step, each step at the head a completed poll", async () => {
      const store = await open();
      const { count, listed, checked } = reads(store);
      const { records, v1 } = v1History();
      expect(await store.resetSubjectsUnless!(V1_RULE)).toBe(false);
      expect(await store.append(undefined, records.map(attested), cp(25_000n), { attestations: records, subjects: v1 })).toBe(true);
      await checked(25_000n);
      const step = followerAt(store, 25_000n);
      const steps = [];
      for (let i = 0; i < 5; i++) {
        const s = await step();
        steps.push(s);
        // Meanwhile the address no forgotten row names counts by its index; the attack's address decodes, right all along.
        // (Known under the rule, named with the narrow forgetting under way: a count compares the rule row to it.)
        expect((await store.subjectsKnown!(RECIPIENT))?.split("\n")[0]).toBe(subjectOf.rule);
        expect(await count({ subject: COUNT_SUBJECT })).toBe(2);
        if (!s.ok || s.subjectsPending !== true) break;
      }
      // Three ranges (1,000, 1,000 and 500 rows), each step at the head; the rows of the other schema stay as stored.
      expect(steps.map((s) => s.ok && [s.caughtUp, s.subjectsForgotten, s.subjectsFilled, s.subjectsPending])).toEqual([
        [true, 1, 1, true],
        [true, 1, 1, true],
        [true, 1, 1, undefined],
      ]);
      expect(await count({ subject: COUNT_SUBJECT })).toBe(await listed({ subject: COUNT_SUBJECT }));
      expect(await store.subjectsKnown!(COUNT_ADDRESS)).toBe(subjectOf.rule);
      expect(await count({ subject: SUBJECT })).toBe(2_495);
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
    });

    test("a refill of every subject (the anchors changed) ingests new blocks at its first step and completes a poll at each step; every count decodes meanwhile", async () => {
      const store = await open();
      const { count, listed, checked } = reads(store);
      const { records } = v1History();
      expect(await store.resetSubjectsUnless!(createSubjectOf({}).rule)).toBe(false);
      expect(await store.append(undefined, records.map(attested), cp(25_000n), { attestations: records, subjects: new Map() })).toBe(true);
      await checked(25_000n);
      // A block came meanwhile, with a review of SUBJECT.
      const fresh = record(2_501);
      const chain = {
        events: (from: bigint, to: bigint) => Promise.resolve({ ok: true as const, value: { events: from <= 25_010n && 25_010n <= to ? [attested(fresh)] : [], toHash: cp(to).blockHash, toTimestamp: 1_000n + to, toParentHash: cp(to - 1n).blockHash } }),
        block: (n: bigint) => Promise.resolve({ ok: true as const, value: { blockNumber: n, blockHash: cp(n).blockHash, timestamp: 1_000n + n, parentHash: cp(n - 1n).blockHash } }),
        attestations: () => Promise.resolve({ ok: true as const, value: [fresh] }),
      };
      // The checkpoint's next block is 25,001: the follower reads 25,001–25,010 (its parent's hash is the checkpoint's).
      const step = followerAt(store, 25_010n, chain);
      const first = await step();
      expect(first).toMatchObject({ ok: true, caughtUp: true, ingested: { from: 25_001n, to: 25_010n, events: 1 }, subjectsForgotten: 1_000, subjectsFilled: 1_000, subjectsPending: true });
      expect(await store.subjectsKnown!(RECIPIENT)).toBeUndefined();
      expect(await count({ subject: SUBJECT })).toBe(2_496);
      let steps = 1;
      for (let s = first; s.ok && s.subjectsPending; steps++) {
        s = await step();
        expect(s).toMatchObject({ ok: true, caughtUp: true });
      }
      expect(steps).toBe(3);
      expect(await count({ subject: SUBJECT })).toBe(await listed({ subject: SUBJECT }));
      expect(await store.subjectsKnown!(RECIPIENT)).toBe(subjectOf.rule);
    });

    test("a change of rule committed between the count's check and its COUNT: the count reads again and decodes", async () => {
      const base = await open();
      expect(await base.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
      const subjects = new Map(HISTORY.map((a) => [a.uid.toLowerCase(), subjectOf(a) ?? ""]));
      expect(await base.append(undefined, HISTORY.map(attested), cp(300n), { attestations: HISTORY, subjects })).toBe(true);
      let raced = false;
      // Another instance, of other anchors, forgets every subject just before this COUNT.
      const store: IndexStore = {
        ...base,
        async count(filter) {
          if (filter.subject !== undefined && !raced) {
            raced = true;
            await base.resetSubjectsUnless!(createSubjectOf({}).rule);
            await base.forgetSubjects?.(1_000);
          }
          return await base.count(filter);
        },
      };
      const { count, listed, checked } = reads(store);
      await checked(300n);
      expect(await count({ subject: SUBJECT })).toBe(await listed({ subject: SUBJECT }));
      expect(raced).toBe(true);
    });

    test("a rule an instance of the earlier version put back (its subjects stored again as v1 read them) is seen at the next step, not once a process", async () => {
      const store = await open();
      const { count, checked } = reads(store);
      const attack = [COUNT_SUBJECT, `${COUNT_SUBJECT}#\tx`, `${COUNT_SUBJECT}#\u00a0`].map((s, i) => hostile(i + 1, s));
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
      expect(await store.append(undefined, attack.map(attested), cp(30n), { attestations: attack, subjects: new Map(attack.map((a) => [a.uid.toLowerCase(), COUNT_SUBJECT])) })).toBe(true);
      await checked(30n);
      const step = followerAt(store, 30n);
      expect(await step()).toMatchObject({ ok: true, caughtUp: true });
      expect(await count({ subject: COUNT_SUBJECT })).toBe(3);
      // The earlier version restarted: its rule kept and every subject forgotten, then stored again by its reading.
      await store.resetSubjectsUnless!(V1_RULE);
      while (store.forgetSubjects !== undefined && !(await store.forgetSubjects(1_000)).done);
      await store.setSubjects!(attack.map((a, i) => ({ uid: a.uid, subject: i === 0 ? COUNT_SUBJECT : null })));
      expect(await step()).toMatchObject({ ok: true, caughtUp: true });
      expect(await count({ subject: COUNT_SUBJECT })).toBe(3);
      expect(await store.resetSubjectsUnless!(subjectOf.rule)).toBe(false);
    });
  });
}

refillCases("sqlite", () => Promise.resolve(createSqliteIndexStore(db, { chainId: ++nextChain, easAddress: EAS })));
refillCases("postgres", async () => await pg.storage().indexStore({ chainId: ++nextChain, easAddress: EAS }), pgSkip);
