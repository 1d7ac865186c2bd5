import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { fresh } from "./_helpers.ts";

/** The storage contract's tests of accounts and their sessions; registered inside its describe, `open` gives the storage under test. */
export function accountsContract(open: () => Promise<Storage>) {
  test("accounts: created once per wallet on the free plan, found by id or address, plan set by either", async () => {
    const { accounts } = await open();
    const address = fresh("0xW").toUpperCase();
    const id = fresh("acct");
    const [one, two] = await Promise.all([
      accounts.findOrCreateAccount(address, id, 10),
      accounts.findOrCreateAccount(address.toLowerCase(), fresh("acct"), 20),
    ]);
    const first = one.account;
    expect(two.account).toEqual(first);
    expect([one.created, two.created].sort()).toEqual([false, true]);
    expect(first).toMatchObject({ address: address.toLowerCase(), plan: "free" });
    expect(await accounts.findAccount(address)).toEqual(first);
    expect(await accounts.findAccount(first.id)).toEqual(first);
    expect(await accounts.setPlan(address, "paid", 30)).toMatchObject({ id: first.id, plan: "paid" });
    expect((await accounts.findAccount(first.id))?.plan).toBe("paid");
    expect(await accounts.setPlan(fresh("nobody"), "paid", 30)).toBeUndefined();
    expect((await accounts.listAccounts()).some((a) => a.id === first.id && a.plan === "paid")).toBe(true);
  });

  test("accounts: of parallel creations of one new wallet exactly one says it created the account (register's 200 and 409s)", async () => {
    const { accounts } = await open();
    const address = fresh("0xR");
    const ids = Array.from({ length: 8 }, () => fresh("acct"));
    const made = await Promise.all(ids.map((id, i) => accounts.findOrCreateAccount(i % 2 === 0 ? address : address.toUpperCase(), id, 10 + i)));
    const creators = made.filter((m) => m.created);
    expect(creators).toHaveLength(1);
    expect(ids).toContain(creators[0]!.account.id);
    for (const m of made) expect(m.account).toEqual(creators[0]!.account);
    expect(await accounts.findOrCreateAccount(address, fresh("acct"), 99)).toEqual({ account: creators[0]!.account, created: false });
  });

  test("sessions: found by hash with their account, revoked once, pruned after expiry", async () => {
    const { accounts } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xs"), fresh("acct"), 10);
    const [h1, h2] = [fresh("h"), fresh("h")];
    await accounts.saveSession({ tokenHash: h1, accountId: account.id, createdAtMs: 10, expiresAtMs: 100, revokedAtMs: null });
    await accounts.saveSession({ tokenHash: h2, accountId: account.id, createdAtMs: 10, expiresAtMs: 9_000_000_000_000, revokedAtMs: null });
    expect(await accounts.findSession(h1)).toEqual({
      session: { tokenHash: h1, accountId: account.id, createdAtMs: 10, expiresAtMs: 100, revokedAtMs: null, walletProviderId: null, executionMode: null },
      account,
    });
    await accounts.revokeSession(h1, 60);
    await accounts.revokeSession(h1, 70);
    expect((await accounts.findSession(h1))?.session.revokedAtMs).toBe(60);
    expect(await accounts.prune(200)).toBeGreaterThanOrEqual(1);
    expect(await accounts.findSession(h1)).toBeUndefined();
    expect(await accounts.findSession(h2)).toBeDefined();
  });

  test("accounts: a display name is set and cleared; a session keeps the wallet provider and execution mode", async () => {
    const { accounts } = await open();
    const { account } = await accounts.findOrCreateAccount(fresh("0xd"), fresh("acct"), 10);
    expect(account.displayName).toBeNull();
    expect(await accounts.setDisplayName(account.id, "Alice", 20)).toMatchObject({ id: account.id, displayName: "Alice" });
    expect((await accounts.findAccount(account.id))?.displayName).toBe("Alice");
    expect(await accounts.setDisplayName(account.id, null, 30)).toMatchObject({ displayName: null });
    expect(await accounts.setDisplayName(fresh("nobody"), "x", 30)).toBeUndefined();
    const hash = fresh("h");
    await accounts.saveSession({ tokenHash: hash, accountId: account.id, createdAtMs: 10, expiresAtMs: 9_000_000_000_000, revokedAtMs: null, walletProviderId: "metamask", executionMode: "native" });
    expect((await accounts.findSession(hash))?.session).toMatchObject({ walletProviderId: "metamask", executionMode: "native" });
  });
}
