/**
 * Batches on the public relay through the real service on the devnet (issue 36, decisions §23): the valid requests of
 * a batch land in one multiAttestByDelegation transaction, each with its own uid the index then serves; a bad
 * request is refused in its own result and the rest sent; a replayed one is DUPLICATE; the per-address and
 * per-attester limits count requests; with `Prefer: respond-async` the batch answers 202 and its submission shows each
 * request's uid.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { isSend } from "./support/rpc_proxy.ts";
import { signedReviewBody } from "./support/review_signer.ts";

/**
 * Stops the refill of the public relay's per-client buckets in a running instance's SQLite file: a bucket refills only
 * at its next take, from its stored time, so a time an hour ahead adds nothing until then. What the requests before
 * charged stays exactly as it was.
 */
function stopRefill(path: string): void {
  const db = new Database(path);
  db.exec("PRAGMA busy_timeout = 5000");
  db.query("UPDATE rate_buckets SET at_ms = ? WHERE scope = 'public_relay_client'").run(Date.now() + 3_600_000);
  db.close();
}

/**
 * The tests count the service's sends, so the node's answer decides what a send does, never its speed (docs/testing.md):
 * longer than the JSON-RPC client's own timeout (10 s), a sync send always ends with its answer or that timeout. With the
 * 100 ms default, an answer later than that on a loaded machine sent the sender to ask about the hash, and when the node
 * did not hold it yet, to send the same bytes again by `eth_sendRawTransaction`: two sends counted for one transaction.
 */
const SYNC_ANSWER_ALWAYS_AWAITED_MS = 120_000;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ sendSyncGraceMs: SYNC_ANSWER_ALWAYS_AWAITED_MS });
});
afterAll(async () => await stack?.stop());

const target = () => ({ chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids });
const review = (n: number) => ({ subject: `did:web:shop-${n}.test`, version: "1", ratingValue: 4, reviewBody: `batch ${n}`, screenshotUrls: [], proofs: [] });

async function batch(url: string, requests: unknown[], headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/v1/delegated-attest/batch`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ requests }),
  });
  return { status: res.status, body: await res.json() as { submissionId: string | null; txHash: string | null; results: Record<string, any>[]; code?: string } };
}

/** `count` requests of one new attester, signed for its nonces 0, 1, … in order. */
async function attesterRequests(count: number, from = 0) {
  const key = generatePrivateKey();
  return await Promise.all(Array.from({ length: count }, (_, i) => signedReviewBody(target(), key, { nonce: BigInt(i), data: review(from + i) })));
}

describe("POST /v1/delegated-attest/batch", () => {
  test("a batch of 10 (two attesters, five consecutive nonces each) lands in one transaction; each uid is served by the index", async () => {
    const [a, b] = [await attesterRequests(5), await attesterRequests(5, 5)];
    const requests = [a[0], b[0], a[1], a[2], b[1], b[2], a[3], b[3], a[4], b[4]];
    stack.rpc.reset();
    const answer = await batch(stack.baseUrl, requests);
    expect(answer.status).toBe(200);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
    expect(answer.body.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(answer.body.submissionId).toEqual(expect.any(String));
    const uids = answer.body.results.map((r) => r.uid as string);
    expect(uids.every((uid) => /^0x[0-9a-f]{64}$/.test(uid))).toBe(true);
    expect(new Set(uids).size).toBe(10);
    await stack.sync();
    for (const [i, uid] of uids.entries()) {
      const res = await fetch(`${stack.baseUrl}/v1/attestations/${uid}`);
      const read = await res.json() as { attestation: { uid: string; attester: string } };
      expect([res.status, read.attestation.uid, read.attestation.attester.toLowerCase()]).toEqual([200, uid, requests[i]!.attester.toLowerCase()]);
    }
    const submission = await (await fetch(`${stack.baseUrl}/v1/submissions/${answer.body.submissionId}`)).json() as { txHash: string; state: string };
    expect([submission.txHash, ["mined", "confirmed"].includes(submission.state)]).toEqual([answer.body.txHash!, true]);
  });

  test("a request with a bad signature is refused in its own result and the rest are sent", async () => {
    const good = [(await attesterRequests(1))[0]!, (await attesterRequests(1))[0]!];
    const forged = { ...(await attesterRequests(1))[0]!, attester: privateKeyToAccount(generatePrivateKey()).address };
    stack.rpc.reset();
    const answer = await batch(stack.baseUrl, [good[0], forged, good[1]]);
    expect(answer.status).toBe(200);
    expect(answer.body.results.map((r) => r.uid === undefined ? [r.status, r.code] : "uid")).toEqual(["uid", [400, "ATTESTER_MISMATCH"], "uid"]);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
  });

  test("a request replayed in a later batch is 409 DUPLICATE with its uid; an attester's requests out of nonce order are refused before sending", async () => {
    const [first, second] = await attesterRequests(2);
    const landed = await batch(stack.baseUrl, [first]);
    const uid = landed.body.results[0]!.uid;
    expect(uid).toMatch(/^0x/);
    const again = await batch(stack.baseUrl, [second, first]);
    expect(again.body.results[0]!.uid).toMatch(/^0x/);
    expect(again.body.results[1]).toMatchObject({ status: 409, code: "DUPLICATE", details: uid });
    // Nonce 1 before nonce 0 of a new attester: the first does not fit the chain's nonce, the second does.
    const [zero, one] = await attesterRequests(2);
    const swapped = await batch(stack.baseUrl, [one, zero]);
    expect(swapped.body.results.map((r) => r.uid === undefined ? r.code : "uid")).toEqual(["ATTESTER_MISMATCH", "uid"]);
  });

  test("the public relay's per-attester and per-address limits count the requests of a batch", async () => {
    const service = await stack.restartService({ DATABASE_PATH: join(stack.dir, "batch-limits.sqlite"), PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "2", PUBLIC_RELAY_IP_RATE_PER_MINUTE: "4" });
    try {
      const answer = await batch(service.url, await attesterRequests(3));
      expect(answer.body.results.map((r) => r.uid === undefined ? [r.status, r.code] : "uid")).toEqual(["uid", "uid", [429, "RATE_LIMITED"]]);
      // Three requests of this client reached its limit of 4 a minute: two more, one refused (its refill of a token
      // every 15 s stopped first, as below).
      stopRefill(join(stack.dir, "batch-limits.sqlite"));
      const next = await batch(service.url, [(await attesterRequests(1))[0], (await attesterRequests(1))[0]]);
      expect(next.body.results.map((r) => r.uid === undefined ? [r.status, r.code] : "uid")).toEqual(["uid", [429, "RATE_LIMITED"]]);
    } finally {
      await service.stop();
    }
  });

  test("issue 43: 30 requests that pass every check but revert on chain cost at most 30 + ⌈log₂ 30⌉ + 1 eth_estimateGas, and their client's tokens", async () => {
    const service = await stack.restartService({ DATABASE_PATH: join(stack.dir, "batch-reverts.sqlite"), PUBLIC_RELAY_IP_RATE_PER_MINUTE: "31" });
    try {
      // expirationTime 1: EAS reverts (InvalidExpirationTime), nothing the service checks before the chain refuses it.
      const requests = await Promise.all(Array.from({ length: 30 }, (_, i) => signedReviewBody(target(), generatePrivateKey(), { data: review(100 + i), expirationTime: 1n })));
      stack.rpc.reset();
      const answer = await batch(service.url, requests);
      expect(answer.status).toBe(200);
      expect(answer.body.results.map((r) => [r.status, r.code])).toEqual(Array(30).fill([400, "INVALID_INPUT"]));
      const estimates = stack.rpc.methods().filter((m) => m === "eth_estimateGas").length;
      // Before: one halving per reverting item, 150 calls (30 when sent singly).
      expect(estimates).toBeLessThanOrEqual(36);
      expect(stack.rpc.methods().filter(isSend)).toHaveLength(0);
      // The refusals were charged to the client's limit of 31 a minute: one more request, then 429. The bucket gains a
      // token every 60/31 s, so its refill is stopped first: a machine slower than that between the two batches was
      // given a second request (red when 2 s were slept there).
      stopRefill(join(stack.dir, "batch-reverts.sqlite"));
      const next = await batch(service.url, [(await attesterRequests(1))[0], (await attesterRequests(1))[0]]);
      expect(next.body.results.map((r) => r.uid === undefined ? [r.status, r.code] : "uid")).toEqual(["uid", [429, "RATE_LIMITED"]]);
    } finally {
      await service.stop();
    }
  });

  test("an Idempotency-Key covers the batch as a whole: a retry replays the first answer and sends nothing", async () => {
    const requests = await attesterRequests(2);
    const key = crypto.randomUUID();
    const first = await batch(stack.baseUrl, requests, { "idempotency-key": key });
    stack.rpc.reset();
    const res = await fetch(`${stack.baseUrl}/v1/delegated-attest/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify({ requests }),
    });
    const again = await res.json() as Record<string, any>;
    expect([res.headers.get("idempotent-replayed"), again.submissionId, again.results]).toEqual(["true", first.body.submissionId, first.body.results]);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(0);
  });

  test("Prefer: respond-async answers 202 with Location; polling it ends settled with every request's own uid, the refused one refused", async () => {
    const requests = [...await attesterRequests(3), { ...(await attesterRequests(1))[0]!, attester: privateKeyToAccount(generatePrivateKey()).address }];
    stack.rpc.reset();
    const res = await fetch(`${stack.baseUrl}/v1/delegated-attest/batch`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "respond-async", "idempotency-key": crypto.randomUUID() },
      body: JSON.stringify({ requests }),
    });
    const accepted = await res.json() as { submissionId: string; state: string };
    expect([res.status, res.headers.get("location"), res.headers.get("preference-applied")]).toEqual([202, `/v1/submissions/${accepted.submissionId}`, "respond-async"]);
    // However long a loaded machine takes; the test's own limit stops a broken run.
    type View = { state: string; txHash: string; uid: string; items: { index: number; state: string; uid: string | null; error?: string }[] };
    let view: View;
    for (;;) {
      view = await (await fetch(`${stack.baseUrl}${res.headers.get("location")}`)).json() as View;
      if (!["pending", "sent", "replaced"].includes(view.state)) break;
      await Bun.sleep(20);
    }
    expect(["mined", "confirmed"]).toContain(view.state);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
    expect(view.items.map((item) => [item.index, item.state === "refused" ? item.error : "sent"])).toEqual([[0, "sent"], [1, "sent"], [2, "sent"], [3, "ATTESTER_MISMATCH"]]);
    const uids = view.items.slice(0, 3).map((item) => item.uid!);
    expect(uids.every((uid) => /^0x[0-9a-f]{64}$/.test(uid))).toBe(true);
    expect([new Set(uids).size, view.uid]).toEqual([3, uids[0]!]);
    await stack.sync();
    for (const [i, uid] of uids.entries()) {
      const read = await (await fetch(`${stack.baseUrl}/v1/attestations/${uid}`)).json() as { attestation: { attester: string; txHash?: string } };
      expect(read.attestation.attester.toLowerCase()).toBe(requests[i]!.attester.toLowerCase());
    }
  });

  test("a body that is not 1 to 50 requests is refused as a whole", async () => {
    expect((await batch(stack.baseUrl, [])).body.code).toBe("INVALID_INPUT");
    const many = await batch(stack.baseUrl, Array(51).fill({}));
    expect([many.status, many.body.code]).toEqual([400, "INVALID_INPUT"]);
  });
});

