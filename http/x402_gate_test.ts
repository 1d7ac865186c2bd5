import { expect, test } from "bun:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { testPaymentGate, testPaymentHeader } from "./testing.ts";

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
