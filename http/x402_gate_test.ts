import { expect, test } from "bun:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { createIdempotency } from "../domain/idempotency/mod.ts";
import { readExactAuthorization } from "../domain/payments/mod.ts";
import { fakeClock, fakeIdempotencyStore, withReadHook } from "../ports/fakes/mod.ts";
import { idempotent } from "./idempotency.ts";
import { TEST_PAYMENT, testPaymentGate, testPaymentHeader, testPaymentKey } from "./testing.ts";

const URL_PAID = "http://localhost/v1/paid/controller-witness";
const LEAK = "rpc call to https://node.example/v2/SECRETKEY123 failed: execution reverted";

/** The gate with a facilitator that refuses as `facilitator` says (a third-party one, wording its refusals as it likes). */
async function gateWith(facilitator: Pick<FacilitatorClient, "verify" | "settle">, supported?: FacilitatorClient["getSupported"]) {
  const { payments } = await openSqliteStorage(":memory:");
  return testPaymentGate(payments, facilitator, supported);
}

/** A paid request for the gate's terms (its signature is never checked here: the facilitator stub decides). */
async function paid(gate: Awaited<ReturnType<typeof gateWith>>): Promise<Request> {
  return new Request(URL_PAID, { method: "POST", headers: { "payment-signature": await testPaymentHeader(gate, URL_PAID) } });
}

const settledOk: FacilitatorClient["settle"] = (_payload, requirements) =>
  Promise.resolve({ success: true, transaction: `0x${"ab".repeat(32)}`, network: requirements.network });

test("a facilitator's refusal text never reaches the client: PAYMENT-REQUIRED's error carries a protocol code", async () => {
  for (const verify of [
    () => Promise.resolve({ isValid: false, invalidReason: LEAK, invalidMessage: LEAK }),
    () => Promise.reject(Object.assign(new Error(LEAK), { invalidReason: LEAK, invalidMessage: LEAK })),
  ] as FacilitatorClient["verify"][]) {
    const gate = await gateWith({ verify, settle: settledOk });
    const answer = await gate.handle(await paid(gate), "witness", () => Promise.resolve({ response: Response.json({}) }));
    expect(answer.status).toBe(402);
    const text = `${JSON.stringify(decodePaymentRequiredHeader(answer.headers.get("payment-required")!))} ${await answer.text()}`;
    expect(text).not.toContain("SECRETKEY123");
    expect(decodePaymentRequiredHeader(answer.headers.get("payment-required")!).error).toBe("invalid_payment");
  }
});

test("a protocol code is passed on as it is; a settlement refused with text says a code in PAYMENT-RESPONSE", async () => {
  const gate = await gateWith({ verify: () => Promise.resolve({ isValid: false, invalidReason: "insufficient_funds" }), settle: settledOk });
  const answer = await gate.handle(await paid(gate), "witness", () => Promise.resolve({ response: Response.json({}) }));
  expect(decodePaymentRequiredHeader(answer.headers.get("payment-required")!).error).toBe("insufficient_funds");

  const settling = await gateWith({
    verify: () => Promise.resolve({ isValid: true }),
    settle: (_payload, requirements) => Promise.resolve({ success: false, errorReason: LEAK, errorMessage: LEAK, transaction: "", network: requirements.network }),
  });
  const settled = await settling.handle(await paid(settling), "witness", () => Promise.resolve({ response: Response.json({ written: true }) }));
  const header = settled.headers.get("payment-response");
  expect(header).not.toBeNull();
  expect(decodePaymentResponseHeader(header!)).toMatchObject({ success: false, errorReason: "invalid_payment" });
  expect(`${atob(header!)} ${await settled.text()}`).not.toContain("SECRETKEY123");
});

test("a facilitator that cannot say what it supports (down at the gate's first use) is 502 FACILITATOR_UNAVAILABLE, not 500", async () => {
  const gate = await gateWith({ verify: () => Promise.resolve({ isValid: true }), settle: settledOk });
  const down = await gateWith({ verify: () => Promise.resolve({ isValid: true }), settle: settledOk }, () => Promise.reject(new TypeError("Unable to connect")));
  expect((await gate.handle(new Request(URL_PAID, { method: "POST" }), "witness", () => Promise.resolve({ response: Response.json({}) }))).status).toBe(402);
  const answer = await down.handle(new Request(URL_PAID, { method: "POST" }), "witness", () => Promise.resolve({ response: Response.json({}) }));
  expect([answer.status, (await answer.json() as { code: string }).code]).toEqual([502, "FACILITATOR_UNAVAILABLE"]);
});

test("the receipt signer is asked whether it is ready only for a payment that passed the gate's own checks; down, 503 before the facilitator", async () => {
  const { payments } = await openSqliteStorage(":memory:");
  let probes = 0;
  let ready = false;
  let verified = 0;
  const verify: FacilitatorClient["verify"] = () => (verified++, Promise.resolve({ isValid: true }));
  const gate = testPaymentGate(payments, { verify, settle: settledOk }, undefined, undefined, { signerReady: () => (probes++, Promise.resolve(ready)) });
  const work = () => Promise.resolve({ response: Response.json({ written: true }) });
  // A header that does not decode, or is no exact authorization: 402, and the signer is not asked (before, once each).
  for (const header of ["garbage", btoa(JSON.stringify({ x402Version: 2, payload: {} }))]) {
    const answer = await gate.handle(new Request(URL_PAID, { method: "POST", headers: { "payment-signature": header } }), "witness", work);
    expect(answer.status).toBe(402);
  }
  // No header: the terms, and no probe.
  expect((await gate.handle(new Request(URL_PAID, { method: "POST" }), "witness", work)).status).toBe(402);
  expect(probes).toBe(0);
  // A payment that passed them, while the signer is down: 503 SIGNER_UNAVAILABLE, the facilitator not asked.
  const down = await gate.handle(await paid(gate), "witness", work);
  expect([down.status, (await down.json() as { code: string }).code, probes, verified]).toEqual([503, "SIGNER_UNAVAILABLE", 1, 0]);
  ready = true;
  expect((await gate.handle(await paid(gate), "witness", work)).status).toBe(200);
  expect([probes, verified]).toEqual([2, 1]);
});

/** The payment header of `gate`'s terms with `change` applied to its decoded JSON. */
async function changed(gate: Awaited<ReturnType<typeof gateWith>>, change: (p: Record<string, unknown>) => Record<string, unknown>): Promise<Request> {
  const header = await testPaymentHeader(gate, URL_PAID);
  const forged = btoa(JSON.stringify(change(JSON.parse(atob(header)) as Record<string, unknown>)));
  return new Request(URL_PAID, { method: "POST", headers: { "payment-signature": forged } });
}

// Found by an attack review: a payload of x402 version 1 matched the v2 terms on scheme and network and reached the
// devnet facilitator (v2 only), which answered 500: the payer got 502 FACILITATOR_UNAVAILABLE from a healthy one.
test("a payment of an x402 version other than the one offered is 402 PAYMENT_INVALID with the terms, before the facilitator is asked", async () => {
  let asked = 0;
  const gate = await gateWith({ verify: () => (asked++, Promise.resolve({ isValid: true })), settle: settledOk });
  for (const x402Version of [1, 3, "2"]) {
    const answer = await gate.handle(await changed(gate, (p) => ({ ...p, x402Version })), "witness", () => Promise.resolve({ response: Response.json({}) }));
    expect([answer.status, await answer.json()]).toMatchObject([402, { code: "PAYMENT_INVALID", details: "invalid_x402_version" }]);
    expect(decodePaymentRequiredHeader(answer.headers.get("payment-required")!)).toMatchObject({ x402Version: 2, error: "invalid_x402_version" });
  }
  expect(asked).toBe(0);
});

// Found by an attack review: PAYMENT-REQUIRED's `error` carried the text of core's exceptions, echoing client input
// (x402Version "<probe>" came back as "Unsupported x402 version: <probe>").
test("PAYMENT-REQUIRED's error is a protocol code whatever the payload, never core's text or the client's input", async () => {
  const gate = await gateWith({ verify: () => Promise.resolve({ isValid: true }), settle: settledOk });
  const probes: ((p: Record<string, unknown>) => Record<string, unknown>)[] = [
    (p) => ({ ...p, x402Version: "<probe-123>" }),
    (p) => ({ ...p, accepted: "<probe-123>" }),
    (p) => ({ ...p, accepted: { ...(p.accepted as object), extra: null, scheme: "<probe-123>" } }),
    (p) => ({ ...p, accepted: { ...(p.accepted as object), network: "eip155:<probe-123>" } }),
  ];
  for (const probe of probes) {
    const answer = await gate.handle(await changed(gate, probe), "witness", () => Promise.resolve({ response: Response.json({}) }));
    expect(answer.status).toBe(402);
    const error = decodePaymentRequiredHeader(answer.headers.get("payment-required")!).error;
    expect(error).toMatch(/^[a-z0-9_]{1,80}$/);
    expect(error).toBe((await answer.json() as { details: string }).details);
  }
  const unpaid = await gate.handle(new Request(URL_PAID, { method: "POST" }), "witness", () => Promise.resolve({ response: Response.json({}) }));
  expect(decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!).error).toBe("Payment required");
});

// Found by an attack review: a third party submitting the payer's authorization before the facilitator's settle
// paid payTo; the facilitator answered `invalid_exact_evm_nonce_already_used` and the payment was recorded as failed.
test("a settlement refused for a used nonce that the chain shows paid to payTo is settled, with that transaction and a signed receipt", async () => {
  const { payments } = await openSqliteStorage(":memory:");
  const tx = `0x${"cd".repeat(32)}`;
  const settle: FacilitatorClient["settle"] = (_p, requirements) =>
    Promise.resolve({ success: false, errorReason: "invalid_exact_evm_nonce_already_used", transaction: "", network: requirements.network });
  let landed = true;
  const gate = testPaymentGate(payments, { verify: () => Promise.resolve({ isValid: true }), settle }, undefined, undefined, {
    settledOnChain: (_payment, failure) => Promise.resolve(landed ? { ok: true, transaction: tx } : failure),
  });
  const work = () => Promise.resolve({ response: Response.json({ written: true }), ref: "0xwork" });
  const answer = await gate.handle(await paid(gate), "witness", work);
  expect(answer.status).toBe(200);
  const response = decodePaymentResponseHeader(answer.headers.get("payment-response")!);
  expect(response).toMatchObject({ success: true, transaction: tx });
  expect(response.extensions?.["offer-receipt"]).toBeDefined();
  expect((await payments.list()).map((r) => [r.state, r.settlementTx])).toEqual([["settled", tx]]);

  landed = false;
  const refused = await gate.handle(await paid(gate), "witness", work);
  expect(decodePaymentResponseHeader(refused.headers.get("payment-response")!)).toMatchObject({ success: false, errorReason: "invalid_exact_evm_nonce_already_used" });
});

// The same found on the resume of a dead request's paid write: its re-verification met the used nonce (the payment
// settled before the crash, its answer lost, or landed by someone else) and recorded the payment as failed.
test("a resumed paid write whose nonce is found used, and shown paid to payTo on chain, is settled with that transaction", async () => {
  const { payments } = await openSqliteStorage(":memory:");
  const tx = `0x${"ef".repeat(32)}`;
  const verify: FacilitatorClient["verify"] = () => Promise.resolve({ isValid: false, invalidReason: "invalid_exact_evm_nonce_already_used" });
  const gate = testPaymentGate(payments, { verify, settle: settledOk }, undefined, undefined, {
    settledOnChain: (payment, failure) => Promise.resolve(payment.amount === "10000" ? { ok: true, transaction: tx } : failure),
  });
  const header = await testPaymentHeader(gate, URL_PAID);
  const key = testPaymentKey(header);
  const payer = readExactAuthorization(decodePaymentSignatureHeader(header).payload)!.from.toLowerCase();
  const { network, asset, payTo } = TEST_PAYMENT;
  await payments.reserve({ key, purpose: "witness", network, asset, payer, payTo, amount: "10000", accountId: null, createdAtMs: Date.now() });
  await payments.worked(key, "0xwork", Date.now());
  const request = new Request(URL_PAID, { method: "POST", headers: { "payment-signature": header } });
  const answer = await gate.resume(request, "witness", () => Promise.resolve({ response: Response.json({ written: true }), ref: "0xwork" }));
  expect(answer?.status).toBe(200);
  expect(decodePaymentResponseHeader(answer!.headers.get("payment-response")!)).toMatchObject({ success: true, transaction: tx });
  expect(await payments.find(key)).toMatchObject({ state: "settled", settlementTx: tx });
});

// Found by review: the same paid request sent twice at once, the second reading the key free just before the first took
// it, met the first's nonce reservation at the replay check and was told 409 PAYMENT_ALREADY_USED, which a client may
// take as final, while the first was still running.
test("the same payment twice at once: the second, past the key's read before the first took it, is answered by the key (409 IDEMPOTENCY_KEY_IN_USE), not PAYMENT_ALREADY_USED", async () => {
  const gate = await gateWith({ verify: () => Promise.resolve({ isValid: true }), settle: settledOk });
  const { store: hooked, onRead } = withReadHook(fakeIdempotencyStore());
  const idempotency = createIdempotency({ store: hooked, clock: fakeClock() });
  const header = await testPaymentHeader(gate, URL_PAID);
  const send = (work: () => Promise<{ response: Response }>) => {
    const request = new Request(URL_PAID, { method: "POST", headers: { "payment-signature": header, "idempotency-key": "order-1" }, body: "{}" });
    return idempotent(idempotency, request, { ...gate.idempotentWrite(request, "{}", "client:x"), verifiedInRun: true }, ({ begin }) =>
      gate.handle(request, "witness", work, { begin }));
  };
  let release = () => {};
  const held = new Promise<void>((resolve) => (release = resolve));
  let first: Promise<Response> | undefined;
  let works = 0;
  // The second's read of the key, then the first taking it and reserving the nonce before the second goes on.
  onRead(async () => {
    let working!: () => void;
    const inWork = new Promise<void>((resolve) => (working = resolve));
    first = send(async () => {
      works++;
      working();
      await held;
      return { response: Response.json({ written: true }) };
    });
    await inWork;
  });
  const second = await send(async () => (works++, { response: Response.json({ written: true }) }));
  expect([second.status, (await second.json() as { code: string }).code, second.headers.get("retry-after")]).toEqual([409, "IDEMPOTENCY_KEY_IN_USE", "1"]);
  release();
  expect((await first!).status).toBe(200);
  expect(works).toBe(1);
  const retry = await send(async () => (works++, { response: Response.json({ written: true }) }));
  expect([retry.status, retry.headers.get("idempotent-replayed"), works]).toEqual([200, "true", 1]);
});
