/**
 * The plan purchase under an `Idempotency-Key` (decisions §23 with §13): its payment records the key's record that
 * reserved it, as a paid witness's or relay's does (docs/x402.md). Before, the purchase ran under its key but passed
 * no record to the gate, so its payment named none. The route, the gate, the SQLite idempotency store and payment
 * ledger are the real ones; the facilitator and the session are stand-ins.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../../adapters/observability/mod.ts";
import { createSqliteIdempotency, openSqliteStorage } from "../../../adapters/sqlite/mod.ts";
import { createIdempotency, idempotencyRecordRef } from "../../../domain/idempotency/mod.ts";
import { fakeClock, fakeWriteLedger } from "../../../ports/fakes/mod.ts";
import { testPaymentGate, testPaymentHeader, testPaymentKey } from "../../testing.ts";
import { subscriptionRoutes } from "./subscriptions.ts";

const ACCOUNT = { id: "acc-plan", address: "0x00000000000000000000000000000000000000a1", plan: "free" as const, createdAtMs: 0 };
const PURCHASE_URL = "http://localhost/api/private/subscriptions/x402";

describe("POST /api/private/subscriptions/x402 under an Idempotency-Key", () => {
  test("its payment records the key's record that reserved it; without a key, none", async () => {
    const clock = fakeClock();
    const { payments } = await openSqliteStorage(":memory:");
    const gate = testPaymentGate(payments, {
      verify: () => Promise.resolve({ isValid: true }),
      settle: (_payload, requirements) => Promise.resolve({ success: true, transaction: `0x${"5e".repeat(32)}`, network: requirements.network }),
    }, undefined, { plan: "10000" });
    const app = subscriptionRoutes({
      sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: ACCOUNT, session: {} } }) } as never,
      gate,
      payments,
      ledger: fakeWriteLedger(),
      plans: { free: { annualWrites: 1, schemas: [] }, paid: { annualWrites: 10, schemas: ["*"] } },
      clock,
      log: silentLogger,
      idempotency: createIdempotency({ store: createSqliteIdempotency(new Database(":memory:")), clock }),
    });
    const buy = async (key?: string) => {
      const header = await testPaymentHeader(gate, PURCHASE_URL, "plan");
      const headers: Record<string, string> = { "content-type": "application/json", "payment-signature": header, ...(key === undefined ? {} : { "idempotency-key": key }) };
      const answer = await app.handle(new Request(PURCHASE_URL, { method: "POST", headers, body: "{}" }));
      expect(answer.status).toBe(200);
      return await payments.find(testPaymentKey(header));
    };
    // Before: null, though the purchase ran under the key.
    expect(await buy("order-1")).toMatchObject({ state: "settled", idempotencyRef: idempotencyRecordRef({ scope: `account:${ACCOUNT.id}`, key: "order-1" }) });
    expect(await buy()).toMatchObject({ state: "settled", idempotencyRef: null });
  });
});
