/**
 * The behaviour every storage adapter's webhooks must have (decisions §22), run against SQLite and PostgreSQL: the
 * outbox written by the index's append in its transaction, endpoints and their limits, messages and deliveries, and
 * claims that give each due delivery to one worker, also when two instances claim at once.
 */
import { describe, expect, test } from "bun:test";
import type { EasEvent, IndexCheckpoint } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import type { Storage } from "../../ports/storage.ts";
import type { WebhookEndpoint, WebhookMessage } from "../../ports/webhooks.ts";

let counter = 0;
const fresh = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++counter}`;
const limits = { endpoints: 10, subjects: 1_000 };
const hex = (n: number, width = 64) => `0x${n.toString(16).padStart(width, "0")}` as HexString;

function endpoint(accountId: string, change: Partial<WebhookEndpoint> = {}): WebhookEndpoint {
  return {
    id: fresh("wh"),
    accountId,
    url: "https://hooks.example.com/in",
    events: ["attestation.created", "webhook.test"],
    subjects: [],
    ownSubjects: true,
    secret: "whsec_AAAA",
    previousSecret: null,
    previousSecretUntilMs: null,
    disabled: false,
    failingSinceMs: null,
    createdAtMs: 1_000,
    ...change,
  };
}

const message = (createdAtMs = 1_000): WebhookMessage => ({ id: fresh("msg"), type: "webhook.test", body: "{}", createdAtMs });

/** Drains what the outbox holds (rows of earlier tests on a shared database). */
async function drainOutbox(storage: Storage) {
  for (;;) {
    const rows = await storage.webhooks.outbox(500);
    if (rows.length === 0) return;
    await storage.webhooks.publish([], [], rows.map((r) => r.seq));
  }
}

/** Delivers every delivery due at `now` (what earlier tests left on a shared database), so that only a test's own are due. */
async function drainDue(storage: Storage, now: number) {
  for (let claimed = await storage.webhooks.claim("drain", now, 1, 100, 100, 10_000); claimed.length > 0; claimed = await storage.webhooks.claim("drain", now, 1, 100, 100, 10_000)) {
    for (const d of claimed) await storage.webhooks.record(d.id, "drain", { state: "delivered", status: 200 }, now, 1_000);
  }
}

/** The outbox the index writes, endpoints and their limits, targets, publishing and one delivery's record. */
function outboxAndEndpointTests(open: () => Promise<readonly [Storage, Storage]>) {
  test("the index's append writes outbox rows for blocks crossing WEBHOOK_CONFIRMATIONS, in its transaction; a rewind takes back what was not fanned out", async () => {
    const [storage] = await open();
    await drainOutbox(storage);
    const index = await storage.indexStore({ chainId: 900_000 + ++counter, easAddress: hex(counter, 40) });
    const event = (kind: "attested" | "revoked", uid: number, block: bigint): EasEvent => ({
      kind,
      uid: hex(uid),
      recipient: hex(1, 40),
      attester: hex(2, 40),
      schemaUid: hex(3),
      blockNumber: block,
      logIndex: 0,
      txHash: hex(1000 + uid),
    });
    const cp = (n: bigint): IndexCheckpoint => ({ blockNumber: n, blockHash: hex(Number(n) + 5000) });
    // The first append only sets the boundary: no events for history.
    expect(await index.append(undefined, [event("attested", 1, 1n)], cp(2n), { webhookConfirmedTo: 2n })).toBe(true);
    expect(await storage.webhooks.outbox(10)).toEqual([]);
    // Two confirmations: block 3 and 4 stored, only block 3 deep enough... nothing of 3 yet (boundary 2).
    expect(await index.append(2n, [event("attested", 2, 3n), event("attested", 3, 4n)], cp(4n), { webhookConfirmedTo: 2n })).toBe(true);
    expect(await storage.webhooks.outbox(10)).toEqual([]);
    expect(await index.append(4n, [event("revoked", 2, 5n)], cp(5n), { webhookConfirmedTo: 4n })).toBe(true);
    expect((await storage.webhooks.outbox(10)).map((r) => [r.kind, r.uid, r.blockNumber, r.txHash])).toEqual([
      ["attested", hex(2), 3n, hex(1002)],
      ["attested", hex(3), 4n, hex(1003)],
    ]);
    // A reorg deeper than the confirmations: rows above the fork point go, the boundary comes back.
    await index.rewind(cp(3n));
    expect((await storage.webhooks.outbox(10)).map((r) => r.uid)).toEqual([hex(2)]);
    expect(await index.append(3n, [event("attested", 4, 4n), event("revoked", 2, 5n)], cp(6n), { webhookConfirmedTo: 6n })).toBe(true);
    expect((await storage.webhooks.outbox(10)).map((r) => [r.kind, r.uid, r.blockNumber])).toEqual([
      ["attested", hex(2), 3n],
      ["attested", hex(4), 4n],
      ["revoked", hex(2), 5n],
    ]);
    // Publishing consumes exactly the rows it names: the others stay.
    const three = await storage.webhooks.outbox(10);
    await storage.webhooks.publish([], [], three.slice(0, 2).map((r) => r.seq));
    expect((await storage.webhooks.outbox(10)).map((r) => [r.kind, r.uid])).toEqual([["revoked", hex(2)]]);
    // An operator's rebuild keeps the boundary: the rebuilt history is not told again.
    await drainOutbox(storage);
    await index.rewind(undefined, { keepWebhookMark: true });
    expect(await index.append(undefined, [event("attested", 1, 1n), event("attested", 4, 4n)], cp(6n), { webhookConfirmedTo: 6n })).toBe(true);
    expect(await storage.webhooks.outbox(10)).toEqual([]);
    expect(await index.append(6n, [event("attested", 5, 7n)], cp(7n), { webhookConfirmedTo: 7n })).toBe(true);
    expect((await storage.webhooks.outbox(10)).map((r) => r.uid)).toEqual([hex(5)]);
    // An append that loses its race writes no row either.
    expect(await index.append(3n, [event("attested", 9, 8n)], cp(8n), { webhookConfirmedTo: 8n })).toBe(false);
    expect(await storage.webhooks.outbox(10)).toHaveLength(1);
    // Decisions §30: asked for the chains an instance follows, the outbox gives only their rows.
    const chainId = 900_000 + counter;
    expect((await storage.webhooks.outbox(10, [chainId, 1])).map((r) => [r.uid, r.chainId])).toEqual([[hex(5), chainId]]);
    expect(await storage.webhooks.outbox(10, [chainId + 1])).toEqual([]);
    await drainOutbox(storage);
  });

  test("endpoints: limits counted in the insert, another account's endpoint unseen, rotation keeps the old secret", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const account = fresh("acc");
    const first = endpoint(account, { subjects: ["did:web:a.example", "did:web:b.example"] });
    expect(await store.create(first, limits)).toBe("created");
    expect(await store.create(endpoint(account, { subjects: ["did:web:c.example"] }), { endpoints: 10, subjects: 2 })).toBe("limit");
    expect(await store.create(endpoint(account), { endpoints: 1, subjects: 10 })).toBe("limit");
    expect(await store.get(fresh("other"), first.id)).toBeUndefined();
    expect(await store.get(account, first.id)).toEqual(first);
    expect(await store.update(account, first.id, { subjects: ["did:web:x.example", "did:web:y.example", "did:web:z.example"] }, { endpoints: 10, subjects: 2 })).toBe("limit");
    expect(await store.update(account, first.id, { ownSubjects: false, events: ["webhook.test"] }, limits)).toMatchObject({ ownSubjects: false, events: ["webhook.test"] });
    expect(await store.rotate(account, first.id, "whsec_BBBB", 5_000)).toMatchObject({ secret: "whsec_BBBB", previousSecret: "whsec_AAAA", previousSecretUntilMs: 5_000 });
    expect((await store.list(account)).map((e) => e.id)).toEqual([first.id]);
    expect(await store.remove(fresh("other"), first.id)).toBe(false);
    expect(await store.remove(account, first.id)).toBe(true);
    expect(await store.list(account)).toEqual([]);
  });

  test("targets: endpoints watching a subject, and those of accounts that own it", async () => {
    const [storage] = await open();
    const did = `did:web:${fresh("t")}.example`;
    const owner = (await storage.accounts.findOrCreateAccount(hex(++counter, 40), fresh("owner"), 1)).account.id;
    await storage.subjects.add({
      id: fresh("sub"),
      accountId: owner,
      canonicalDid: did,
      subjectDidHash: hex(7),
      displayName: null,
      isDefault: true,
      bootstrap: false,
      ownershipMethod: "dns",
      ownershipWalletDid: "did:pkh:eip155:1:0x0",
      verifiedAtMs: 1,
      createdAtMs: 1,
    }, 100);
    const watcher = endpoint(fresh("w"), { subjects: [did] });
    const own = endpoint(owner);
    const notOwn = endpoint(owner, { ownSubjects: false });
    const off = endpoint(fresh("w"), { subjects: [did], disabled: true });
    for (const e of [watcher, own, notOwn, off]) await storage.webhooks.create(e, limits);
    await storage.webhooks.update(off.accountId, off.id, { disabled: true }, limits);
    const targets = (await storage.webhooks.targets(did)).sort((a, b) => (a.endpointId < b.endpointId ? -1 : 1));
    const expected = [
      { endpointId: watcher.id, accountId: watcher.accountId, events: watcher.events, owned: false, watched: true },
      { endpointId: own.id, accountId: owner, events: own.events, owned: true, watched: true },
      { endpointId: notOwn.id, accountId: owner, events: notOwn.events, owned: true, watched: false },
    ].sort((a, b) => (a.endpointId < b.endpointId ? -1 : 1));
    expect(targets).toEqual(expected);
    // A subject holding U+0000 (no stored one does) has no targets, on either engine: PostgreSQL threw on it.
    expect(await storage.webhooks.targets(`${did}\u0000`)).toEqual([]);
  });

  test("anyEnabled: true while an endpoint is enabled", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const before = await store.anyEnabled();
    const off = endpoint(fresh("any"), { disabled: true });
    await store.create(off, limits);
    await store.update(off.accountId, off.id, { disabled: true }, limits);
    expect(await store.anyEnabled()).toBe(before);
    const on = endpoint(fresh("any"));
    await store.create(on, limits);
    expect(await store.anyEnabled()).toBe(true);
    await store.update(on.accountId, on.id, { disabled: true }, limits);
    expect(await store.anyEnabled()).toBe(before);
  });

  test("publish is idempotent; a claim holds a delivery until recorded; retry, delivered and failed are kept; all failures for the window disable", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const account = fresh("acc");
    const e = endpoint(account);
    await store.create(e, limits);
    const m = message(10_000);
    await store.publish([m], [{ messageId: m.id, endpointId: e.id }], []);
    await store.publish([{ ...m, body: "other" }], [{ messageId: m.id, endpointId: e.id }], []);
    const [claimed] = await store.claim("w1", 10_000, 60_000, 10, 4, 100);
    expect(claimed).toMatchObject({ endpointId: e.id, url: e.url, secret: e.secret, attempts: 0, message: { id: m.id, body: "{}", type: "webhook.test" } });
    expect(await store.claim("w2", 10_001, 60_000, 10, 4, 100)).toEqual([]);
    // A claim that ran out is taken over; the first holder's record is then ignored.
    const [again] = await store.claim("w2", 70_001, 60_000, 10, 4, 100);
    expect(again?.id).toBe(claimed!.id);
    await store.record(claimed!.id, "w1", { state: "delivered", status: 200 }, 70_002, 1_000);
    expect((await store.deliveries(e.id, { limit: 10 }))[0]).toMatchObject({ attempts: 0, deliveredAtMs: null });
    await store.record(claimed!.id, "w2", { state: "retry", status: 500, nextAttemptAtMs: 80_000 }, 70_002, 100_000);
    expect((await store.deliveries(e.id, { limit: 10 }))[0]).toMatchObject({ eventId: m.id, type: "webhook.test", attempts: 1, lastStatus: 500, nextAttemptAtMs: 80_000 });
    expect(await store.claim("w1", 79_999, 60_000, 10, 4, 100)).toEqual([]);
    const [third] = await store.claim("w1", 80_000, 60_000, 10, 4, 100);
    await store.record(third!.id, "w1", { state: "failed", status: null }, 200_000, 100_000);
    expect((await store.deliveries(e.id, { limit: 10 }))[0]).toMatchObject({ attempts: 2, lastStatus: null, nextAttemptAtMs: null, failedAtMs: 200_000 });
    // Failing since 70 002, the window 100 000: disabled at 200 000.
    expect((await store.get(account, e.id))?.disabled).toBe(true);
    expect(await store.update(account, e.id, { disabled: false }, limits)).toMatchObject({ disabled: false, failingSinceMs: null });
    // A delivery closed without being sent (skipped) leaves the endpoint's failing time alone.
    const skipped = message(300_000);
    await store.publish([skipped], [{ messageId: skipped.id, endpointId: e.id }], []);
    const [fourth] = await store.claim("w1", 300_000, 60_000, 10, 4, 100);
    await store.record(fourth!.id, "w1", { state: "failed", status: null, skipped: true }, 300_001, 1);
    expect(await store.get(account, e.id)).toMatchObject({ disabled: false, failingSinceMs: null });
  });
}


/** Deliveries: pages, pruning, claims and their bounds across two instances. */
function deliveryTests(open: () => Promise<readonly [Storage, Storage]>) {
  test("deliveries are listed newest first in keyset pages", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const e = endpoint(fresh("acc"));
    await store.create(e, limits);
    const ms = [message(1), message(2), message(3)];
    await store.publish(ms, ms.map((m) => ({ messageId: m.id, endpointId: e.id })), []);
    const page1 = await store.deliveries(e.id, { limit: 2 });
    expect(page1.map((d) => d.eventId)).toEqual([ms[2]!.id, ms[1]!.id]);
    const page2 = await store.deliveries(e.id, { limit: 2, after: { createdAtMs: page1[1]!.createdAtMs, id: page1[1]!.id } });
    expect(page2.map((d) => d.eventId)).toEqual([ms[0]!.id]);
    expect((await store.stats(10)).pending).toBeGreaterThanOrEqual(3);
  });

  test("prune drops settled deliveries older than the bound and the messages left with none; pending ones stay", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const e = endpoint(fresh("acc"));
    await store.create(e, limits);
    const [done, waiting] = [message(100), message(100)];
    await store.publish([done, waiting], [{ messageId: done.id, endpointId: e.id }, { messageId: waiting.id, endpointId: e.id }], []);
    const claimed = await store.claim("p1", 100, 1_000, 10, 4, 100);
    const doneDelivery = claimed.find((d) => d.message.id === done.id)!;
    await store.record(doneDelivery.id, "p1", { state: "delivered", status: 200 }, 150, 1_000);
    await store.record(claimed.find((d) => d.message.id === waiting.id)!.id, "p1", { state: "retry", status: 500, nextAttemptAtMs: 10_000 }, 150, 1_000_000);
    expect(await store.prune(101)).toBeGreaterThanOrEqual(1);
    expect((await store.deliveries(e.id, { limit: 10 })).map((d) => d.eventId)).toEqual([waiting.id]);
    // The pruned message's id is free again (a rebuild's re-told event would be sent again only after the bound).
    await store.publish([done], [{ messageId: done.id, endpointId: e.id }], []);
    expect((await store.deliveries(e.id, { limit: 10 })).length).toBe(2);
  });

  test("two instances claiming at once get each due delivery once, at most 4 per endpoint in flight", async () => {
    const [a, b] = await open();
    const endpoints = [endpoint(fresh("acc")), endpoint(fresh("acc")), endpoint(fresh("acc"))];
    for (const e of endpoints) await a.webhooks.create(e, limits);
    const ms = Array.from({ length: 30 }, () => message(500));
    await a.webhooks.publish(ms, ms.flatMap((m) => endpoints.map((e) => ({ messageId: m.id, endpointId: e.id }))), []);
    const mine = new Set(endpoints.map((e) => e.id));
    const seen = new Map<string, string>();
    // Rounds of both instances claiming together; each records what it claimed before the next round.
    for (let round = 0; round < 60 && seen.size < 90; round++) {
      const claims = await Promise.all([a, b, a, b].map((s, i) => s.webhooks.claim(`w${i}`, 1_000 + round, 60_000, 5, 4, 100).then((c) => c.map((d) => ({ d, holder: `w${i}`, s })))));
      const flat = claims.flat().filter(({ d }) => mine.has(d.endpointId));
      const perEndpoint = new Map<string, number>();
      for (const { d } of flat) perEndpoint.set(d.endpointId, (perEndpoint.get(d.endpointId) ?? 0) + 1);
      for (const n of perEndpoint.values()) expect(n).toBeLessThanOrEqual(4);
      for (const { d, holder, s } of flat) {
        expect(seen.has(d.id)).toBe(false);
        seen.set(d.id, holder);
        await s.webhooks.record(d.id, holder, { state: "delivered", status: 200 }, 1_000 + round, 1_000);
      }
    }
    expect(seen.size).toBe(90);
  });

  test("an endpoint with its 4 in flight and a backlog longer than a claim looks ahead hides no other endpoint's due delivery", async () => {
    const [a, b] = await open();
    const now = 50_000_000;
    await drainDue(a, now);
    const slow = endpoint(fresh("acc"));
    const other = endpoint(fresh("acc"));
    for (const e of [slow, other]) await a.webhooks.create(e, limits);
    const backlog = Array.from({ length: 300 }, () => message(now - 2_000));
    await a.webhooks.publish(backlog, backlog.map((m) => ({ messageId: m.id, endpointId: slow.id })), []);
    // One instance takes the slow endpoint's 4.
    const first = await a.webhooks.claim("w1", now, 60_000, 5, 4, 100);
    expect(first.map((d) => d.endpointId)).toEqual(Array(4).fill(slow.id));
    // With the slow endpoint full, a claim of either instance finds the other endpoint's later delivery.
    const later = message(now - 1_000);
    await a.webhooks.publish([later], [{ messageId: later.id, endpointId: other.id }], []);
    const second = await b.webhooks.claim("w2", now, 60_000, 4, 4, 100);
    expect(second.map((d) => d.endpointId)).toEqual([other.id]);
    expect(await a.webhooks.claim("w3", now, 60_000, 4, 4, 100)).toEqual([]);
  });

  test("issue 43: one account's flood holds at most its share in flight, and claims still hand out another account's delivery, fairly", async () => {
    const [a, b] = await open();
    const now = 60_000_000;
    await drainDue(a, now);
    // Ten endpoints of one account, ten deliveries queued on each, older than anything else.
    const flooder = fresh("acc");
    const floods = Array.from({ length: 10 }, () => endpoint(flooder));
    for (const e of floods) await a.webhooks.create(e, limits);
    for (const e of floods) {
      const ms = Array.from({ length: 10 }, () => message(now - 5_000));
      await a.webhooks.publish(ms, ms.map((m) => ({ messageId: m.id, endpointId: e.id })), []);
    }
    const healthy = endpoint(fresh("acc"));
    await a.webhooks.create(healthy, limits);
    const test1 = message(now - 1_000);
    await a.webhooks.publish([test1], [{ messageId: test1.id, endpointId: healthy.id }], []);
    const flooded = new Set(floods.map((e) => e.id));
    // Both instances claim 32 at once: the flooder gets 8 in all (not 40 of 10 endpoints x 4), the other its one.
    const claims = (await Promise.all([a.webhooks.claim("w1", now, 60_000, 32, 4, 8), b.webhooks.claim("w2", now, 60_000, 32, 4, 8)])).flat();
    expect(claims.filter((d) => flooded.has(d.endpointId))).toHaveLength(8);
    expect(claims.filter((d) => d.endpointId === healthy.id).map((d) => d.message.id)).toEqual([test1.id]);
    // The flooder at its share: a later delivery of the other account is the next claim's, behind 92 older ones.
    const test2 = message(now - 500);
    await a.webhooks.publish([test2], [{ messageId: test2.id, endpointId: healthy.id }], []);
    const third = await b.webhooks.claim("w3", now, 60_000, 32, 4, 8);
    expect(third.map((d) => d.message.id)).toEqual([test2.id]);
    for (const [holder, list] of [["w1", claims], ["w2", claims], ["w3", third]] as const) {
      for (const d of list) await a.webhooks.record(d.id, holder, { state: "delivered", status: 200 }, now, 1_000);
    }

    // Fair order while both have room: a second flooding account gets every other slot, though its deliveries are newer.
    await drainDue(a, now + 1);
    const second = fresh("acc");
    const others = Array.from({ length: 3 }, () => endpoint(second));
    for (const e of others) await a.webhooks.create(e, limits);
    for (const e of others) {
      const ms = Array.from({ length: 5 }, () => message(now - 100));
      await a.webhooks.publish(ms, ms.map((m) => ({ messageId: m.id, endpointId: e.id })), []);
    }
    const oldest = Array.from({ length: 20 }, () => message(now - 9_000));
    await a.webhooks.publish(oldest, oldest.map((m, i) => ({ messageId: m.id, endpointId: floods[i % 10]!.id })), []);
    const fair = await a.webhooks.claim("w4", now + 1, 60_000, 6, 4, 8);
    const secondIds = new Set(others.map((e) => e.id));
    expect(fair.map((d) => (secondIds.has(d.endpointId) ? "second" : flooded.has(d.endpointId) ? "first" : "?"))).toEqual(["first", "second", "first", "second", "first", "second"]);
  });
}

function disabledEndpointTests(open: () => Promise<readonly [Storage, Storage]>) {
  test("an endpoint is disabled only by a delivery failed for good, not by one failed attempt after a quiet spell", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    const account = fresh("acc");
    const e = endpoint(account);
    await store.create(e, limits);
    const first = message(1_000);
    await store.publish([first], [{ messageId: first.id, endpointId: e.id }], []);
    const [a] = await store.claim("w1", 1_000, 60_000, 10, 4, 100);
    await store.record(a!.id, "w1", { state: "failed", status: 500 }, 1_000, 100_000);
    // Failing since 1 000; days later a new event's first attempt fails, with a retry ahead: not disabled (it was).
    const later = message(500_000);
    await store.publish([later], [{ messageId: later.id, endpointId: e.id }], []);
    const [b] = await store.claim("w1", 500_000, 60_000, 10, 4, 100);
    await store.record(b!.id, "w1", { state: "retry", status: 503, nextAttemptAtMs: 500_005 }, 500_000, 100_000);
    expect(await store.get(account, e.id)).toMatchObject({ disabled: false, failingSinceMs: 1_000 });
    // The retry answered: failing no more.
    const [c] = await store.claim("w1", 500_005, 60_000, 10, 4, 100);
    await store.record(c!.id, "w1", { state: "delivered", status: 200 }, 500_005, 100_000);
    expect(await store.get(account, e.id)).toMatchObject({ disabled: false, failingSinceMs: null });
  });

  test("a disabled endpoint's pending deliveries are failed, not left pending for good: by the account, or for failing", async () => {
    const [storage] = await open();
    const store = storage.webhooks;
    await drainDue(storage, 9_000_000_000);
    const account = fresh("acc");
    const e = endpoint(account);
    await store.create(e, limits);
    const ms = Array.from({ length: 3 }, () => message(2_000));
    await store.publish(ms, ms.map((m) => ({ messageId: m.id, endpointId: e.id })), []);
    // One of them is being delivered (leased) while the account disables the endpoint.
    const [leased] = await store.claim("w1", 2_000, 60_000, 1, 4, 100);
    await store.update(account, e.id, { disabled: true }, limits);
    const states = async () => (await store.deliveries(e.id, { limit: 10 })).map((d) => (d.failedAtMs !== null ? "failed" : d.deliveredAtMs !== null ? "delivered" : "pending"));
    expect((await states()).sort()).toEqual(["failed", "failed", "pending"]);
    // Its attempt, recorded after, is not retried.
    await store.record(leased!.id, "w1", { state: "retry", status: 500, nextAttemptAtMs: 3_000 }, 2_500, 100_000);
    expect(await states()).toEqual(["failed", "failed", "failed"]);
    expect((await store.stats(3_000)).pending).toBe(0);
    // Settled, they go with the 30 days' prune.
    expect(await store.prune(2_001)).toBeGreaterThanOrEqual(3);

    // Disabled for failing: the endpoint's other pending deliveries are failed with it.
    const f = endpoint(account);
    await store.create(f, limits);
    // The third not due before 300 000: it waits, unclaimed, while the other two are in flight.
    const [one, two, three] = [message(10_000), message(10_001), message(300_000)];
    await store.publish([one, two, three], [one, two, three].map((m) => ({ messageId: m.id, endpointId: f.id })), []);
    const [first] = await store.claim("w1", 10_000, 60_000, 1, 4, 100);
    await store.record(first!.id, "w1", { state: "retry", status: 500, nextAttemptAtMs: 200_000 }, 10_000, 100_000);
    const due = await store.claim("w1", 200_000, 60_000, 10, 4, 100);
    const again = due.find((d) => d.id === first!.id)!;
    const other = due.find((d) => d.id !== first!.id)!;
    await store.record(again.id, "w1", { state: "failed", status: 500 }, 200_000, 100_000);
    expect((await store.get(account, f.id))?.disabled).toBe(true);
    // The other one, in flight then, is failed by its own record.
    await store.record(other.id, "w1", { state: "retry", status: 500, nextAttemptAtMs: 300_000 }, 200_001, 100_000);
    expect((await store.deliveries(f.id, { limit: 10 })).every((d) => d.failedAtMs !== null)).toBe(true);
  });
}

/** Registers the contract; `open` gives two storages on one database (two instances). */
export function webhookStorageContract(name: string, open: () => Promise<readonly [Storage, Storage]>, options: { skip?: string | undefined } = {}) {
  describe.skipIf(options.skip !== undefined)(`webhook storage contract: ${name}`, () => {
    outboxAndEndpointTests(open);
    deliveryTests(open);
    disabledEndpointTests(open);
  });
}
