/**
 * A relay for software (decisions §23, issue 36) through the real server on Anvil: a retry with the same
 * Idempotency-Key replays the first answer and sends no second transaction; another body under the key is 422 and
 * changes nothing; two requests racing with one key run once; `Prefer: respond-async` answers 202 with a Location
 * whose submission ends mined by polling.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generatePrivateKey } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { isSend } from "./support/rpc_proxy.ts";

let stack: Stack;
beforeAll(async () => {
  // The node mines on arrival: its answer to a sync send decides, however late a loaded machine delivers it.
  stack = await startStack({ sendSyncGraceMs: 120_000 });
});
afterAll(async () => await stack?.stop());

const sends = () => stack.rpc.methods().filter(isSend).length;
const body = async (key = generatePrivateKey(), data?: Record<string, unknown>) =>
  JSON.stringify(await signedReviewBody({ chainId: stack.service.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids }, key, { data }));
const post = (text: string, headers: Record<string, string> = {}) =>
  fetch(`${stack.baseUrl}/v1/delegated-attest`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: text });

describe("Idempotency-Key on the public relay", () => {
  test("a retry with the same key after the first answered replays it with Idempotent-Replayed and sends no second transaction", async () => {
    const signed = await body();
    const key = crypto.randomUUID();
    const before = sends();
    const first = await post(signed, { "idempotency-key": key });
    const answer = await first.json() as Record<string, unknown>;
    expect([first.status, answer.success, first.headers.get("idempotent-replayed")]).toEqual([200, true, null]);
    expect(answer.submissionId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(sends()).toBe(before + 1);
    const retry = await post(signed, { "idempotency-key": key });
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    expect(await retry.json()).toEqual(answer);
    expect(sends()).toBe(before + 1);
    // Without the key the same signature is the relay's own duplicate, with the uid (decisions §15).
    const plain = await post(signed);
    expect([plain.status, ((await plain.json()) as { details: string }).details]).toEqual([409, answer.uid as string]);
  });

  test("a different body under the same key is 422 IDEMPOTENCY_KEY_REUSED and changes nothing", async () => {
    const key = crypto.randomUUID();
    const first = await post(await body(), { "idempotency-key": key });
    expect(first.status).toBe(200);
    const other = await body();
    const before = sends();
    const reused = await post(other, { "idempotency-key": key });
    expect([reused.status, ((await reused.json()) as { code: string }).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    expect(sends()).toBe(before);
    // Nothing of it was recorded: its signature is still free.
    const fresh = await post(other, { "idempotency-key": crypto.randomUUID() });
    expect(fresh.status).toBe(200);
  });

  test("two concurrent requests with one key: one runs, the other is 409 IDEMPOTENCY_KEY_IN_USE or the replay", async () => {
    const signed = await body();
    const key = crypto.randomUUID();
    const before = sends();
    const answers = await Promise.all([post(signed, { "idempotency-key": key }), post(signed, { "idempotency-key": key })]);
    const seen = await Promise.all(answers.map(async (r) => ({ status: r.status, replayed: r.headers.get("idempotent-replayed"), retryAfter: r.headers.get("retry-after"), body: await r.json() as Record<string, unknown> })));
    const ran = seen.filter((a) => a.status === 200 && a.replayed === null);
    expect(ran).toHaveLength(1);
    const other = seen.find((a) => a !== ran[0])!;
    if (other.status === 409) expect([other.body.code, other.retryAfter]).toEqual(["IDEMPOTENCY_KEY_IN_USE", "1"]);
    else expect([other.status, other.replayed, other.body]).toEqual([200, "true", ran[0]!.body]);
    expect(sends()).toBe(before + 1);
  });
});

describe("Prefer: respond-async", () => {
  test("answers 202 with Location once recorded; polling the Location ends in a mined or confirmed state with the uid", async () => {
    const accepted = await post(await body(), { prefer: "respond-async", "idempotency-key": crypto.randomUUID() });
    expect(accepted.status).toBe(202);
    const { submissionId } = await accepted.json() as { submissionId: string };
    const location = accepted.headers.get("location");
    expect(location).toBe(`/v1/submissions/${submissionId}`);
    let view: Record<string, unknown> = {};
    for (let tries = 0; tries < 2_000; tries++) {
      view = await (await fetch(`${stack.baseUrl}${location}`)).json() as Record<string, unknown>;
      if (view.state !== "pending" && view.state !== "sent") break;
      await Bun.sleep(5);
    }
    expect(["mined", "confirmed"]).toContain(view.state as string);
    expect(view).toMatchObject({ submissionId, feeBumps: 0 });
    expect(view.uid).toMatch(/^0x[0-9a-f]{64}$/);
    expect(view.txHash).toMatch(/^0x[0-9a-f]{64}$/);
  });

  test("a request its checks refuse gets its usual 4xx and no submission", async () => {
    const signed = JSON.parse(await body()) as { prepared: { delegatedRequest: { deadline: string } } };
    signed.prepared.delegatedRequest.deadline = "1";
    const refused = await post(JSON.stringify(signed), { prefer: "respond-async" });
    const answer = await refused.json() as Record<string, unknown>;
    expect([refused.status, answer.submissionId]).toEqual([400, undefined]);
  });
});
