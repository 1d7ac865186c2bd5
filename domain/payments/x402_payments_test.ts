import { describe, expect, test } from "bun:test";
import type { Account } from "../../ports/accounts.ts";
import type { PaidPeriod, PaymentLedger, PaymentOwner, PaymentRecord, PaymentReservation } from "../../ports/payments.ts";
import {
  expiresTooSoon,
  createPaidCall,
  owesForWork,
  createPaidResume,
  paymentReplayKey,
  readExactAuthorization,
  withPaidAccounts,
  withPaidPeriod,
  withPaidPlans,
} from "./x402_payments.ts";

/** A hand-written ledger: records in a map, periods granted after the account's last one. */
function fakePayments(): PaymentLedger & { rows: Map<string, PaymentRecord> } {
  const rows = new Map<string, PaymentRecord>();
  // As the stores: an owner given, only a row that names its record (null: names none) is touched.
  const owns = (row: PaymentRecord | undefined, owner?: PaymentOwner) => row !== undefined && (owner === undefined || row.idempotencyRef === owner.idempotencyRef);
  const set = (key: string, patch: Partial<PaymentRecord>, owner?: PaymentOwner) => {
    const row = rows.get(key);
    if (owns(row, owner)) rows.set(key, { ...row!, ...patch });
    return Promise.resolve();
  };
  const insert = (r: PaymentReservation) =>
    rows.set(r.key, { ...r, state: "reserved", workRef: null, settlementTx: null, failureReason: null, periodStartMs: null, periodEndMs: null, updatedAtMs: r.createdAtMs, validBefore: r.validBefore ?? null, idempotencyRef: r.idempotencyRef ?? null });
  return {
    rows,
    reserve(r: PaymentReservation) {
      if (rows.has(r.key)) return Promise.resolve(false);
      insert(r);
      return Promise.resolve(true);
    },
    reserveWithin(r, ceiling) {
      if (rows.has(r.key)) return Promise.resolve("known" as const);
      const open = [...rows.values()].filter((p) => p.payer === r.payer && p.asset === r.asset && p.network === r.network &&
        (((p.state === "reserved" || p.state === "worked") && p.validBefore !== null && p.validBefore > r.createdAtMs / 1000) ||
          (p.state === "settled" && p.updatedAtMs >= ceiling.readAtMs)));
      if (open.reduce((sum, p) => sum + BigInt(p.amount), BigInt(r.amount)) > ceiling.balance) return Promise.resolve("over_balance" as const);
      insert(r);
      return Promise.resolve("reserved" as const);
    },
    release(key, owner) {
      const state = rows.get(key)?.state;
      if ((state === "reserved" || state === "work_unknown") && owns(rows.get(key), owner)) rows.delete(key);
      return Promise.resolve();
    },
    worked: (key, workRef, updatedAtMs, owner) => set(key, { state: "worked", workRef, updatedAtMs }, owner),
    workUnknown: (key, workRef, updatedAtMs, owner) => set(key, { state: "work_unknown", workRef, updatedAtMs }, owner),
    settled: (key, settlementTx, updatedAtMs, owner) => set(key, { state: "settled", settlementTx, updatedAtMs }, owner),
    settleFailed: (key, failureReason, updatedAtMs, owner) => set(key, { state: "settle_failed", failureReason, updatedAtMs }, owner),
    async grantPeriod(key, accountId, durationMs, nowMs) {
      const period = { startMs: nowMs, endMs: nowMs + durationMs };
      await set(key, { state: "worked", accountId, periodStartMs: period.startMs, periodEndMs: period.endMs });
      return period;
    },
    paidPeriod(accountId, nowMs) {
      const row = [...rows.values()].find((r) => r.accountId === accountId && (r.state === "worked" || r.state === "settled") &&
        r.periodStartMs !== null && r.periodStartMs <= nowMs && nowMs < r.periodEndMs!);
      return Promise.resolve(row === undefined ? undefined : { startMs: row.periodStartMs!, endMs: row.periodEndMs! } as PaidPeriod);
    },
    find: (key) => Promise.resolve(rows.get(key)),
    list: () => Promise.resolve([...rows.values()]),
    failedSettlements: (payer) =>
      Promise.resolve([...rows.values()].filter((r) => r.payer === payer.toLowerCase() && r.state === "settle_failed" && r.purpose !== "plan").map((r) => r.failureReason ?? "")),
  };
}

const clock = { nowMs: () => 1_000, nowSeconds: () => 1 };
const counted: string[] = [];
const metrics = { increment: (name: string, labels?: Record<string, string>) => void counted.push(`${name}:${JSON.stringify(labels)}`), observe: () => {} };
const reservation = (key = "eip155:1:0xt:0x01") => ({
  key, purpose: "witness" as const, network: "eip155:1", asset: "0xt", payer: "0xp", payTo: "0xq", amount: "10", accountId: null,
});

describe("createPaidCall()", () => {
  test("reserves the key, does the work, settles after it, and records the settlement", async () => {
    const payments = fakePayments();
    const order: string[] = [];
    const paid = createPaidCall({ payments, clock, metrics });
    const outcome = await paid(reservation(), async () => {
      order.push(`work:${payments.rows.get("eip155:1:0xt:0x01")?.state}`);
      return { done: true, value: "written", ref: "0xtx" };
    }, async () => {
      order.push(`settle:${payments.rows.get("eip155:1:0xt:0x01")?.state}`);
      return { ok: true, transaction: "0xsettle" };
    });
    expect(outcome).toEqual({ kind: "settled", value: "written", transaction: "0xsettle" });
    expect(order).toEqual(["work:reserved", "settle:worked"]);
    expect(payments.rows.get("eip155:1:0xt:0x01")).toMatchObject({ state: "settled", workRef: "0xtx", settlementTx: "0xsettle", createdAtMs: 1_000 });
  });

  test("a spent key does no work and settles nothing", async () => {
    const payments = fakePayments();
    const paid = createPaidCall({ payments, clock });
    await payments.reserve({ ...reservation(), createdAtMs: 0 });
    let calls = 0;
    const outcome = await paid(reservation(), () => Promise.resolve({ done: true as const, value: ++calls, ref: "" }), () => Promise.resolve({ ok: true as const, transaction: "x" }));
    expect(outcome).toEqual({ kind: "replayed" });
    expect(calls).toBe(0);
  });

  test("concurrent calls with one key do the work once", async () => {
    const payments = fakePayments();
    const paid = createPaidCall({ payments, clock });
    let works = 0;
    const outcomes = await Promise.all([0, 1, 2].map(() =>
      paid(reservation(), async () => ({ done: true as const, value: ++works, ref: "" }), async () => ({ ok: true as const, transaction: "t" }))
    ));
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["replayed", "replayed", "settled"]);
    expect(works).toBe(1);
  });

  test("failed work settles nothing and gives the key back; an unknown outcome keeps it", async () => {
    const payments = fakePayments();
    const paid = createPaidCall({ payments, clock, metrics });
    let settles = 0;
    const settle = async () => ({ ok: true as const, transaction: String(++settles) });
    expect(await paid(reservation("k1"), async () => ({ done: false, value: 403 }), settle)).toEqual({ kind: "not-done", value: 403 });
    expect(payments.rows.has("k1")).toBe(false);
    expect(await paid(reservation("k2"), async () => ({ done: false, value: 503, unknown: true, ref: "0xsent" }), settle)).toEqual({ kind: "not-done", value: 503 });
    expect(payments.rows.get("k2")).toMatchObject({ state: "work_unknown", workRef: "0xsent" });
    await expect(paid(reservation("k3"), () => Promise.reject(new Error("bug")), settle)).rejects.toThrow("bug");
    expect(payments.rows.has("k3")).toBe(false);
    expect(settles).toBe(0);
  });

  test("a settlement that fails or throws after the work leaves the work standing, recorded and counted", async () => {
    const payments = fakePayments();
    counted.length = 0;
    const paid = createPaidCall({ payments, clock, metrics });
    const refused = await paid(reservation("k1"), async () => ({ done: true, value: "w1", ref: "0x1" }), async () => ({ ok: false, reason: "transaction_failed" }));
    expect(refused).toEqual({ kind: "unsettled", value: "w1", reason: "transaction_failed" });
    const thrown = await paid(reservation("k2"), async () => ({ done: true, value: "w2", ref: "0x2" }), () => Promise.reject(new Error("ECONNREFUSED http://secret")));
    expect(thrown).toEqual({ kind: "unsettled", value: "w2", reason: "facilitator_unavailable" });
    expect(payments.rows.get("k2")).toMatchObject({ state: "settle_failed", workRef: "0x2", failureReason: "facilitator_unavailable" });
    expect(counted.filter((c) => c.startsWith("ats_x402_settlement_failures_total"))).toHaveLength(2);
  });
});

describe("createPaidCall() whose payment is taken by another Idempotency-Key's request during its work (decisions §23 with §13; found in review)", () => {
  test("its release and marks after the work name its own record: another key's reservation made meanwhile stays as it is", async () => {
    const works = [
      () => Promise.resolve({ done: false as const, value: "500" }),
      () => Promise.resolve({ done: false as const, value: "503", unknown: true, ref: "0xmine" }),
      () => Promise.resolve({ done: true as const, value: "written", ref: "0xmine" }),
      () => Promise.reject(new Error("bug")),
    ];
    for (const idempotencyRef of ["k1", null]) {
      for (const outcome of works) {
        const payments = fakePayments();
        const paid = createPaidCall({ payments, clock });
        let k2s: PaymentRecord | undefined;
        await paid({ ...reservation(), idempotencyRef }, async () => {
          // Meanwhile its row is given back (a retry of its key holding it dead) and K2's request reserves it.
          payments.rows.delete(reservation().key);
          await payments.reserve({ ...reservation(), createdAtMs: 2, idempotencyRef: "k2" });
          k2s = payments.rows.get(reservation().key);
          return await outcome();
        }, () => Promise.resolve({ ok: true as const, transaction: "0xsettle" })).catch(() => undefined);
        expect(payments.rows.get(reservation().key)).toEqual(k2s);
      }
    }
  });
});

describe("createPaidCall() held against the payer's balance (issue 23)", () => {
  const held = (key: string, payer = "0xp") => ({ ...reservation(key), payer, validBefore: 100 });
  let now = 1_000;
  const clock = { nowMs: () => now, nowSeconds: () => Math.floor(now / 1000) };
  /** Parallel paid calls whose work waits until every call has reserved or been refused. */
  async function parallel(paid: ReturnType<typeof createPaidCall>, keys: readonly string[], payer = "0xp") {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => release = resolve);
    let works = 0;
    const calls = keys.map((key) => paid(held(key, payer), async () => {
      works++;
      await gate;
      return { done: true as const, value: key, ref: `0x${key}` };
    }, async () => ({ ok: true as const, transaction: `0xs${key}` })));
    await Promise.resolve();
    for (let i = 0; i < 20; i++) await Promise.resolve();
    release();
    return { outcomes: await Promise.all(calls), works: () => works };
  }

  test("a payer whose balance pays one price gets one of five parallel calls; the others do nothing and record nothing", async () => {
    const payments = fakePayments();
    counted.length = 0;
    const paid = createPaidCall({ payments, clock, metrics, balances: { balanceOf: () => Promise.resolve(10n) } });
    const { outcomes, works } = await parallel(paid, ["a", "b", "c", "d", "e"]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["in-progress", "in-progress", "in-progress", "in-progress", "settled"]);
    expect(works()).toBe(1);
    expect(payments.rows.size).toBe(1);
    expect(counted.filter((c) => c.includes('"outcome":"in_progress"'))).toHaveLength(4);
  });

  test("a balance that pays for five gets five; another payer is not held by the first one's payments", async () => {
    const payments = fakePayments();
    const paid = createPaidCall({ payments, clock, balances: { balanceOf: ({ payer }) => Promise.resolve(payer === "0xp" ? 50n : 10n) } });
    const [first, second] = await Promise.all([parallel(paid, ["a", "b", "c", "d", "e"]), parallel(paid, ["f"], "0xother")]);
    expect(first.outcomes.map((o) => o.kind)).toEqual(["settled", "settled", "settled", "settled", "settled"]);
    expect(second.outcomes.map((o) => o.kind)).toEqual(["settled"]);
  });

  test("a settled or failed payment frees what it held; a refused one can be retried with the same authorization", async () => {
    const payments = fakePayments();
    let balance = 10n;
    now = 1_000;
    const paid = createPaidCall({ payments, clock, balances: { balanceOf: () => Promise.resolve(balance) } });
    const work = async () => ({ done: true as const, value: "w", ref: "0x1" });
    await payments.reserveWithin({ ...held("open"), createdAtMs: 0 }, { balance: 10n, readAtMs: 0 });
    expect(await paid(held("k1"), work, async () => ({ ok: true, transaction: "t" }))).toEqual({ kind: "in-progress" });
    expect(payments.rows.has("k1")).toBe(false);
    await payments.release("open");
    expect(await paid(held("k1"), async () => ({ done: false, value: "failed" }), async () => ({ ok: true, transaction: "t" }))).toEqual({ kind: "not-done", value: "failed" });
    expect((await paid(held("k1"), work, async () => ({ ok: false, reason: "transaction_failed" }))).kind).toBe("unsettled");
    expect((await paid(held("k2"), work, async () => ({ ok: true, transaction: "t" }))).kind).toBe("settled");
    // Settled at 1000 ms: a balance read from then on may not show the transfer yet, so it still holds; a read
    // that started after it does.
    expect(await paid(held("k3"), work, async () => ({ ok: true, transaction: "t" }))).toEqual({ kind: "in-progress" });
    now = 1_001;
    expect((await paid(held("k3"), work, async () => ({ ok: true, transaction: "t" }))).kind).toBe("settled");
  });

  test("an unreadable balance allows one open payment at a time; an expired authorization no longer holds it", async () => {
    const payments = fakePayments();
    now = 1_000;
    const paid = createPaidCall({ payments, clock, balances: { balanceOf: () => Promise.reject(new Error("rpc down")) } });
    const { outcomes } = await parallel(paid, ["a", "b"]);
    expect(outcomes.map((o) => o.kind).sort()).toEqual(["in-progress", "settled"]);
    now = 2_000;
    await payments.reserveWithin({ ...held("stale"), validBefore: 1, createdAtMs: 0 }, { balance: 10n, readAtMs: 0 });
    expect((await paid(held("c"), async () => ({ done: true, value: "w", ref: "0x" }), async () => ({ ok: true, transaction: "t" }))).kind).toBe("settled");
  });
});

describe("expiresTooSoon()", () => {
  test("an authorization must stay valid for maxTimeoutSeconds less 30 s from its arrival", () => {
    const now = 1_800_000_000_000;
    const at = (seconds: number) => ({ validBefore: String(now / 1000 + seconds) });
    expect(expiresTooSoon(at(300), now, 300)).toBe(false);
    expect(expiresTooSoon(at(270), now, 300)).toBe(false);
    expect(expiresTooSoon(at(269), now, 300)).toBe(true);
    expect(expiresTooSoon(at(6), now, 300)).toBe(true);
    expect(expiresTooSoon(at(-60), now, 300)).toBe(true);
    expect(expiresTooSoon({ validBefore: "9".repeat(78) }, now, 300)).toBe(false);
  });
});

describe("owesForWork()", () => {
  test("a payer owes for work whose settlement failed by its doing; not for the facilitator's failures or an authorization that ran out while held", async () => {
    const ledger = (reasons: string[]) => ({ failedSettlements: (payer: string) => Promise.resolve(payer === "0xpayer" ? reasons : []) });
    expect(await owesForWork(ledger([]), "0xPAYER")).toBe(false);
    expect(await owesForWork(ledger(["facilitator_unavailable", "unexpected_settle_error"]), "0xPayer")).toBe(false);
    expect(await owesForWork(ledger(["invalid_exact_evm_payload_authorization_valid_before"]), "0xpayer")).toBe(false);
    // The facilitator's own trouble (the transfer may even have landed), or a reason this code does not know.
    expect(await owesForWork(ledger(["settlement_pending", "invalid_transaction_state", "invalid_payment", "something_new"]), "0xpayer")).toBe(false);
    // The authorization cancelled or its nonce used elsewhere, the balance moved away: the payer's doing.
    expect(await owesForWork(ledger(["facilitator_unavailable", "invalid_exact_evm_nonce_already_used"]), "0xPayer")).toBe(true);
    expect(await owesForWork(ledger(["invalid_exact_evm_insufficient_balance"]), "0xpayer")).toBe(true);
    expect(await owesForWork(ledger(["invalid_exact_evm_insufficient_balance"]), "0xsomeoneelse")).toBe(false);
  });

  // A diff review: the official facilitator answers `invalid_exact_evm_signature` at settlement when its own eth_getCode
  // read fails, for a plain EOA whose signature verified; counted as the payer's doing, it shut honest payers out.
  test("a signature refused at settlement is not held against the payer (the facilitator's own read may have failed)", async () => {
    const ledger = (reasons: string[]) => ({ failedSettlements: () => Promise.resolve(reasons) });
    expect(await owesForWork(ledger(["invalid_exact_evm_signature"]), "0xpayer")).toBe(false);
    expect(await owesForWork(ledger(["invalid_exact_evm_failed_to_parse_signature"]), "0xpayer")).toBe(false);
  });
});

describe("readExactAuthorization() and paymentReplayKey()", () => {
  const authorization = {
    from: "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC", to: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8", value: "10000",
    validAfter: "0", validBefore: 1_900_000_000, nonce: `0x${"Ab".repeat(32)}`,
  };
  test("reads an EIP-3009 authorization and refuses anything else", () => {
    expect(readExactAuthorization({ authorization, signature: "0x" })).toMatchObject({ value: "10000", validBefore: "1900000000" });
    expect(readExactAuthorization({ authorization: { ...authorization, nonce: "0x01" } })).toBeUndefined();
    expect(readExactAuthorization({ authorization: { ...authorization, value: "-1" } })).toBeUndefined();
    expect(readExactAuthorization({ permit2Authorization: {} })).toBeUndefined();
    expect(readExactAuthorization(null)).toBeUndefined();
  });
  test("the replay key is the network, the token and the nonce, lowercase", () => {
    expect(paymentReplayKey({ network: "eip155:8453", asset: "0xAbC", nonce: authorization.nonce })).toBe(`eip155:8453:0xabc:0x${"ab".repeat(32)}`);
  });
});

describe("paid plans", () => {
  const account: Account = { id: "a1", address: "0xa", plan: "free", createdAtMs: 0 };
  test("withPaidPeriod() makes the plan paid only while the period covers now", () => {
    const period = { startMs: 100, endMs: 200 };
    expect(withPaidPeriod(account, period, 150).plan).toBe("paid");
    expect(withPaidPeriod(account, period, 200).plan).toBe("free");
    expect(withPaidPeriod(account, undefined, 150).plan).toBe("free");
  });
  test("withPaidPlans() gives authenticated accounts the plan they bought", async () => {
    const payments = fakePayments();
    await payments.reserve({ ...reservation("p"), purpose: "plan", accountId: "a1", createdAtMs: 0 });
    const sessions = {
      authenticate: (token: string | undefined) =>
        Promise.resolve(token === "t" ? { ok: true as const, value: { account } } : { ok: false as const, code: "UNAUTHENTICATED" as const, message: "no" }),
    };
    const wrapped = withPaidPlans(sessions, { payments, clock });
    expect(await wrapped.authenticate("t")).toMatchObject({ ok: true, value: { account: { plan: "free" } } });
    await payments.grantPeriod("p", "a1", 10_000, 500);
    expect(await wrapped.authenticate("t")).toMatchObject({ ok: true, value: { account: { plan: "paid" } } });
    expect((await wrapped.authenticate(undefined)).ok).toBe(false);
  });
  test("withPaidAccounts() looks accounts up with the plan they bought (a bearer token's account)", async () => {
    const payments = fakePayments();
    await payments.reserve({ ...reservation("p"), purpose: "plan", accountId: "a1", createdAtMs: 0 });
    const accounts = { findAccount: (id: string) => Promise.resolve(id === "a1" ? account : undefined) };
    const wrapped = withPaidAccounts(accounts, { payments, clock });
    expect((await wrapped.findAccount("a1"))?.plan).toBe("free");
    await payments.grantPeriod("p", "a1", 10_000, 500);
    expect((await wrapped.findAccount("a1"))?.plan).toBe("paid");
    expect(await wrapped.findAccount("nobody")).toBeUndefined();
  });
});

describe("createPaidResume()", () => {
  const settleOk = () => Promise.resolve({ ok: true as const, transaction: "0xsettle" });
  const resumeOf = async (state: PaymentRecord["state"] | undefined, patch: Partial<PaymentRecord> = {}) => {
    const payments = fakePayments();
    if (state !== undefined) {
      await payments.reserve({ ...reservation(), createdAtMs: 0 });
      payments.rows.set(reservation().key, { ...payments.rows.get(reservation().key)!, state, ...patch });
    }
    return { payments, resume: createPaidResume({ payments, clock, metrics }) };
  };
  const payment = { key: reservation().key, payer: "0xP", purpose: "witness" as const };

  test("a dead request's write that stands is settled once, and recorded", async () => {
    const { payments, resume } = await resumeOf("reserved");
    let settles = 0;
    const outcome = await resume(payment, () => Promise.resolve({ done: true, value: "written", ref: "0xtx" }), () => (settles++, settleOk()));
    expect([outcome, settles]).toEqual([{ kind: "settled", value: "written", transaction: "0xsettle" }, 1]);
    expect(payments.rows.get(payment.key)).toMatchObject({ state: "settled", workRef: "0xtx", settlementTx: "0xsettle" });
  });

  test("settled or failed to settle before the crash: answered as it was, never settled again", async () => {
    const never = () => Promise.reject(new Error("settled twice"));
    const settled = await resumeOf("settled", { settlementTx: "0xfirst" });
    expect(await settled.resume(payment, () => Promise.resolve({ done: true, value: 1, ref: "0xtx" }), never)).toEqual({ kind: "settled", value: 1, transaction: "0xfirst" });
    const failed = await resumeOf("settle_failed", { failureReason: "insufficient_funds" });
    expect(await failed.resume(payment, () => Promise.resolve({ done: true, value: 1, ref: "0xtx" }), never)).toEqual({ kind: "unsettled", value: 1, reason: "insufficient_funds" });
  });

  test("nothing written: the payment is given back and the request runs afresh; a write still on its way keeps it", async () => {
    const nothing = await resumeOf("reserved");
    expect(await nothing.resume(payment, () => Promise.resolve(undefined), settleOk)).toEqual({ kind: "run" });
    expect(nothing.payments.rows.has(payment.key)).toBe(false);
    const pending = await resumeOf("reserved");
    expect(await pending.resume(payment, () => Promise.resolve({ done: false, value: "503", unknown: true, ref: "0xtx" }), settleOk)).toEqual({ kind: "not-done", value: "503" });
    expect(pending.payments.rows.get(payment.key)).toMatchObject({ state: "work_unknown", workRef: "0xtx" });
  });

  test("no payment of this payer and purpose under the key: not this request's to resume, nothing read or changed", async () => {
    let reads = 0;
    const read = () => (reads++, Promise.resolve({ done: true as const, value: 1, ref: "" }));
    expect(await (await resumeOf(undefined)).resume(payment, read, settleOk)).toEqual({ kind: "run" });
    const other = await resumeOf("reserved");
    expect(await other.resume({ ...payment, payer: "0xsomeoneelse" }, read, settleOk)).toEqual({ kind: "run" });
    expect(await other.resume({ ...payment, purpose: "relay" }, read, settleOk)).toEqual({ kind: "run" });
    expect([reads, other.payments.rows.get(payment.key)?.state]).toEqual([0, "reserved"]);
  });
});

describe("createPaidResume() of a payment kept `work_unknown` (a kept 503 OUTCOME_UNKNOWN taken back, decisions §23)", () => {
  const settleOk = () => Promise.resolve({ ok: true as const, transaction: "0xsettle" });
  const payment = { key: reservation().key, payer: "0xP", purpose: "witness" as const };
  const unknownPayment = async () => {
    const payments = fakePayments();
    await payments.reserve({ ...reservation(), createdAtMs: 0 });
    await payments.workUnknown(payment.key, "0xtx", 0);
    return { payments, resume: createPaidResume({ payments, clock, metrics }) };
  };

  test("its write failed since (reverted, or given back): the failure is answered and the payment forgotten, never settled", async () => {
    const { payments, resume } = await unknownPayment();
    const never = () => Promise.reject(new Error("settled a failed write"));
    expect(await resume(payment, () => Promise.resolve({ done: false, value: "500" }), never)).toEqual({ kind: "not-done", value: "500" });
    expect(payments.rows.has(payment.key)).toBe(false);
  });

  test("still on its way: kept `work_unknown`; nothing written at all: forgotten, and the request runs afresh", async () => {
    const pending = await unknownPayment();
    expect(await pending.resume(payment, () => Promise.resolve({ done: false, value: "503", unknown: true, ref: "0xtx" }), settleOk)).toEqual({ kind: "not-done", value: "503" });
    expect(pending.payments.rows.get(payment.key)?.state).toBe("work_unknown");
    const nothing = await unknownPayment();
    expect(await nothing.resume(payment, () => Promise.resolve(undefined), settleOk)).toEqual({ kind: "run" });
    expect(nothing.payments.rows.has(payment.key)).toBe(false);
  });
});

describe("createPaidResume() of work not done, the payment under its key another write's (found in review)", () => {
  const payment = { key: reservation().key, payer: "0xP", purpose: "witness" as const };
  const never = () => Promise.reject(new Error("settled a write not done"));
  // This write was given back and its payment forgotten; the payer paid another write with the same authorization,
  // under another key, which went on to these states.
  const paidAgain = async (state: "worked" | "settled" | "settle_failed") => {
    const payments = fakePayments();
    await payments.reserve({ ...reservation(), createdAtMs: 0 });
    await payments.worked(payment.key, "0xother", 0);
    if (state === "settled") await payments.settled(payment.key, "0xothersettlement", 0);
    if (state === "settle_failed") await payments.settleFailed(payment.key, "facilitator_unavailable", 0);
    return { payments, resume: createPaidResume({ payments, clock, metrics }) };
  };

  test("failed or unknown, it answers its own failure: never the other write's settlement, the payment left as it stands", async () => {
    for (const state of ["worked", "settled", "settle_failed"] as const) {
      for (const done of [{ done: false as const, value: "500" }, { done: false as const, value: "503", unknown: true, ref: "0xmine" }]) {
        const { payments, resume } = await paidAgain(state);
        const before = payments.rows.get(payment.key);
        // Before: `settled` (a PAYMENT-RESPONSE naming the other write's settlement kept beside this write's failure),
        // `unsettled`, or (worked) the other write's payment made `work_unknown`.
        expect(await resume(payment, () => Promise.resolve(done), never)).toEqual({ kind: "not-done", value: done.value });
        expect(payments.rows.get(payment.key)).toEqual(before);
      }
    }
  });
});

describe("createPaidResume() of a payment another Idempotency-Key's request reserved (decisions §23 with §13; found in review)", () => {
  const payment = { key: reservation().key, payer: "0xP", purpose: "witness" as const, idempotencyRef: "k1" };
  const never = () => Promise.reject(new Error("settled another key's payment"));
  // The same authorization sent under K2 after K1's request gave it back and died: K2's request reserved it.
  const reservedBy = async (idempotencyRef: string | null, state: PaymentRecord["state"]) => {
    const payments = fakePayments();
    await payments.reserve({ ...reservation(), createdAtMs: 0, idempotencyRef });
    payments.rows.set(payment.key, { ...payments.rows.get(payment.key)!, state });
    return { payments, resume: createPaidResume({ payments, clock, metrics }) };
  };
  const outcomes = [
    undefined,
    { done: true as const, value: "written", ref: "0xmine" },
    { done: false as const, value: "500" },
    { done: false as const, value: "503", unknown: true, ref: "0xmine" },
  ];

  test("K1's retry is told the payment is another key's, with its state, whatever its own write came to: K2's payment neither read for it, released, marked nor settled", async () => {
    for (const state of ["reserved", "worked", "settled", "settle_failed", "work_unknown"] as const) {
      for (const done of outcomes) {
        const { payments, resume } = await reservedBy("k2", state);
        const before = payments.rows.get(payment.key);
        let reads = 0;
        // Before: `reserved` released (K1 ran again and reserved it anew: two writes for one payment), or settled for
        // K1's write, or marked `work_unknown`; `work_unknown` forgotten while K2's write may land. Then `run`, which
        // kept K2's live payment's 409 PAYMENT_ALREADY_USED under K1 (http/_x402_resume.ts answers by the state now).
        expect(await resume(payment, () => (reads++, Promise.resolve(done)), never)).toEqual({ kind: "other-key", state });
        expect([reads, payments.rows.get(payment.key)]).toEqual([0, before]);
      }
    }
    // A retry that names no record of its own takes none either.
    const { payments, resume } = await reservedBy("k2", "reserved");
    expect(await resume({ ...payment, idempotencyRef: undefined }, () => Promise.resolve(undefined), never)).toEqual({ kind: "other-key", state: "reserved" });
    expect(payments.rows.get(payment.key)?.state).toBe("reserved");
  });

  test("its own payment given back and reserved under K2 while its work is read: its release and marks leave K2's reservation alone (found in review)", async () => {
    for (const [idempotencyRef, done] of [["k1", undefined], ["k1", outcomes[1]], ["k1", outcomes[2]], ["k1", outcomes[3]], [null, undefined], [null, outcomes[2]]] as const) {
      const { payments, resume } = await reservedBy(idempotencyRef, "reserved");
      let k2s: PaymentRecord | undefined;
      const swapped = async () => {
        // Meanwhile (the read is async): the row given back, and K2's request reserves the same authorization.
        payments.rows.delete(payment.key);
        await payments.reserve({ ...reservation(), createdAtMs: 1, idempotencyRef: "k2" });
        k2s = payments.rows.get(payment.key);
        return done;
      };
      // Before: released by key alone (K2's live reservation forgotten: a second write for one payment), or marked.
      await resume(payment, swapped, () => Promise.resolve({ ok: true, transaction: "0xsettle" }));
      expect(payments.rows.get(payment.key)).toEqual(k2s);
    }
  });

  test("its own record's payment is resumed as before; one that names no record (an older version's, a rolling restart) too", async () => {
    for (const idempotencyRef of ["k1", null]) {
      const nothing = await reservedBy(idempotencyRef, "reserved");
      expect(await nothing.resume(payment, () => Promise.resolve(undefined), never)).toEqual({ kind: "run" });
      expect(nothing.payments.rows.has(payment.key)).toBe(false);
      const written = await reservedBy(idempotencyRef, "reserved");
      const settled = await written.resume(payment, () => Promise.resolve({ done: true, value: "written", ref: "0xtx" }), () => Promise.resolve({ ok: true, transaction: "0xsettle" }));
      expect(settled).toEqual({ kind: "settled", value: "written", transaction: "0xsettle" });
      expect(written.payments.rows.get(payment.key)).toMatchObject({ state: "settled", workRef: "0xtx", idempotencyRef });
    }
  });
});
