/**
 * A failed read of the delegate wallet's pending nonce, just before the service signs (the provider's transient
 * "header not found"), on the public relay's single and batch routes through the real service on the devnet. Nothing
 * is signed or sent, so the answer is 500 RPC_ERROR (decisions §2, as a failed balance read or simulation), not kept
 * under the Idempotency-Key (its retry runs once the provider answers), and the attester's hourly token and the gas
 * charge go back. It was 500 SUBMISSION_FAILED "the chain refused the transaction", replayed for the key's 24 hours,
 * with the attester's token spent. The witness route's case is in e2e/controller_witness_test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { startStack, type Stack } from "./harness.ts";
import { isSend } from "./support/rpc_proxy.ts";
import { nonceReadFault } from "./support/nonce_read_fault.ts";
import { signedReviewBody } from "./support/review_signer.ts";

const fault = nonceReadFault();
/** The attester's hourly allowance on the public relay: small, so that a token kept by a refusal shows. */
const ATTESTER_PER_HOUR = 3;
let stack: Stack;
beforeAll(async () => {
  // The node's answer to a sync send decides, never its speed (docs/testing.md).
  stack = await startStack({
    wrapRpcFetch: fault.wrap,
    sendSyncGraceMs: 120_000,
    env: { PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: String(ATTESTER_PER_HOUR) },
  });
});
afterAll(async () => await stack?.stop());

const target = () => ({ chainId: stack.devnet.chainId, easAddress: stack.service.easAddress, schemaUids: stack.devnet.schemaUids });
const review = (n: number) => ({ subject: `did:web:nonce-read-${n}.test`, version: "1", ratingValue: 4, reviewBody: `nonce read ${n}`, screenshotUrls: [], proofs: [] });
const delegate = () => privateKeyToAccount(stack.devnet.keys.delegate).address;

async function post(url: string, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, any> };
}

describe("the delegate wallet's pending nonce not read before signing", () => {
  test("single: 500 RPC_ERROR with nothing sent, not kept under the key, the attester's tokens given back", async () => {
    // A fresh instance: its sender has not read the wallet's nonce yet, so its first send reads it.
    const service = await stack.restartService({ PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: String(ATTESTER_PER_HOUR) });
    const key = generatePrivateKey();
    const body = await signedReviewBody(target(), key, { nonce: 0n, data: review(0) });
    const idempotencyKey = crypto.randomUUID();
    stack.rpc.reset();
    fault.wallet = delegate();
    fault.failed = 0;
    let first: Awaited<ReturnType<typeof post>>;
    let plain: Awaited<ReturnType<typeof post>>;
    try {
      first = await post(service.url, "/v1/delegated-attest", body, { "idempotency-key": idempotencyKey });
      plain = await post(service.url, "/v1/delegated-attest", body);
    } finally {
      fault.wallet = undefined;
    }
    expect(fault.failed).toBeGreaterThanOrEqual(2);
    expect(stack.rpc.methods().filter(isSend)).toEqual([]);
    expect([first.status, first.body.code, plain.status, plain.body.code]).toEqual([500, "RPC_ERROR", 500, "RPC_ERROR"]);
    // No upstream text reaches the client.
    expect(JSON.stringify(first.body)).not.toContain("header not found");
    expect(JSON.stringify(first.body)).not.toContain("http://");

    // The provider answers again: the retry under the key runs afresh (not replayed) and is sent.
    const retry = await post(service.url, "/v1/delegated-attest", body, { "idempotency-key": idempotencyKey });
    expect([retry.status, retry.replayed]).toEqual([200, null]);
    expect(retry.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    // Two refusals that sent nothing spent none of the attester's 3 writes this hour: two more go through, the next is 429.
    for (const nonce of [1n, 2n]) {
      const next = await post(service.url, "/v1/delegated-attest", await signedReviewBody(target(), key, { nonce, data: review(Number(nonce)) }));
      expect(next.status).toBe(200);
    }
    const over = await post(service.url, "/v1/delegated-attest", await signedReviewBody(target(), key, { nonce: 3n, data: review(3) }));
    expect([over.status, over.body.code]).toEqual([429, "RATE_LIMITED"]);
  }, 60_000);

  test("batch: every item 500 RPC_ERROR with nothing sent, the batch not kept under the key, the attester's tokens given back", async () => {
    const service = await stack.restartService({ PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: String(ATTESTER_PER_HOUR) });
    const key = generatePrivateKey();
    const requests = [
      await signedReviewBody(target(), key, { nonce: 0n, data: review(10) }),
      await signedReviewBody(target(), key, { nonce: 1n, data: review(11) }),
    ];
    const idempotencyKey = crypto.randomUUID();
    stack.rpc.reset();
    fault.wallet = delegate();
    fault.failed = 0;
    let down: Awaited<ReturnType<typeof post>>;
    try {
      down = await post(service.url, "/v1/delegated-attest/batch", { requests }, { "idempotency-key": idempotencyKey });
    } finally {
      fault.wallet = undefined;
    }
    expect(fault.failed).toBeGreaterThanOrEqual(1);
    expect(stack.rpc.methods().filter(isSend)).toEqual([]);
    expect(down.status).toBe(200);
    expect(down.body.txHash).toBeNull();
    expect(down.body.results.map((r: Record<string, unknown>) => [r.status, r.code])).toEqual([[500, "RPC_ERROR"], [500, "RPC_ERROR"]]);

    // The retry under the key runs afresh; with the two tokens the refusal took given back, both items fit the
    // attester's 3 writes this hour (it took 2 and kept them: the second item was 429).
    const retry = await post(service.url, "/v1/delegated-attest/batch", { requests }, { "idempotency-key": idempotencyKey });
    expect([retry.status, retry.replayed]).toEqual([200, null]);
    expect(retry.body.results.map((r: Record<string, unknown>) => typeof r.uid === "string")).toEqual([true, true]);
    expect(stack.rpc.methods().filter(isSend)).toHaveLength(1);
  }, 60_000);
});
