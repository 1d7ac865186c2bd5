/**
 * Revalidation across polls (decisions §21 amended, issue 43 item 1), on a real Anvil mining a block a second
 * (`--block-time 1`) with the real EAS and the service's follower polling every second: a client holding the ETag of
 * an earlier answer asks again after the follower has completed at least two more polls (the answers' `asOf` has moved)
 * and gets 304 with no body on artifact trust, the attestation list, the count and key status, for as long as the answer
 * is the same; once a new attestation about the subject is indexed, 200 with a new ETag. Nothing here sleeps to assert:
 * each step waits for what the service answers (`asOf` moved, the new attestation listed).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type Hex, sha256, stringToBytes } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { artifactDidFromDigest, didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { waitFor } from "./support/wait_for.ts";
import { startStack, type Stack } from "./harness.ts";

const SUBJECT = "did:web:revalidated.example";
const ARTIFACT = artifactDidFromDigest(sha256(stringToBytes("ats e2e revalidation")));
const LINKED = findSchemaByName("linked-identifier")!;
const ASSESSMENT = findSchemaByName("security-assessment")!;
let stack: Stack;
let writer: ReturnType<typeof easWriter>;
let key: Hex;

type AsOf = { blockNumber: number; checkedAt: number };
type Answer = { status: number; etag: string | null; body: string; asOf: AsOf | undefined };

const addressOf = (did: string) => (didToAddress(did) as { value: Hex }).value;
const linked = (n: number) =>
  (encodeSchemaData(LINKED.schema, { subject: SUBJECT, linkedId: `did:web:linked${n}.example`, proofs: [], issuedAt: BigInt(n), effectiveAt: 0n, expiresAt: 0n }) as { value: Hex }).value;
const assessment = () =>
  (encodeSchemaData(ASSESSMENT.schema, {
    subject: ARTIFACT, organization: "Unlisted Audits", version: "1", versionHW: "", payload: "{}", payloadVersion: "1", payloadSpecURI: "",
    payloadSpecDigest: "", issuedAt: 1n, effectiveAt: 0n, expiresAt: 0n,
  }) as { value: Hex }).value;

/** The four public reads, by name: their paths. */
let paths: Record<string, string>;

async function get(path: string, etag?: string): Promise<Answer> {
  const res = await fetch(`${stack.baseUrl}${path}`, { headers: etag === undefined ? {} : { "if-none-match": etag } });
  const body = await res.text();
  return { status: res.status, etag: res.headers.get("etag"), body, asOf: body === "" ? undefined : (JSON.parse(body) as { asOf?: AsOf }).asOf };
}

/** Waits until the follower has completed at least `polls` more polls than `since` names, as the list's asOf says. */
async function afterPolls(since: AsOf, polls: number): Promise<AsOf> {
  return await waitFor(`${polls} more polls than checkedAt ${since.checkedAt}`, async () => {
    const answer = await get(paths.list!);
    const asOf = answer.asOf;
    return asOf !== undefined && asOf.checkedAt >= since.checkedAt + polls && asOf.blockNumber >= since.blockNumber + polls ? asOf : undefined;
  });
}

beforeAll(async () => {
  stack = await startStack({ devnet: { blockTime: 1 }, env: { INDEX_POLL_MS: "1000", WEBHOOK_POLL_MS: "60000" } });
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  key = stack.devnet.keys.users[0] as Hex;
  const keyDid = `did:pkh:eip155:31337:${privateKeyToAccount(stack.devnet.keys.users[1] as Hex).address.toLowerCase()}`;
  const subjectPkh = `did:pkh:eip155:31337:${privateKeyToAccount(key).address.toLowerCase()}`;
  paths = {
    artifactTrust: `/v1/artifact-trust?artifactDid=${encodeURIComponent(ARTIFACT)}`,
    list: `/v1/attestations?subject=${encodeURIComponent(SUBJECT)}&schema=linked-identifier`,
    count: `/v1/attestations/count?subject=${encodeURIComponent(SUBJECT)}`,
    keyStatus: `/v1/key-status?subjectDid=${encodeURIComponent(subjectPkh)}&keyDid=${encodeURIComponent(keyDid)}`,
  };
  await writer.attest(key, stack.devnet.schemaUids["linked-identifier"] as Hex, { recipient: addressOf(SUBJECT), data: linked(1), revocable: true });
  await stack.sync();
}, 60_000);
afterAll(async () => await stack?.stop());

describe("revalidation across polls on a chain with a block a second (issue 43)", () => {
  test("If-None-Match with an earlier poll's weak ETag is 304 on artifact trust, the list, the count and key status; a new attestation is 200 with a new ETag", async () => {
    const first: Record<string, Answer> = {};
    for (const [name, path] of Object.entries(paths)) {
      const answer = await get(path);
      expect({ name, status: answer.status }).toEqual({ name, status: 200 });
      expect(answer.etag).toMatch(/^W\/"[A-Za-z0-9_-]{43}"$/);
      first[name] = answer;
    }
    expect(JSON.parse(first.count!.body).count).toBe(1);

    // Two more completed polls (and blocks): every answer's asOf has moved, the answers themselves have not.
    // After the newest of the four first answers, not the list's alone: a read made a poll later moves only after it
    // (red when the key status was read 2.5 s after the list).
    const asOfs = Object.values(first).map((answer) => answer.asOf!);
    const newest = { checkedAt: Math.max(...asOfs.map((a) => a.checkedAt)), blockNumber: Math.max(...asOfs.map((a) => a.blockNumber)) };
    const later = await afterPolls(newest, 2);
    for (const [name, path] of Object.entries(paths)) {
      const fresh = await get(path);
      expect({ name, status: fresh.status, moved: fresh.asOf!.checkedAt > first[name]!.asOf!.checkedAt }).toEqual({ name, status: 200, moved: true });
      expect({ name, etag: fresh.etag }).toEqual({ name, etag: first[name]!.etag });
      const revalidated = await get(path, first[name]!.etag!);
      expect({ name, status: revalidated.status, body: revalidated.body, etag: revalidated.etag }).toEqual({ name, status: 304, body: "", etag: first[name]!.etag });
    }

    // A new attestation about the subject, and one about the artifact: once indexed, their answers are 200 and new.
    await writer.attest(key, stack.devnet.schemaUids["linked-identifier"] as Hex, { recipient: addressOf(SUBJECT), data: linked(2), revocable: true });
    await writer.attest(key, stack.devnet.schemaUids["security-assessment"] as Hex, { recipient: addressOf(ARTIFACT), data: assessment(), revocable: ASSESSMENT.revocable });
    await waitFor("both new attestations indexed", async () => {
      const count = await get(paths.count!);
      const trust = await get(paths.artifactTrust!);
      return count.status === 200 && JSON.parse(count.body).count === 2 && trust.status === 200 && JSON.parse(trust.body).summary.totalQueried === 1 ? true : undefined;
    });
    expect((await afterPolls(later, 1)).checkedAt).toBeGreaterThan(later.checkedAt);
    for (const name of ["list", "count", "artifactTrust"]) {
      const changed = await get(paths[name]!, first[name]!.etag!);
      expect({ name, status: changed.status }).toEqual({ name, status: 200 });
      expect(changed.etag).not.toBe(first[name]!.etag);
      expect(changed.body).not.toBe(first[name]!.body);
      // And the new answer revalidates in turn.
      expect({ name, status: (await get(paths[name]!, changed.etag!)).status }).toEqual({ name, status: 304 });
    }
    expect(JSON.parse((await get(paths.list!)).body).items).toHaveLength(2);
    expect(JSON.parse((await get(paths.artifactTrust!)).body).summary.totalQueried).toBe(1);
    // Key status says nothing about those attestations: still the same answer, still 304.
    expect((await get(paths.keyStatus!, first.keyStatus!.etag!)).status).toBe(304);
  }, 90_000);
});
