import { describe, expect, test } from "bun:test";
import type { AuthorizationUse, AuthorizationUses } from "../../ports/payments.ts";
import { createSettledOnChain } from "./x402_settled_on_chain.ts";
import { owesForWork } from "./x402_payments.ts";

const PAYER = "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC";
const PAY_TO = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const payment = { network: "eip155:31337", asset: "0x5FbDB2315678afecb367f032d93F642f64180aa3", payer: PAYER, payTo: PAY_TO, amount: "10000", nonce: `0x${"11".repeat(32)}` };
const USED = { ok: false, reason: "invalid_exact_evm_nonce_already_used" } as const;
const TX = `0x${"ab".repeat(32)}`;

/** The chain as the fake says; `asked` counts the reads. */
function chainSaying(use: AuthorizationUse | undefined | Error) {
  const seen = { asked: 0 };
  const uses: AuthorizationUses = {
    useOf: () => (seen.asked++, use instanceof Error ? Promise.reject(use) : Promise.resolve(use)),
  };
  return { check: createSettledOnChain({ uses }), seen };
}

// Found by an attack review: a third party submitting the payer's own authorization before the facilitator's settle
// paid payTo, yet the facilitator's `nonce_already_used` was recorded as the payer's doing (no receipt, no plan, the
// payer refused further paid work).
describe("createSettledOnChain()", () => {
  test("a used nonce whose call moved the price from the payer to payTo is the payment landed: settled with that transaction", async () => {
    const { check } = chainSaying({ kind: "used", transaction: TX, transfer: { from: PAYER.toLowerCase(), to: PAY_TO, value: 10_000n } });
    expect(await check(payment, USED)).toEqual({ ok: true, transaction: TX });
  });

  test("a cancelled authorization, or its nonce used for another transfer, stays the payer's doing", async () => {
    const cases: AuthorizationUse[] = [
      { kind: "canceled", transaction: TX },
      { kind: "used", transaction: TX },
      { kind: "used", transaction: TX, transfer: { from: PAYER, to: PAYER, value: 10_000n } },
      { kind: "used", transaction: TX, transfer: { from: PAYER, to: PAY_TO, value: 9_999n } },
      { kind: "used", transaction: TX, transfer: { from: PAY_TO, to: PAY_TO, value: 10_000n } },
    ];
    for (const use of cases) {
      const { check } = chainSaying(use);
      const settled = await check(payment, USED);
      expect(settled).toEqual(USED);
      expect(await owesForWork({ failedSettlements: () => Promise.resolve([settled.ok ? "" : settled.reason]) }, PAYER)).toBe(true);
    }
  });

  test("a chain that cannot be read (or shows no use) keeps the facilitator's reason, held against the payer as before", async () => {
    // A diff review: answered as "not held" here, a payer whose X402_NETWORK the service does not read cancelled after
    // every write and was never refused.
    for (const use of [undefined, { kind: "not_found" } as const, new Error("node down")]) {
      const { check } = chainSaying(use);
      const settled = await check(payment, USED);
      expect(settled).toEqual(USED);
      expect(await owesForWork({ failedSettlements: () => Promise.resolve([settled.ok ? "" : settled.reason]) }, PAYER)).toBe(true);
    }
  });

  test("the facilitator's transaction reverting after a front-run's is checked too: the price paid to payTo is settled", async () => {
    const { check } = chainSaying({ kind: "used", transaction: TX, transfer: { from: PAYER, to: PAY_TO, value: 10_000n } });
    for (const reason of ["invalid_exact_evm_transaction_failed", "invalid_exact_evm_transaction_simulation_failed"]) {
      expect(await check(payment, { ok: false, reason })).toEqual({ ok: true, transaction: TX });
    }
  });

  test("other refusals are returned as they are, without a chain read", async () => {
    const { check, seen } = chainSaying({ kind: "used", transaction: TX, transfer: { from: PAYER, to: PAY_TO, value: 10_000n } });
    for (const reason of ["invalid_exact_evm_insufficient_balance", "facilitator_unavailable", "settlement_pending"]) {
      expect(await check(payment, { ok: false, reason })).toEqual({ ok: false, reason });
    }
    expect(seen.asked).toBe(0);
  });
});
