/**
 * A private-relay write paid with x402 whose request died (a crash) under its `Idempotency-Key`, after it opened its
 * submission (decisions §23 with §13). The retry that takes the key over answers the submission as it stands and
 * settles the payment once the write is mined, never sending the write again. Before, the paid write noted no
 * submission under its key and the retry met its own payment's replay key: 409 `PAYMENT_ALREADY_USED`, the write on
 * chain never answered nor settled. The routes, the gate, the payment ledger (SQLite) and the submission tracking are
 * the real ones; the relay is a stand-in that opens its submission and never answers, as a request whose instance died.
 */
import { describe, expect, test } from "bun:test";
import { decodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { Elysia } from "elysia";
import { openSqliteStorage } from "../../../adapters/sqlite/mod.ts";
import { fail } from "../../../domain/result.ts";
import { createIdempotency, IDEMPOTENCY_LEASE_MS } from "../../../domain/idempotency/mod.ts";
import { createSubmissionStatus, createSubmissionTracker, type OnSubmitting } from "../../../domain/submissions/mod.ts";
import { fakeClock, fakeIdempotencyStore, fakeRandom, fakeReplayStore, fakeSubmissionRecords } from "../../../ports/fakes/mod.ts";
import { testPaymentGate, testPaymentHeader, testPaymentKey } from "../../testing.ts";
import { privateRelayRoutes } from "./private_relay.ts";

const URL_PAID = "http://localhost/v1/paid/delegated-attest";
const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;
const SETTLEMENT = `0x${"5e".repeat(32)}`;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** `first`: the first request dies once it sent (a crash), or is answered 503 `OUTCOME_UNKNOWN` (its answer kept). */
async function setUp(first: "dies" | "unknown" = "dies") {
  const { payments } = await openSqliteStorage(":memory:");
  const clock = fakeClock();
  const replay = fakeReplayStore();
  const records = fakeSubmissionRecords();
  const facilitator = { settlements: 0 };
  const settle: FacilitatorClient["settle"] = (_payload, requirements) => {
    facilitator.settlements++;
    return Promise.resolve({ success: true, transaction: SETTLEMENT, network: requirements.network });
  };
  const gate = testPaymentGate(payments, { verify: () => Promise.resolve({ isValid: true }), settle }, undefined, { relay: "10000" });
  const header = await testPaymentHeader(gate, URL_PAID, "relay");
  let sent = 0;
  const key = `0x${"11".repeat(65)}`;
  // The relay hands its transaction to the chain (its submission opened) and its instance dies.
  const relay = (async (_body: unknown, _caller: unknown, options: { onSubmitting?: OnSubmitting } = {}) => {
    await replay.claim({ key, chainId: 31337, attester: "0xa", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 });
    await options.onSubmitting?.(31337, key);
    sent++;
    if (first === "unknown") return fail("OUTCOME_UNKNOWN", "The transaction was sent but its outcome is not known yet", TX);
    return await new Promise<never>(() => {});
  }) as never;
  // Counts the keys taken back from a kept answer (`reopen`), which only the kept 503's retry does.
  const store = fakeIdempotencyStore();
  let reopened = 0;
  const reopen = store.reopen;
  store.reopen = (...args: Parameters<typeof reopen>) => {
    reopened++;
    return reopen(...args);
  };
  const status = createSubmissionStatus({ records, replay, head: () => Promise.resolve(5n), confirmations: 1 });
  const app = new Elysia().use(privateRelayRoutes({
    sessions: { authenticate: () => Promise.resolve(fail("UNAUTHENTICATED", "No session")) } as never,
    relay,
    readNonce: () => Promise.reject(new Error("unused")),
    chainName: "ATS Devnet",
    chainId: 31337,
    easAddress: `0x${"ee".repeat(20)}`,
    log: quiet,
    payments: gate,
    idempotency: createIdempotency({ store, clock }),
    tracking: { tracker: createSubmissionTracker({ records, random: fakeRandom(), clock }), status, log: quiet },
  }));
  const post = () =>
    app.handle(new Request(URL_PAID, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": "paid-crash", "payment-signature": header }, body: "{}" }));
  const record = () => payments.find(testPaymentKey(header));
  return { post, clock, replay, key, record, facilitator, sent: () => sent, reopened: () => reopened };
}

describe("a paid private-relay write that died under its Idempotency-Key (decisions §23 with §13)", () => {
  test("on its way, then mined: the retry answers OUTCOME_UNKNOWN (not kept), then the write, settled once; nothing sent again", async () => {
    const env = await setUp();
    void env.post();
    while (env.sent() === 0) await Bun.sleep(1);
    // The payment names the Idempotency-Key record that reserved it: only that key's retry resumes it.
    expect(await env.record()).toMatchObject({ state: "reserved", idempotencyRef: expect.stringMatching(/^[0-9a-f]{64}$/) });
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const pending = await env.post();
    expect([pending.status, (await pending.json() as { code: string }).code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    expect([(await env.record())?.state, env.facilitator.settlements]).toEqual(["work_unknown", 0]);

    await env.replay.finish(31337, env.key, { state: "mined", txHash: TX, uid: UID, blockNumber: 5n });
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const answered = await env.post();
    expect([answered.status, await answered.json()]).toMatchObject([200, { success: true, txHash: TX, uid: UID, blockNumber: 5 }]);
    expect(decodePaymentResponseHeader(answered.headers.get("payment-response")!)).toMatchObject({ success: true, transaction: SETTLEMENT });
    expect([env.sent(), env.facilitator.settlements]).toEqual([1, 1]);
    expect(await env.record()).toMatchObject({ state: "settled", workRef: TX, settlementTx: SETTLEMENT });
    const replayed = await env.post();
    expect([replayed.status, replayed.headers.get("idempotent-replayed"), env.facilitator.settlements]).toEqual([200, "true", 1]);
  });

  test("failed on chain: the retry answers the failure and gives the payment back, nothing settled", async () => {
    const env = await setUp();
    void env.post();
    while (env.sent() === 0) await Bun.sleep(1);
    await env.replay.finish(31337, env.key, { state: "reverted", txHash: TX, blockNumber: 5n });
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const answered = await env.post();
    expect([answered.status, (await answered.json() as { code: string }).code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect([env.sent(), env.facilitator.settlements, await env.record()]).toEqual([1, 0, undefined]);
  });
});

describe("a paid private-relay write whose payment was kept `work_unknown` (decisions §23 with §13)", () => {
  test("its write then released: the retry answers the failure and the payment is forgotten, no longer `work_unknown` for good", async () => {
    const env = await setUp();
    void env.post();
    while (env.sent() === 0) await Bun.sleep(1);
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const pending = await env.post();
    expect([pending.status, (await pending.json() as { code: string }).code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    expect((await env.record())?.state).toBe("work_unknown");
    // The reconciler releases the record (nothing on chain): the write failed.
    await env.replay.release(31337, env.key);
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const answered = await env.post();
    expect([answered.status, (await answered.json() as { code: string }).code]).toEqual([500, "SUBMISSION_FAILED"]);
    // Before, the payment stayed `work_unknown`: its authorization refused as used, nothing ever settled.
    expect([env.sent(), env.facilitator.settlements, await env.record()]).toEqual([1, 0, undefined]);
  });
});

describe("a paid private-relay write answered 503 OUTCOME_UNKNOWN, that answer kept under its Idempotency-Key (decisions §23 with §13)", () => {
  // The test above reaches `work_unknown` through a dead request's retry (the lease taken over); this one through the
  // first request's own unknown outcome, kept, and its retries taking the key back (`reopen`).
  test("its retries take the kept answer back: on its way, the kept 503 again (payment `work_unknown`); once released, the failure kept and the payment forgotten", async () => {
    const env = await setUp("unknown");
    const first = await env.post();
    const kept = await first.json() as { code: string };
    expect([first.status, kept.code, first.headers.get("idempotent-replayed")]).toEqual([503, "OUTCOME_UNKNOWN", null]);
    expect((await env.record())?.state).toBe("work_unknown");
    const again = await env.post();
    expect([again.status, again.headers.get("idempotent-replayed"), await again.json()]).toEqual([503, "true", kept]);
    expect([(await env.record())?.state, env.reopened()]).toEqual(["work_unknown", 1]);
    // The reconciler releases the record: its deadline passed with nothing on chain (a proven cause).
    await env.replay.release(31337, env.key);
    const answered = await env.post();
    expect([answered.status, answered.headers.get("idempotent-replayed"), (await answered.json() as { code: string }).code]).toEqual([500, "true", "SUBMISSION_FAILED"]);
    expect([env.sent(), env.facilitator.settlements, await env.record(), env.reopened()]).toEqual([1, 0, undefined, 2]);
    // Kept: replayed as it is, nothing taken back.
    const replayed = await env.post();
    expect([replayed.status, env.reopened()]).toEqual([500, 2]);
  });
});
