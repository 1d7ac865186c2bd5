/**
 * The behaviour every storage adapter must have, as one test suite run against each (SQLite and
 * PostgreSQL): replay records, challenges, accounts, sessions and the sponsored-write quota.
 */
import { describe, expect, test } from "bun:test";
import type { ChallengeLimits } from "../ports/accounts.ts";
import type { Storage } from "../ports/storage.ts";
import type { SigningKeyRecord } from "../ports/signing_keys.ts";
import type { OAuthClient } from "../ports/oauth.ts";
import { createSharedRateLimiter, SHARED_LIMITS } from "../domain/rate_limit.ts";

const claim = (key: string, nonce = 0n, attester = "0xAbC") => ({
  key,
  chainId: 1,
  attester,
  nonce,
  deadline: 2_000_000_000n,
  createdAtMs: 1,
});

/** A stored transaction for the tests: only its shape matters here. */
const signedTx = (txHash: string, nonce: number) => ({
  txHash: txHash as `0x${string}`,
  raw: `0x02f8${nonce}` as `0x${string}`,
  wallet: "0x00000000000000000000000000000000000000aa" as `0x${string}`,
  nonce,
});

/** A time for the challenge tests, far from other tests' rows. */
const T0 = 1_900_000_000_000;

/** A challenge of `address` created at `createdAtMs`, valid for ten minutes. */
const challenge = (address: string, createdAtMs: number) => ({
  id: fresh("ch"),
  address,
  chainId: 31337,
  nonce: "abcdef123456",
  message: "msg",
  createdAtMs,
  expiresAtMs: createdAtMs + 600_000,
  usedAtMs: null,
});

/** Challenge limits for `client`: generous unless a test says otherwise. */
const limits = (client: string, tighter: Partial<Omit<ChallengeLimits, "client">> = {}): ChallengeLimits => ({
  client,
  perClient: 1_000,
  perWallet: 1_000,
  windowMs: 60_000,
  livePerWallet: 1_000,
  ...tighter,
});

let counter = 0;
/** Keys unique across the suite, so one database can serve every test. */
const fresh = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;

/** Registers the contract tests; `open` gives a storage whose tables exist (they may hold other tests' rows). */
export function storageContract(name: string, open: () => Promise<Storage>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`storage contract: ${name}${options.skip ? ` (skipped: ${options.skip})` : ""}`, () => {
    test("replay: a key is claimed once; a second live claim on the same attester nonce is refused", async () => {
      const { replay } = await open();
      const [a, b, c] = [fresh("0xa"), fresh("0xb"), fresh("0xc")];
      const attester = fresh("0xatt");
      expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
      expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
      expect(await replay.claim(claim(b, 0n, attester))).toBe("nonce-in-flight");
      expect(await replay.claim(claim(c, 1n, attester))).toBe("claimed");
      expect(await replay.find(a)).toMatchObject({ key: a, state: "checked", nonce: 0n, tx: null, txHash: null });
      expect(await replay.find(fresh("0xnever"))).toBeUndefined();
    });

    test("replay: checked → signed (the transaction stored) → sent → mined; a released record frees key and nonce", async () => {
      const { replay } = await open();
      const attester = fresh("0xatt");
      const [a, b] = [fresh("0xa"), fresh("0xb")];
      await replay.claim(claim(a, 0n, attester));
      await replay.release(a);
      expect(await replay.find(a)).toBeUndefined();
      expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
      expect(await replay.markSigned(a, signedTx("0xhash", 4))).toBe(true);
      expect(await replay.find(a)).toMatchObject({ state: "signed", txHash: "0xhash", tx: signedTx("0xhash", 4) });
      await replay.markSent(a);
      expect((await replay.find(a))?.state).toBe("sent");
      expect(await replay.markSigned(a, signedTx("0xother", 5))).toBe(false);
      // Released because its nonce was taken, or it was provably never broadcast: the same signature works again.
      await replay.release(a);
      expect(await replay.find(a)).toBeUndefined();
      expect(await replay.claim(claim(a, 0n, attester))).toBe("claimed");
      await replay.finish(a, { state: "mined", txHash: "0xh2", uid: "0xu", blockNumber: 5n });
      await replay.release(a);
      expect(await replay.find(a)).toMatchObject({ state: "mined", uid: "0xu", blockNumber: 5n, txHash: "0xh2" });
      expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
      expect(await replay.claim(claim(b, 0n, attester))).toBe("nonce-in-flight");
    });

    test("replay: a reverted submission frees the nonce but keeps the key", async () => {
      const { replay } = await open();
      const attester = fresh("0xatt");
      const [a, b] = [fresh("0xa"), fresh("0xb")];
      await replay.claim(claim(a, 0n, attester));
      await replay.finish(a, { state: "reverted", txHash: "0xhash", blockNumber: 3n });
      expect(await replay.claim(claim(a, 0n, attester))).toBe("duplicate-signature");
      expect(await replay.claim(claim(b, 0n, attester))).toBe("claimed");
    });

    test("replay: open lists checked, signed and sent records created before a time", async () => {
      const { replay } = await open();
      const attester = fresh("0xatt");
      const [a, b, c, d] = [fresh("0xa"), fresh("0xb"), fresh("0xc"), fresh("0xd")];
      await replay.claim({ ...claim(a, 0n, attester), createdAtMs: 10 });
      await replay.claim({ ...claim(b, 1n, attester), createdAtMs: 11 });
      await replay.markSigned(b, signedTx(`0x${b}`, 7));
      await replay.claim({ ...claim(c, 2n, attester), createdAtMs: 12 });
      await replay.finish(c, { state: "mined", txHash: "0xc", uid: null, blockNumber: 1n });
      await replay.claim({ ...claim(d, 3n, attester), createdAtMs: 50 });
      const open_ = (await replay.open(20)).filter((r) => r.attester === attester.toLowerCase());
      expect(open_.map((r) => [r.key, r.state])).toEqual([[a, "checked"], [b, "signed"]]);
      expect(open_[1]!.tx).toEqual(signedTx(`0x${b}`, 7));
    });

    test("replay: prune drops settled records whose deadline passed; open ones wait for the reconciler", async () => {
      const { replay } = await open();
      const [key, open_] = [fresh("0xold"), fresh("0xopen")];
      await replay.claim({ ...claim(key, 0n, fresh("0xatt")), deadline: 100n });
      await replay.finish(key, { state: "mined", txHash: "0x1", uid: null, blockNumber: 1n });
      await replay.claim({ ...claim(open_, 0n, fresh("0xatt")), deadline: 100n });
      expect(await replay.prune(101n)).toBeGreaterThanOrEqual(1);
      expect(await replay.find(key)).toBeUndefined();
      expect((await replay.find(open_))?.state).toBe("checked");
    });

    test("fee-bump replacements: kept per book and submission, oldest first, one row per hash, pruned by age", async () => {
      const storage = await open();
      const k1 = fresh("0xbump");
      const tx = (n: number) => ({ txHash: `0x${n.toString(16).padStart(64, "0")}` as const, raw: `0x02${n}` as const, wallet: "0x00000000000000000000000000000000000000aa" as const, nonce: 7 });
      await storage.txReplacements.add("delegated_attestations", k1, { tx: tx(1), createdAtMs: 1_000 });
      await storage.txReplacements.add("delegated_attestations", k1, { tx: tx(2), createdAtMs: 2_000 });
      await storage.txReplacements.add("delegated_attestations", k1, { tx: tx(1), createdAtMs: 3_000 });
      await storage.txReplacements.add("sponsored_writes", k1, { tx: tx(3), createdAtMs: 1_500 });
      expect(await storage.txReplacements.list("delegated_attestations", k1)).toEqual([
        { tx: tx(1), createdAtMs: 1_000 },
        { tx: tx(2), createdAtMs: 2_000 },
      ]);
      expect((await storage.txReplacements.list("sponsored_writes", k1)).map((r) => r.tx.txHash)).toEqual([tx(3).txHash]);
      expect(await storage.txReplacements.list("delegated_attestations", "other")).toEqual([]);
      expect(await storage.txReplacements.prune(1_600)).toBe(2);
      expect((await storage.txReplacements.list("delegated_attestations", k1)).map((r) => r.createdAtMs)).toEqual([2_000]);
    });

    test("replay: concurrent claims of one key: exactly one wins", async () => {
      const { replay } = await open();
      const key = fresh("0xrace");
      const attester = fresh("0xatt");
      const outcomes = await Promise.all(Array.from({ length: 8 }, () => replay.claim(claim(key, 0n, attester))));
      expect(outcomes.filter((o) => o === "claimed")).toHaveLength(1);
    });

    test("challenges are single-use", async () => {
      const { accounts } = await open();
      const id = fresh("ch");
      expect(await accounts.createChallenge({
        id,
        address: "0xAbC0000000000000000000000000000000000001",
        chainId: 31337,
        nonce: "abcdef123456",
        message: "msg",
        createdAtMs: 1_000,
        expiresAtMs: 2_000,
        usedAtMs: null,
      }, limits(fresh("client")))).toEqual({ ok: true, evicted: 0 });
      expect(await accounts.findChallenge(id)).toMatchObject({ address: "0xabc0000000000000000000000000000000000001", chainId: 31337, usedAtMs: null });
      const races = await Promise.all([accounts.consumeChallenge(id, 1_500), accounts.consumeChallenge(id, 1_500)]);
      expect(races.filter(Boolean)).toHaveLength(1);
      expect((await accounts.findChallenge(id))?.usedAtMs).toBe(1_500);
      expect(await accounts.findChallenge(fresh("none"))).toBeUndefined();
    });

    test("challenges: a client gets `perClient` a window, whichever wallets it names; retry when its oldest counted one leaves", async () => {
      const { accounts } = await open();
      const client = fresh("10.0.0.1");
      const outcomes = [];
      for (let i = 0; i < 4; i++) {
        outcomes.push(await accounts.createChallenge(challenge(fresh("0xw"), T0 + i * 1_000), limits(client, { perClient: 3 })));
      }
      expect(outcomes).toEqual([
        { ok: true, evicted: 0 },
        { ok: true, evicted: 0 },
        { ok: true, evicted: 0 },
        // The first of the three counted leaves the window at T0 + 60 s.
        { ok: false, limit: "client", retryAfterMs: 57_000 },
      ]);
      const refused = challenge(fresh("0xw"), T0 + 59_999);
      expect(await accounts.createChallenge(refused, limits(client, { perClient: 3 }))).toEqual({ ok: false, limit: "client", retryAfterMs: 1 });
      expect(await accounts.findChallenge(refused.id)).toBeUndefined();
      // Another client is not affected; the window moves on.
      expect((await accounts.createChallenge(challenge(fresh("0xw"), T0 + 3_000), limits(fresh("10.0.0.2"), { perClient: 3 }))).ok).toBe(true);
      expect((await accounts.createChallenge(challenge(fresh("0xw"), T0 + 60_000), limits(client, { perClient: 3 }))).ok).toBe(true);
    });

    test("challenges: a wallet gets `perWallet` a window, whichever clients ask", async () => {
      const { accounts } = await open();
      const wallet = fresh("0xw");
      const outcomes = [];
      for (let i = 0; i < 3; i++) {
        outcomes.push(await accounts.createChallenge(challenge(wallet, T0 + i * 10_000), limits(fresh("client"), { perWallet: 2, livePerWallet: 10 })));
      }
      expect(outcomes.map((o) => o.ok)).toEqual([true, true, false]);
      expect(outcomes[2]).toEqual({ ok: false, limit: "wallet", retryAfterMs: 40_000 });
      // The wallet limit counts the address in any case.
      const upper = challenge(wallet.toUpperCase(), T0 + 25_000);
      expect((await accounts.createChallenge(upper, limits(fresh("client"), { perWallet: 2 }))).ok).toBe(false);
      expect((await accounts.createChallenge(challenge(wallet, T0 + 60_000), limits(fresh("client"), { perWallet: 2 }))).ok).toBe(true);
    });

    test("challenges: past `livePerWallet` live ones, the oldest live ones are used up; evicted ones still count against the rates", async () => {
      const { accounts } = await open();
      const wallet = fresh("0xw");
      const client = fresh("client");
      const made = Array.from({ length: 5 }, (_, i) => challenge(wallet, T0 + i));
      const rules = limits(client, { perClient: 5, perWallet: 100, livePerWallet: 3 });
      // An expired one and a used one are not live: they are neither evicted nor counted as live.
      const expired = { ...challenge(wallet, T0 - 700_000), expiresAtMs: T0 - 100_000 };
      await accounts.createChallenge(expired, limits(fresh("client")));
      const used = challenge(wallet, T0 - 1);
      await accounts.createChallenge(used, limits(fresh("client")));
      expect(await accounts.consumeChallenge(used.id, T0 - 1)).toBe(true);
      const evicted = [];
      for (const c of made) {
        const outcome = await accounts.createChallenge(c, rules);
        evicted.push(outcome.ok ? outcome.evicted : -1);
      }
      expect(evicted).toEqual([0, 0, 0, 1, 1]);
      const state = await Promise.all(made.map(async (c) => (await accounts.findChallenge(c.id))?.usedAtMs ?? null));
      expect(state).toEqual([T0 + 3, T0 + 4, null, null, null]);
      expect((await accounts.findChallenge(expired.id))?.usedAtMs).toBeNull();
      expect((await accounts.findChallenge(used.id))?.usedAtMs).toBe(T0 - 1);
      // A verify cannot use an evicted challenge.
      expect(await accounts.consumeChallenge(made[0]!.id, T0 + 10)).toBe(false);
      // The two evicted challenges still count: the client's five are spent.
      expect(await accounts.createChallenge(challenge(wallet, T0 + 10), rules)).toEqual({ ok: false, limit: "client", retryAfterMs: 59_990 });
    });

    test("challenges: thirty parallel creations against a limit of ten store exactly ten", async () => {
      const { accounts } = await open();
      const client = fresh("client");
      const wallet = fresh("0xw");
      const all = Array.from({ length: 30 }, (_, i) => challenge(i % 2 === 0 ? wallet : fresh("0xw"), T0));
      const outcomes = await Promise.all(all.map((c) => accounts.createChallenge(c, limits(client, { perClient: 10, perWallet: 10, livePerWallet: 2 }))));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
      const stored = await Promise.all(all.map((c) => accounts.findChallenge(c.id)));
      expect(stored.filter((c) => c !== undefined)).toHaveLength(10);
      // The wallet's live cap held under the race as well.
      const live = stored.filter((c) => c !== undefined && c.address === wallet && c.usedAtMs === null);
      expect(live.length).toBeLessThanOrEqual(2);
      expect(outcomes.filter((o) => !o.ok).every((o) => !o.ok && o.limit === "client" && o.retryAfterMs === 60_000)).toBe(true);
    });

    test("challenges: thirty parallel creations for one wallet from thirty clients store exactly the wallet's ten", async () => {
      const { accounts } = await open();
      const wallet = fresh("0xw");
      const outcomes = await Promise.all(Array.from({ length: 30 }, () =>
        accounts.createChallenge(challenge(wallet, T0), limits(fresh("client"), { perClient: 10, perWallet: 10 }))));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
      expect(outcomes.filter((o) => !o.ok && o.limit === "wallet")).toHaveLength(20);
    });

    test("challenges: prune drops expired challenges, used or not, and keeps live ones", async () => {
      const { accounts } = await open();
      const wallet = fresh("0xw");
      const old = { ...challenge(wallet, 1_000), expiresAtMs: 2_000 };
      const usedOld = { ...challenge(wallet, 1_000), expiresAtMs: 2_000 };
      const live = challenge(wallet, 1_000);
      for (const c of [old, usedOld, live]) await accounts.createChallenge(c, limits(fresh("client")));
      await accounts.consumeChallenge(usedOld.id, 1_500);
      expect(await accounts.prune(3_000)).toBeGreaterThanOrEqual(2);
      expect(await accounts.findChallenge(old.id)).toBeUndefined();
      expect(await accounts.findChallenge(usedOld.id)).toBeUndefined();
      expect(await accounts.findChallenge(live.id)).toBeDefined();
    });

    test("rate buckets: a key starts full and takes `count` at a time; refused, it is told the tokens left; it refills with time up to its capacity", async () => {
      const { rateCounter } = await open();
      const bucket = { scope: fresh("scope"), capacity: 5, perMinute: 6 };
      const key = fresh("key");
      const take = (count: number, nowMs: number) => rateCounter.take(bucket, key, { count, nowMs });
      expect(await take(3, T0)).toEqual({ allowed: true, tokens: 2 });
      expect(await take(3, T0)).toEqual({ allowed: false, tokens: 2 });
      expect(await take(2, T0)).toEqual({ allowed: true, tokens: 0 });
      // Six a minute: one every 10 s (half of one after 5 s).
      const half = await take(1, T0 + 5_000);
      expect([half.allowed, Math.round(half.tokens * 1000)]).toEqual([false, 500]);
      const whole = await take(1, T0 + 10_010);
      expect([whole.allowed, Math.round(whole.tokens * 1000)]).toEqual([true, 1]);
      // Never more than the capacity, however long the key rested; a clock behind the stored one refills nothing.
      expect(await take(1, T0 + 3_600_000)).toEqual({ allowed: true, tokens: 4 });
      expect(await take(1, T0)).toEqual({ allowed: true, tokens: 3 });
      // Another key, or another limit with the same key, has its own bucket.
      expect(await rateCounter.take(bucket, fresh("key"), { count: 5, nowMs: T0 })).toEqual({ allowed: true, tokens: 0 });
      expect(await rateCounter.take({ ...bucket, scope: fresh("scope") }, key, { count: 5, nowMs: T0 })).toEqual({ allowed: true, tokens: 0 });
      // A take larger than the capacity is refused and spends nothing.
      expect(await rateCounter.take(bucket, fresh("key"), { count: 6, nowMs: T0 })).toEqual({ allowed: false, tokens: 5 });
    });

    test("rate buckets: forty parallel takes of a bucket of ten admit exactly ten", async () => {
      const { rateCounter } = await open();
      const bucket = { scope: fresh("scope"), capacity: 10, perMinute: 10 };
      const key = fresh("key");
      const taken = await Promise.all(Array.from({ length: 40 }, () => rateCounter.take(bucket, key, { count: 1, nowMs: T0 })));
      expect(taken.filter((t) => t.allowed)).toHaveLength(10);
      expect(taken.filter((t) => !t.allowed).every((t) => t.tokens === 0)).toBe(true);
    });

    test("rate buckets: prune forgets the buckets full again, and a forgotten key starts full", async () => {
      const { rateCounter } = await open();
      const late = T0 + 10 * 86_400_000;
      await rateCounter.prune(late);
      const bucket = { scope: fresh("scope"), capacity: 2, perMinute: 2 };
      const key = fresh("key");
      await rateCounter.take(bucket, key, { count: 2, nowMs: late });
      await rateCounter.take(bucket, fresh("key"), { count: 1, nowMs: late });
      // Full again after 60 s (the first) and 30 s (the second).
      expect(await rateCounter.prune(late + 29_000)).toBe(0);
      expect(await rateCounter.prune(late + 31_000)).toBe(1);
      expect(await rateCounter.prune(late + 59_000)).toBe(0);
      expect(await rateCounter.prune(late + 61_000)).toBe(1);
      expect(await rateCounter.take(bucket, key, { count: 2, nowMs: late + 61_000 })).toEqual({ allowed: true, tokens: 0 });
    });

    test("mcp sessions: used ones stay, idle ones go (on use, sweep and open); past the bound the least recently used go; closed ones are gone", async () => {
      const { mcpSessions } = await open();
      const late = T0 + 20 * 86_400_000;
      const idleMs = 60_000;
      // Earlier tests' sessions are idle by now.
      await mcpSessions.sweep({ nowMs: late, idleMs });
      const [a, b, c, d] = [fresh("a"), fresh("b"), fresh("c"), fresh("d")];
      const bounds = { maxSessions: 3, idleMs };
      expect(await mcpSessions.open(a, { ...bounds, nowMs: late })).toEqual({ idle: 0, full: 0 });
      await mcpSessions.open(b, { ...bounds, nowMs: late });
      await mcpSessions.open(c, { ...bounds, nowMs: late });
      // Used in the same millisecond as it was opened: still the most recent use.
      expect(await mcpSessions.touch(a, { nowMs: late, idleMs })).toBe(true);
      expect(await mcpSessions.open(d, { ...bounds, nowMs: late })).toEqual({ idle: 0, full: 1 });
      expect(await mcpSessions.touch(b, { nowMs: late, idleMs })).toBe(false);
      expect(await mcpSessions.count({ nowMs: late, idleMs })).toBe(3);
      expect(await mcpSessions.close(c)).toBe(true);
      expect(await mcpSessions.close(c)).toBe(false);
      expect(await mcpSessions.touch(c, { nowMs: late, idleMs })).toBe(false);
      // Idle: unused for idleMs.
      expect(await mcpSessions.touch(a, { nowMs: late + 59_999, idleMs })).toBe(true);
      expect(await mcpSessions.touch(d, { nowMs: late + 60_000, idleMs })).toBe(false);
      expect(await mcpSessions.count({ nowMs: late + 60_000, idleMs })).toBe(1);
      expect(await mcpSessions.sweep({ nowMs: late + 60_000, idleMs })).toBe(1);
      expect(await mcpSessions.open(fresh("e"), { ...bounds, nowMs: late + 119_999 })).toEqual({ idle: 1, full: 0 });
      expect(await mcpSessions.count({ nowMs: late + 119_999, idleMs })).toBe(1);
    });

    test("accounts: created once per wallet on the free plan, found by id or address, plan set by either", async () => {
      const { accounts } = await open();
      const address = fresh("0xW").toUpperCase();
      const id = fresh("acct");
      const [first, second] = await Promise.all([
        accounts.findOrCreateAccount(address, id, 10),
        accounts.findOrCreateAccount(address.toLowerCase(), fresh("acct"), 20),
      ]);
      expect(second).toEqual(first);
      expect(first).toMatchObject({ address: address.toLowerCase(), plan: "free" });
      expect(await accounts.findAccount(address)).toEqual(first);
      expect(await accounts.findAccount(first.id)).toEqual(first);
      expect(await accounts.setPlan(address, "paid", 30)).toMatchObject({ id: first.id, plan: "paid" });
      expect((await accounts.findAccount(first.id))?.plan).toBe("paid");
      expect(await accounts.setPlan(fresh("nobody"), "paid", 30)).toBeUndefined();
      expect((await accounts.listAccounts()).some((a) => a.id === first.id && a.plan === "paid")).toBe(true);
    });

    test("sessions: found by hash with their account, revoked once, pruned after expiry", async () => {
      const { accounts } = await open();
      const account = await accounts.findOrCreateAccount(fresh("0xs"), fresh("acct"), 10);
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
      const account = await accounts.findOrCreateAccount(fresh("0xd"), fresh("acct"), 10);
      expect(account.displayName).toBeNull();
      expect(await accounts.setDisplayName(account.id, "Alice", 20)).toMatchObject({ id: account.id, displayName: "Alice" });
      expect((await accounts.findAccount(account.id))?.displayName).toBe("Alice");
      expect(await accounts.setDisplayName(account.id, null, 30)).toMatchObject({ displayName: null });
      expect(await accounts.setDisplayName(fresh("nobody"), "x", 30)).toBeUndefined();
      const hash = fresh("h");
      await accounts.saveSession({ tokenHash: hash, accountId: account.id, createdAtMs: 10, expiresAtMs: 9_000_000_000_000, revokedAtMs: null, walletProviderId: "metamask", executionMode: "native" });
      expect((await accounts.findSession(hash))?.session).toMatchObject({ walletProviderId: "metamask", executionMode: "native" });
    });

    test("subjects: one bootstrap under concurrency, replaced by the first added; unique per account; one default; removal passes the default on", async () => {
      const { subjects } = await open();
      const accountId = fresh("acct");
      const subject = (id: string, did: string, bootstrap = false, createdAtMs = 1) => ({
        id, accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
        ownershipMethod: "wallet", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: createdAtMs, createdAtMs,
      });
      await Promise.all(Array.from({ length: 5 }, (_, i) => subjects.ensureBootstrap(subject(fresh("boot"), "did:pkh:eip155:1:0xa", true))));
      expect((await subjects.list(accountId)).map((x) => [x.canonicalDid, x.isDefault, x.bootstrap])).toEqual([["did:pkh:eip155:1:0xa", true, true]]);
      const [a, b2, c] = [fresh("s"), fresh("s"), fresh("s")];
      expect(await subjects.add(subject(a, "did:web:a.test", false, 2), 100)).toBe("added");
      expect((await subjects.list(accountId)).map((x) => [x.id, x.isDefault])).toEqual([[a, true]]);
      expect(await subjects.add(subject(fresh("s"), "did:web:a.test", false, 3), 100)).toBe("exists");
      expect(await subjects.add(subject(b2, "did:web:b.test", false, 4), 100)).toBe("added");
      expect(await subjects.add(subject(c, "did:web:c.test", false, 5), 100)).toBe("added");
      expect(await subjects.update(accountId, c, { isDefault: true, displayName: "C" })).toMatchObject({ id: c, isDefault: true, displayName: "C" });
      expect((await subjects.list(accountId)).filter((x) => x.isDefault).map((x) => x.id)).toEqual([c]);
      expect(await subjects.update(fresh("other"), c, { displayName: "x" })).toBeUndefined();
      expect(await subjects.remove(fresh("other"), c)).toBe(false);
      expect(await subjects.remove(accountId, c)).toBe(true);
      expect((await subjects.list(accountId)).map((x) => [x.id, x.isDefault])).toEqual([[a, true], [b2, false]]);
      // Another account may hold the same DID.
      const other = fresh("acct");
      expect(await subjects.add({ ...subject(fresh("s"), "did:web:a.test"), accountId: other }, 100)).toBe("added");
    });

    test("subjects under concurrency: parallel first adds leave one default and no bootstrap; one DID added once; parallel make-default leaves one default", async () => {
      const { subjects } = await open();
      const accountId = fresh("acct");
      const subject = (did: string, bootstrap = false) => ({
        id: fresh("s"), accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
        ownershipMethod: "dns", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: 1, createdAtMs: 1,
      });
      await subjects.ensureBootstrap(subject("did:pkh:eip155:1:0xa", true));
      const added = await Promise.all(["a", "b", "c", "a", "a"].map((d) => subjects.add(subject(`did:web:${d}.test`), 100)));
      expect(added.filter((r) => r === "added")).toHaveLength(3);
      const listed = await subjects.list(accountId);
      expect(listed.map((x) => x.canonicalDid).sort()).toEqual(["did:web:a.test", "did:web:b.test", "did:web:c.test"]);
      expect(listed.filter((x) => x.isDefault)).toHaveLength(1);
      expect(listed[0]!.isDefault).toBe(true);
      await Promise.all(listed.map((x) => subjects.update(accountId, x.id, { isDefault: true })));
      expect((await subjects.list(accountId)).filter((x) => x.isDefault)).toHaveLength(1);
      await Promise.all(listed.map((x) => subjects.remove(accountId, x.id)));
      expect(await subjects.list(accountId)).toEqual([]);
    });

    test("subjects are bounded per account (issue 33): parallel adds past the bound store exactly the bound; the bootstrap subject does not count; a duplicate is still exists", async () => {
      const { subjects } = await open();
      const accountId = fresh("acct");
      const subject = (did: string, bootstrap = false) => ({
        id: fresh("s"), accountId, canonicalDid: did, subjectDidHash: "0x", displayName: null, isDefault: false, bootstrap,
        ownershipMethod: "dns", ownershipWalletDid: "did:pkh:eip155:1:0xa", verifiedAtMs: 1, createdAtMs: 1,
      });
      await subjects.ensureBootstrap(subject("did:pkh:eip155:1:0xa", true));
      const outcomes = await Promise.all(Array.from({ length: 12 }, (_, i) => subjects.add(subject(`did:web:s${i}.test`), 4)));
      expect(outcomes.filter((r) => r === "added")).toHaveLength(4);
      expect(outcomes.filter((r) => r === "limit")).toHaveLength(8);
      const listed = await subjects.list(accountId);
      expect(listed).toHaveLength(4);
      expect(listed.some((x) => x.bootstrap)).toBe(false);
      expect(await subjects.add(subject(listed[0]!.canonicalDid), 4)).toBe("exists");
      // Removing one makes room for exactly one.
      await subjects.remove(accountId, listed[1]!.id);
      const again = await Promise.all(["x", "y", "z"].map((d) => subjects.add(subject(`did:web:${d}.test`), 4)));
      expect(again.filter((r) => r === "added")).toHaveLength(1);
      expect(await subjects.list(accountId)).toHaveLength(4);
      // A bound of one still replaces the bootstrap subject.
      const fresher = fresh("acct");
      await subjects.ensureBootstrap({ ...subject("did:pkh:eip155:1:0xb", true), accountId: fresher });
      expect(await subjects.add({ ...subject("did:web:one.test"), accountId: fresher }, 1)).toBe("added");
      expect(await subjects.add({ ...subject("did:web:two.test"), accountId: fresher }, 1)).toBe("limit");
      expect((await subjects.list(fresher)).map((x) => x.canonicalDid)).toEqual(["did:web:one.test"]);
    });

    test("signing keys (decisions §17): upsert keeps id, creation and type; one row per account and key; another account may hold it; newest first; filters", async () => {
      const { signingKeys } = await open();
      const accountId = fresh("acct");
      const key = (keyDid: string, createdAtMs: number, extra: Partial<SigningKeyRecord> = {}): SigningKeyRecord => ({
        id: fresh("key"), accountId, keyDid, keyType: "service-signing", displayName: "Receipt signer", tags: ["x402"], notes: null,
        createdAtMs, updatedAtMs: createdAtMs, ...extra,
      });
      const first = key("did:pkh:eip155:1:0xaaa", 10, { notes: "In a KMS" });
      const created = await signingKeys.upsert(first, 100);
      expect(created).toEqual({ outcome: "created", record: first });
      const again = await signingKeys.upsert(key("did:pkh:eip155:1:0xaaa", 20, { keyType: "attestation", displayName: "Renamed", tags: ["mcp", "x402"] }), 100);
      expect(again).toEqual({
        outcome: "updated",
        record: { ...first, displayName: "Renamed", tags: ["mcp", "x402"], notes: null, updatedAtMs: 20 },
      });
      await signingKeys.upsert(key("did:jwk:eyJrdHkiOiJFQyJ9", 30, { keyType: "attestation", tags: [] }), 100);
      await signingKeys.upsert(key("did:key:z6Mk", 40, { tags: ["mcp"] }), 100);
      expect((await signingKeys.list(accountId)).map((k) => k.keyDid)).toEqual(["did:key:z6Mk", "did:jwk:eyJrdHkiOiJFQyJ9", "did:pkh:eip155:1:0xaaa"]);
      expect((await signingKeys.list(accountId, { keyType: "attestation" })).map((k) => k.keyDid)).toEqual(["did:jwk:eyJrdHkiOiJFQyJ9"]);
      expect((await signingKeys.list(accountId, { tag: "mcp" })).map((k) => k.keyDid)).toEqual(["did:key:z6Mk", "did:pkh:eip155:1:0xaaa"]);
      expect(await signingKeys.list(accountId, { tag: "x40" })).toEqual([]);
      expect(await signingKeys.list(accountId, { keyType: "service-signing", tag: "x402" })).toHaveLength(1);
      // Another account registers the same key: its own row.
      const other = fresh("acct");
      expect((await signingKeys.upsert({ ...key("did:pkh:eip155:1:0xaaa", 50), accountId: other }, 100)).outcome).toBe("created");
      expect(await signingKeys.list(other)).toHaveLength(1);
      expect((await signingKeys.list(accountId)).find((k) => k.keyDid === "did:pkh:eip155:1:0xaaa")?.displayName).toBe("Renamed");
    });

    test("signing keys under concurrency: parallel upserts of one key leave one row; parallel new keys stop at the limit exactly", async () => {
      const { signingKeys } = await open();
      const accountId = fresh("acct");
      const key = (keyDid: string, n: number): SigningKeyRecord => ({
        id: fresh("key"), accountId, keyDid, keyType: "service-signing", displayName: `name ${n}`, tags: [], notes: null, createdAtMs: n, updatedAtMs: n,
      });
      const same = await Promise.all(Array.from({ length: 10 }, (_, i) => signingKeys.upsert(key("did:pkh:eip155:1:0xbbb", i + 1), 100)));
      expect(same.filter((r) => r.outcome === "created")).toHaveLength(1);
      expect(same.filter((r) => r.outcome === "updated")).toHaveLength(9);
      expect(await signingKeys.list(accountId)).toHaveLength(1);
      const many = await Promise.all(Array.from({ length: 20 }, (_, i) => signingKeys.upsert(key(`did:pkh:eip155:1:0x${i}`, 100 + i), 5)));
      expect(many.filter((r) => r.outcome === "created")).toHaveLength(4);
      expect(many.filter((r) => r.outcome === "limit")).toHaveLength(16);
      expect(await signingKeys.list(accountId)).toHaveLength(5);
      // At the limit a known key still updates.
      expect((await signingKeys.upsert(key("did:pkh:eip155:1:0xbbb", 500), 5)).outcome).toBe("updated");
    });

    test("factory calls (issue 23): one record per chain and wallet, even in parallel; failed keeps the transaction; forget frees it", async () => {
      const { factoryCalls } = await open();
      const wallet = `0x${fresh("w").replace(/[^0-9a-z]/g, "").padStart(40, "0").slice(-40)}`;
      const attempt = { chainId: 31337, wallet: wallet.toUpperCase().replace("0X", "0x"), factory: "0xFAC7", calldataHash: "0xAB", createdAtMs: 5 };
      const begun = await Promise.all(Array.from({ length: 10 }, () => factoryCalls.begin(attempt)));
      expect(begun.filter(Boolean)).toHaveLength(1);
      expect(await factoryCalls.find(31337, wallet)).toMatchObject({ wallet, factory: "0xfac7", calldataHash: "0xab", state: "sent", txHash: null, gasUsed: null });
      expect(await factoryCalls.find(1, wallet)).toBeUndefined();
      await factoryCalls.failed(31337, wallet, { txHash: "0xbee", gasUsed: 712_345n }, 9);
      expect(await factoryCalls.find(31337, wallet)).toMatchObject({ state: "failed", txHash: "0xbee", gasUsed: 712_345n, createdAtMs: 5, updatedAtMs: 9 });
      expect(await factoryCalls.begin(attempt)).toBe(false);
      await factoryCalls.forget(31337, wallet);
      expect(await factoryCalls.find(31337, wallet)).toBeUndefined();
      expect(await factoryCalls.begin(attempt)).toBe(true);
    });

    test("quota: reserves up to the limit; reserved and broadcast count, released do not; committed is final", async () => {
      const { accounts, ledger } = await open();
      const account = await accounts.findOrCreateAccount(fresh("0xq"), fresh("acct"), 0);
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

    test("quota: forty parallel reservations for ten writes give exactly ten", async () => {
      const { accounts, ledger } = await open();
      const account = await accounts.findOrCreateAccount(fresh("0xp"), fresh("acct"), 0);
      const results = await Promise.all(
        Array.from({ length: 40 }, () => ledger.reserve({ id: fresh("p"), accountId: account.id, year: 2026, fingerprint: "f", createdAtMs: 1 }, 10)),
      );
      expect(results.filter(Boolean)).toHaveLength(10);
      expect(await ledger.usage(account.id, 2026)).toEqual({ used: 0, reserved: 10 });
    });

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
      await payments.reserve(reservation(failed));
      await payments.worked(failed, "0xtx2", T0 + 3);
      await payments.settleFailed(failed, "transaction_failed", T0 + 4);
      expect(await payments.find(failed)).toMatchObject({ state: "settle_failed", workRef: "0xtx2", failureReason: "transaction_failed" });
      expect((await payments.list({ state: "settle_failed" })).map((p) => p.key)).toContain(failed);
      expect((await payments.list()).map((p) => p.key)).toEqual(expect.arrayContaining([key, failed]));
    });

    test("payments: plan periods follow one another; a period whose settlement failed no longer counts", async () => {
      const { payments } = await open();
      const account = fresh("acct");
      const year = 365 * 86_400_000;
      const buy = async (nowMs: number) => {
        const key = fresh("eip155:1:0xt:0xplan");
        await payments.reserve({ key, purpose: "plan", network: "eip155:1", asset: "0xt", payer: "0xp", payTo: "0xq", amount: "1", accountId: account, createdAtMs: nowMs });
        return { key, period: await payments.grantPeriod(key, account, year, nowMs) };
      };
      expect(await payments.paidPeriod(account, T0)).toBeUndefined();
      const first = await buy(T0);
      expect(first.period).toEqual({ startMs: T0, endMs: T0 + year });
      const second = await buy(T0 + 1000);
      expect(second.period).toEqual({ startMs: T0 + year, endMs: T0 + 2 * year });
      expect(await payments.paidPeriod(account, T0 + 5)).toEqual({ startMs: T0, endMs: T0 + 2 * year });
      await payments.settleFailed(second.key, "transaction_failed", T0 + 2000);
      expect(await payments.paidPeriod(account, T0 + 5)).toEqual({ startMs: T0, endMs: T0 + year });
      expect(await payments.paidPeriod(account, T0 + year)).toBeUndefined();
      expect(await payments.find(first.key)).toMatchObject({ state: "worked", accountId: account, periodStartMs: T0, periodEndMs: T0 + year });
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

    test("index: a step's events, full records and tail blocks are written together; tail rows are marked until confirmed (issue 34)", async () => {
      const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
      const uid = (n: number) => `0x${n.toString(16).padStart(64, "0")}` as `0x${string}`;
      const hash = (n: number, tag = "a") => `0x${n.toString(16).padStart(64, tag)}` as `0x${string}`;
      const recipient = "0x00000000000000000000000000000000000000aa" as const;
      const event = (n: number, kind: "attested" | "revoked" = "attested") =>
        ({ kind, uid: uid(n), recipient, attester: recipient, schemaUid: hash(7), blockNumber: BigInt(n), logIndex: kind === "attested" ? 0 : 1 });
      const record = (n: number, revocationTime = 0n) => ({
        uid: uid(n), schema: hash(7), time: 1_700_000_000n + BigInt(n), expirationTime: 18_446_744_073_709_551_615n, revocationTime,
        refUID: uid(0), recipient, attester: recipient, revocable: true, data: "0xabcdef" as const,
      });
      expect(await store.head()).toBeUndefined();
      // Blocks 1-10 with head 10 and 5 confirmations: 6-10 are the tail.
      const blocks = [6, 7, 8, 9].map((n) => ({ blockNumber: BigInt(n), blockHash: hash(n), timestamp: 1_000n + BigInt(n) }));
      expect(await store.append(undefined, [event(3), event(8)], { blockNumber: 10n, blockHash: hash(10), timestamp: 1_010n }, {
        attestations: [record(3), record(8)], blocks, confirmedTo: 5n,
      })).toBe(true);
      expect(await store.counts()).toEqual({ attestations: 2, tail: 1 });
      expect((await store.history(10)).map((c) => [c.blockNumber, c.timestamp])).toEqual([10n, 9n, 8n, 7n, 6n].map((n) => [n, 1_000n + n]));
      const stored = await store.records([uid(3), uid(8), uid(99)]);
      expect(stored.sort((a, b) => Number(a.blockNumber - b.blockNumber))).toEqual([
        { ...record(3), blockNumber: 3n, revokedBlock: null },
        { ...record(8), blockNumber: 8n, revokedBlock: null },
      ]);
      // Not polled yet; then a completed poll, shared through the store (never moved back).
      expect(await store.head()).toEqual({ blockNumber: 10n, blockHash: hash(10), timestamp: 1_010n, checkedAtMs: null, chainHead: null });
      await store.checked(5_000, 10n);
      await store.checked(4_000, 10n);
      expect(await store.head()).toMatchObject({ checkedAtMs: 5_000, chainHead: 10n });
      // Head 20: block 8 is confirmed now; attestation 3 revoked in block 12.
      expect(await store.append(10n, [{ ...event(3, "revoked"), blockNumber: 12n }], { blockNumber: 20n, blockHash: hash(20), timestamp: 1_020n }, {
        attestations: [record(3, 1_012n)], confirmedTo: 15n,
      })).toBe(true);
      expect(await store.counts()).toEqual({ attestations: 2, tail: 0 });
      expect((await store.records([uid(3)]))[0]).toMatchObject({ revocationTime: 1_012n, revokedBlock: 12n });
      // A rewind forgets what came after its block, revocations included.
      await store.rewind({ blockNumber: 9n, blockHash: hash(9), timestamp: 1_009n });
      expect((await store.records([uid(3)]))[0]).toMatchObject({ revocationTime: 0n, revokedBlock: null });
      expect(await store.checkpoint()).toEqual({ blockNumber: 9n, blockHash: hash(9), timestamp: 1_009n });
      expect(await store.incomplete(10)).toEqual([]);
    });

    test("index: a reorg of the tail rewinds tail rows only; confirmed rows and their records stay", async () => {
      const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
      const uid = (n: number) => `0x${n.toString(16).padStart(64, "1")}` as `0x${string}`;
      const hash = (n: number) => `0x${n.toString(16).padStart(64, "b")}` as `0x${string}`;
      const recipient = "0x00000000000000000000000000000000000000bb" as const;
      const event = (n: number) => ({ kind: "attested" as const, uid: uid(n), recipient, attester: recipient, schemaUid: hash(7), blockNumber: BigInt(n), logIndex: 0 });
      const record = (n: number) => ({ uid: uid(n), schema: hash(7), time: 1n, expirationTime: 0n, revocationTime: 0n, refUID: uid(0), recipient, attester: recipient, revocable: false, data: "0x" as const });
      const tail = [18, 19].map((n) => ({ blockNumber: BigInt(n), blockHash: hash(n), timestamp: BigInt(n) }));
      await store.append(undefined, [event(4), event(19)], { blockNumber: 20n, blockHash: hash(20), timestamp: 20n }, { attestations: [record(4), record(19)], blocks: tail, confirmedTo: 17n });
      await store.rewind({ blockNumber: 18n, blockHash: hash(18), timestamp: 18n });
      expect(await store.counts()).toEqual({ attestations: 1, tail: 0 });
      expect((await store.records([uid(4), uid(19)])).map((r) => r.uid)).toEqual([uid(4)]);
    });

    test("idempotency keys (decisions §23): begun once; a done key keeps its answer; a running one is held, or taken over by the same request once its lease passed; expired ones go", async () => {
      const { idempotency } = await open();
      const scope = fresh("account");
      const record = (fingerprint: string, nowMs: number) => ({ scope, key: "k", fingerprint, createdAtMs: nowMs, expiresAtMs: nowMs + 86_400_000, leaseUntilMs: nowMs + 300_000 });
      expect(await idempotency.begin(record("f1", T0))).toEqual({ kind: "started", submissionId: null });
      expect(await idempotency.begin(record("f1", T0 + 1))).toMatchObject({ kind: "exists", record: { state: "running", fingerprint: "f1", answer: null, leaseUntilMs: T0 + 300_000 } });
      // The same key in another scope is another key.
      expect(await idempotency.begin({ ...record("f2", T0), scope: fresh("client") })).toEqual({ kind: "started", submissionId: null });
      // A dead request's key (lease passed): another request may not take it, the same one may, with the submission
      // the dead one opened.
      await idempotency.attach(scope, "k", "sub-1");
      expect(await idempotency.begin(record("f2", T0 + 300_000))).toMatchObject({ kind: "exists", record: { fingerprint: "f1", submissionId: "sub-1" } });
      expect(await idempotency.begin(record("f1", T0 + 300_000))).toEqual({ kind: "started", submissionId: "sub-1" });
      expect(await idempotency.begin(record("f1", T0 + 300_001))).toMatchObject({ kind: "exists", record: { state: "running", leaseUntilMs: T0 + 600_000, createdAtMs: T0 } });
      const answer = { status: 409, headers: { "content-type": "application/json", "retry-after": "3" }, body: '{"code":"DUPLICATE"}' };
      await idempotency.complete(scope, "k", answer);
      expect(await idempotency.begin(record("f1", T0 + 900_000))).toMatchObject({ kind: "exists", record: { state: "done", answer, expiresAtMs: T0 + 86_400_000 } });
      // Completed keys are not abandoned; an abandoned running key is free again.
      await idempotency.abandon(scope, "k");
      expect(await idempotency.begin(record("f1", T0 + 900_001))).toMatchObject({ kind: "exists", record: { state: "done" } });
      const other = { ...record("f3", T0), key: "k2" };
      expect(await idempotency.begin(other)).toEqual({ kind: "started", submissionId: null });
      await idempotency.abandon(scope, "k2");
      expect(await idempotency.begin(other)).toEqual({ kind: "started", submissionId: null });
      // Kept 24 h: expired, a key begins afresh, with any request.
      expect(await idempotency.begin(record("f9", T0 + 86_400_000))).toEqual({ kind: "started", submissionId: null });
      expect(await idempotency.begin(record("f9", T0 + 86_400_001))).toMatchObject({ kind: "exists", record: { state: "running", fingerprint: "f9", answer: null } });
      expect(await idempotency.prune(T0 + 3 * 86_400_000)).toBeGreaterThanOrEqual(2);
      expect(await idempotency.begin(record("f1", T0 + 3 * 86_400_000))).toEqual({ kind: "started", submissionId: null });
    });

    test("submission records (decisions §23): found by id; listed per scope newest first, paged after a cursor; settled once, by id or by replay record; settled ones pruned by age", async () => {
      const { submissions } = await open();
      const scope = fresh("account");
      const ids = [fresh("sub-a"), fresh("sub-b"), fresh("sub-c")];
      for (const [i, id] of ids.entries()) await submissions.create({ id, scope, ref: `0xref-${id}`, createdAtMs: T0 + i });
      await submissions.create({ id: fresh("sub-other"), scope: fresh("account"), ref: "0xother", createdAtMs: T0 });
      expect(await submissions.find(ids[0]!)).toEqual({ id: ids[0]!, scope, ref: `0xref-${ids[0]}`, items: null, outcome: null, createdAtMs: T0, updatedAtMs: T0 });
      expect(await submissions.find("unknown")).toBeUndefined();
      expect((await submissions.list(scope, { limit: 2 })).map((r) => r.id)).toEqual([ids[2]!, ids[1]!]);
      expect((await submissions.list(scope, { limit: 2, after: { createdAtMs: T0 + 1, id: ids[1]! } })).map((r) => r.id)).toEqual([ids[0]!]);
      const mined = { state: "mined" as const, txHash: "0xtx", uid: "0xuid", blockNumber: 12n, feeBumps: 1 };
      expect(await submissions.settle(ids[0]!, mined, T0 + 10)).toBe(true);
      expect(await submissions.settle(ids[0]!, { state: "failed", txHash: null, error: "SUBMISSION_FAILED", feeBumps: 0 }, T0 + 11)).toBe(false);
      expect(await submissions.find(ids[0]!)).toMatchObject({ outcome: mined, updatedAtMs: T0 + 10 });
      const failed = { state: "failed" as const, txHash: "0xtx2", error: "SUBMISSION_FAILED", feeBumps: 0 };
      expect(await submissions.settleRef(`0xref-${ids[1]}`, failed, T0 + 12)).toEqual([ids[1]!]);
      expect(await submissions.settleRef(`0xref-${ids[1]}`, failed, T0 + 13)).toEqual([]);
      expect((await submissions.find(ids[1]!))?.outcome).toEqual(failed);
      expect((await submissions.find(ids[2]!))?.outcome).toBeNull();
      // The sweep's list: open ones and settled ones not yet told, created before the bound; told and newer ones left out.
      const untold = async (beforeMs: number) => (await submissions.untold(beforeMs, 1_000)).map((r) => r.id);
      expect(await untold(T0 + 3)).toEqual(expect.arrayContaining([ids[0]!, ids[1]!, ids[2]!]));
      await submissions.told(ids[0]!);
      // An open one cannot be marked told; it stays on the list until it settles.
      await submissions.told(ids[2]!);
      expect(await untold(T0 + 3)).not.toContain(ids[0]!);
      expect(await untold(T0 + 3)).toEqual(expect.arrayContaining([ids[1]!, ids[2]!]));
      expect(await untold(T0 + 2)).not.toContain(ids[2]!);
      // A settlement nobody is to be told of (issue 43) is kept told: it leaves the list as it settles.
      const quiet = fresh("sub-quiet");
      await submissions.create({ id: quiet, scope: fresh("client"), ref: `0xref-${quiet}`, createdAtMs: T0 });
      expect(await untold(T0 + 3)).toContain(quiet);
      expect(await submissions.settle(quiet, mined, T0 + 14, { untold: false })).toBe(true);
      expect(await untold(T0 + 3)).not.toContain(quiet);
      const oldest = await submissions.untold(T0 + 3, 1_000);
      expect(oldest.map((r) => r.createdAtMs)).toEqual([...oldest.map((r) => r.createdAtMs)].sort((a, b) => a - b));
      // Open ones stay whatever their age; settled ones go.
      expect(await submissions.prune(T0 + 100)).toBeGreaterThanOrEqual(3);
      expect(await submissions.find(ids[0]!)).toBeUndefined();
      expect(await submissions.find(ids[2]!)).toBeDefined();
    });

    test("a batch's submission record keeps its requests in order and, once mined, each sent request's uid (decisions §23)", async () => {
      const { submissions } = await open();
      const [byId, byRef] = [fresh("sub-batch"), fresh("sub-batch")];
      const items = [{ ref: `0xa-${byId}` }, { refused: { code: "ATTESTER_MISMATCH", message: "Signer does not match attester" } }, { ref: `0xb-${byId}` }];
      await submissions.create({ id: byId, scope: fresh("account"), ref: `0xa-${byId}`, createdAtMs: T0, items });
      expect(await submissions.find(byId)).toMatchObject({ items, outcome: null });
      const uids = { [`0xa-${byId}`]: "0xu1", [`0xb-${byId}`]: "0xu2" };
      const mined = { state: "mined" as const, txHash: "0xtx", uid: "0xu1", blockNumber: 3n, feeBumps: 0, uids };
      expect(await submissions.settle(byId, mined, T0 + 1)).toBe(true);
      expect((await submissions.find(byId))?.outcome).toEqual(mined);
      const twoItems = [{ ref: `0xc-${byRef}` }, { ref: `0xd-${byRef}` }];
      await submissions.create({ id: byRef, scope: fresh("account"), ref: `0xc-${byRef}`, createdAtMs: T0, items: twoItems });
      const reconciled = { ...mined, uids: { [`0xc-${byRef}`]: "0xu3", [`0xd-${byRef}`]: null } };
      expect(await submissions.settleRef(`0xc-${byRef}`, reconciled, T0 + 2)).toEqual([byRef]);
      expect(await submissions.find(byRef)).toMatchObject({ items: twoItems, outcome: reconciled });
    });

    test("idempotency keys: thirty concurrent begins of one key start exactly one", async () => {
      const { idempotency } = await open();
      const scope = fresh("account");
      const outcomes = await Promise.all(Array.from({ length: 30 }, () =>
        idempotency.begin({ scope, key: "same", fingerprint: "f", createdAtMs: T0, expiresAtMs: T0 + 86_400_000, leaseUntilMs: T0 + 300_000 })));
      expect(outcomes.filter((o) => o.kind === "started")).toHaveLength(1);
      expect(outcomes.filter((o) => o.kind === "exists")).toHaveLength(29);
    });

    test("index queries (issue 37): each filter and their combinations, newest or oldest first by block then log position, keyset pages, counts", async () => {
      const store = await (await open()).indexStore({ chainId: 31337, easAddress: fresh("0xeas") });
      const uid = (n: number) => `0x${"2".repeat(56)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
      const address = (n: number) => `0x${"c".repeat(32)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
      const schema = (n: number) => `0x${"d".repeat(56)}${n.toString(16).padStart(8, "0")}` as `0x${string}`;
      // 60 attestations, three per block (blocks 1-20), logged at positions 5, 2 and 7 in that order; block b at time 1000 + b.
      type Row = { n: number; block: number; logIndex: number; attester: `0x${string}`; recipient: `0x${string}`; schemaUid: `0x${string}`; revoked: boolean };
      const rows: Row[] = Array.from({ length: 60 }, (_, n) => ({
        n, block: Math.floor(n / 3) + 1, logIndex: [5, 2, 7][n % 3]!, attester: address(n % 2), recipient: address(10 + (n % 3)),
        schemaUid: schema(n % 4), revoked: n % 5 === 0,
      }));
      const append = async (part: Row[], expected: bigint | undefined, next: bigint) => {
        const events = part.flatMap((r) => [
          { kind: "attested" as const, uid: uid(r.n), recipient: r.recipient, attester: r.attester, schemaUid: r.schemaUid, blockNumber: BigInt(r.block), logIndex: r.logIndex },
          ...(r.revoked ? [{ kind: "revoked" as const, uid: uid(r.n), recipient: r.recipient, attester: r.attester, schemaUid: r.schemaUid, blockNumber: BigInt(r.block), logIndex: r.logIndex + 20 }] : []),
        ]);
        const attestations = part.map((r) => ({
          uid: uid(r.n), schema: r.schemaUid, time: 1_000n + BigInt(r.block), expirationTime: 0n, revocationTime: r.revoked ? 1_000n + BigInt(r.block) : 0n,
          refUID: uid(0), recipient: r.recipient, attester: r.attester, revocable: true, data: "0x01" as const,
        }));
        expect(await store.append(expected, events, { blockNumber: next, blockHash: schema(Number(next)) }, { attestations })).toBe(true);
      };
      await append(rows.slice(0, 45), undefined, 15n);
      const byPosition = (a: Row, b: Row) => (a.block - b.block) || (a.logIndex - b.logIndex);
      const expected = (f: (r: Row) => boolean, order: "newest" | "oldest", upTo = 15) => {
        const sorted = rows.filter((r) => r.block <= upTo && f(r)).sort(byPosition).map((r) => uid(r.n));
        return order === "newest" ? sorted.reverse() : sorted;
      };
      const cases: [Partial<import("../ports/attestation_index.ts").IndexFilter>, (r: Row) => boolean][] = [
        [{ attester: address(1) }, (r) => r.attester === address(1)],
        [{ attester: address(1).toUpperCase().replace("0X", "0x") as `0x${string}` }, (r) => r.attester === address(1)],
        [{ recipient: address(11) }, (r) => r.recipient === address(11)],
        [{ schemaUid: schema(2) }, (r) => r.schemaUid === schema(2)],
        [{ attester: address(0), schemaUid: schema(2) }, (r) => r.attester === address(0) && r.schemaUid === schema(2)],
        [{ recipient: address(10), attester: address(0), revoked: true }, (r) => r.recipient === address(10) && r.attester === address(0) && r.revoked],
        [{ schemaUid: schema(1), revoked: false }, (r) => r.schemaUid === schema(1) && !r.revoked],
        [{ attester: address(1), since: 1_004n, until: 1_009n }, (r) => r.attester === address(1) && r.block >= 4 && r.block < 9],
        [{ recipient: address(12), since: 1_013n }, (r) => r.recipient === address(12) && r.block >= 13],
        [{ recipient: address(12), until: 1_001n }, () => false],
        [{ recipient: address(12), since: 5_000n }, () => false],
        [{ attester: address(9) }, () => false],
      ];
      for (const [filter, f] of cases) {
        for (const order of ["newest", "oldest"] as const) {
          const got = await store.query({ ...filter, toBlock: 15n, order, limit: 100 });
          expect({ filter, order, uids: got.map((l) => l.uid) }).toEqual({ filter, order, uids: expected(f, order) });
        }
        expect(await store.count({ ...filter, toBlock: 15n })).toBe(expected(f, "newest").length);
      }
      // Pinned: nothing past toBlock, and revocations as of toBlock.
      expect((await store.query({ attester: address(0), toBlock: 6n, order: "newest", limit: 100 })).map((l) => l.uid)).toEqual(expected((r) => r.attester === address(0), "newest", 6));
      expect(await store.count({ schemaUid: schema(0), revoked: true, toBlock: 15n })).toBe(rows.filter((r) => r.block <= 15 && r.schemaUid === schema(0) && r.revoked).length);
      // A log carries its position, for the cursor.
      const [newest] = await store.query({ attester: address(0), toBlock: 15n, order: "newest", limit: 1 });
      expect(newest).toMatchObject({ uid: uid(44), blockNumber: 15n, logIndex: 7, attester: address(0), schemaUid: schema(0) });

      // Keyset pages of 4, newest first, while blocks 16-20 are indexed between pages: each item once, none shifted.
      const walk = async (order: "newest" | "oldest", grow: (page: number) => Promise<bigint>) => {
        const seen: string[] = [];
        let after: import("../ports/attestation_index.ts").PageCursor | undefined;
        let toBlock = 15n;
        for (let page = 0; page < 100; page++) {
          const logs = await store.query({ recipient: address(10), toBlock, order, after, limit: 4 });
          seen.push(...logs.map((l) => l.uid));
          if (logs.length < 4) return seen;
          after = logs.at(-1);
          toBlock = await grow(page);
        }
        throw new Error("no last page");
      };
      let head = 15n;
      const seenNewest = await walk("newest", async (page) => {
        if (page < 5) {
          await append(rows.filter((r) => r.block === Number(head) + 1), head, head + 1n);
          head += 1n;
        }
        return head;
      });
      expect(seenNewest).toEqual(expected((r) => r.recipient === address(10), "newest", 15));
      expect(head).toBeGreaterThan(15n);
      for (; head < 20n; head += 1n) await append(rows.filter((r) => r.block === Number(head) + 1), head, head + 1n);
      // Oldest first, the rows indexed meanwhile come at the end, once each.
      expect(await store.query({ recipient: address(10), toBlock: 20n, order: "oldest", limit: 100 }).then((l) => l.map((x) => x.uid)))
        .toEqual(expected((r) => r.recipient === address(10), "oldest", 20));
      const oldestPages: string[] = [];
      let after: import("../ports/attestation_index.ts").PageCursor | undefined;
      for (let page = 0; page < 100; page++) {
        const logs = await store.query({ recipient: address(10), toBlock: 20n, order: "oldest", after, limit: 3 });
        oldestPages.push(...logs.map((l) => l.uid));
        if (logs.length < 3) break;
        after = logs.at(-1);
      }
      expect(oldestPages).toEqual(expected((r) => r.recipient === address(10), "oldest", 20));
    });
  });
}

/** A public OAuth client registered at `createdAtMs`. */
const publicClient = (createdAtMs: number): OAuthClient => ({
  clientId: fresh("client"), accountId: null, secretHash: null, name: "Bot", redirectUris: ["https://app.test/cb"],
  grantTypes: ["authorization_code", "refresh_token"], scope: "account:read", authMethod: "none", createdAtMs,
});

/**
 * The limits that guard money or storage are counted once for the deployment (decisions §21): `open` gives two
 * storages on one database (two instances: two PostgreSQL pools, or two connections to one SQLite file), and every
 * race below alternates between them.
 */
export function deploymentLimitsContract(name: string, open: () => Promise<readonly [Storage, Storage]>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`limits across two instances: ${name}${options.skip ? ` (skipped: ${options.skip})` : ""}`, () => {
    test("each limit counted in the storage (public relay per address and per attester, witness per user and per domain, MCP sessions per address and messages per session) admits exactly its burst across both", async () => {
      const [first, second] = await open();
      const clock = { nowMs: () => T0 };
      for (const scope of Object.values(SHARED_LIMITS)) {
        const limits = [first, second].map((storage) => createSharedRateLimiter(storage.rateCounter, clock, { scope, capacity: 4, perMinute: 4 }));
        const key = fresh("caller");
        const decisions = await Promise.all(Array.from({ length: 20 }, (_, i) => limits[i % 2]!.take(key)));
        expect({ scope, allowed: decisions.filter((d) => d.allowed).length }).toEqual({ scope, allowed: 4 });
        // The same Retry-After as in one process: one token of four a minute is 15 s away.
        expect(decisions.filter((d) => !d.allowed)).toEqual(Array(16).fill({ allowed: false, retryAfterSeconds: 15 }));
      }
    });

    test("a bucket of ten taken forty times in parallel at two instances admits ten", async () => {
      const [first, second] = await open();
      const bucket = { scope: fresh("scope"), capacity: 10, perMinute: 1 };
      const key = fresh("key");
      const taken = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? first : second).rateCounter.take(bucket, key, { count: 1, nowMs: T0 })));
      expect(taken.filter((t) => t.allowed)).toHaveLength(10);
    });

    test("sign-in challenges: thirty parallel creations of one client at two instances store exactly its ten", async () => {
      const [first, second] = await open();
      const client = fresh("client");
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? first : second).accounts.createChallenge(challenge(fresh("0xw"), T0), limits(client, { perClient: 10 }))));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
      expect(outcomes.filter((o) => !o.ok && o.limit === "client")).toHaveLength(20);
    });

    test("OAuth registration: thirty parallel registrations of one address at two instances store exactly its three", async () => {
      const [first, second] = await open();
      const limits = { client: fresh("10.0.0.9"), perClient: 3, total: 1_000_000, windowMs: 3_600_000 };
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? first : second).oauth.registerClient(publicClient(T0), limits, T0)));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(3);
      expect(outcomes.filter((o) => !o.ok && o.limit === "client")).toHaveLength(27);
    });

    test("idempotency keys: thirty concurrent begins of one key at two instances start exactly one; the answer stored at one is read at the other", async () => {
      const [first, second] = await open();
      const scope = fresh("account");
      const record = { scope, key: "cross", fingerprint: "f", createdAtMs: T0, expiresAtMs: T0 + 86_400_000, leaseUntilMs: T0 + 300_000 };
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? first : second).idempotency.begin(record)));
      expect(outcomes.filter((o) => o.kind === "started")).toHaveLength(1);
      const answer = { status: 200, headers: { "content-type": "application/json" }, body: "{}" };
      await first.idempotency.complete(scope, "cross", answer);
      expect(await second.idempotency.begin({ ...record, createdAtMs: T0 + 1 })).toMatchObject({ kind: "exists", record: { state: "done", answer } });
    });

    test("MCP sessions: one opened at an instance is used at the other; parallel opens at both keep the bound exactly", async () => {
      const [first, second] = await open();
      const late = T0 + 30 * 86_400_000;
      const idleMs = 60_000;
      await first.mcpSessions.sweep({ nowMs: late, idleMs });
      const id = fresh("session");
      await first.mcpSessions.open(id, { maxSessions: 1_000, idleMs, nowMs: late });
      expect(await second.mcpSessions.touch(id, { nowMs: late + 1, idleMs })).toBe(true);
      expect(await second.mcpSessions.close(id)).toBe(true);
      expect(await first.mcpSessions.touch(id, { nowMs: late + 2, idleMs })).toBe(false);
      const dropped = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? first : second).mcpSessions.open(fresh("session"), { maxSessions: 7, idleMs, nowMs: late + 3 })));
      expect(dropped.reduce((sum, d) => sum + d.full, 0)).toBe(23);
      expect(await first.mcpSessions.count({ nowMs: late + 3, idleMs })).toBe(7);
      expect(await second.mcpSessions.count({ nowMs: late + 3, idleMs })).toBe(7);
    });
  });
}
