/**
 * Webhooks end to end (decisions §22, issue 35): the real service on loopback with Anvil and EAS, a receiver server on
 * loopback (http:// with ALLOW_PRIVATE_NETWORK), every delivery verified with the official `standardwebhooks` package.
 * No assertion depends on timing: each waits for an outcome with a generous deadline, and retries are made short by
 * WEBHOOK_RETRY_SECONDS.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Hex } from "viem";
import { Webhook } from "standardwebhooks";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import { type Stack, startStack } from "./harness.ts";
import { easWriter } from "./support/eas_writer.ts";
import { type ServiceProcess, startServiceProcess } from "./support/service_process.ts";
import { signedReviewBody } from "./support/review_signer.ts";
import { signInCookie } from "./support/sign_in.ts";
import { waitFor } from "./support/wait_for.ts";

/** The headers of a request as a plain object (lowercase names). */
function headersOf(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => (out[name] = value));
  return out;
}

type Received = { path: string; headers: Record<string, string>; body: string; status: number };

/** A receiver on loopback: records every request; a path answers the statuses queued for it, then 200. */
function startReceiver() {
  const received: Received[] = [];
  const queued = new Map<string, number[]>();
  let down = new Set<string>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = await request.text();
      const status = down.has(path) ? 503 : queued.get(path)?.shift() ?? 200;
      received.push({ path, headers: headersOf(request.headers), body, status });
      return new Response(status === 200 ? "ok" : "no", { status });
    },
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    received,
    queue: (path: string, statuses: number[]) => queued.set(path, statuses),
    setDown: (paths: string[]) => void (down = new Set(paths)),
    stop: () => server.stop(true),
  };
}

/** Sign-in as the tests do it: the SIWE domain app.test, challenges not limited. */
const SIGN_IN = { SIWE_DOMAINS: "app.test", SIWE_CHALLENGE_RATE_PER_MINUTE: "1000" };

const linked = findSchemaByName("linked-identifier")!;
const LINKED_UID = computeSchemaUid(linked) as Hex;
const ZERO = `0x${"0".repeat(64)}` as Hex;

let stack: Stack;
let receiver: ReturnType<typeof startReceiver>;
let writer: ReturnType<typeof easWriter>;
let attesterKey: Hex;
let cookie: string;
let base: string;

const api = (path: string, init: RequestInit & { cookie?: string } = {}) =>
  fetch(`${base}${path}`, {
    ...init,
    headers: { "content-type": "application/json", cookie: init.cookie ?? cookie, ...(init.headers as Record<string, string> | undefined) },
  });

async function attestLinked(subject: string): Promise<Hex> {
  const data = encodeSchemaData(linked.schema, { subject, linkedId: "did:web:other.example", proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
  if (!data.ok) throw new Error(data.message);
  const recipient = didToAddress(subject);
  if (!recipient.ok) throw new Error(recipient.message);
  const { uid } = await writer.attest(attesterKey, LINKED_UID, { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true });
  return uid;
}

async function createEndpoint(body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await api("/api/private/webhooks", { method: "POST", body: JSON.stringify(body) });
  const answer = await res.json() as { id: string; secret: string };
  expect(res.status).toBe(201);
  return answer;
}

const deliveredTo = (path: string, type: string, where?: (r: Received) => boolean) =>
  receiver.received.find((r) => r.path === path && r.status === 200 && (JSON.parse(r.body) as { type: string }).type === type && (where?.(r) ?? true));

beforeAll(async () => {
  receiver = startReceiver();
  stack = await startStack({
    env: { ...SIGN_IN, FREE_PLAN_SCHEMAS: "*", ALLOW_PRIVATE_NETWORK: "true", WEBHOOK_CONFIRMATIONS: "0", WEBHOOK_POLL_MS: "50", WEBHOOK_RETRY_SECONDS: "1,1,1" },
  });
  base = stack.baseUrl;
  writer = easWriter({ rpcUrl: stack.devnet.rpcUrl, easAddress: stack.devnet.easAddress });
  attesterKey = stack.devnet.keys.users[0] as Hex;
  cookie = await signInCookie(base, stack.devnet.keys.users[1] as Hex);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  receiver?.stop();
});

describe("webhooks on the real service", () => {
  test("an attestation on a watched subject is delivered as attestation.created, verifiable with standardwebhooks; its revocation as attestation.revoked", async () => {
    const subject = "did:web:watched.example";
    const endpoint = await createEndpoint({ url: receiver.url("/watch"), events: ["attestation.created", "attestation.revoked"], subjects: [subject] });
    expect(endpoint.secret).toMatch(/^whsec_/);
    const uid = await attestLinked(subject);
    await stack.sync();
    const created = await waitFor("attestation.created", () => deliveredTo("/watch", "attestation.created"));
    const payload = new Webhook(endpoint.secret).verify(created.body, created.headers) as { type: string; timestamp: string; data: Record<string, unknown> };
    expect(payload).toMatchObject({
      type: "attestation.created",
      data: { uid: uid.toLowerCase(), schema: "linked-identifier", schemaUid: LINKED_UID.toLowerCase(), subject, revoked: false, fields: { subject, linkedId: "did:web:other.example" } },
    });
    expect(payload.data.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(Number.isNaN(Date.parse(payload.timestamp))).toBe(false);

    await writer.revoke(attesterKey, LINKED_UID, uid);
    await stack.sync();
    const revoked = await waitFor("attestation.revoked", () => deliveredTo("/watch", "attestation.revoked"));
    expect(new Webhook(endpoint.secret).verify(revoked.body, revoked.headers)).toMatchObject({ type: "attestation.revoked", data: { uid: uid.toLowerCase(), revoked: true } });
    expect(revoked.headers["webhook-id"]).not.toBe(created.headers["webhook-id"]);

    // The receiver has the request before the service has its answer and records the delivery: the list is read once
    // both are recorded (it was read at once, and on a fresh machine the revocation was listed as not yet delivered).
    type Deliveries = { items: { eventId: string; type: string; attempts: number; deliveredAt: string | null }[] };
    const list = await waitFor("both deliveries recorded", async () => {
      const page = await (await api(`/api/private/webhooks/${endpoint.id}/deliveries`)).json() as Deliveries;
      return page.items.length === 2 && page.items.every((i) => i.deliveredAt !== null) ? page : undefined;
    });
    expect(list.items.map((i) => [i.type, i.attempts, i.deliveredAt !== null])).toEqual([["attestation.revoked", 1, true], ["attestation.created", 1, true]]);
  }, 90_000);

  test("a 500 is retried after WEBHOOK_RETRY_SECONDS with the same webhook-id, then delivered", async () => {
    const subject = "did:web:flaky.example";
    receiver.queue("/flaky", [500]);
    const endpoint = await createEndpoint({ url: receiver.url("/flaky"), events: ["attestation.created"], subjects: [subject] });
    await attestLinked(subject);
    await stack.sync();
    const ok = await waitFor("the retry's 200", () => deliveredTo("/flaky", "attestation.created"));
    const attempts = receiver.received.filter((r) => r.path === "/flaky");
    expect(attempts.map((r) => r.status)).toEqual([500, 200]);
    expect(new Set(attempts.map((r) => r.headers["webhook-id"]))).toEqual(new Set([ok.headers["webhook-id"]]));
    for (const attempt of attempts) expect(new Webhook(endpoint.secret).verify(attempt.body, attempt.headers)).toMatchObject({ type: "attestation.created" });
    const list = await waitFor("the delivery recorded", async () => {
      const page = await (await api(`/api/private/webhooks/${endpoint.id}/deliveries`)).json() as { items: { attempts: number; lastStatus: number; deliveredAt: string | null }[] };
      return page.items[0]?.deliveredAt === null ? undefined : page;
    });
    expect(list.items[0]).toMatchObject({ attempts: 2, lastStatus: 200 });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^ats_webhook_deliveries_total\{outcome="retry"\} [1-9]/m);
    expect(metrics).toMatch(/^ats_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
    expect(metrics).toMatch(/^ats_webhook_queue_depth [0-9]+/m);
    expect(metrics).toMatch(/^ats_webhook_oldest_pending_seconds [0-9]+/m);
  }, 90_000);

  test("the account's proven subject (its wallet's did:pkh) is watched while ownSubjects; a key binding of it is key.status_changed", async () => {
    const { subjects } = await (await api("/api/private/subjects")).json() as { subjects: { canonicalDid: string }[] };
    const own = subjects[0]!.canonicalDid;
    await createEndpoint({ url: receiver.url("/mine-on"), events: ["attestation.created", "key.status_changed"] });
    await createEndpoint({ url: receiver.url("/mine-off"), events: ["attestation.created", "key.status_changed"], ownSubjects: false });
    const binding = findSchemaByName("key-binding")!;
    const data = encodeSchemaData(binding.schema, { subject: own, keyId: "did:key:z6MkwebhookTest", publicKeyJwk: "{}", keyPurpose: ["sign"], proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
    const recipient = didToAddress(own);
    if (!data.ok || !recipient.ok) throw new Error("bad input");
    const { uid } = await writer.attest(attesterKey, computeSchemaUid(binding) as Hex, { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true });
    await stack.sync();
    const created = await waitFor("attestation.created of the own subject", () => deliveredTo("/mine-on", "attestation.created"));
    expect(JSON.parse(created.body)).toMatchObject({ data: { uid: uid.toLowerCase(), subject: own, schema: "key-binding" } });
    for (const path of ["/mine-on", "/mine-off"]) {
      const changed = await waitFor(`key.status_changed at ${path}`, () => deliveredTo(path, "key.status_changed"));
      expect(JSON.parse(changed.body)).toMatchObject({ data: { subject: own, kind: "key-binding", change: "written", key: "did:key:z6MkwebhookTest", uid: uid.toLowerCase() } });
    }
    // ownSubjects false: no attestation.created (the key.status_changed above was fanned out in the same round).
    expect(receiver.received.filter((r) => r.path === "/mine-off").map((r) => JSON.parse(r.body).type)).toEqual(["key.status_changed"]);
  }, 60_000);

  test("a test event; after a rotation both signatures verify", async () => {
    const endpoint = await createEndpoint({ url: receiver.url("/own"), events: ["webhook.test"] });
    const test1 = await api(`/api/private/webhooks/${endpoint.id}/test`, { method: "POST", body: "{}" });
    expect(test1.status).toBe(202);
    const { eventId } = await test1.json() as { eventId: string };
    const first = await waitFor("webhook.test", () => deliveredTo("/own", "webhook.test", (r) => r.headers["webhook-id"] === eventId));
    expect(new Webhook(endpoint.secret).verify(first.body, first.headers)).toMatchObject({ type: "webhook.test" });

    const rotated = await (await api(`/api/private/webhooks/${endpoint.id}/rotate-secret`, { method: "POST", body: "{}" })).json() as { secret: string };
    expect(rotated.secret).not.toBe(endpoint.secret);
    const { eventId: second } = await (await api(`/api/private/webhooks/${endpoint.id}/test`, { method: "POST", body: "{}" })).json() as { eventId: string };
    const after = await waitFor("the test after rotation", () => deliveredTo("/own", "webhook.test", (r) => r.headers["webhook-id"] === second));
    expect(after.headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(after.body, after.headers)).toMatchObject({ type: "webhook.test" });
    expect(new Webhook(endpoint.secret).verify(after.body, after.headers)).toMatchObject({ type: "webhook.test" });
  }, 60_000);

  test("under an Idempotency-Key a retried create, rotation or test is the first answer: one endpoint, one rotation, the old secret still verifies", async () => {
    // Found by attack: the webhook writes ignored the key, so a rotation retried after a lost answer rotated twice and
    // the receiver's secret stopped verifying at once, and a retried create took a second of the account's 10 slots.
    const keyed = (path: string, body: string, key: string) => api(path, { method: "POST", body, headers: { "idempotency-key": key } });
    const body = JSON.stringify({ url: receiver.url("/keyed"), events: ["webhook.test"] });
    const createKey = crypto.randomUUID();
    const created = await keyed("/api/private/webhooks", body, createKey);
    const again = await keyed("/api/private/webhooks", body, createKey);
    expect([created.status, again.status, again.headers.get("idempotent-replayed")]).toEqual([201, 201, "true"]);
    const endpoint = await created.json() as { id: string; secret: string };
    expect(await again.json()).toMatchObject({ id: endpoint.id, secret: endpoint.secret });
    const other = await keyed("/api/private/webhooks", JSON.stringify({ url: receiver.url("/keyed2"), events: ["webhook.test"] }), createKey);
    expect([other.status, (await other.json() as { code: string }).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    expect((await api("/api/private/webhooks", { method: "POST", body, headers: { "idempotency-key": "" } })).status).toBe(400);

    const rotateKey = crypto.randomUUID();
    const lost = await (await keyed(`/api/private/webhooks/${endpoint.id}/rotate-secret`, "{}", rotateKey)).json() as { secret: string };
    const retried = await keyed(`/api/private/webhooks/${endpoint.id}/rotate-secret`, "{}", rotateKey);
    expect(retried.headers.get("idempotent-replayed")).toBe("true");
    expect((await retried.json() as { secret: string }).secret).toBe(lost.secret);
    const testKey = crypto.randomUUID();
    const sent = await (await keyed(`/api/private/webhooks/${endpoint.id}/test`, "{}", testKey)).json() as { eventId: string };
    expect(await (await keyed(`/api/private/webhooks/${endpoint.id}/test`, "{}", testKey)).json()).toEqual(sent);
    const delivered = await waitFor("the keyed test", () => deliveredTo("/keyed", "webhook.test", (r) => r.headers["webhook-id"] === sent.eventId));
    // One rotation: the new secret and the receiver's original one both verify.
    expect(new Webhook(lost.secret).verify(delivered.body, delivered.headers)).toMatchObject({ type: "webhook.test" });
    expect(new Webhook(endpoint.secret).verify(delivered.body, delivered.headers)).toMatchObject({ type: "webhook.test" });
    expect(receiver.received.filter((r) => r.path === "/keyed")).toHaveLength(1);
  }, 60_000);

  test("200 test calls at once to one endpoint: the account's burst of 20 a minute queued, the rest 429 RATE_LIMITED with Retry-After, one delivery per 202", async () => {
    // The budget is the account's: an account that sent none yet.
    const fresh = await signInCookie(base, stack.devnet.keys.users[5] as Hex);
    const created = await api("/api/private/webhooks", { method: "POST", cookie: fresh, body: JSON.stringify({ url: receiver.url("/burst"), events: ["webhook.test"] }) });
    const endpoint = await created.json() as { id: string };
    expect([created.status, endpoint]).toMatchObject([201, {}]);
    const answers = await Promise.all(Array.from({ length: 200 }, () => api(`/api/private/webhooks/${endpoint.id}/test`, { method: "POST", body: "{}", cookie: fresh })));
    const accepted = answers.filter((a) => a.status === 202);
    const refused = answers.filter((a) => a.status === 429);
    expect(accepted.length + refused.length).toBe(200);
    // The bucket starts full (20) and gains one every 3 s: at least the burst, far from all 200.
    expect(accepted.length).toBeGreaterThanOrEqual(20);
    expect(refused.length).toBeGreaterThan(100);
    expect(Number(refused[0]!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await refused[0]!.json()).toMatchObject({ code: "RATE_LIMITED" });
    const page = await (await api(`/api/private/webhooks/${endpoint.id}/deliveries?limit=100`, { cookie: fresh })).json() as { items: unknown[] };
    expect(page.items).toHaveLength(accepted.length);
    await waitFor("every accepted test delivered", () => receiver.received.filter((r) => r.path === "/burst").length === accepted.length ? true : undefined);
  }, 60_000);

  test("a private relay submission of the account is pushed as submission.settled", async () => {
    const endpoint = await createEndpoint({ url: receiver.url("/settled"), events: ["submission.settled"] });
    const target = { chainId: stack.service.chainId, easAddress: stack.devnet.easAddress, schemaUids: stack.devnet.schemaUids };
    const body = await signedReviewBody(target, stack.devnet.keys.users[1] as Hex, { data: { subject: "did:web:relayed.example", version: "1", ratingValue: 4, reviewBody: "pushed", screenshotUrls: [], proofs: [] } });
    const relayed = await api("/api/private/relay/eas/delegated-attest", { method: "POST", body: JSON.stringify(body) });
    const answer = await relayed.json() as { submissionId: string; uid: string; txHash: string };
    expect(relayed.status).toBe(200);
    const settled = await waitFor("submission.settled", () => deliveredTo("/settled", "submission.settled"));
    expect(new Webhook(endpoint.secret).verify(settled.body, settled.headers)).toMatchObject({
      type: "submission.settled",
      data: {
        submissionId: answer.submissionId,
        state: "mined",
        uid: answer.uid,
        txHash: answer.txHash,
        // A one-chain deployment named no chain here (decisions §30: every event carries it).
        chain: { chainId: stack.service.chainId, caip2: `eip155:${stack.service.chainId}`, easContract: stack.devnet.easAddress.toLowerCase() },
      },
    });
  }, 60_000);

  test("an OAuth token with webhooks:write manages the account's endpoints; one without it is 403 insufficient_scope", async () => {
    const client = async (scope: string) => {
      const created = await api("/api/private/oauth/clients", { method: "POST", body: JSON.stringify({ client_name: `wh ${scope}`, scope, grant_types: ["client_credentials"] }) });
      const { client_id, client_secret } = await created.json() as { client_id: string; client_secret: string };
      expect(created.status).toBe(201);
      const token = await fetch(`${base}/oauth/token`, {
        method: "POST",
        headers: { authorization: `Basic ${btoa(`${client_id}:${client_secret}`)}`, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "client_credentials", scope }),
      });
      expect(token.status).toBe(200);
      return (await token.json() as { access_token: string }).access_token;
    };
    const writer = await client("webhooks:write");
    const listed = await fetch(`${base}/api/private/webhooks`, { headers: { authorization: `Bearer ${writer}` } });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { webhooks: unknown[] }).webhooks.length).toBeGreaterThan(0);
    const made = await fetch(`${base}/api/private/webhooks`, {
      method: "POST",
      headers: { authorization: `Bearer ${writer}`, "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url("/bearer"), events: ["webhook.test"] }),
    });
    expect(made.status).toBe(201);
    const reader = await client("account:read");
    const refused = await fetch(`${base}/api/private/webhooks`, { headers: { authorization: `Bearer ${reader}` } });
    expect([refused.status, ((await refused.json()) as { code: string }).code]).toEqual([403, "insufficient_scope"]);
  }, 60_000);

  test("bad input is 400 naming the field, another account's endpoint 404, no credential 401", async () => {
    const bad = await api("/api/private/webhooks", { method: "POST", body: JSON.stringify({ url: receiver.url("/x"), events: ["nope"] }) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "INVALID_INPUT", error: expect.stringMatching(/^events\[0\]/) });
    const mine = await createEndpoint({ url: receiver.url("/mine"), events: ["webhook.test"] });
    const stranger = await signInCookie(base, stack.devnet.keys.users[2] as Hex);
    for (const [method, path] of [["GET", ""], ["PATCH", ""], ["DELETE", ""], ["POST", "/test"], ["POST", "/rotate-secret"], ["GET", "/deliveries"]] as const) {
      const res = await api(`/api/private/webhooks/${mine.id}${path}`, { method, cookie: stranger, ...(method === "GET" || method === "DELETE" ? {} : { body: "{}" }) });
      expect({ method, path, status: res.status, body: await res.json() }).toMatchObject({ method, path, status: 404, body: { code: "WEBHOOK_NOT_FOUND" } });
    }
    const anonymous = await fetch(`${base}/api/private/webhooks`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: "UNAUTHENTICATED" });
  }, 60_000);

  test("without ALLOW_PRIVATE_NETWORK a loopback or private URL is refused with 400", async () => {
    const strict = await stack.restartService({ ALLOW_PRIVATE_NETWORK: "false", WEBHOOK_DELIVERY: "off" });
    const strictCookie = await signInCookie(strict.url, stack.devnet.keys.users[3] as Hex);
    for (const url of [receiver.url("/private"), "https://127.0.0.1/hook", "https://[::1]/hook", "https://169.254.169.254/latest", "https://10.1.2.3/", "https://localhost/"]) {
      const res = await fetch(`${strict.url}/api/private/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie: strictCookie },
        body: JSON.stringify({ url, events: ["webhook.test"] }),
      });
      expect({ url, status: res.status, body: await res.json() }).toMatchObject({ url, status: 400, body: { code: "INVALID_INPUT", error: expect.stringMatching(/^url/) } });
    }
  }, 60_000);
});

describe("kill -9 of the service loses no event", () => {
  const running: ServiceProcess[] = [];
  afterAll(async () => {
    for (const service of running) if (service.proc.exitCode === null && service.proc.signalCode === null) await service.stop();
  });

  test("outbox rows the follower wrote before a kill -9 are delivered by the next start; a delivery pending at the kill too", async () => {
    const env = {
      PORT: "0",
      HOST: "127.0.0.1",
      RPC_URL: stack.devnet.rpcUrl,
      TRUST_ANCHORS_PATH: stack.devnet.trustAnchorsPath,
      DELEGATE_PRIVATE_KEY: stack.devnet.keys.delegate,
      WITNESS_PRIVATE_KEY: stack.devnet.keys.witness,
      DATABASE_PATH: join(stack.dir, "crash.sqlite"),
      DATA_DIR: join(stack.dir, "crash"),
      INDEX_CONFIRMATIONS: "0",
      INDEX_POLL_MS: "100",
      ALLOW_PRIVATE_NETWORK: "true",
      WEBHOOK_POLL_MS: "50",
      WEBHOOK_RETRY_SECONDS: "1,1,1,1,1,1,1,1,1,1",
      LOG_LEVEL: "warn",
      ...SIGN_IN,
    };
    // First life: the follower writes the outbox, nobody fans it out (WEBHOOK_DELIVERY=off).
    const first = await startServiceProcess({ ...env, WEBHOOK_DELIVERY: "off" }, 60_000);
    running.push(first);
    const key = stack.devnet.keys.users[4] as Hex;
    const crashCookie = await signInCookie(first.url, key);
    const post = (url: string, path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json", cookie: crashCookie }, body: JSON.stringify(body) });
    const subject = "did:web:crash.example";
    const created = await post(first.url, "/api/private/webhooks", { url: receiver.url("/crash"), events: ["attestation.created"], subjects: [subject] });
    const endpoint = await created.json() as { id: string; secret: string };
    expect(created.status).toBe(201);
    const uid = await attestLinked(subject);
    await waitFor("the first life to index the attestation", async () => ((await fetch(`${first.url}/v1/attestations/${uid}`)).status === 200 ? true : undefined));
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    expect(receiver.received.filter((r) => r.path === "/crash")).toEqual([]);

    // Second life: the receiver is down (503), so the delivery is attempted and left pending; then killed again.
    receiver.setDown(["/crash"]);
    const second = await startServiceProcess(env, 60_000);
    running.push(second);
    await waitFor("an attempt of the second life", () => receiver.received.find((r) => r.path === "/crash"));
    second.proc.kill("SIGKILL");
    await second.proc.exited;

    // Third life: the receiver is up; the same event, the same id, is delivered and verifies (once the claim the
    // killed instance may have held at its death has run out: 20 s).
    receiver.setDown([]);
    const third = await startServiceProcess(env, 60_000);
    running.push(third);
    const delivered = await waitFor("the delivery after the restarts", () => deliveredTo("/crash", "attestation.created"), 120_000);
    expect(new Webhook(endpoint.secret).verify(delivered.body, delivered.headers)).toMatchObject({ data: { uid: uid.toLowerCase(), subject } });
    expect(new Set(receiver.received.filter((r) => r.path === "/crash").map((r) => r.headers["webhook-id"])).size).toBe(1);
    await third.stop();
  }, 300_000);
});
