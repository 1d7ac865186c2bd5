/**
 * A batch of one attester's consecutive nonces that fails before anything is sent for the service's sake, on the
 * public relay through the real service on the devnet: the delegate wallet's balance read fails (500 RPC_ERROR), the
 * wallet cannot pay (503 SUBMISSION_FAILED), or the attester's EAS nonce read fails for the first request. Every
 * request is answered as the first (nothing sent), every attester token taken goes back, the same batch then goes
 * through in full, and a batch that did nothing is not kept under its Idempotency-Key. Found by attack: the later
 * requests were verified against the chain's nonce without the first, refused 400 ATTESTER_MISMATCH (NONCE_AHEAD) and
 * kept their tokens, so the retry was [ok, 429, 429], and under a key the mislabelled batch was replayed for 24 hours.
 */
import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { isSend, type RpcCall } from "./support/rpc_proxy.ts";
import { proxiedRelay } from "./support/proxied_relay.ts";
import { signedReviewBody } from "./support/review_signer.ts";

/** The attester's hourly allowance on the public relay: one batch's worth, so that a token kept shows. */
const ATTESTER_PER_HOUR = 3;
/** `getNonce(address)` of EAS: the attester's nonce read. */
const GET_NONCE = "0x2d0335ab";
const { proxy, stack, target, isDelegateBalance, post } = proxiedRelay(ATTESTER_PER_HOUR);
const review = (n: number) => ({ subject: `did:web:pre-send-${n}.test`, version: "1", ratingValue: 4, reviewBody: `pre-send ${n}`, screenshotUrls: [], proofs: [] });
const HEADER_NOT_FOUND = { code: -32000, message: "header not found" };

/** Each result of a batch as `ok` (its uid) or `<status> <code>`. */
const outcomes = (body: Record<string, any>) => body.results.map((r: Record<string, unknown>) => (typeof r.uid === "string" ? "ok" : `${r.status} ${r.code}`));

/** `count` requests of a fresh attester, signed for nonces 0, 1, … */
async function attesterBatch(count: number, seed: number) {
  const key = generatePrivateKey();
  const requests = [];
  for (let n = 0; n < count; n++) requests.push(await signedReviewBody(target(), key, { nonce: BigInt(n), data: review(seed + n) }));
  return { attester: privateKeyToAccount(key).address.toLowerCase(), requests };
}

/** Posts the batch with `arm` set on the proxy, then disarms it. */
async function postFaulted(arm: () => void, body: unknown, headers: Record<string, string> = {}) {
  stack().rpc.reset();
  arm();
  try {
    return await post("/v1/delegated-attest/batch", body, headers);
  } finally {
    proxy.onCall = undefined;
    proxy.onAnswer = undefined;
  }
}

describe("a batch of one attester that fails before anything is sent", () => {
  test("the delegate's balance read fails: every request 500 RPC_ERROR, every token given back, the same batch then sent", async () => {
    const { requests } = await attesterBatch(ATTESTER_PER_HOUR, 0);
    const down = await postFaulted(() => (proxy.onCall = (call) => (isDelegateBalance(call) ? HEADER_NOT_FOUND : undefined)), { requests });
    expect(stack().rpc.methods().filter(isSend)).toEqual([]);
    expect(outcomes(down.body)).toEqual(["500 RPC_ERROR", "500 RPC_ERROR", "500 RPC_ERROR"]);
    expect(down.body.results.map((r: Record<string, unknown>) => r.details ?? null)).toEqual([null, null, null]);
    expect(outcomes((await post("/v1/delegated-attest/batch", { requests })).body)).toEqual(["ok", "ok", "ok"]);
  }, 60_000);

  test("the delegate wallet cannot pay: every request 503 SUBMISSION_FAILED, every token given back, the same batch then sent", async () => {
    const { requests } = await attesterBatch(ATTESTER_PER_HOUR, 100);
    const down = await postFaulted(() => (proxy.onAnswer = (call, answer) => (isDelegateBalance(call) ? { ...answer, result: "0x0" } : answer)), { requests });
    expect(stack().rpc.methods().filter(isSend)).toEqual([]);
    expect(outcomes(down.body)).toEqual(["503 SUBMISSION_FAILED", "503 SUBMISSION_FAILED", "503 SUBMISSION_FAILED"]);
    expect(outcomes((await post("/v1/delegated-attest/batch", { requests })).body)).toEqual(["ok", "ok", "ok"]);
  }, 60_000);

  test("the attester's nonce read fails once, the first request's: every request 500 RPC_ERROR, the same batch then sent", async () => {
    const { attester, requests } = await attesterBatch(ATTESTER_PER_HOUR, 300);
    let left = 1;
    const failsOnce = (call: RpcCall) => {
      const data = (call.params[0] as { data?: unknown } | undefined)?.data;
      const nonceRead = call.method === "eth_call" && typeof data === "string" && data.startsWith(GET_NONCE) && data.toLowerCase().includes(attester.slice(2));
      return nonceRead && left-- > 0 ? HEADER_NOT_FOUND : undefined;
    };
    const down = await postFaulted(() => (proxy.onCall = failsOnce), { requests });
    // The fault fired (once: the later requests read no nonce now, answered as the first).
    expect(left).toBeLessThanOrEqual(0);
    expect(stack().rpc.methods().filter(isSend)).toEqual([]);
    expect(outcomes(down.body)).toEqual(["500 RPC_ERROR", "500 RPC_ERROR", "500 RPC_ERROR"]);
    expect(outcomes((await post("/v1/delegated-attest/batch", { requests })).body)).toEqual(["ok", "ok", "ok"]);
  }, 60_000);

  test("under an Idempotency-Key: the batch that did nothing is not kept, its retry under the key runs and is sent", async () => {
    const { requests } = await attesterBatch(2, 200);
    const key = { "idempotency-key": crypto.randomUUID() };
    const down = await postFaulted(() => (proxy.onCall = (call) => (isDelegateBalance(call) ? HEADER_NOT_FOUND : undefined)), { requests }, key);
    expect(outcomes(down.body)).toEqual(["500 RPC_ERROR", "500 RPC_ERROR"]);
    const retry = await post("/v1/delegated-attest/batch", { requests }, key);
    expect({ replayed: retry.replayed, results: outcomes(retry.body) }).toEqual({ replayed: null, results: ["ok", "ok"] });
    // The answer that wrote is kept.
    const again = await post("/v1/delegated-attest/batch", { requests }, key);
    expect({ replayed: again.replayed, body: again.body }).toEqual({ replayed: "true", body: retry.body });
  }, 60_000);

  test("under an Idempotency-Key: a batch that sent nothing, one request on record (409 with its uid), is not kept either", async () => {
    const { requests } = await attesterBatch(2, 400);
    const first = await post("/v1/delegated-attest", requests[0]);
    expect(first.status).toBe(200);
    const key = { "idempotency-key": crypto.randomUUID() };
    const batch = { requests: [requests[1], requests[0]] };
    const down = await postFaulted(() => (proxy.onCall = (call) => (isDelegateBalance(call) ? HEADER_NOT_FOUND : undefined)), batch, key);
    expect(outcomes(down.body)).toEqual(["500 RPC_ERROR", "409 DUPLICATE"]);
    expect(down.body.results[1].details).toBe(first.body.uid);
    // Found by review: kept, the retry under the key was this answer for 24 hours, though the same batch without it wrote.
    const retry = await post("/v1/delegated-attest/batch", batch, key);
    expect({ replayed: retry.replayed, results: outcomes(retry.body) }).toEqual({ replayed: null, results: ["ok", "409 DUPLICATE"] });
  }, 60_000);
});
