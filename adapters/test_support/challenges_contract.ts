import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, challenge, limits, fresh } from "./_helpers.ts";

/** The storage contract's tests of sign-in challenges: single use, the rates per client and per wallet (all clients), live ones per client and wallet, pruning; registered inside its describe, `open` gives the storage under test. */
export function challengesContract(open: () => Promise<Storage>) {
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

  test("challenges: a wallet gets `perWallet` a window, all clients together; the wallet in any case; a client's first of a window always", async () => {
    const { accounts } = await open();
    const wallet = fresh("0xw");
    const client = fresh("client");
    const outcomes = [];
    for (let i = 0; i < 3; i++) {
      outcomes.push(await accounts.createChallenge(challenge(wallet, T0 + i * 10_000), limits(client, { perWallet: 2, livePerWallet: 10 })));
    }
    expect(outcomes.map((o) => o.ok)).toEqual([true, true, false]);
    expect(outcomes[2]).toEqual({ ok: false, limit: "wallet", retryAfterMs: 40_000 });
    // The wallet limit counts the address in any case.
    const upper = challenge(wallet.toUpperCase(), T0 + 25_000);
    expect((await accounts.createChallenge(upper, limits(client, { perWallet: 2 }))).ok).toBe(false);
    expect(await accounts.findChallenge(upper.id)).toBeUndefined();
    // Another client's first for the wallet in the window is given, though the wallet's two are spent...
    const other = fresh("client");
    expect((await accounts.createChallenge(challenge(wallet, T0 + 25_000), limits(other, { perWallet: 2 }))).ok).toBe(true);
    // ...and its second is refused: the wallet's rate counts every client's, not only its own one.
    const second = challenge(wallet, T0 + 26_000);
    expect(await accounts.createChallenge(second, limits(other, { perWallet: 2 }))).toEqual({ ok: false, limit: "wallet", retryAfterMs: 44_000 });
    expect(await accounts.findChallenge(second.id)).toBeUndefined();
    // The first client, at a time when the wallet's rate is full with its own and the other's: refused.
    expect((await accounts.createChallenge(challenge(wallet, T0 + 60_000), limits(client, { perWallet: 2 }))).ok).toBe(false);
    // Once the window moved on past its own last one, it is given one again.
    expect((await accounts.createChallenge(challenge(wallet, T0 + 70_000), limits(client, { perWallet: 2 }))).ok).toBe(true);
  });

  test("challenges: a stranger's ten for a wallet do not stop its owner's next one from another client; the stranger gets no eleventh", async () => {
    const { accounts } = await open();
    const wallet = fresh("0xw");
    const stranger = fresh("203.0.113.7");
    const rules = (client: string) => limits(client, { perClient: 100, perWallet: 10, livePerWallet: 5 });
    const asked = [];
    for (let i = 0; i < 10; i++) asked.push(await accounts.createChallenge(challenge(wallet, T0 + i), rules(stranger)));
    expect(asked.every((o) => o.ok)).toBe(true);
    // The wallet's bound holds for the stranger (its address rate, 100, is not what refuses it).
    expect(await accounts.createChallenge(challenge(wallet, T0 + 10), rules(stranger))).toEqual({ ok: false, limit: "wallet", retryAfterMs: 59_990 });
    // The owner, at another client, in the same window: its first for the wallet is given.
    const mine = challenge(wallet, T0 + 11);
    expect(await accounts.createChallenge(mine, rules(fresh("198.51.100.20")))).toEqual({ ok: true, evicted: 0 });
    expect(await accounts.consumeChallenge(mine.id, T0 + 12)).toBe(true);
  });

  test("challenges: strangers at many clients keeping a wallet's rate spent get one each a window, and never keep its owner from a first one", async () => {
    const { accounts } = await open();
    const wallet = fresh("0xw");
    const rules = (client: string) => limits(client, { perClient: 100, perWallet: 3, livePerWallet: 5 });
    const strangers = Array.from({ length: 3 }, () => fresh("203.0.113.7"));
    for (const s of strangers) expect((await accounts.createChallenge(challenge(wallet, T0), rules(s))).ok).toBe(true);
    // The wallet's three are spent: a stranger's second is refused.
    expect(await accounts.createChallenge(challenge(wallet, T0 + 1), rules(strangers[0]!))).toEqual({ ok: false, limit: "wallet", retryAfterMs: 59_999 });
    // The owner's first is given; a second in the same window is refused while the strangers keep the rate spent.
    const owner = fresh("198.51.100.20");
    const mine = challenge(wallet, T0 + 2);
    expect(await accounts.createChallenge(mine, rules(owner))).toEqual({ ok: true, evicted: 0 });
    expect(await accounts.createChallenge(challenge(wallet, T0 + 3), rules(owner))).toEqual({ ok: false, limit: "wallet", retryAfterMs: 59_997 });
    // More strangers are each given their first (each bounded by its own client's rate), and keep the rate spent.
    for (let i = 0; i < 5; i++) expect((await accounts.createChallenge(challenge(wallet, T0 + 30_000), rules(fresh("203.0.113.8")))).ok).toBe(true);
    for (const s of strangers) expect((await accounts.createChallenge(challenge(wallet, T0 + 60_001), rules(s))).ok).toBe(true);
    // A window after its last one, the owner is given one again, and signs in with it.
    const next = challenge(wallet, T0 + 60_002);
    expect(await accounts.createChallenge(next, rules(owner))).toEqual({ ok: true, evicted: 0 });
    expect(await accounts.consumeChallenge(next.id, T0 + 60_003)).toBe(true);
    // The owner's first one was never used up by anyone else's.
    expect((await accounts.findChallenge(mine.id))?.usedAtMs).toBeNull();
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
    // Another client's live challenge for the wallet is never evicted by this client's.
    const others = challenge(wallet, T0 - 5);
    await accounts.createChallenge(others, limits(fresh("client")));
    expect((await accounts.createChallenge(challenge(wallet, T0 + 6), limits(client, { perClient: 100, perWallet: 100, livePerWallet: 3 }))).ok).toBe(true);
    expect((await accounts.findChallenge(others.id))?.usedAtMs).toBeNull();
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

  test("challenges: thirty parallel creations for one wallet from one client store exactly its ten; from thirty other clients, all thirty", async () => {
    const { accounts } = await open();
    const wallet = fresh("0xw");
    const client = fresh("client");
    const all = Array.from({ length: 30 }, () => challenge(wallet, T0));
    const outcomes = await Promise.all(all.map((c) => accounts.createChallenge(c, limits(client, { perClient: 100, perWallet: 10, livePerWallet: 5 }))));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
    expect(outcomes.filter((o) => !o.ok && o.limit === "wallet")).toHaveLength(20);
    // Its live cap for the wallet held under the race as well.
    const stored = await Promise.all(all.map((c) => accounts.findChallenge(c.id)));
    expect(stored.filter((c) => c !== undefined && c.usedAtMs === null)).toHaveLength(5);
    const others = await Promise.all(Array.from({ length: 30 }, () =>
      accounts.createChallenge(challenge(wallet, T0), limits(fresh("client"), { perClient: 10, perWallet: 10 }))));
    expect(others.filter((o) => o.ok)).toHaveLength(30);
  });

  test("challenges: parallel second creations of five clients for one wallet with room for five more store exactly five", async () => {
    const { accounts } = await open();
    const wallet = fresh("0xw");
    const clients = Array.from({ length: 5 }, () => fresh("client"));
    const rules = (client: string) => limits(client, { perClient: 100, perWallet: 10, livePerWallet: 10 });
    for (const client of clients) expect((await accounts.createChallenge(challenge(wallet, T0), rules(client))).ok).toBe(true);
    // Each holds one of the window's, so each is refused once the wallet's ten are spent, whichever client spent them.
    const outcomes = await Promise.all(Array.from({ length: 25 }, (_, i) => accounts.createChallenge(challenge(wallet, T0 + 1), rules(clients[i % 5]!))));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(5);
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
}
