import type * as Accounts from "../accounts.ts";
import { GIVEN_BACK_WATCH_MS, type ReleaseCause, UNPROVEN_RELEASES } from "../submissions.ts";

/** Accounts, challenges and sessions in memory, with the SQLite store's rules. */
export function fakeAccountStore() {
  const challenges = new Map<string, Accounts.Challenge>();
  const accounts = new Map<string, Accounts.Account>();
  const sessions = new Map<string, Accounts.Session>();
  const byIdOrAddress = (key: string) =>
    accounts.get(key) ?? [...accounts.values()].find((a) => a.address === key.toLowerCase());
  /** The client key each challenge was created for. */
  const challengeClients = new Map<string, string>();
  /** The `limit`-th newest creation inside the window, as the stores find it. */
  const nthNewest = (mine: (id: string, c: Accounts.Challenge) => boolean, since: number, limit: number) =>
    [...challenges].filter(([id, c]) => mine(id, c) && c.createdAtMs > since).map(([, c]) => c.createdAtMs)
      .sort((a, b) => b - a)[limit - 1];
  const store = {
    challenges,
    challengeClients,
    accounts,
    sessions,
    createChallenge(challenge: Accounts.Challenge, limits: Accounts.ChallengeLimits): Promise<Accounts.ChallengeCreation> {
      const now = challenge.createdAtMs;
      const address = challenge.address.toLowerCase();
      const since = now - limits.windowMs;
      const byClient = nthNewest((id) => challengeClients.get(id) === limits.client, since, limits.perClient);
      if (byClient !== undefined) return Promise.resolve({ ok: false, limit: "client", retryAfterMs: byClient + limits.windowMs - now });
      const mine = (id: string, c: Accounts.Challenge) => c.address === address && challengeClients.get(id) === limits.client;
      // The wallet's rate counts every client's; it refuses only a client already holding one of the window's.
      const byWallet = nthNewest((_, c) => c.address === address, since, limits.perWallet);
      const held = nthNewest(mine, since, 1);
      if (byWallet !== undefined && held !== undefined) {
        return Promise.resolve({ ok: false, limit: "wallet", retryAfterMs: Math.min(byWallet, held) + limits.windowMs - now });
      }
      const live = [...challenges.values()]
        .filter((c) => mine(c.id, c) && c.usedAtMs === null && c.expiresAtMs > now)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (b.id < a.id ? -1 : 1));
      const evict = live.slice(Math.max(0, limits.livePerWallet - 1));
      for (const c of evict) challenges.set(c.id, { ...c, usedAtMs: now });
      challenges.set(challenge.id, { ...challenge, address });
      challengeClients.set(challenge.id, limits.client);
      return Promise.resolve({ ok: true, evicted: evict.length });
    },
    findChallenge: (id: string) => Promise.resolve(challenges.get(id)),
    consumeChallenge(id: string, nowMs: number) {
      const found = challenges.get(id);
      if (found === undefined || found.usedAtMs !== null) return Promise.resolve(false);
      challenges.set(id, { ...found, usedAtMs: nowMs });
      return Promise.resolve(true);
    },
    findOrCreateAccount(address: string, newId: string, nowMs: number) {
      const existing = byIdOrAddress(address);
      if (existing !== undefined) return Promise.resolve({ account: existing, created: false });
      const account = { id: newId, address: address.toLowerCase(), plan: "free" as const, createdAtMs: nowMs };
      accounts.set(newId, account);
      return Promise.resolve({ account, created: true });
    },
    findAccount: (idOrAddress: string) => Promise.resolve(byIdOrAddress(idOrAddress)),
    listAccounts: () => Promise.resolve([...accounts.values()]),
    setDisplayName(id: string, displayName: string | null) {
      const found = accounts.get(id);
      if (found === undefined) return Promise.resolve(undefined);
      const updated = { ...found, displayName };
      accounts.set(id, updated);
      return Promise.resolve(updated);
    },
    setPlan(idOrAddress: string, plan: Accounts.Plan) {
      const found = byIdOrAddress(idOrAddress);
      if (found === undefined) return Promise.resolve(undefined);
      const updated = { ...found, plan };
      accounts.set(found.id, updated);
      return Promise.resolve(updated);
    },
    saveSession(session: Accounts.Session) {
      sessions.set(session.tokenHash, session);
      return Promise.resolve();
    },
    findSession(tokenHash: string) {
      const session = sessions.get(tokenHash);
      const account = session && accounts.get(session.accountId);
      return Promise.resolve(session && account ? { session, account } : undefined);
    },
    revokeSession(tokenHash: string, nowMs: number) {
      const session = sessions.get(tokenHash);
      if (session && session.revokedAtMs === null) sessions.set(tokenHash, { ...session, revokedAtMs: nowMs });
      return Promise.resolve();
    },
    prune(nowMs: number) {
      let removed = 0;
      for (const [id, c] of challenges) {
        if (c.expiresAtMs >= nowMs) continue;
        challenges.delete(id);
        challengeClients.delete(id);
        removed++;
      }
      for (const [hash, s] of sessions) if (s.expiresAtMs < nowMs && sessions.delete(hash)) removed++;
      return Promise.resolve(removed);
    },
  };
  return store satisfies import("../accounts.ts").AccountStore;
}

const OPEN_WRITE: readonly Accounts.WriteState[] = ["reserved", "signed", "broadcast"];

/** A sponsored-write ledger in memory; records every transition. */
export function fakeWriteLedger() {
  const writes = new Map<string, Accounts.WriteRecord>();
  const update = (id: string, states: readonly Accounts.WriteState[], change: Partial<Accounts.WriteRecord>) => {
    const found = writes.get(id);
    if (found === undefined || !states.includes(found.state)) return Promise.resolve(false);
    writes.set(id, { ...found, ...change });
    return Promise.resolve(true);
  };
  // Released on an unproven cause (ports/submissions.ts UNPROVEN_RELEASES): still looked for, charged if it lands.
  const unproven = (w: Accounts.WriteRecord) => w.state === "released" && w.releaseCause !== undefined && UNPROVEN_RELEASES.includes(w.releaseCause);
  // ...and within the watch at `nowMs` (ports/submissions.ts GIVEN_BACK_WATCH_MS): its quota still held for it.
  const watched = (w: Accounts.WriteRecord, nowMs: number | undefined) => nowMs !== undefined && unproven(w) && w.updatedAtMs >= nowMs - GIVEN_BACK_WATCH_MS;
  const unprovenToo = (id: string, nowMs?: number): readonly Accounts.WriteState[] => {
    const found = writes.get(id);
    return found !== undefined && unproven(found) && (nowMs === undefined || watched(found, nowMs)) ? [...OPEN_WRITE, "released"] : OPEN_WRITE;
  };
  const usage = (accountId: string, year: number, nowMs?: number) => {
    const rows = [...writes.values()].filter((w) => w.accountId === accountId && w.year === year);
    return {
      used: rows.filter((w) => w.state === "committed").length,
      reserved: rows.filter((w) => OPEN_WRITE.includes(w.state) || watched(w, nowMs)).length,
    };
  };
  const ledger = {
    writes,
    usage: (accountId: string, year: number, options?: { nowMs?: number | undefined }) => Promise.resolve(usage(accountId, year, options?.nowMs)),
    reserve(reservation: Accounts.WriteReservation, limit: number) {
      const now = usage(reservation.accountId, reservation.year, reservation.createdAtMs);
      if (now.used + now.reserved >= limit) return Promise.resolve(false);
      writes.set(reservation.id, {
        ...reservation,
        state: "reserved",
        tx: null,
        txHash: null,
        uid: null,
        blockNumber: null,
        updatedAtMs: reservation.createdAtMs,
      });
      return Promise.resolve(true);
    },
    markSigned: (id: string, tx: import("../eas.ts").SignedTx, nowMs: number) =>
      update(id, ["reserved"], { state: "signed", tx, txHash: tx.txHash, updatedAtMs: nowMs }).then((changed) => changed),
    markSent: (id: string, nowMs: number) => update(id, ["reserved", "signed"], { state: "broadcast", updatedAtMs: nowMs }).then(() => {}),
    // A write given back on an unproven cause is charged once found mined; one given back on a proven cause never is.
    commit: (id: string, outcome: { txHash: string; uid: string | null; blockNumber: bigint }, nowMs: number) =>
      update(id, unprovenToo(id, nowMs), { state: "committed", ...outcome, updatedAtMs: nowMs }).then(() => {}),
    release(id: string, nowMs: number, cause?: ReleaseCause) {
      const states = cause !== undefined && !UNPROVEN_RELEASES.includes(cause) ? unprovenToo(id) : OPEN_WRITE;
      return update(id, states, { state: "released", updatedAtMs: nowMs, ...(cause === undefined ? {} : { releaseCause: cause }) }).then(() => {});
    },
    unsettled: (createdBeforeMs: number) =>
      Promise.resolve([...writes.values()].filter((w) => OPEN_WRITE.includes(w.state) && w.createdAtMs < createdBeforeMs)),
    givenBackUnproven: (releasedSinceMs: number) =>
      Promise.resolve([...writes.values()].filter((w) => unproven(w) && w.updatedAtMs >= releasedSinceMs).sort((a, b) => a.updatedAtMs - b.updatedAtMs)),
    find: (id: string) => Promise.resolve(writes.get(id)),
  };
  return ledger satisfies import("../accounts.ts").SponsoredWriteLedger;
}
