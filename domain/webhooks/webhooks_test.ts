import { describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { encodeAbiParameters, parseAbiParameters } from "viem/utils";
import { fakeClock, fakeRandom, fakeWebhookStore, fakeWebhookTransport } from "../../ports/fakes/mod.ts";
import type { StoredAttestation } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { didToAddress } from "../did/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { computeSchemaUid, findSchemaByName } from "../schemas.ts";
import {
  attemptOutcome,
  createSubmissionEvents,
  createWebhookDelivery,
  createWebhookEndpoints,
  createWebhookFanOut,
  derivedEventId,
  hmacSha256,
  readWebhookUrl,
  signMessage,
  WEBHOOK_TESTS_PER_MINUTE,
  webhookHeaders,
} from "./mod.ts";
import { base64Encode } from "./signature.ts";

const account = { id: "acc-1", address: "0x00000000000000000000000000000000000000a1", plan: "free", createdAtMs: 0, displayName: null } as const;
const other = { ...account, id: "acc-2" };
const SUBJECT = "did:web:service.example";

function setup(options: { allowPrivateNetwork?: boolean; refused?: Record<string, "not-found" | "blocked-address" | "dns-failure"> } = {}) {
  const store = fakeWebhookStore();
  const transport = fakeWebhookTransport({ refused: options.refused });
  // Now, so that the official verifier (which refuses timestamps five minutes off) checks the signatures.
  const clock = fakeClock(Date.now());
  const endpoints = createWebhookEndpoints({ store, transport, clock, random: fakeRandom(), allowPrivateNetwork: options.allowPrivateNetwork ?? false });
  return { store, transport, clock, endpoints };
}

describe("hmacSha256() and the signature header", () => {
  test("hmacSha256() matches RFC 4231 test case 2", () => {
    const mac = hmacSha256(new TextEncoder().encode("Jefe"), new TextEncoder().encode("what do ya want for nothing?"));
    expect(Buffer.from(mac).toString("hex")).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  });

  test("signMessage() is accepted by the official standardwebhooks verifier", () => {
    const secret = `whsec_${base64Encode(new Uint8Array(32).fill(7))}`;
    const now = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: "webhook.test", timestamp: "2026-01-01T00:00:00.000Z", data: {} });
    const headers = webhookHeaders([secret], "msg_1", now, body);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(signMessage(secret, "msg_1", now, body)).toBe(new Webhook(secret).sign("msg_1", new Date(now * 1000), body));
  });

  test("webhookHeaders() with two secrets carries both signatures, each verifiable alone", () => {
    const [a, b] = [`whsec_${base64Encode(new Uint8Array(24).fill(1))}`, `whsec_${base64Encode(new Uint8Array(24).fill(2))}`];
    const now = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([b, a], "msg_2", now, "{}");
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(a).verify("{}", headers)).toEqual({});
    expect(new Webhook(b).verify("{}", headers)).toEqual({});
  });
});

describe("readWebhookUrl()", () => {
  test("takes https:// URLs and refuses other schemes, credentials and private literals", () => {
    expect(readWebhookUrl("https://hooks.example.com/in", false)).toEqual({ ok: true, value: "https://hooks.example.com/in" });
    for (const url of ["http://hooks.example.com/", "ftp://x.example/", "https://u:p@hooks.example.com/", "https://127.0.0.1/", "https://[::1]/", "https://169.254.169.254/", "https://10.0.0.1/", "https://localhost/", "not a url"]) {
      expect({ url, ok: readWebhookUrl(url, false).ok }).toEqual({ url, ok: false });
    }
  });

  test("http:// only on loopback, and only with ALLOW_PRIVATE_NETWORK", () => {
    expect(readWebhookUrl("http://127.0.0.1:9000/hook", true).ok).toBe(true);
    expect(readWebhookUrl("http://127.0.0.1:9000/hook", false).ok).toBe(false);
    expect(readWebhookUrl("http://10.0.0.1/hook", true).ok).toBe(false);
    expect(readWebhookUrl("http://hooks.example.com/hook", true).ok).toBe(false);
  });
});

describe("createWebhookEndpoints()", () => {
  test("create answers the secret once; list and get never show it", async () => {
    const { endpoints } = setup();
    const created = await endpoints.create(account, { url: "https://hooks.example.com/in", events: ["attestation.created"], subjects: [SUBJECT] });
    expect(created).toMatchObject({ ok: true, value: { url: "https://hooks.example.com/in", events: ["attestation.created"], subjects: [SUBJECT], ownSubjects: true, disabled: false } });
    if (!created.ok) throw new Error("unreachable");
    expect(created.value.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(created.value.secret.slice(6), "base64").length).toBe(32);
    const listed = await endpoints.list(account);
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain("whsec_");
    expect(JSON.stringify(await endpoints.get(account, created.value.id))).not.toContain("whsec_");
  });

  test("bad input is INVALID_INPUT naming the field", async () => {
    const { endpoints } = setup();
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ events: ["attestation.created"] }, /^url/],
      [{ url: "http://hooks.example.com/", events: ["attestation.created"] }, /^url/],
      [{ url: "https://hooks.example.com/", events: [] }, /^events/],
      [{ url: "https://hooks.example.com/", events: ["nope"] }, /^events\[0\]/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], subjects: ["not a did"] }, /^subjects\[0\]/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], subjects: ["did:web:shop.example", "did:web:not a did"] }, /^subjects\[1\]/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], subjects: ["did:web:127.0.0.1"] }, /^subjects\[0\]/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], subjects: ["did:key:z6Mk\u0000"] }, /^subjects\[0\]/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], ownSubjects: "yes" }, /^ownSubjects/],
      [{ url: "https://hooks.example.com/", events: ["webhook.test"], colour: "red" }, /^colour/],
    ];
    for (const [body, message] of cases) {
      const answer = await endpoints.create(account, body);
      expect({ body, ok: answer.ok }).toEqual({ body, ok: false });
      if (!answer.ok) expect({ code: answer.code, message: message.test(answer.message) ? "named" : answer.message }).toEqual({ code: "INVALID_INPUT", message: "named" });
    }
  });

  test("a host that does not resolve, or resolves to a refused address, is 400", async () => {
    const { endpoints } = setup({ refused: { "gone.example": "not-found", "inside.example": "blocked-address" } });
    for (const host of ["gone.example", "inside.example"]) {
      const answer = await endpoints.create(account, { url: `https://${host}/`, events: ["webhook.test"] });
      expect(answer).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    }
  });

  test("a host whose lookup failed now (SERVFAIL, a timeout) is 502 NETWORK_ERROR, and nothing is made", async () => {
    // Found by review: it was 400, kept under the request's Idempotency-Key for 24 hours after DNS answered again.
    const { endpoints } = setup({ refused: { "flaky.example": "dns-failure" } });
    expect(await endpoints.create(account, { url: "https://flaky.example/", events: ["webhook.test"] })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
    expect(await endpoints.list(account)).toEqual([]);
    const made = await endpoints.create(account, { url: "https://steady.example/", events: ["webhook.test"] });
    if (!made.ok) throw new Error(made.message);
    expect(await endpoints.update(account, made.value.id, { url: "https://flaky.example/" })).toMatchObject({ ok: false, code: "NETWORK_ERROR" });
  });

  test("10 endpoints and 1,000 watched subjects per account: beyond is WEBHOOK_LIMIT_EXCEEDED", async () => {
    // The 11th URL's host would not resolve: the bound is told before any lookup.
    const { endpoints } = setup({ refused: { "h10.example": "not-found" } });
    for (let i = 0; i < 10; i++) expect((await endpoints.create(account, { url: `https://h${i}.example/`, events: ["webhook.test"] })).ok).toBe(true);
    expect(await endpoints.create(account, { url: "https://h10.example/", events: ["webhook.test"] })).toMatchObject({ ok: false, code: "WEBHOOK_LIMIT_EXCEEDED" });
    const many = Array.from({ length: 600 }, (_, i) => `did:web:s${i}.example`);
    expect((await endpoints.create(other, { url: "https://a.example/", events: ["webhook.test"], subjects: many })).ok).toBe(true);
    expect(await endpoints.create(other, { url: "https://b.example/", events: ["webhook.test"], subjects: many })).toMatchObject({ ok: false, code: "WEBHOOK_LIMIT_EXCEEDED" });
  });

  test("another account's endpoint is WEBHOOK_NOT_FOUND for every operation", async () => {
    const { endpoints } = setup();
    const created = await endpoints.create(account, { url: "https://hooks.example.com/", events: ["webhook.test"] });
    if (!created.ok) throw new Error("unreachable");
    const id = created.value.id;
    for (const answer of [
      await endpoints.get(other, id),
      await endpoints.update(other, id, { ownSubjects: false }),
      await endpoints.rotate(other, id),
      await endpoints.test(other, id),
      await endpoints.deliveries(other, id, {}),
      await endpoints.remove(other, id),
    ]) expect(answer).toMatchObject({ ok: false, code: "WEBHOOK_NOT_FOUND" });
    expect((await endpoints.get(account, id)).ok).toBe(true);
  });

  test("PATCH {disabled: false} re-enables an endpoint", async () => {
    const { endpoints, store } = setup();
    const created = await endpoints.create(account, { url: "https://hooks.example.com/", events: ["webhook.test"] });
    if (!created.ok) throw new Error("unreachable");
    store.endpoints.set(created.value.id, { ...store.endpoints.get(created.value.id)!, disabled: true, failingSinceMs: 1 });
    expect(await endpoints.update(account, created.value.id, { disabled: false })).toMatchObject({ ok: true, value: { disabled: false } });
    expect(store.endpoints.get(created.value.id)!.failingSinceMs).toBeNull();
  });
});

const reviewSchema = findSchemaByName("user-review")!;
const reviewUid = computeSchemaUid(reviewSchema).toLowerCase();
const keySchema = findSchemaByName("key-binding")!;
const keyUid = computeSchemaUid(keySchema).toLowerCase();
const schemaNames = new Map([[reviewUid, "user-review"], [keyUid, "key-binding"]]);

function review(uid: string, subject: string, revokedBlock: bigint | null = null): StoredAttestation {
  return {
    uid: uid as HexString,
    schema: reviewUid as HexString,
    time: 1_800_000_000n,
    expirationTime: 0n,
    revocationTime: 0n,
    refUID: `0x${"0".repeat(64)}` as HexString,
    recipient: (didToAddress(subject) as { value: string }).value as HexString,
    attester: "0x00000000000000000000000000000000000000b2" as HexString,
    revocable: true,
    data: encodeAbiParameters(parseAbiParameters(reviewSchema.schema), [subject, "1.0", 5n, "Great", [], []]) as HexString,
    blockNumber: 10n,
    revokedBlock,
  };
}

describe("test events (decisions §22)", () => {
  test("at most WEBHOOK_TESTS_PER_MINUTE per account, over all its endpoints and hosts: the rest RATE_LIMITED with Retry-After, nothing queued for them", async () => {
    const { store, transport, clock } = setup();
    const testRate = createRateLimiter(clock, { capacity: WEBHOOK_TESTS_PER_MINUTE, perMinute: WEBHOOK_TESTS_PER_MINUTE });
    const endpoints = createWebhookEndpoints({ store, transport, clock, random: fakeRandom(), allowPrivateNetwork: false, testRate });
    const [a, b] = [
      await endpoints.create(account, { url: "https://a.example/", events: ["webhook.test"] }),
      await endpoints.create(account, { url: "https://b.example/", events: ["webhook.test"] }),
    ];
    if (!a.ok || !b.ok) throw new Error("unreachable");
    const answers = await Promise.all(Array.from({ length: 25 }, () => endpoints.test(account, a.value.id)));
    expect(answers.filter((r) => r.ok)).toHaveLength(WEBHOOK_TESTS_PER_MINUTE);
    const refused = answers.find((r) => !r.ok)!;
    expect(refused).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);
    expect(store.deliveryRows.size).toBe(WEBHOOK_TESTS_PER_MINUTE);
    // Another host (before: its own budget, and another port or a trailing dot was another host) or an endpoint
    // created again: none left.
    expect(await endpoints.test(account, b.value.id)).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    const moved = await endpoints.update(account, b.value.id, { url: "https://b.example:8443/" });
    expect(moved.ok).toBe(true);
    expect(await endpoints.test(account, b.value.id)).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    // Another account has its own.
    const c = await endpoints.create(other, { url: "https://c.example/", events: ["webhook.test"] });
    if (!c.ok) throw new Error("unreachable");
    expect((await endpoints.test(other, c.value.id)).ok).toBe(true);
    // A minute later the account has its burst back.
    clock.set(clock.nowMs() + 60_000);
    expect((await endpoints.test(account, b.value.id)).ok).toBe(true);
  });

  test("a disabled endpoint's test is 409 WEBHOOK_DISABLED, nothing queued: its tests would wait and go out together once enabled", async () => {
    const { endpoints, store } = setup();
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["webhook.test"] });
    if (!a.ok) throw new Error("unreachable");
    expect((await endpoints.update(account, a.value.id, { disabled: true })).ok).toBe(true);
    expect(await endpoints.test(account, a.value.id)).toMatchObject({ ok: false, code: "WEBHOOK_DISABLED" });
    expect(store.deliveryRows.size).toBe(0);
  });
});

describe("createWebhookFanOut()", () => {
  test("a row whose record the index does not hold now (a rebuild under way) stays in the outbox and is told once it does", async () => {
    const { endpoints, store, clock } = setup();
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created"], subjects: [SUBJECT], ownSubjects: false });
    if (!a.ok) throw new Error("unreachable");
    const [gone, kept] = [`0x${"31".repeat(32)}`, `0x${"32".repeat(32)}`];
    store.outboxRows.push({ seq: 1, kind: "attested", uid: gone, blockNumber: 10n, txHash: `0x${"22".repeat(32)}` });
    store.outboxRows.push({ seq: 2, kind: "attested", uid: kept, blockNumber: 11n, txHash: `0x${"23".repeat(32)}` });
    let held = [review(kept, SUBJECT)];
    const fanOut = createWebhookFanOut({ store, records: (uids) => Promise.resolve(held.filter((r) => uids.includes(r.uid))), schemaNames, clock });
    expect(await fanOut()).toBe(1);
    expect(store.outboxRows.map((r) => r.seq)).toEqual([1]);
    expect(await fanOut()).toBe(0);
    held = [review(gone, SUBJECT)];
    expect(await fanOut()).toBe(1);
    expect(store.outboxRows).toHaveLength(0);
    expect([...store.messages.values()].map((m) => m.id).sort()).toEqual([derivedEventId("attestation.created", gone), derivedEventId("attestation.created", kept)].sort());
  });

  test("with no endpoint enabled, a round consumes the rows the index holds without reading their events (issue 43 item 4)", async () => {
    const { endpoints, store, clock } = setup();
    const uid = `0x${"41".repeat(32)}`;
    const unheld = `0x${"42".repeat(32)}`;
    store.outboxRows.push({ seq: 1, kind: "attested", uid, blockNumber: 10n, txHash: `0x${"22".repeat(32)}` });
    store.outboxRows.push({ seq: 2, kind: "attested", uid: unheld, blockNumber: 10n, txHash: `0x${"22".repeat(32)}` });
    let targetReads = 0;
    const counted = { ...store, targets: (did: string) => (targetReads++, store.targets(did)) };
    const fanOut = createWebhookFanOut({ store: counted, records: () => Promise.resolve([review(uid, SUBJECT)]), schemaNames, clock });
    expect(await fanOut()).toBe(1);
    expect(store.outboxRows.map((r) => r.seq)).toEqual([2]);
    expect(targetReads).toBe(0);
    expect(store.messages.size).toBe(0);
    // An endpoint enabled later is told of the rows that come after it.
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created"], subjects: [SUBJECT], ownSubjects: false });
    if (!a.ok) throw new Error("unreachable");
    const next = `0x${"43".repeat(32)}`;
    store.outboxRows.push({ seq: 3, kind: "attested", uid: next, blockNumber: 11n, txHash: `0x${"23".repeat(32)}` });
    const after = createWebhookFanOut({ store: counted, records: () => Promise.resolve([review(next, SUBJECT)]), schemaNames, clock });
    expect(await after()).toBe(1);
    expect(targetReads).toBe(1);
    expect([...store.messages.values()].map((m) => m.id)).toEqual([derivedEventId("attestation.created", next)]);
  });

  test("an attestation on a watched subject becomes one message with a derived id and the decoded fields", async () => {
    const { endpoints, store, clock } = setup();
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created"], subjects: [SUBJECT], ownSubjects: false });
    const b = await endpoints.create(other, { url: "https://b.example/", events: ["attestation.created"], subjects: [SUBJECT] });
    await endpoints.create(other, { url: "https://c.example/", events: ["attestation.revoked"], subjects: [SUBJECT] });
    if (!a.ok || !b.ok) throw new Error("unreachable");
    const uid = `0x${"11".repeat(32)}`;
    store.outboxRows.push({ seq: 1, kind: "attested", uid, blockNumber: 10n, txHash: `0x${"22".repeat(32)}` });
    const fanOut = createWebhookFanOut({ store, records: () => Promise.resolve([review(uid, SUBJECT)]), schemaNames, clock });
    expect(await fanOut()).toBe(1);
    expect(store.outboxRows).toHaveLength(0);
    const [message] = [...store.messages.values()];
    expect(message!.id).toBe(derivedEventId("attestation.created", uid));
    expect(JSON.parse(message!.body)).toEqual({
      type: "attestation.created",
      timestamp: new Date(clock.nowMs()).toISOString(),
      data: {
        uid,
        schema: "user-review",
        schemaUid: reviewUid,
        subject: SUBJECT,
        attester: "0x00000000000000000000000000000000000000b2",
        recipient: review(uid, SUBJECT).recipient,
        refUID: `0x${"0".repeat(64)}`,
        txHash: `0x${"22".repeat(32)}`,
        blockNumber: 10,
        time: 1_800_000_000,
        revoked: false,
        fields: { subject: SUBJECT, version: "1.0", ratingValue: "5", reviewBody: "Great", screenshotUrls: [], proofs: [] },
      },
    });
    expect([...store.deliveryRows.values()].map((d) => d.endpointId).sort()).toEqual([a.value.id, b.value.id].sort());
  });

  test("own subjects: attestation events while ownSubjects, key.status_changed for a key binding regardless", async () => {
    const { endpoints, store, clock } = setup();
    store.owners.set(SUBJECT, [account.id]);
    const on = await endpoints.create(account, { url: "https://on.example/", events: ["attestation.created", "key.status_changed"] });
    const off = await endpoints.create(account, { url: "https://off.example/", events: ["attestation.created", "key.status_changed"], ownSubjects: false });
    if (!on.ok || !off.ok) throw new Error("unreachable");
    const uid = `0x${"33".repeat(32)}`;
    const binding: StoredAttestation = {
      ...review(uid, SUBJECT),
      schema: keyUid as HexString,
      data: encodeAbiParameters(parseAbiParameters(keySchema.schema), [SUBJECT, "did:key:z6Mk", "{}", ["sign"], [], 1n, 1n, 0n]) as HexString,
    };
    store.outboxRows.push({ seq: 1, kind: "attested", uid, blockNumber: 10n, txHash: null });
    await createWebhookFanOut({ store, records: () => Promise.resolve([binding]), schemaNames, clock })();
    const sent = [...store.deliveryRows.values()].map((d) => `${d.type}@${d.endpointId === on.value.id ? "on" : "off"}`).sort();
    expect(sent).toEqual(["attestation.created@on", "key.status_changed@off", "key.status_changed@on"]);
    const key = [...store.messages.values()].find((m) => m.type === "key.status_changed")!;
    expect(JSON.parse(key.body).data).toMatchObject({ subject: SUBJECT, kind: "key-binding", change: "written", key: "did:key:z6Mk", uid });
  });

  test("a revocation a deep reorg undid and an attestation of nobody's subject publish nothing but are consumed; a missing record waits", async () => {
    const { endpoints, store, clock } = setup();
    await endpoints.create(account, { url: "https://a.example/", events: ["attestation.created", "attestation.revoked"], subjects: [SUBJECT] });
    const [u1, u2, u3] = [`0x${"44".repeat(32)}`, `0x${"55".repeat(32)}`, `0x${"66".repeat(32)}`];
    const stray = { ...review(u2, SUBJECT), recipient: "0x00000000000000000000000000000000000000ff" as HexString };
    store.outboxRows.push(
      { seq: 1, kind: "revoked", uid: u1, blockNumber: 12n, txHash: null },
      { seq: 2, kind: "attested", uid: u2, blockNumber: 10n, txHash: null },
      { seq: 3, kind: "attested", uid: u3, blockNumber: 10n, txHash: null },
    );
    await createWebhookFanOut({ store, records: () => Promise.resolve([review(u1, SUBJECT, null), stray]), schemaNames, clock })();
    expect(store.outboxRows.map((r) => r.seq)).toEqual([3]);
    expect(store.deliveryRows.size).toBe(0);
  });
});

describe("createWebhookDelivery()", () => {
  async function queued(answer: (n: number) => number | null, retrySeconds = [5, 300]) {
    const { endpoints, store, clock } = setup();
    const created = await endpoints.create(account, { url: "https://hooks.example.com/", events: ["webhook.test"] });
    if (!created.ok) throw new Error("unreachable");
    let n = 0;
    const transport = fakeWebhookTransport({ answer: () => {
      const status = answer(++n);
      return status === null ? { ok: false, reason: "timeout" } : { ok: true, status };
    } });
    const worker = createWebhookDelivery({ store, transport, clock, holder: "w1", retrySeconds, maxInFlight: 8, perEndpoint: 4, perAccount: 8, leaseMs: 60_000 });
    const test = await endpoints.test(account, created.value.id);
    if (!test.ok) throw new Error("unreachable");
    return { store, clock, worker, transport, created: created.value, eventId: test.value.eventId };
  }

  test("a 2xx is delivered, signed so that the official verifier accepts it", async () => {
    const { worker, transport, store, created } = await queued(() => 204);
    expect(await worker.run()).toBe(1);
    await worker.idle();
    const [post] = transport.posts;
    const secret = store.endpoints.get(created.id)!.secret;
    expect(new Webhook(secret).verify(post!.body, post!.headers as Record<string, string>)).toMatchObject({ type: "webhook.test" });
    expect([...store.deliveryRows.values()][0]).toMatchObject({ state: "delivered", attempts: 1, lastStatus: 204 });
  });

  test("a test event whose endpoint's URL changed before it was sent is not sent: failed, nothing posted", async () => {
    const { endpoints, store, clock } = setup();
    const created = await endpoints.create(account, { url: "https://made-up.example/", events: ["webhook.test"] });
    if (!created.ok) throw new Error("unreachable");
    expect((await endpoints.test(account, created.value.id)).ok).toBe(true);
    // Pointed elsewhere before the worker ran: the event was asked for the first URL.
    expect((await endpoints.update(account, created.value.id, { url: "https://victim.example/hook" })).ok).toBe(true);
    const transport = fakeWebhookTransport({ answer: () => ({ ok: true, status: 200 }) });
    const worker = createWebhookDelivery({ store, transport, clock, holder: "w1", retrySeconds: [5], maxInFlight: 8, perEndpoint: 4, perAccount: 8, leaseMs: 60_000 });
    expect(await worker.run()).toBe(1);
    await worker.idle();
    expect(transport.posts).toHaveLength(0);
    expect([...store.deliveryRows.values()][0]).toMatchObject({ state: "failed", attempts: 1, lastStatus: null });
    // Nothing was sent: the endpoint is not failing for it (it was, and one real failure days later disabled it).
    expect(store.endpoints.get(created.value.id)).toMatchObject({ failingSinceMs: null, disabled: false });
    // One asked for the URL as it is now goes out.
    expect((await endpoints.test(account, created.value.id)).ok).toBe(true);
    await worker.run();
    await worker.idle();
    expect(transport.posts.map((post) => post.url)).toEqual(["https://victim.example/hook"]);
  });

  test("a 500 is retried after the first delay with the same webhook-id, then delivered", async () => {
    const { worker, transport, store, clock, eventId } = await queued((n) => (n === 1 ? 500 : 200));
    await worker.run();
    await worker.idle();
    expect([...store.deliveryRows.values()][0]).toMatchObject({ state: "pending", attempts: 1, lastStatus: 500, nextAttemptAtMs: clock.nowMs() + 5_000 });
    expect(await worker.run()).toBe(0);
    clock.set(clock.nowMs() + 5_000);
    expect(await worker.run()).toBe(1);
    await worker.idle();
    expect(transport.posts.map((p) => p.headers["webhook-id"])).toEqual([eventId, eventId]);
    expect([...store.deliveryRows.values()][0]).toMatchObject({ state: "delivered", attempts: 2, lastStatus: 200 });
  });

  test("after the last delay the delivery is failed", async () => {
    const { worker, store, clock } = await queued(() => null, [1]);
    await worker.run();
    await worker.idle();
    clock.set(clock.nowMs() + 1_000);
    await worker.run();
    await worker.idle();
    expect([...store.deliveryRows.values()][0]).toMatchObject({ state: "failed", attempts: 2, lastStatus: null });
  });

  test("an endpoint whose deliveries all failed for 5 days is disabled, by the delivery that failed for good", async () => {
    // Five retries a day apart: the sixth attempt, on day 5, fails it for good.
    const { worker, store, clock, created } = await queued(() => 500, Array.from({ length: 5 }, () => 86_400));
    for (let day = 0; day <= 5; day++) {
      // Failed attempts with retries ahead never disable it (one failed attempt after a quiet spell did).
      expect({ day, disabled: store.endpoints.get(created.id)!.disabled }).toEqual({ day, disabled: false });
      await worker.run();
      await worker.idle();
      clock.set(clock.nowMs() + 86_400_000);
    }
    expect(store.endpoints.get(created.id)!.disabled).toBe(true);
    expect([...store.deliveryRows.values()].every((d) => d.state === "failed")).toBe(true);
  });

  test("after a rotation both secrets sign for 24 hours, then only the new one", async () => {
    const { store, clock, worker, transport, created } = await queued(() => 200);
    const old = store.endpoints.get(created.id)!.secret;
    const setupAgain = createWebhookEndpoints({ store, transport, clock, random: fakeRandom(), allowPrivateNetwork: false });
    const rotated = await setupAgain.rotate(account, created.id);
    if (!rotated.ok) throw new Error("unreachable");
    await worker.run();
    await worker.idle();
    const headers = transport.posts[0]!.headers as Record<string, string>;
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(old).verify(transport.posts[0]!.body, headers)).toBeDefined();
    expect(new Webhook(rotated.value.secret).verify(transport.posts[0]!.body, headers)).toBeDefined();
    clock.set(clock.nowMs() + 24 * 3_600_000 + 1);
    await setupAgain.test(account, created.id);
    await worker.run();
    await worker.idle();
    expect(transport.posts[1]!.headers["webhook-signature"]!.split(" ")).toHaveLength(1);
  });

  test("attemptOutcome() follows the retry delays: 8 attempts with the default seven delays", () => {
    const delays = [5, 300, 1800, 7200, 18000, 36000, 36000];
    expect(attemptOutcome(1, 500, 0, delays)).toEqual({ state: "retry", status: 500, nextAttemptAtMs: 5_000 });
    expect(attemptOutcome(7, null, 0, delays)).toEqual({ state: "retry", status: null, nextAttemptAtMs: 36_000_000 });
    expect(attemptOutcome(8, 302, 0, delays)).toEqual({ state: "failed", status: 302 });
    expect(attemptOutcome(3, 299, 0, delays)).toEqual({ state: "delivered", status: 299 });
  });
});

describe("createSubmissionEvents()", () => {
  test("a settled submission of an account goes to its endpoints that asked for submission.settled, with a derived id", async () => {
    const { endpoints, store, clock } = setup();
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["submission.settled"] });
    await endpoints.create(account, { url: "https://b.example/", events: ["attestation.created"] });
    if (!a.ok) throw new Error("unreachable");
    const records = { find: (id: string) => Promise.resolve({ id, scope: `account:${account.id}`, ref: "r", chainId: 1, items: null, outcome: null, createdAtMs: 0, updatedAtMs: 0 }) };
    const settled = createSubmissionEvents({ store, records, clock });
    await settled({ submissionId: "sub-1", outcome: { state: "mined", txHash: "0xabc", uid: "0xdef", blockNumber: 7n, feeBumps: 0 } });
    expect([...store.deliveryRows.values()].map((d) => d.endpointId)).toEqual([a.value.id]);
    const [message] = [...store.messages.values()];
    expect(message!.id).toBe(derivedEventId("submission.settled", "sub-1"));
    expect(JSON.parse(message!.body)).toMatchObject({ type: "submission.settled", data: { submissionId: "sub-1", state: "mined", uid: "0xdef", blockNumber: 7 } });
  });

  test("a settlement that names its scope is told without reading the record again (issue 43); the public relay's is nobody's", async () => {
    const { endpoints, store, clock } = setup();
    const a = await endpoints.create(account, { url: "https://a.example/", events: ["submission.settled"] });
    if (!a.ok) throw new Error("unreachable");
    let finds = 0;
    const records = { find: () => (finds++, Promise.resolve(undefined)) };
    const settled = createSubmissionEvents({ store, records, clock });
    const outcome = { state: "mined", txHash: "0xabc", uid: "0xdef", blockNumber: 7n, feeBumps: 0 } as const;
    await settled({ submissionId: "sub-2", outcome, scope: "client:127.0.0.1" });
    expect(store.deliveryRows.size).toBe(0);
    await settled({ submissionId: "sub-3", outcome, scope: `account:${account.id}` });
    expect([...store.deliveryRows.values()].map((d) => d.endpointId)).toEqual([a.value.id]);
    expect(finds).toBe(0);
  });
});
