/**
 * `GET /v1/attestations` on the devnet with the index following (issue 16): 30 linked-identifier attestations
 * about one subject (some in one multi-attest transaction, so several per block), one sent to the same
 * recipient address naming another subject, one revoked; paged 7 at a time.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Hex } from "viem";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { startStack, type Stack } from "./harness.ts";

const SUBJECT = "did:web:listed.example";
const LINKED = findSchemaByName("linked-identifier")!;
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let revokedUid: Hex;
const written: Hex[] = [];

const data = (subject: string, n: number) =>
  (encodeSchemaData(LINKED.schema, { subject, linkedId: `did:web:linked${n}.example`, proofs: [], issuedAt: BigInt(n), effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value;

beforeAll(async () => {
  stack = await startStack({ env: { INDEX_CONFIRMATIONS: "0" } });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  const key = stack.devnet.keys.users[0] as Hex;
  const schema = stack.devnet.schemaUids["linked-identifier"] as Hex;
  const recipient = (didToAddress(SUBJECT) as { value: Hex }).value;
  for (let n = 0; n < 20; n++) written.push((await writer.attest(key, schema, { recipient, data: data(SUBJECT, n), revocable: true })).uid);
  // Ten more in one transaction: one block, ten log indexes.
  written.push(...await writer.multiAttest(key, schema, Array.from({ length: 10 }, (_, i) => ({ recipient, data: data(SUBJECT, 20 + i), revocable: true }))));
  // Sent to the subject's address but naming another subject: not listed.
  await writer.attest(key, schema, { recipient, data: data("did:web:impostor.example", 99), revocable: true });
  revokedUid = written[5]!;
  await writer.revoke(key, schema, revokedUid);
  // Written straight to the chain, not through the service: its follower polls once before the reads.
  await stack.sync();
}, 60_000);
afterAll(async () => await stack?.stop());

async function page(query: string) {
  const res = await fetch(`${stack.baseUrl}/v1/attestations?${query}`);
  return { status: res.status, cors: res.headers.get("access-control-allow-origin"), body: await res.json() as Record<string, any> };
}

describe("GET /v1/attestations", () => {
  test("pages newest first, every attestation once, revoked ones flagged, other subjects left out", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const answer = await page(`subject=${encodeURIComponent("listed.example")}&schema=linked-identifier&limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      expect(answer.status).toBe(200);
      expect(answer.cors).toBe("*");
      expect(answer.body).toMatchObject({ subject: SUBJECT, schema: "linked-identifier" });
      for (const item of answer.body.items) {
        expect(item.attestation.data.subject).toBe(SUBJECT);
        expect(item.revoked).toBe(item.attestation.uid === revokedUid.toLowerCase());
        seen.push(item.attestation.uid);
      }
      cursor = answer.body.nextCursor;
      pages++;
    } while (cursor !== null && pages < 20);
    expect(seen).toEqual([...written].reverse().map((u) => u.toLowerCase()));
    expect(pages).toBe(5);
    // The backend path answers the same.
    const backend = await fetch(`${stack.baseUrl}/api/public/attestations?subject=${encodeURIComponent(SUBJECT)}&schema=linked-identifier&limit=3`);
    expect(((await backend.json()) as { items: { attestation: { uid: string } }[] }).items.map((i) => i.attestation.uid)).toEqual(seen.slice(0, 3));
  });

  test("kept answers (issue 34): a repeated read is the same answer with no JSON-RPC call; a write shows in the read after the poll that indexed it", async () => {
    const query = `subject=${encodeURIComponent(SUBJECT)}&schema=linked-identifier&limit=3`;
    const read = async () => {
      const res = await fetch(`${stack.baseUrl}/v1/attestations?${query}`);
      return { status: res.status, etag: res.headers.get("etag"), body: await res.json() as { asOf: { blockNumber: number; checkedAt: number }; items: { attestation: { uid: string } }[] } };
    };
    const first = await read();
    stack.rpc.reset();
    const again = [await read(), await read()];
    expect(stack.rpc.roundTrips()).toBe(0);
    for (const answer of again) {
      expect(answer.status).toBe(200);
      expect(answer.etag).toBe(first.etag);
      expect(answer.body).toEqual(first.body);
    }

    // Written straight to the chain: not in the answers until the follower's poll indexed it, then in the very next read.
    const key = stack.devnet.keys.users[0] as Hex;
    const schema = stack.devnet.schemaUids["linked-identifier"] as Hex;
    const recipient = (didToAddress(SUBJECT) as { value: Hex }).value;
    const { uid } = await writer.attest(key, schema, { recipient, data: data(SUBJECT, 40), revocable: true });
    expect((await read()).body).toEqual(first.body);
    await stack.sync();
    stack.rpc.reset();
    const after = await read();
    expect(after.body.items[0]!.attestation.uid).toBe(uid.toLowerCase());
    expect(after.body.asOf.blockNumber).toBeGreaterThan(first.body.asOf.blockNumber);
    expect(after.etag).not.toBe(first.etag);
    expect((await read()).body).toEqual(after.body);
    expect(stack.rpc.roundTrips()).toBe(0);
    written.push(uid);
  });

  test("bad input is 400 with the contract's codes", async () => {
    const codes = async (query: string) => {
      const answer = await page(query);
      return [answer.status, answer.body.code];
    };
    expect(await codes("limit=5")).toEqual([400, "INVALID_INPUT"]);
    expect(await codes("subject=did:&schema=linked-identifier")).toEqual([400, "INVALID_DID"]);
    expect(await codes(`subject=${SUBJECT}&schema=nope`)).toEqual([400, "INVALID_INPUT"]);
    expect(await codes(`subject=${SUBJECT}&schema=linked-identifier&limit=0`)).toEqual([400, "INVALID_INPUT"]);
    expect(await codes(`subject=${SUBJECT}&schema=linked-identifier&limit=101`)).toEqual([400, "INVALID_INPUT"]);
    expect(await codes(`subject=${SUBJECT}&schema=linked-identifier&cursor=forged`)).toEqual([400, "INVALID_INPUT"]);
    expect(await codes(`subject=${SUBJECT}&subject=${SUBJECT}&schema=linked-identifier`)).toEqual([400, "INVALID_INPUT"]);
    expect((await fetch(`${stack.baseUrl}/v1/attestations`, { method: "POST" })).status).toBe(405);
  });
});
