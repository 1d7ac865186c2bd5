/**
 * Test support: the smallest dependencies the app starts with (no chain, no storage, no session), for tests that
 * read what the app publishes (/openapi.json) or add the one capability they exercise.
 */
import { createReadNonce } from "../domain/delegation/mod.ts";
import { createIdempotency } from "../domain/idempotency/mod.ts";
import { fail } from "../domain/result.ts";
import { createSubmissionStatus, createSubmissionTracker } from "../domain/submissions/mod.ts";
import type { Clock } from "../ports/clock.ts";
import { fakeEasReader, fakeIdempotencyStore, fakeRandom } from "../ports/fakes/mod.ts";
import type { ReplayStore } from "../ports/replay_store.ts";
import type { SubmissionRecordStore } from "../ports/submission_records.ts";
import type { Logger } from "../ports/logger.ts";
import type { AppDeps } from "./app.ts";
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { createPaidCall, createPaidResume, paymentReplayKey, readExactAuthorization } from "../domain/payments/mod.ts";
import { fakeClock } from "../ports/fakes/mod.ts";
import type { PaymentLedger, PaymentPurpose } from "../ports/payments.ts";
import { createEip712Issuer } from "../x402/signers.ts";
import { createPaymentGate, type PaymentGate, type PaymentGateOptions } from "./x402_gate.ts";

const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** What every app needs; a test spreads it and adds the capability under test. */
export function minimalAppDeps(): AppDeps {
  const eas = fakeEasReader();
  return {
    eas: {
      readNonce: createReadNonce(eas),
      delegatedAttest: () => Promise.reject(new Error("unused")),
      chainName: "ATS Devnet",
      chainId: eas.chainId,
      easAddress: eas.easAddress,
    },
    trustAnchors: { version: 1, updatedAt: "2026-01-01T00:00:00Z", widgetOrigins: [], chains: {}, registries: [] },
    log: quiet,
    ready: () => Promise.resolve({ ready: true, checks: {} }),
  };
}

/**
 * The public relay over `delegatedAttest` with its submissions tracked (decisions §23) on fake stores: idempotency
 * keys, submission records and their status route, no session. For tests of what a relay write answers.
 */
export function trackedRelayDeps(
  delegatedAttest: AppDeps["eas"]["delegatedAttest"],
  stores: { readonly records: SubmissionRecordStore; readonly replay: ReplayStore; readonly clock: Clock },
): AppDeps {
  const base = minimalAppDeps();
  const status = createSubmissionStatus({ records: stores.records, replay: stores.replay, head: () => Promise.resolve(5n), confirmations: 1 });
  return {
    ...base,
    eas: {
      ...base.eas,
      delegatedAttest,
      idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock: stores.clock }),
      tracking: { tracker: createSubmissionTracker({ records: stores.records, random: fakeRandom(), clock: stores.clock }), status, log: quiet },
    },
    submissions: { status, sessions: { authenticate: () => Promise.resolve(fail("UNAUTHENTICATED", "No session")) } as never },
  };
}

/** The network, token and payee of {@link testPaymentGate}. */
export const TEST_PAYMENT = { network: "eip155:31337", asset: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", payTo: "0x1111111111111111111111111111111111111111" } as const;

/**
 * The x402 gate over `payments` with a facilitator that verifies and settles as `facilitator` says (a third-party one,
 * wording its answers as it likes); by default only the witness is for sale, at 10000.
 */
export function testPaymentGate(
  payments: PaymentLedger,
  facilitator: Pick<FacilitatorClient, "verify" | "settle">,
  supported?: FacilitatorClient["getSupported"],
  prices: Readonly<Partial<Record<PaymentPurpose, string>>> = { witness: "10000" },
  extra: Partial<Pick<PaymentGateOptions, "signerReady" | "settledOnChain" | "owes">> = {},
): PaymentGate {
  const { network, asset, payTo } = TEST_PAYMENT;
  const clock = fakeClock(Date.now());
  return createPaymentGate({
    facilitator: {
      ...facilitator,
      getSupported: supported ?? (() => Promise.resolve({ kinds: [{ x402Version: 2, scheme: "exact", network }], extensions: [], signers: {} })),
    },
    network,
    asset,
    assetName: "USDC",
    assetVersion: "2",
    payTo,
    prices,
    signing: { issuer: createEip712Issuer({ privateKey: generatePrivateKey(), chainId: 31337 }), publicBaseUrl: "https://ats.example" },
    paidCall: createPaidCall({ payments, clock }),
    paidResume: createPaidResume({ payments, clock }),
    known: async (key) => (await payments.find(key)) !== undefined,
    log: quiet,
    ...extra,
  });
}

/** The replay key of the payment a {@link testPaymentHeader} names: where the ledger records it. */
export function testPaymentKey(header: string): string {
  const nonce = readExactAuthorization(decodePaymentSignatureHeader(header).payload)!.nonce;
  return paymentReplayKey({ network: TEST_PAYMENT.network, asset: TEST_PAYMENT.asset, nonce });
}

/**
 * A `PAYMENT-SIGNATURE` for the gate's terms at `url` (a new payer and nonce, valid ten minutes; its signature is never
 * checked: the test facilitator decides).
 */
export async function testPaymentHeader(gate: PaymentGate, url: string, purpose: PaymentPurpose = "witness"): Promise<string> {
  const unpaid = await gate.handle(new Request(url, { method: "POST" }), purpose, () => Promise.resolve({ response: Response.json({}) }));
  const accepted = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!).accepts[0]!;
  return encodePaymentSignatureHeader({
    x402Version: 2,
    accepted,
    resource: { url, description: "", mimeType: "" },
    payload: {
      authorization: {
        from: privateKeyToAccount(generatePrivateKey()).address,
        to: TEST_PAYMENT.payTo,
        value: "10000",
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + 600),
        nonce: `0x${[...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
      },
      signature: `0x${"00".repeat(65)}`,
    },
  } as never);
}
