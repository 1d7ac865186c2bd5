/**
 * Querying the index on the devnet through the real service (issue 37, decisions §24): two attesters, two subjects,
 * one schema named and given by UID, a revocation; the filters and their combinations, keyset pages with attestations
 * mined between pages, the count, one attestation by uid, cursors changed by hand, and no JSON-RPC call per request.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { startStack, type Stack } from "./harness.ts";

const FIRST = "did:web:first.example";
const SECOND = "did:web:second.example";
const LINKED = findSchemaByName("linked-identifier")!;
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let schemaUid: Hex;
let keyA: Hex;
let keyB: Hex;
let attesterA: string;
let attesterB: string;
let revokedUid: string;
const byA: string[] = [];
const byBFirst: string[] = [];
const byBSecond: string[] = [];

const address = (did: string) => (didToAddress(did) as { value: Hex }).value;
const data = (subject: string, n: number) =>
  (encodeSchemaData(LINKED.schema, { subject, linkedId: `did:web:l${n}.example`, proofs: [], issuedAt: BigInt(n), effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value;
const attest = async (key: Hex, subject: string, n: number) =>
  (await writer.attest(key, schemaUid, { recipient: address(subject), data: data(subject, n), revocable: true })).uid.toLowerCase();

beforeAll(async () => {
  stack = await startStack({ env: { INDEX_CONFIRMATIONS: "0" } });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  [keyA, keyB] = stack.devnet.keys.users as [Hex, Hex];
  attesterA = privateKeyToAccount(keyA).address.toLowerCase();
  attesterB = privateKeyToAccount(keyB).address.toLowerCase();
  schemaUid = stack.devnet.schemaUids["linked-identifier"] as Hex;
  for (let n = 0; n < 6; n++) byA.push(await attest(keyA, FIRST, n));
  // B's attestations 10 s of chain time apart (the devnet may mine several blocks in one second), for since/until.
  const later = () => writer.client.request({ method: "evm_increaseTime" as never, params: [10] as never });
  for (let n = 0; n < 4; n++) byBFirst.push(await later().then(() => attest(keyB, FIRST, 10 + n)));
  for (let n = 0; n < 3; n++) byBSecond.push(await later().then(() => attest(keyB, SECOND, 20 + n)));
  revokedUid = byA[2]!;
  await writer.revoke(keyA, schemaUid, revokedUid as Hex);
  // Written straight to the chain, not through the service: its follower polls once before the reads.
  await stack.sync();
}, 60_000);
afterAll(async () => await stack?.stop());

type Item = { attestation: { uid: string; attester: string; recipient: string; time: string; schemaName: string | null }; revoked: boolean };
type Page = { items: Item[]; nextCursor: string | null; asOf: { blockNumber: number }; subject?: string; schema?: string };

async function get(path: string) {
  const res = await fetch(`${stack.baseUrl}${path}`);
  return { status: res.status, headers: res.headers, body: await res.json() as Record<string, any> };
}
const uids = async (query: string) => {
  const answer = await get(`/v1/attestations?${query}&limit=100`);
  expect({ query, status: answer.status }).toEqual({ query, status: 200 });
  return (answer.body as Page).items.map((i) => i.attestation.uid);
};
const newestFirst = (list: readonly string[]) => [...list].reverse();

describe("GET /v1/attestations with the filters of decisions §24", () => {
  test("attester, recipient, subject, schema (name or UID), revoked and order, alone and combined", async () => {
    expect(await uids(`attester=${attesterA}`)).toEqual(newestFirst(byA));
    expect(await uids(`attester=${attesterB.toUpperCase().replace("0X", "0x")}&subject=${SECOND}`)).toEqual(newestFirst(byBSecond));
    expect(await uids(`recipient=${address(FIRST)}&attester=${attesterB}`)).toEqual(newestFirst(byBFirst));
    expect(await uids(`subject=${FIRST}`)).toEqual(newestFirst([...byA, ...byBFirst]));
    expect(await uids(`schema=${schemaUid}&attester=${attesterA}&revoked=true`)).toEqual([revokedUid]);
    expect(await uids(`schema=linked-identifier&attester=${attesterA}&revoked=false`)).toEqual(newestFirst(byA.filter((u) => u !== revokedUid)));
    expect(await uids(`attester=${attesterB}&order=oldest`)).toEqual([...byBFirst, ...byBSecond]);
    expect(await uids(`subject=${SECOND}&recipient=${address(FIRST)}`)).toEqual([]);
    // The subject + schema form answers as before: subject and schema named, items in the record shape.
    const classic = await get(`/v1/attestations?subject=second.example&schema=linked-identifier`);
    expect(classic.body).toMatchObject({ subject: SECOND, schema: "linked-identifier", nextCursor: null });
    expect((classic.body as Page).items[0]!.attestation).toMatchObject({ schemaName: "linked-identifier", attester: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/) });
  });

  test("since is inclusive and until exclusive, on the attestation's time", async () => {
    const all = (await get(`/v1/attestations?attester=${attesterB}&order=oldest&limit=100`)).body as Page;
    const times = all.items.map((i) => Number(i.attestation.time));
    const since = times[2]!;
    const until = times[5]!;
    const expected = all.items.filter((i) => Number(i.attestation.time) >= since && Number(i.attestation.time) < until).map((i) => i.attestation.uid);
    expect(expected.length).toBe(3);
    expect(await uids(`attester=${attesterB}&order=oldest&since=${since}&until=${until}`)).toEqual(expected);
    expect(await uids(`attester=${attesterB}&since=${times.at(-1)! + 1}`)).toEqual([]);
  });

  test("keyset pages: attestations mined between pages neither repeat nor shift what was seen", async () => {
    const before = newestFirst(byA);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await get(`/v1/attestations?attester=${attesterA}&limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(answer.status).toBe(200);
      seen.push(...(answer.body as Page).items.map((i) => i.attestation.uid));
      cursor = (answer.body as Page).nextCursor;
      pages++;
      // Two more of A's mined and indexed after each of the first two pages.
      if (pages <= 2) {
        byA.push(await attest(keyA, FIRST, 100 + pages * 2), await attest(keyA, FIRST, 101 + pages * 2));
        await stack.sync();
      }
    } while (cursor !== null && pages < 20);
    expect(seen).toEqual(before);
    expect(pages).toBe(3);
    // Oldest first the new ones come at the end, each once.
    expect(await uids(`attester=${attesterA}&order=oldest`)).toEqual(byA);
  });

  test("a cursor changed by hand, or reused with other filters or order, is 400 INVALID_INPUT naming cursor", async () => {
    const first = await get(`/v1/attestations?attester=${attesterA}&limit=1`);
    const cursor = (first.body as Page).nextCursor!;
    expect((await get(`/v1/attestations?attester=${attesterA}&limit=1&cursor=${cursor}`)).status).toBe(200);
    const [body, check] = cursor.split(".");
    const position = JSON.parse(Buffer.from(body!, "base64url").toString()) as Record<string, unknown>;
    const forged = `${Buffer.from(JSON.stringify({ ...position, i: 0, b: "1" })).toString("base64url")}.${check}`;
    for (const query of [`attester=${attesterA}&cursor=${forged}`, `attester=${attesterA}&cursor=${cursor.slice(0, -1)}x`, `attester=${attesterB}&cursor=${cursor}`, `attester=${attesterA}&order=oldest&cursor=${cursor}`]) {
      const answer = await get(`/v1/attestations?${query}`);
      expect({ query, status: answer.status, code: answer.body.code, names: String(answer.body.error ?? answer.body.message).includes("cursor") })
        .toEqual({ query, status: 400, code: "INVALID_INPUT", names: true });
    }
  });

  test("bad values are 400 INVALID_INPUT naming the parameter; none of the four filters names them", async () => {
    const refused = async (query: string) => {
      const answer = await get(`/v1/attestations?${query}`);
      return [answer.status, answer.body.code, JSON.stringify(answer.body)];
    };
    expect(await refused("limit=5")).toEqual([400, "INVALID_INPUT", expect.stringContaining("subject, attester, recipient or schema")]);
    for (const [query, name] of [["attester=0x12", "attester"], [`attester=${attesterA}&revoked=maybe`, "revoked"], [`attester=${attesterA}&since=-3`, "since"], [`attester=${attesterA}&order=up`, "order"], ["schema=no-such", "schema"], ["recipient=bob", "recipient"]]) {
      expect(await refused(query!)).toEqual([400, "INVALID_INPUT", expect.stringContaining(name!)]);
    }
    expect(await refused("subject=did:")).toEqual([400, "INVALID_DID", expect.any(String)]);
  });
});

describe("GET /v1/attestations/count and /v1/attestations/{uid}", () => {
  test("the count matches the list for each filter", async () => {
    for (const query of [`attester=${attesterA}`, `subject=${FIRST}`, `attester=${attesterB}&schema=linked-identifier`, `schema=${schemaUid}&revoked=true`, `recipient=${address(SECOND)}`]) {
      const count = await get(`/v1/attestations/count?${query}`);
      expect({ query, status: count.status, count: count.body.count }).toEqual({ query, status: 200, count: (await uids(query)).length });
      expect(count.body.asOf.blockNumber).toEqual(expect.any(Number));
    }
    expect((await get("/v1/attestations/count")).body.code).toBe("INVALID_INPUT");
    expect((await get("/api/public/attestations/count?attester=0x1")).status).toBe(400);
  });

  test("one attestation by uid is the list's item with asOf; unknown 404, malformed 400", async () => {
    const listed = ((await get(`/v1/attestations?attester=${attesterA}&revoked=true`)).body as Page).items[0]!;
    const one = await get(`/v1/attestations/${revokedUid}`);
    expect(one.status).toBe(200);
    // Decisions §30: the answer names its chain, as the list's page does.
    const { asOf, chain, ...item } = one.body;
    expect(item).toEqual(listed);
    expect(chain).toEqual((await get(`/v1/attestations?attester=${attesterA}&revoked=true`)).body.chain);
    expect(asOf.blockNumber).toEqual(expect.any(Number));
    expect((await get(`/api/public/attestations/${revokedUid.toUpperCase().replace("0X", "0x")}`)).body.attestation.uid).toBe(revokedUid);
    expect(await get(`/v1/attestations/0x${"7".repeat(64)}`).then((r) => [r.status, r.body.code])).toEqual([404, "NOT_FOUND"]);
    expect(await get("/v1/attestations/0x1234").then((r) => [r.status, r.body.code])).toEqual([400, "INVALID_INPUT"]);
  });

  test("every query answers from the index alone: no JSON-RPC call, asOf, cacheable with an ETag", async () => {
    stack.rpc.reset();
    const answers = await Promise.all([
      get(`/v1/attestations?attester=${attesterA}&schema=${schemaUid}&since=1&order=oldest`),
      get(`/v1/attestations?subject=${FIRST}&revoked=false&limit=3`),
      get(`/v1/attestations/count?subject=${FIRST}`),
      get(`/v1/attestations/count?recipient=${address(SECOND)}`),
      get(`/v1/attestations/${revokedUid}`),
    ]);
    expect(stack.rpc.trips()).toEqual([]);
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(answer.body.asOf).toEqual({ blockNumber: expect.any(Number), blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), timestamp: expect.any(Number), checkedAt: expect.any(Number) });
      expect(answer.headers.get("cache-control")).toMatch(/^public, max-age=\d+, stale-while-revalidate=\d+$/);
      // Weak, over the answer without asOf (decisions §21 amended, issue 43).
      expect(answer.headers.get("etag")).toMatch(/^W\/"[A-Za-z0-9_-]{43}"$/);
    }
  });
});

describe("GET /v1/attestations/count of a subject anyone can write reviews of", () => {
  test("reviews whose subject holds whitespace or U+0000 in its fragment are listed and counted alike (found by attack)", async () => {
    // A fragment is not part of the subject (decisions §3): all four name COUNTED, so the list shows them, and the
    // count (§24: the same filters) must count them, not leave out what the list lists.
    const COUNTED = "did:web:count.example";
    const review = findSchemaByName("user-review")!;
    const reviewUid = stack.devnet.schemaUids["user-review"] as Hex;
    for (const subject of [COUNTED, `${COUNTED}#\tx`, `${COUNTED}#\u00a0`, `${COUNTED}#\u0000`]) {
      const payload = (encodeSchemaData(review.schema, { subject, version: "1", ratingValue: 1n, reviewBody: "bad", screenshotUrls: [], proofs: [] }) as { value: Hex }).value;
      await writer.attest(keyA, reviewUid, { recipient: address(COUNTED), data: payload, revocable: false });
    }
    await stack.sync();
    const listed = await uids(`subject=${COUNTED}&schema=user-review`);
    const count = await get(`/v1/attestations/count?subject=${COUNTED}&schema=user-review`);
    expect([count.status, count.body.count, listed.length]).toEqual([200, 4, 4]);
  });
});
