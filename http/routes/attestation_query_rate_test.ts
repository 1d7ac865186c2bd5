/**
 * Issue 43 item 8: the list and the count are computed per client address at most INDEX_QUERY_RATE_PER_MINUTE a
 * minute (20 counts each with another `since` held a one-item list for 8.9 s): past it 429 RATE_LIMITED with
 * Retry-After, the body `{error, code}`; another address is unaffected; an answer kept for this index generation (an
 * identical read) takes no turn.
 */
import { describe, expect, test } from "bun:test";
import { didToAddress } from "../../domain/did/mod.ts";
import { createCountAttestations, createIndexAnswers, createListAttestations } from "../../domain/index/mod.ts";
import { createRateLimiter } from "../../domain/rate_limit.ts";
import { encodeSchemaData } from "../../domain/schema_data.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import type { EasEvent, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeAttestationIndex, fakeClock, fakeIndexStore } from "../../ports/fakes/mod.ts";
import { createApp } from "../app.ts";
import { createIndexAnswerCache } from "../index_answer_cache.ts";
import { minimalAppDeps } from "../testing.ts";

const SUBJECT = "did:web:shop.example";
const RECIPIENT = (didToAddress(SUBJECT) as { value: HexString }).value.toLowerCase() as HexString;
const SCHEMA_UID = `0x${"5".repeat(64)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;

async function setup(perMinute: number) {
  const store = fakeIndexStore();
  const clock = fakeClock();
  const data = encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: SUBJECT, version: "1", ratingValue: 5, reviewBody: "ok", screenshotUrls: [], proofs: [] });
  const events: EasEvent[] = [];
  const records: IndexedAttestation[] = [];
  for (let i = 1; i <= 5; i++) {
    const a: IndexedAttestation = {
      uid: uid(i), schema: SCHEMA_UID, time: 1_000n + BigInt(i), expirationTime: 0n, revocationTime: 0n, refUID: uid(0), recipient: RECIPIENT,
      attester: RECIPIENT, revocable: true, data: (data as { value: HexString }).value,
    };
    events.push({ kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: BigInt(i * 10), logIndex: 0 });
    records.push(a);
  }
  await store.append(undefined, events, { blockNumber: 55n, blockHash: uid(900) }, { attestations: records });
  await store.checked(clock.nowMs(), 55n);
  const answers = createIndexAnswers({ store, chainId: 31337, easAddress: `0x${"e".repeat(40)}`, startBlock: 0n, schemas: fakeAttestationIndex(), clock, stallSeconds: 120 });
  const deps = (reads: Parameters<Parameters<typeof answers.answer>[0]>[0]) => ({ reads, store, schemaUids: { "user-review": SCHEMA_UID }, startBlock: 0n, cursorKey: new Uint8Array(32) });
  let computed = 0;
  const app = createApp({
    ...minimalAppDeps(),
    attestations: {
      list: (q) => (computed++, answers.answer((reads) => createListAttestations(deps(reads))(q))),
      queries: {
        count: (q) => (computed++, answers.answer((reads) => createCountAttestations(deps(reads))(q))),
        get: () => Promise.reject(new Error("not used")),
      },
      queryRate: {
        rate: createRateLimiter(clock, { capacity: perMinute, perMinute }),
        clientAddress: (request) => request.headers.get("x-test-client") ?? undefined,
      },
    },
    indexAnswers: createIndexAnswerCache({ head: () => store.head(), clock, stallSeconds: 120, pollMs: 60_000, discoverySeconds: 60 }),
  });
  const get = async (path: string, client: string) => {
    const response = await app.handle(new Request(`http://localhost${path}`, { headers: { "x-test-client": client } }));
    return { status: response.status, retryAfter: response.headers.get("retry-after"), body: await response.json() as Record<string, unknown> };
  };
  return { get, clock, computed: () => computed };
}

describe("attestation queries per client address (issue 43 item 8)", () => {
  test("each computed count or page takes a turn: past the rate 429 RATE_LIMITED with Retry-After; another address answers", async () => {
    const { get, clock } = await setup(3);
    for (const since of ["1001", "1002"]) expect((await get(`/v1/attestations/count?subject=${SUBJECT}&since=${since}`, "10.0.0.1")).status).toBe(200);
    expect((await get(`/v1/attestations?subject=${SUBJECT}&since=1003`, "10.0.0.1")).status).toBe(200);
    const refused = await get(`/v1/attestations/count?subject=${SUBJECT}&since=1004`, "10.0.0.1");
    expect(refused).toEqual({ status: 429, retryAfter: expect.stringMatching(/^[1-9][0-9]*$/), body: { error: expect.any(String), code: "RATE_LIMITED" } });
    expect((await get(`/api/public/attestations?subject=${SUBJECT}&since=1005`, "10.0.0.1")).status).toBe(429);
    expect(await get(`/v1/attestations/count?subject=${SUBJECT}&since=1004`, "10.0.0.2")).toMatchObject({ status: 200, body: { count: 2 } });
    // The bucket refills: after the Retry-After the address answers again.
    clock.set(clock.nowMs() + Number(refused.retryAfter) * 1000);
    expect((await get(`/v1/attestations/count?subject=${SUBJECT}&since=1004`, "10.0.0.1")).status).toBe(200);
  });

  test("an answer kept for this index generation takes no turn", async () => {
    const { get, computed } = await setup(1);
    expect((await get(`/v1/attestations/count?subject=${SUBJECT}`, "10.0.0.1")).status).toBe(200);
    const before = computed();
    for (let i = 0; i < 5; i++) expect(await get(`/v1/attestations/count?subject=${SUBJECT}`, "10.0.0.1")).toMatchObject({ status: 200, body: { count: 5 } });
    expect(computed() - before).toBe(0);
    // Another query is computed: the one turn is spent.
    expect((await get(`/v1/attestations/count?subject=${SUBJECT}&since=1002`, "10.0.0.1")).status).toBe(429);
  });
});
