/**
 * The attestation list and count through the app's routes, over the real queries (domain/index/list_attestations.ts)
 * on the fake index store: the one subject rule (issue 43 item 2) and cursors keyed with the deployment's secret
 * (issue 43 item 10).
 */
import { describe, expect, test } from "bun:test";
import { didToAddress } from "../../domain/did/mod.ts";
import { createCountAttestations, createGetAttestation, createIndexAnswers, createListAttestations } from "../../domain/index/mod.ts";
import { encodeSchemaData } from "../../domain/schema_data.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import type { EasEvent, IndexedAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { fakeAttestationIndex, fakeClock, fakeIndexStore } from "../../ports/fakes/mod.ts";
import { createApp } from "../app.ts";
import { minimalAppDeps } from "../testing.ts";

const SUBJECT = "did:web:shop.example";
const RECIPIENT = (didToAddress(SUBJECT) as { value: HexString }).value.toLowerCase() as HexString;
const SCHEMA_UID = `0x${"5".repeat(64)}` as HexString;
const ALICE = `0x${"a".repeat(40)}` as HexString;
const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as HexString;

/** The subjects every route taking one refuses (issue 43): whitespace, a control character, a did:web naming no domain. */
export const BAD_SUBJECTS = ["did:web:not a did", "did:web:exa\tmple.com", "did:web:a..b", "not a did", "did:web:127.0.0.1", "did:web:shop.example\u0000", "did:web:-shop.example", `did:web:${"a".repeat(64)}.example`, "did:web:sh%6fp.example", "did:web:shop.example/", "did:web:shop.example:a:..:b", "did:web:shop.example:us%65r", `did:pkh:eip155:01:0x${"1".repeat(40)}`, "did:pkh:eip155:1:0xabc", "did:web:shop.example..", "did:web:www.www.shop.example", "www.www.shop.example"];

/** An app whose list and count are the real queries over `n` reviews of {@link SUBJECT} by Alice, one a block. */
async function setup(n: number, options: { cursorKey?: Uint8Array } = {}) {
  const store = fakeIndexStore();
  const clock = fakeClock();
  const review = encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: SUBJECT, version: "1", ratingValue: 5, reviewBody: "ok", screenshotUrls: [], proofs: [] });
  const events: EasEvent[] = [];
  const records: IndexedAttestation[] = [];
  for (let i = 1; i <= n; i++) {
    const a: IndexedAttestation = {
      uid: uid(i), schema: SCHEMA_UID, time: 1_000n + BigInt(i), expirationTime: 0n, revocationTime: 0n, refUID: uid(0), recipient: RECIPIENT,
      attester: ALICE, revocable: true, data: (review as { value: HexString }).value,
    };
    events.push({ kind: "attested", uid: a.uid, recipient: a.recipient, attester: a.attester, schemaUid: a.schema, blockNumber: BigInt(i * 10), logIndex: 0 });
    records.push(a);
  }
  const head = BigInt(n * 10 + 5);
  await store.append(undefined, events, { blockNumber: head, blockHash: uid(900) }, { attestations: records });
  await store.checked(clock.nowMs(), head);
  const answers = createIndexAnswers({ store, chainId: 31337, easAddress: `0x${"e".repeat(40)}`, startBlock: 0n, schemas: fakeAttestationIndex(), clock, stallSeconds: 120 });
  const cursorKey = options.cursorKey ?? new Uint8Array(32).fill(7);
  const deps = (reads: Parameters<Parameters<typeof answers.answer>[0]>[0]) => ({ reads, store, schemaUids: { "user-review": SCHEMA_UID }, startBlock: 0n, cursorKey });
  const app = createApp({
    ...minimalAppDeps(),
    attestations: {
      list: (q) => answers.answer((reads) => createListAttestations(deps(reads))(q)),
      queries: {
        count: (q) => answers.answer((reads) => createCountAttestations(deps(reads))(q)),
        get: (u) => answers.answer((reads) => createGetAttestation(deps(reads))(u)),
      },
    },
  });
  const get = async (path: string) => {
    const response = await app.handle(new Request(`http://localhost${path}`));
    return { status: response.status, body: await response.json() as Record<string, unknown> };
  };
  return { get };
}

describe("the attestation list and count take one subject rule (issue 43 item 2)", () => {
  test("a subject with whitespace or a control character, a did:web naming no domain, or not a DID is 400 INVALID_DID on every path", async () => {
    const { get } = await setup(1);
    for (const subject of BAD_SUBJECTS) {
      for (const path of ["/v1/attestations", "/api/public/attestations", "/v1/attestations/count", "/api/public/attestations/count"]) {
        const answer = await get(`${path}?subject=${encodeURIComponent(subject)}`);
        expect({ subject, path, status: answer.status, code: answer.body.code }).toEqual({ subject, path, status: 400, code: "INVALID_DID" });
      }
    }
  });

  test("a DID, and a bare domain as today, answer 200 naming the subject as normalized", async () => {
    const { get } = await setup(2);
    for (const subject of [SUBJECT, "shop.example", "did:web:SHOP.example"]) {
      const page = await get(`/v1/attestations?subject=${encodeURIComponent(subject)}`);
      expect({ subject, status: page.status, named: page.body.subject, items: (page.body.items as unknown[]).length })
        .toEqual({ subject, status: 200, named: SUBJECT, items: 2 });
      const count = await get(`/v1/attestations/count?subject=${encodeURIComponent(subject)}`);
      expect({ subject, status: count.status, count: count.body.count }).toEqual({ subject, status: 200, count: 2 });
    }
  });
});

test("a parameter given twice is 400 INVALID_INPUT saying so, on the list and the count (it said 'subject is invalid: expected string')", async () => {
  const { get } = await setup(1);
  for (const path of ["/v1/attestations", "/v1/attestations/count"]) {
    for (const [query, name] of [[`subject=${SUBJECT}&subject=${SUBJECT}`, "subject"], [`subject=${SUBJECT}&revoked=true&revoked=false`, "revoked"], [`attester=${ALICE}&attester=${ALICE}`, "attester"]] as const) {
      const answer = await get(`${path}?${query}`);
      expect({ path, status: answer.status, body: answer.body }).toEqual({ path, status: 400, body: { error: `${name} must be given once`, code: "INVALID_INPUT" } });
    }
  }
  const page = await get(`/v1/attestations?subject=${SUBJECT}&limit=1&limit=2`);
  expect(page.body).toEqual({ error: "limit must be given once", code: "INVALID_INPUT" });
});

describe("cursors are keyed with the deployment's secret (issue 43 item 10)", () => {
  test("a cursor minted by hand (the right format, a check not made with the secret) or by another deployment is 400 INVALID_INPUT naming cursor", async () => {
    const { get } = await setup(5);
    const first = await get(`/v1/attestations?attester=${ALICE}&limit=2`);
    const cursor = String(first.body.nextCursor);
    expect((await get(`/v1/attestations?attester=${ALICE}&limit=2&cursor=${cursor}`)).status).toBe(200);
    const [body, check] = cursor.split(".") as [string, string];
    const position = JSON.parse(Buffer.from(body, "base64url").toString()) as Record<string, unknown>;
    const minted = Buffer.from(JSON.stringify({ ...position, b: "15" })).toString("base64url");
    const flipped = `${check.slice(0, -1)}${check.endsWith("A") ? "B" : "A"}`;
    const other = await setup(5, { cursorKey: new Uint8Array(32).fill(8) });
    const theirs = String((await other.get(`/v1/attestations?attester=${ALICE}&limit=2`)).body.nextCursor);
    for (const forged of [`${minted}.${check}`, `${body}.${flipped}`, `${minted}.${"A".repeat(22)}`, theirs]) {
      const answer = await get(`/v1/attestations?attester=${ALICE}&limit=2&cursor=${forged}`);
      expect({ forged, status: answer.status, code: answer.body.code, details: String(answer.body.error) })
        .toEqual({ forged, status: 400, code: "INVALID_INPUT", details: expect.stringContaining("cursor") });
    }
  });
});
