import { expect, test } from "bun:test";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { openSqliteStorage } from "../adapters/sqlite/mod.ts";
import { createPaidCall } from "../domain/payments/mod.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import { createEip712Issuer } from "../x402/signers.ts";
import { createPaymentGate } from "./x402_gate.ts";

const NETWORK = "eip155:31337";
const ASSET = "0x036CbD53842c5426634e7929541eC2318f3dCF7e";
const PAY_TO = "0x1111111111111111111111111111111111111111";
const URL_PAID = "http://localhost/v1/paid/controller-witness";
const LEAK = "rpc call to https://node.example/v2/SECRETKEY123 failed: execution reverted";
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** The gate with a facilitator that refuses as `facilitator` says (a third-party one, wording its refusals as it likes). */
async function gateWith(facilitator: Pick<FacilitatorClient, "verify" | "settle">, supported?: FacilitatorClient["getSupported"]) {
  const { payments } = await openSqliteStorage(":memory:");
  return createPaymentGate({
    facilitator: {
      ...facilitator,
      getSupported: supported ?? (() => Promise.resolve({ kinds: [{ x402Version: 2, scheme: "exact", network: NETWORK }], extensions: [], signers: {} })),
    },
    network: NETWORK,
    asset: ASSET,
    assetName: "USDC",
    assetVersion: "2",
    payTo: PAY_TO,
    prices: { witness: "10000" },
    signing: { issuer: createEip712Issuer({ privateKey: generatePrivateKey(), chainId: 31337 }), publicBaseUrl: "https://ats.example" },
    paidCall: createPaidCall({ payments, clock: fakeClock(Date.now()) }),
    known: async (key) => (await payments.find(key)) !== undefined,
    log: quiet,
  });
}

/** A payment header for the gate's terms (its signature is never checked here: the facilitator stub decides). */
async function paid(gate: Awaited<ReturnType<typeof gateWith>>): Promise<Request> {
  const unpaid = await gate.handle(new Request(URL_PAID, { method: "POST" }), "witness", () => Promise.resolve({ response: Response.json({}) }));
  const accepted = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!).accepts[0]!;
  const header = encodePaymentSignatureHeader({
    x402Version: 2,
    accepted,
    resource: { url: URL_PAID, description: "", mimeType: "" },
    payload: {
      authorization: {
        from: privateKeyToAccount(generatePrivateKey()).address,
        to: PAY_TO,
        value: "10000",
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 600),
        nonce: `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
      },
      signature: `0x${"00".repeat(65)}`,
    },
  } as never);
  return new Request(URL_PAID, { method: "POST", headers: { "payment-signature": header } });
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
