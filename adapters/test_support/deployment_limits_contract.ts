import { describe, expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { createSharedRateLimiter, SHARED_LIMITS } from "../../domain/rate_limit.ts";
import { T0, challenge, limits, fresh, publicClient } from "./_helpers.ts";

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

    test("a token given back (a negative count: a request the service did not send) is taken again, never past the bucket's capacity", async () => {
      const [first, second] = await open();
      const bucket = { scope: fresh("scope"), capacity: 2, perMinute: 0.01 };
      const take = (storage: Storage, key: string, count = 1) => storage.rateCounter.take(bucket, key, { count, nowMs: T0 });
      // A key seen first through a give-back, and a full bucket given back to: both stay at the capacity.
      for (const key of [fresh("unseen"), fresh("full")]) {
        if (key.startsWith("full")) expect((await take(first, key, 0)).tokens).toBe(2);
        expect((await take(second, key, -1)).allowed).toBe(true);
        const taken = await Promise.all(Array.from({ length: 6 }, (_, i) => take(i % 2 === 0 ? first : second, key)));
        expect(taken.filter((t) => t.allowed)).toHaveLength(2);
      }
      const key = fresh("spent");
      expect((await take(first, key)).allowed && (await take(second, key)).allowed).toBe(true);
      expect((await take(first, key)).allowed).toBe(false);
      expect((await take(second, key, -1)).allowed).toBe(true);
      expect((await take(first, key)).allowed).toBe(true);
      expect((await take(second, key)).allowed).toBe(false);
    });

    test("sign-in challenges: thirty parallel creations of one client at two instances store exactly its ten", async () => {
      const [first, second] = await open();
      const client = fresh("client");
      const outcomes = await Promise.all(Array.from({ length: 30 }, (_, i) =>
        (i % 2 === 0 ? first : second).accounts.createChallenge(challenge(fresh("0xw"), T0), limits(client, { perClient: 10 }))));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
      expect(outcomes.filter((o) => !o.ok && o.limit === "client")).toHaveLength(20);
    });

    test("sign-in challenges: thirty parallel creations of one client for one wallet at two instances store exactly its ten for the wallet, and leave its live cap", async () => {
      const [first, second] = await open();
      const client = fresh("client");
      const wallet = fresh("0xw");
      const all = Array.from({ length: 30 }, () => challenge(wallet, T0));
      const outcomes = await Promise.all(all.map((c, i) =>
        (i % 2 === 0 ? first : second).accounts.createChallenge(c, limits(client, { perClient: 100, perWallet: 10, livePerWallet: 3 }))));
      expect(outcomes.filter((o) => o.ok)).toHaveLength(10);
      expect(outcomes.filter((o) => !o.ok && o.limit === "wallet")).toHaveLength(20);
      const stored = await Promise.all(all.map((c) => first.accounts.findChallenge(c.id)));
      expect(stored.filter((c) => c !== undefined && c.usedAtMs === null)).toHaveLength(3);
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
