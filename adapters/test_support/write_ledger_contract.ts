import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { payerLedgerId } from "../../domain/payments/mod.ts";
import { signedTx, fresh } from "./_helpers.ts";

/** The storage contract's tests of the sponsored-write quota; registered inside its describe, `open` gives the storage under test. */
export function writeLedgerContract(open: () => Promise<Storage>) {
  test("quota: reserves up to the limit; reserved and broadcast count, released do not; committed is final", async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xq"), fresh("acct"), 0);
    const r = (id: string, year = 2026) => ({ id, accountId: account.id, year, fingerprint: id, createdAtMs: 1 });
    const [w1, w2, w3, y1] = [fresh("w"), fresh("w"), fresh("w"), fresh("y")];
    expect(await ledger.reserve(r(w1), 2)).toBe(true);
    expect(await ledger.reserve(r(w2), 2)).toBe(true);
    expect(await ledger.reserve(r(w3), 2)).toBe(false);
    expect(await ledger.reserve(r(y1, 2027), 2)).toBe(true);
    expect(await ledger.markSigned(w1, signedTx("0xt1", 3), 2)).toBe(true);
    expect(await ledger.find(w1)).toMatchObject({ state: "signed", txHash: "0xt1", tx: signedTx("0xt1", 3) });
    expect(await ledger.markSigned(w1, signedTx("0xt9", 4), 2)).toBe(false);
    await ledger.markSent(w1, 2);
    expect(await ledger.find(w1)).toMatchObject({ state: "broadcast", txHash: "0xt1" });
    expect(await ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 2 });
    await ledger.commit(w1, { txHash: "0xt1", uid: "0xu1", blockNumber: 7n }, 3);
    await ledger.release(w1, 4);
    await ledger.release(w2, 4);
    expect(await ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
    expect(await ledger.find(w1)).toMatchObject({ state: "committed", txHash: "0xt1", uid: "0xu1", blockNumber: 7n, updatedAtMs: 3 });
    expect(await ledger.reserve(r(w3), 2)).toBe(true);
    const open_ = (await ledger.unsettled(10)).filter((w) => w.accountId === account.id).map((w) => w.id);
    expect(open_.sort()).toEqual([y1, w3].sort());
    expect(await ledger.find(fresh("none"))).toBeUndefined();
  });

  test("a sponsored write's row keeps the chain it is sent on; one reserved without a chain names none (the default chain's)", async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xc"), fresh("acct"), 0);
    const [onB, plain] = [fresh("cb"), fresh("cn")];
    expect(await ledger.reserve({ id: onB, accountId: account.id, year: 2026, fingerprint: onB, createdAtMs: 1, chainId: 31338 }, 5)).toBe(true);
    expect(await ledger.reserve({ id: plain, accountId: account.id, year: 2026, fingerprint: plain, createdAtMs: 1 }, 5)).toBe(true);
    expect((await ledger.find(onB))?.chainId).toBe(31338);
    expect((await ledger.find(plain))?.chainId).toBeUndefined();
    const open_ = (await ledger.unsettled(10)).filter((w) => w.accountId === account.id);
    expect(open_.map((w) => [w.id, w.chainId]).sort()).toEqual([[onB, 31338], [plain, undefined]].sort());
  });

  test("quota: forty parallel reservations for ten writes give exactly ten", async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xp"), fresh("acct"), 0);
    const results = await Promise.all(
      Array.from({ length: 40 }, () => ledger.reserve({ id: fresh("p"), accountId: account.id, year: 2026, fingerprint: "f", createdAtMs: 1 }, 10)),
    );
    expect(results.filter(Boolean)).toHaveLength(10);
    expect(await ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 10 });
  });

  test("an x402 payer, who has no account, holds sponsored writes under its ledger id as an account does", async () => {
    // The rows referenced accounts: PostgreSQL refused every paid witness and paid relay write (SQLite enforces no
    // foreign key, so only PostgreSQL deployments failed, with a 500).
    const { ledger } = await open();
    const payer = payerLedgerId(fresh("0xPayer"));
    const id = fresh("x402");
    expect(await ledger.reserve({ id, accountId: payer, year: 2026, fingerprint: id, createdAtMs: 1 }, 1)).toBe(true);
    expect(await ledger.markSigned(id, signedTx("0xtx402", 1), 2)).toBe(true);
    await ledger.markSent(id, 3);
    await ledger.commit(id, { txHash: "0xtx402", uid: "0xu402", blockNumber: 9n }, 4);
    expect(await ledger.usage(payer, 2026)).toEqual({ used: 1, reserved: 0 });
  });
  test("a write given back keeps why; one given back on a cause that proves nothing is listed for the reconciler's look, charged if mined after all, and takes a proven cause found later", async () => {
    const { accounts, ledger } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xg"), fresh("acct"), 0);
    const [silent, refused, legacy, proven] = [fresh("gs"), fresh("gr"), fresh("gl"), fresh("gp")];
    for (const [i, id] of [silent, refused, legacy, proven].entries()) {
      expect(await ledger.reserve({ id, accountId: account.id, year: 2026, fingerprint: id, createdAtMs: 1 }, 10)).toBe(true);
      expect(await ledger.markSigned(id, signedTx(`0x${id}`, i), 2)).toBe(true);
      await ledger.markSent(id, 3);
    }
    await ledger.release(silent, 10, "silence");
    await ledger.release(refused, 10, "refused");
    // No cause (released before causes were kept): not known why, so never listed and never charged after.
    await ledger.release(legacy, 10);
    await ledger.release(proven, 10, "lost");
    expect(await ledger.find(silent)).toMatchObject({ state: "released", releaseCause: "silence", updatedAtMs: 10 });
    expect((await ledger.find(legacy))?.releaseCause).toBeUndefined();
    const listed = async (sinceMs: number) => (await ledger.givenBackUnproven(sinceMs)).filter((w) => w.accountId === account.id).map((w) => w.id).sort();
    expect(await listed(10)).toEqual([silent, proven].sort());
    expect(await listed(11)).toEqual([]);
    // Found reverted: proven, no longer listed; a proven cause never goes back to an unproven one.
    await ledger.release(proven, 20, "reverted");
    await ledger.release(refused, 20, "silence");
    expect([(await ledger.find(proven))?.releaseCause, (await ledger.find(refused))?.releaseCause]).toEqual(["reverted", "refused"]);
    expect(await listed(0)).toEqual([silent]);
    // Mined after all: charged; one given back on a proven cause (or none known) is never committed.
    for (const id of [silent, refused, legacy, proven]) await ledger.commit(id, { txHash: `0x${id}`, uid: null, blockNumber: 5n }, 30);
    expect(await ledger.find(silent)).toMatchObject({ state: "committed", blockNumber: 5n, releaseCause: "silence" });
    expect([(await ledger.find(refused))?.state, (await ledger.find(legacy))?.state, (await ledger.find(proven))?.state]).toEqual(["released", "released", "released"]);
    expect(await ledger.usage(account.id, 2026)).toEqual({ used: 1, reserved: 0 });
    expect(await listed(0)).toEqual([]);
    // A committed write is never released again, whatever the cause.
    await ledger.release(silent, 40, "reverted");
    expect((await ledger.find(silent))?.state).toBe("committed");
  });
  test("a write given back on a cause that proves nothing holds its quota while it is looked up (24 hours from its release), and is charged only then", async () => {
    // Found in review: with a limit of 1, a write given back for its silence, a second one reserved and committed, then
    // the first mined and committed by the reconciler's look, left the account at 2 writes of 1.
    const DAY_MS = 24 * 60 * 60_000;
    const { accounts, ledger } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xh"), fresh("acct"), 0);
    const r = (id: string, createdAtMs: number) => ({ id, accountId: account.id, year: 2026, fingerprint: id, createdAtMs });
    const [silent, second, resent, third] = [fresh("hs"), fresh("h2"), fresh("hr"), fresh("h3")];
    expect(await ledger.reserve(r(silent, 1), 1)).toBe(true);
    expect(await ledger.markSigned(silent, signedTx(`0x${silent}`, 1), 2)).toBe(true);
    await ledger.markSent(silent, 3);
    await ledger.release(silent, 1_000, "silence");
    expect(await ledger.reserve(r(second, 2_000), 1)).toBe(false);
    expect(await ledger.usage(account.id, 2026, { nowMs: 2_000 })).toEqual({ used: 0, reserved: 1 });
    // Without the time, the open writes only.
    expect(await ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 0 });
    // Mined after all: charged once, the limit kept.
    await ledger.commit(silent, { txHash: `0x${silent}`, uid: null, blockNumber: 8n }, 3_000);
    expect(await ledger.usage(account.id, 2026, { nowMs: 3_000 })).toEqual({ used: 1, reserved: 0 });
    // A proven cause frees the quota at once; an unproven one at the end of its day, when it is no longer charged.
    expect(await ledger.reserve(r(resent, 4_000), 3)).toBe(true);
    expect(await ledger.markSigned(resent, signedTx(`0x${resent}`, 2), 4_000)).toBe(true);
    await ledger.release(resent, 5_000, "resend-refused");
    expect(await ledger.reserve(r(third, 5_001), 3)).toBe(true);
    expect(await ledger.reserve(r(fresh("h4"), 5_002), 3)).toBe(false);
    await ledger.release(resent, 6_000, "replaced");
    expect(await ledger.usage(account.id, 2026, { nowMs: 6_001 })).toEqual({ used: 1, reserved: 1 });
    await ledger.release(third, 7_000, "lost");
    expect(await ledger.usage(account.id, 2026, { nowMs: 7_000 + DAY_MS - 1 })).toEqual({ used: 1, reserved: 1 });
    expect(await ledger.usage(account.id, 2026, { nowMs: 7_000 + DAY_MS + 1 })).toEqual({ used: 1, reserved: 0 });
    await ledger.commit(third, { txHash: "0xlate", uid: null, blockNumber: 9n }, 7_000 + DAY_MS + 1);
    expect((await ledger.find(third))?.state).toBe("released");
    expect((await ledger.givenBackUnproven(0)).filter((w) => w.accountId === account.id).map((w) => w.id)).toEqual([third]);
  });
}
