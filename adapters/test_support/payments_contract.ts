import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, fresh } from "./_helpers.ts";

/** The storage contract's tests of payments: replay keys, plan periods, holds against a balance; registered inside its describe, `open` gives the storage under test. */
export function paymentsContract(open: () => Promise<Storage>) {
  test("payments: a replay key is reserved once, even in parallel; a released reservation can be taken again; worked and settled stay spent", async () => {
    const { payments } = await open();
    const key = fresh("eip155:31337:0xtoken:0xnonce");
    const reservation = (k: string) => ({
      key: k, purpose: "witness" as const, network: "eip155:31337", asset: "0xToken", payer: "0xPayer", payTo: "0xPayTo",
      amount: "10000", accountId: null, createdAtMs: T0,
    });
    const raced = await Promise.all(Array.from({ length: 8 }, () => payments.reserve(reservation(key))));
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await payments.find(key)).toMatchObject({ state: "reserved", asset: "0xtoken", payer: "0xpayer", payTo: "0xpayto", amount: "10000" });
    await payments.release(key);
    expect(await payments.find(key)).toBeUndefined();
    expect(await payments.reserve(reservation(key))).toBe(true);
    await payments.worked(key, "0xtx", T0 + 1);
    await payments.release(key);
    expect(await payments.reserve(reservation(key))).toBe(false);
    await payments.settled(key, "0xsettle", T0 + 2);
    expect(await payments.find(key)).toMatchObject({ state: "settled", workRef: "0xtx", settlementTx: "0xsettle", updatedAtMs: T0 + 2 });
    const failed = fresh("eip155:31337:0xtoken:0xfailed");
    // A payer of its own: the store may hold other runs' payments.
    const failingPayer = fresh("0xFailingPayer");
    await payments.reserve({ ...reservation(failed), payer: failingPayer });
    await payments.worked(failed, "0xtx2", T0 + 3);
    await payments.settleFailed(failed, "transaction_failed", T0 + 4);
    expect(await payments.find(failed)).toMatchObject({ state: "settle_failed", workRef: "0xtx2", failureReason: "transaction_failed" });
    expect((await payments.list({ state: "settle_failed" })).map((p) => p.key)).toContain(failed);
    // A payer's failed settlements, by the lowercase payer; settled ones are not among them.
    expect(await payments.failedSettlements(failingPayer.toUpperCase().replace(/^0X/, "0x"))).toEqual(["transaction_failed"]);
    expect(await payments.failedSettlements("0xnobody")).toEqual([]);
    // A plan that did not settle was not extended: nothing stands unpaid.
    const plan = fresh("eip155:31337:0xtoken:0xplanfailed");
    await payments.reserve({ ...reservation(plan), purpose: "plan", payer: failingPayer });
    await payments.worked(plan, "period", T0 + 5);
    await payments.settleFailed(plan, "invalid_exact_evm_nonce_already_used", T0 + 6);
    expect(await payments.failedSettlements(failingPayer)).toEqual(["transaction_failed"]);
    expect((await payments.list()).map((p) => p.key)).toEqual(expect.arrayContaining([key, failed]));
  });

  test("payments: plan periods follow one another once settled; one settling holds the next purchase back; a failed one never counts", async () => {
    const { payments } = await open();
    const account = fresh("acct");
    const year = 365 * 86_400_000;
    const buy = async (nowMs: number) => {
      const key = fresh("eip155:1:0xt:0xplan");
      await payments.reserve({ key, purpose: "plan", network: "eip155:1", asset: "0xt", payer: "0xp", payTo: "0xq", amount: "1", accountId: account, createdAtMs: nowMs, validBefore: nowMs / 1000 + 300 });
      return { key, period: await payments.grantPeriod(key, account, year, nowMs) };
    };
    expect(await payments.paidPeriod(account, T0)).toBeUndefined();
    const first = await buy(T0);
    expect(first.period).toEqual({ startMs: T0, endMs: T0 + year });
    // Granted but not settled: not the plan's yet, and a second purchase waits for it (nothing changed).
    expect(await payments.paidPeriod(account, T0 + 5)).toBeUndefined();
    const meanwhile = await buy(T0 + 1000);
    expect(meanwhile.period).toBe("settling");
    expect(await payments.find(meanwhile.key)).toMatchObject({ state: "reserved", periodStartMs: null });
    await payments.settled(first.key, "0xtx1", T0 + 2000);
    expect(await payments.paidPeriod(account, T0 + 5)).toEqual({ startMs: T0, endMs: T0 + year });
    const second = await buy(T0 + 3000);
    expect(second.period).toEqual({ startMs: T0 + year, endMs: T0 + 2 * year });
    await payments.settleFailed(second.key, "transaction_failed", T0 + 4000);
    expect(await payments.paidPeriod(account, T0 + 5)).toEqual({ startMs: T0, endMs: T0 + year });
    expect(await payments.paidPeriod(account, T0 + year)).toBeUndefined();
    // The failed one left no gap: the next year follows the settled one.
    const third = await buy(T0 + 5000);
    expect(third.period).toEqual({ startMs: T0 + year, endMs: T0 + 2 * year });
    // A purchase left worked past its authorization (the process stopped before settling) no longer holds the next back.
    const late = T0 + 10 * 60_000;
    expect(await buy(late)).toMatchObject({ period: { startMs: T0 + year, endMs: T0 + 2 * year } });
    // Nor one whose authorization is valid for years (the payer's choice) once the settlement's window has passed.
    const stuck = fresh("eip155:1:0xt:0xstuck");
    await payments.reserve({ key: stuck, purpose: "plan", network: "eip155:1", asset: "0xt", payer: "0xp", payTo: "0xq", amount: "1", accountId: account, createdAtMs: late + 1, validBefore: late / 1000 + 10 * 365 * 86_400 });
    await payments.grantPeriod(stuck, account, year, late + 1);
    expect(await buy(late + 2)).toMatchObject({ period: "settling" });
    expect(await buy(late + 1 + 10 * 60_000)).toMatchObject({ period: { startMs: T0 + year } });
    expect(await payments.find(first.key)).toMatchObject({ state: "settled", accountId: account, periodStartMs: T0, periodEndMs: T0 + year });
  });

  test("payments held against the payer's balance: forty parallel reservations with a balance for five give exactly five", async () => {
    const { payments } = await open();
    const payer = fresh("0xPayer");
    const held = (key: string, createdAtMs = T0) => ({
      key, purpose: "witness" as const, network: "eip155:31337", asset: "0xToken", payer, payTo: "0xq", amount: "10000", accountId: null,
      createdAtMs, validBefore: T0 / 1000 + 300,
    });
    const ceiling = { balance: 50_000n, readAtMs: T0 };
    const keys = Array.from({ length: 40 }, () => fresh("eip155:31337:0xtoken:0xheld"));
    const results = await Promise.all(keys.map((key) => payments.reserveWithin(held(key), ceiling)));
    expect(results.filter((r) => r === "reserved")).toHaveLength(5);
    expect(results.filter((r) => r === "over_balance")).toHaveLength(35);
    const taken = keys.filter((_, i) => results[i] === "reserved");
    expect(await payments.find(taken[0]!)).toMatchObject({ state: "reserved", payer: payer.toLowerCase(), validBefore: T0 / 1000 + 300 });
    expect(await payments.find(keys[results.indexOf("over_balance")]!)).toBeUndefined();
    expect(await payments.reserveWithin(held(taken[0]!), ceiling)).toBe("known");
    // Another token, another network or another payer is not held by these.
    expect(await payments.reserveWithin({ ...held(fresh("k")), asset: "0xOther" }, ceiling)).toBe("reserved");
    expect(await payments.reserveWithin({ ...held(fresh("k")), network: "eip155:1" }, ceiling)).toBe("reserved");
    expect(await payments.reserveWithin({ ...held(fresh("k")), payer: fresh("0xsomeone") }, ceiling)).toBe("reserved");

    // Released, failed and unknown payments free what they held; a settled one holds only for a read that may predate it.
    const next = fresh("eip155:31337:0xtoken:0xnext");
    await payments.release(taken[0]!);
    await payments.worked(taken[1]!, "0xw", T0 + 1);
    await payments.settleFailed(taken[1]!, "transaction_failed", T0 + 2);
    await payments.workUnknown(taken[2]!, "0xu", T0 + 3);
    await payments.worked(taken[3]!, "0xw", T0 + 4);
    await payments.settled(taken[3]!, "0xs", T0 + 5);
    // Open: taken[4] (10000) and taken[3], settled at T0 + 5 (10000), when the read started at T0 + 5.
    expect(await payments.reserveWithin(held(next, T0 + 6), { balance: 20_000n, readAtMs: T0 + 5 })).toBe("over_balance");
    expect(await payments.reserveWithin(held(next, T0 + 6), { balance: 20_000n, readAtMs: T0 + 6 })).toBe("reserved");
    // An authorization past its validBefore can no longer be settled: it holds nothing.
    const later = T0 + 301_000;
    expect(await payments.reserveWithin({ ...held(fresh("k"), later), validBefore: later / 1000 + 300 }, { balance: 10_000n, readAtMs: later })).toBe("reserved");
  });

  test("payments: a `work_unknown` payment whose work a retry found failed is forgotten, its key free again; worked ones stay", async () => {
    const { payments } = await open();
    const reservation = (k: string) => ({
      key: k, purpose: "witness" as const, network: "eip155:31337", asset: "0xtoken", payer: "0xpayer", payTo: "0xpayto",
      amount: "10000", accountId: null, createdAtMs: T0,
    });
    const unknown = fresh("eip155:31337:0xtoken:0xunknown");
    await payments.reserve(reservation(unknown));
    await payments.workUnknown(unknown, "0xtx", T0 + 1);
    await payments.release(unknown);
    expect(await payments.find(unknown)).toBeUndefined();
    expect(await payments.reserve(reservation(unknown))).toBe(true);
    const settling = fresh("eip155:31337:0xtoken:0xsettling");
    await payments.reserve(reservation(settling));
    await payments.worked(settling, "0xtx", T0 + 1);
    await payments.release(settling);
    expect((await payments.find(settling))?.state).toBe("worked");
  });

  test("payments: a reservation keeps the Idempotency-Key record its request held, through every state; none recorded reads null", async () => {
    const { payments } = await open();
    const reservation = (k: string) => ({
      key: k, purpose: "relay" as const, network: "eip155:31337", asset: "0xtoken", payer: "0xpayer", payTo: "0xpayto",
      amount: "10000", accountId: null, createdAtMs: T0, validBefore: T0 / 1000 + 300,
    });
    const ref = "ab".repeat(32);
    const keyed = fresh("eip155:31337:0xtoken:0xkeyed");
    expect(await payments.reserve({ ...reservation(keyed), idempotencyRef: ref })).toBe(true);
    expect(await payments.find(keyed)).toMatchObject({ state: "reserved", idempotencyRef: ref });
    await payments.worked(keyed, "0xtx", T0 + 1);
    await payments.settled(keyed, "0xs", T0 + 2);
    expect(await payments.find(keyed)).toMatchObject({ state: "settled", idempotencyRef: ref });
    const balanced = fresh("eip155:31337:0xtoken:0xbalanced");
    expect(await payments.reserveWithin({ ...reservation(balanced), idempotencyRef: ref }, { balance: 1_000_000n, readAtMs: T0 })).toBe("reserved");
    expect((await payments.find(balanced))?.idempotencyRef).toBe(ref);
    // A reservation without a key (or one an older version made) names no record.
    const bare = fresh("eip155:31337:0xtoken:0xbare");
    await payments.reserve(reservation(bare));
    expect((await payments.find(bare))?.idempotencyRef).toBeNull();
    // Another reservation of a key already taken changes nothing of the first's.
    expect(await payments.reserve({ ...reservation(keyed), idempotencyRef: "cd".repeat(32) })).toBe(false);
    expect((await payments.find(keyed))?.idempotencyRef).toBe(ref);
  });

  test("payments: a release or a state mark for one Idempotency-Key record leaves another key's reservation of the same authorization alone; null is a row that names none", async () => {
    const { payments } = await open();
    const reservation = (k: string, idempotencyRef: string | null) => ({
      key: k, purpose: "witness" as const, network: "eip155:31337", asset: "0xtoken", payer: "0xpayer", payTo: "0xpayto",
      amount: "10000", accountId: null, createdAtMs: T0, validBefore: T0 / 1000 + 300, idempotencyRef,
    });
    const [k1, k2] = ["01".repeat(32), "02".repeat(32)];
    const key = fresh("eip155:31337:0xtoken:0xtwokeys");
    // K1's request found its payment; meanwhile it was given back and K2 reserved the same authorization.
    expect(await payments.reserve(reservation(key, k2))).toBe(true);
    const k2s = await payments.find(key);
    await payments.release(key, { idempotencyRef: k1 });
    await payments.release(key, { idempotencyRef: null });
    await payments.workUnknown(key, "0xk1", T0 + 1, { idempotencyRef: k1 });
    await payments.worked(key, "0xk1", T0 + 2, { idempotencyRef: null });
    await payments.settled(key, "0xs1", T0 + 3, { idempotencyRef: k1 });
    await payments.settleFailed(key, "transaction_failed", T0 + 4, { idempotencyRef: k1 });
    expect(await payments.find(key)).toEqual(k2s);
    // K2's own marks and release go through.
    await payments.workUnknown(key, "0xk2", T0 + 5, { idempotencyRef: k2 });
    expect(await payments.find(key)).toMatchObject({ state: "work_unknown", workRef: "0xk2", idempotencyRef: k2 });
    await payments.release(key, { idempotencyRef: k2 });
    expect(await payments.find(key)).toBeUndefined();
    expect(await payments.reserve(reservation(key, k2))).toBe(true);
    await payments.worked(key, "0xk2", T0 + 6, { idempotencyRef: k2 });
    await payments.settled(key, "0xs2", T0 + 7, { idempotencyRef: k2 });
    expect(await payments.find(key)).toMatchObject({ state: "settled", workRef: "0xk2", settlementTx: "0xs2" });
    // A row that names no record (keyless, or an older version's) is its owner's as null, and not any record's.
    const bare = fresh("eip155:31337:0xtoken:0xbare2");
    await payments.reserve(reservation(bare, null));
    await payments.release(bare, { idempotencyRef: k1 });
    await payments.worked(bare, "0xk1", T0 + 1, { idempotencyRef: k1 });
    expect(await payments.find(bare)).toMatchObject({ state: "reserved", workRef: null });
    await payments.worked(bare, "0xw", T0 + 2, { idempotencyRef: null });
    expect(await payments.find(bare)).toMatchObject({ state: "worked", workRef: "0xw" });
    const bare2 = fresh("eip155:31337:0xtoken:0xbare3");
    await payments.reserve(reservation(bare2, null));
    await payments.release(bare2, { idempotencyRef: null });
    expect(await payments.find(bare2)).toBeUndefined();
    // No owner given: by replay key alone, as before.
    expect(await payments.reserve(reservation(bare2, k2))).toBe(true);
    await payments.release(bare2);
    expect(await payments.find(bare2)).toBeUndefined();
  });
}
