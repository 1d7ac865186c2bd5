/**
 * Webhooks with several instances on one PostgreSQL (decisions §22, issue 35): three `bun main.ts` processes, one Anvil
 * with EAS, one PostgreSQL, a receiver on loopback (http:// with ALLOW_PRIVATE_NETWORK) that records every request and
 * verifies it with the official `standardwebhooks` package. Each (event, endpoint) pair is answered 2xx exactly once
 * (a 500 is retried with the same webhook-id), a receiver holding its requests open gets at most 4 at once from all the
 * instances together and delays no other endpoint, and a `kill -9` of an instance mid-delivery loses nothing: its
 * leased deliveries are taken over once their lease runs out. The one duplicate at-least-once allows (a delivery the
 * receiver answered 2xx that the dead instance never recorded) is made on purpose (SIGSTOP, answer, SIGKILL) and carries
 * the same webhook-id. No assertion depends on timing: each waits for an outcome (the receiver's records, the
 * deliveries' states in PostgreSQL) with a generous deadline, and a held request is answered 200 only where a sender's
 * 10 s deadline cannot race the answer (the stopped instance's); the others get a 503 and are retried.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import type { Hex } from "viem";
import { generatePrivateKey } from "viem/accounts";
import { Webhook } from "standardwebhooks";
import type { Devnet } from "../adapters/devnet/mod.ts";
import { didToAddress } from "../domain/did/mod.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { computeSchemaUid, findSchemaByName } from "../domain/schemas.ts";
import { easWriter } from "./support/eas_writer.ts";
import { postgresUnavailableReason } from "./support/postgres.ts";
import { type PostgresInstances, startPostgresInstances } from "./support/postgres_instances.ts";
import type { ServiceProcess } from "./support/service_process.ts";
import { signInCookie } from "./support/sign_in.ts";
import { waitFor as waitForWithin } from "./support/wait_for.ts";

/** Waits for an outcome, with the longer deadline of three instances on two cores (90 s unless given). */
const waitFor = <T>(what: string, find: () => T | undefined | Promise<T | undefined>, deadlineMs = 90_000) => waitForWithin(what, find, deadlineMs);

const skip = postgresUnavailableReason();
if (skip !== undefined) console.warn(`[webhooks_multi_instance_test] ${skip}`);

/** One request the receiver got: `status` 0 when the sender went away before an answer. */
type Receipt = { path: string; webhookId: string; uid: string; status: number; verified: boolean };

/**
 * The receiver: every request is verified with its endpoint's secret and recorded. A path may answer 500 to the first
 * attempt of chosen events, or hold its requests open until released; open requests are counted per path (a request
 * ends when answered or when its sender goes away).
 */
function startReceiver() {
  const receipts: Receipt[] = [];
  const secrets = new Map<string, string>();
  const failFirst = new Map<string, (webhookId: string) => boolean>();
  const attempted = new Set<string>();
  const holding = new Set<string>();
  const held = new Map<string, { webhookId: string; answer: (status: number) => boolean }[]>();
  const open = new Map<string, number>();
  const maxOpen = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const body = await request.text();
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => (headers[name] = value));
      const webhookId = headers["webhook-id"] ?? "";
      let verified = false;
      let uid = "";
      try {
        const event = new Webhook(secrets.get(path) ?? "whsec_AAAA").verify(body, headers) as { data: { uid?: string } };
        verified = true;
        uid = String(event.data.uid ?? "");
      } catch {
        // recorded as not verified; the test fails on it
      }
      open.set(path, (open.get(path) ?? 0) + 1);
      maxOpen.set(path, Math.max(maxOpen.get(path) ?? 0, open.get(path)!));
      let status: number;
      if (!verified) status = 400;
      else if (holding.has(path)) {
        status = await new Promise<number>((resolve) => {
          let done = false;
          const answer = (s: number) => {
            if (done) return false;
            done = true;
            resolve(s);
            return true;
          };
          held.set(path, [...(held.get(path) ?? []), { webhookId, answer }]);
          request.signal.addEventListener("abort", () => answer(0));
          if (request.signal.aborted) answer(0);
        });
      } else {
        const key = `${path} ${webhookId}`;
        const first = !attempted.has(key);
        attempted.add(key);
        status = first && failFirst.get(path)?.(webhookId) === true ? 500 : 200;
      }
      open.set(path, open.get(path)! - 1);
      receipts.push({ path, webhookId, uid, status, verified });
      return new Response(status === 200 ? "ok" : "no", { status: status === 0 ? 499 : status });
    },
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    receipts,
    secrets,
    failFirst,
    hold: (path: string) => void holding.add(path),
    /** Answers every request still held at `path` with `status` (their webhook-ids); later requests are answered at once. */
    release(path: string, status: number | ((webhookId: string) => number)): string[] {
      holding.delete(path);
      const statusOf = typeof status === "number" ? () => status : status;
      const answered = (held.get(path) ?? []).filter((h) => h.answer(statusOf(h.webhookId))).map((h) => h.webhookId);
      held.delete(path);
      return answered;
    },
    open: (path: string) => open.get(path) ?? 0,
    maxOpen: (path: string) => maxOpen.get(path) ?? 0,
    stop: () => server.stop(true),
  };
}

const linked = findSchemaByName("linked-identifier")!;
const LINKED_UID = computeSchemaUid(linked) as Hex;

let stack: PostgresInstances | undefined;
let devnet: Devnet;
let db: SQL;
let receiver: ReturnType<typeof startReceiver>;
let instances: ServiceProcess[] = [];

beforeAll(async () => {
  if (skip !== undefined) return;
  receiver = startReceiver();
  stack = await startPostgresInstances("ats-whmulti-");
  devnet = stack.devnet;
  db = new SQL(stack.pg.url);
  instances = await stack.start({
    HOST: "127.0.0.1",
    SIWE_DOMAINS: "app.test",
    SIWE_CHALLENGE_RATE_PER_MINUTE: "1000",
    FREE_PLAN_SCHEMAS: "*",
    INDEX_CONFIRMATIONS: "0",
    INDEX_POLL_MS: "100",
    ALLOW_PRIVATE_NETWORK: "true",
    WEBHOOK_CONFIRMATIONS: "0",
    WEBHOOK_POLL_MS: "50",
    WEBHOOK_RETRY_SECONDS: "1,1,1,1,1,1,1,1,1,1",
    // Two at once per instance: an endpoint's 4 in flight then need two instances, so the bound is one for all of them
    // (three instances holding their own 4 would be 6 at the receiver).
    WEBHOOK_MAX_IN_FLIGHT: "2",
  }, { count: 3, timeoutMs: 60_000 });
}, 180_000);
afterAll(async () => {
  await db?.close();
  // The instance the crash test killed is skipped; the others exit cleanly.
  const codes = await stack?.stop() ?? [];
  receiver?.stop();
  for (const code of codes) expect(code).toBe(0);
});

/** A fresh account signed in (sessions live in PostgreSQL, so at any instance); registers endpoints at instance 0. */
async function account() {
  const cookie = await signInCookie(instances[0]!.url, generatePrivateKey());
  return {
    /** Registers `path` of the receiver for attestation.created on `subject`; its secret goes to the receiver. */
    async endpoint(path: string, subject: string): Promise<string> {
      const res = await fetch(`${instances[0]!.url}/api/private/webhooks`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify({ url: receiver.url(path), events: ["attestation.created"], subjects: [subject] }),
      });
      const body = await res.json() as { id: string; secret: string };
      expect(res.status).toBe(201);
      receiver.secrets.set(path, body.secret);
      return body.id;
    },
    async patchSubjects(id: string, subjects: string[]): Promise<void> {
      const res = await fetch(`${instances[0]!.url}/api/private/webhooks/${id}`, {
        method: "PATCH",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify({ subjects }),
      });
      expect(res.status).toBe(200);
    },
  };
}

/** Writes `n` linked-identifier attestations about `subject`, 50 to an EAS transaction; their uids (lowercase). */
async function attestMany(subject: string, n: number): Promise<string[]> {
  if (n > 50) return [...await attestMany(subject, 50), ...await attestMany(subject, n - 50)];
  const recipient = didToAddress(subject);
  if (!recipient.ok) throw new Error(recipient.message);
  const inputs = Array.from({ length: n }, (_, i) => {
    const data = encodeSchemaData(linked.schema, { subject, linkedId: `did:web:linked${i}.example`, proofs: [], issuedAt: 1, effectiveAt: 1, expiresAt: 0 });
    if (!data.ok) throw new Error(data.message);
    return { recipient: recipient.value as Hex, data: data.value as Hex, revocable: true };
  });
  const uids = await easWriter({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress as Hex }).multiAttest(devnet.keys.users[0] as Hex, LINKED_UID, inputs);
  expect(uids).toHaveLength(n);
  return uids.map((u) => u.toLowerCase());
}

/** Resolves once the endpoints have `expected` deliveries in all, every one delivered (nothing pending or leased). */
function allDelivered(endpointIds: readonly string[], expected: number) {
  return waitFor(`${expected} deliveries recorded delivered`, async () => {
    const [row] = await db`SELECT COUNT(*) AS n, COUNT(*) FILTER (WHERE state = 'delivered' AND lease_holder IS NULL) AS delivered
                             FROM webhook_deliveries WHERE endpoint_id = ANY(${db.array([...endpointIds], "TEXT")})`;
    return Number(row.n) === expected && Number(row.delivered) === expected ? true : undefined;
  }, 120_000);
}

/** The receipts at `paths`, 2xx counted per (event, path). */
function tally(paths: readonly string[]) {
  const mine = receiver.receipts.filter((r) => paths.includes(r.path));
  const ok = new Map<string, number>();
  for (const r of mine) if (r.status >= 200 && r.status < 300) ok.set(`${r.uid} ${r.path}`, (ok.get(`${r.uid} ${r.path}`) ?? 0) + 1);
  return { mine, ok };
}

/** Every receipt of an attestation carries one webhook-id, the same at every endpoint and on every retry. */
function expectOneIdPerEvent(mine: readonly Receipt[]) {
  const ids = new Map<string, Set<string>>();
  for (const r of mine) ids.set(r.uid, (ids.get(r.uid) ?? new Set()).add(r.webhookId));
  for (const [uid, set] of ids) expect({ uid, ids: set.size }).toEqual({ uid, ids: 1 });
  expect(new Set([...ids.values()].map((s) => [...s][0])).size).toBe(ids.size);
}

/** `ats_webhook_deliveries_total{outcome="delivered"}` at each live instance. */
async function deliveredMetric(of: readonly ServiceProcess[]): Promise<number[]> {
  return await Promise.all(of.map(async (p) => {
    const text = await (await fetch(`${p.url}/metrics`)).text();
    return Number(/^ats_webhook_deliveries_total\{outcome="delivered"\} (\d+)/m.exec(text)?.[1] ?? 0);
  }));
}

const pairs = (uids: readonly string[], paths: readonly string[]) => uids.flatMap((uid) => paths.map((path) => `${uid} ${path}`)).sort();

describe.skipIf(skip !== undefined)(`webhooks from three instances on one PostgreSQL${skip ? ` (skipped: ${skip})` : ""}`, () => {
  test("30 events to 3 endpoints: each (event, endpoint) answered 2xx exactly once, verified, one webhook-id per event", async () => {
    const subject = "did:web:many.example";
    const paths = ["/many-a", "/many-b", "/many-c"];
    const me = await account();
    const ids: string[] = [];
    for (const path of paths) ids.push(await me.endpoint(path, subject));
    const before = await deliveredMetric(instances);
    const uids = await attestMany(subject, 30);
    await allDelivered(ids, 90);
    const { mine, ok } = tally(paths);
    expect(mine.every((r) => r.verified)).toBe(true);
    // No retry was needed, so nothing was sent twice: one request per pair, each answered 200.
    expect(mine).toHaveLength(90);
    expect([...ok.keys()].sort()).toEqual(pairs(uids, paths));
    expect([...ok.values()].every((n) => n === 1)).toBe(true);
    expectOneIdPerEvent(mine);
    for (const path of paths) expect(receiver.maxOpen(path)).toBeLessThanOrEqual(4);
    // Each recorded delivery is counted once by the instance that made it: 90 in all.
    const after = await deliveredMetric(instances);
    const made = after.map((n, i) => n - before[i]!);
    expect(made.reduce((a, b) => a + b, 0)).toBe(90);
    console.log(`[webhooks_multi_instance_test] deliveries per instance: ${made.join(", ")}`);
  }, 180_000);

  test("a 500 to a first attempt is retried with the same webhook-id and delivered once", async () => {
    const subject = "did:web:flaky.example";
    const paths = ["/flaky-all", "/flaky-some"];
    receiver.failFirst.set("/flaky-all", () => true);
    // Half the events, by a bit of their id.
    const some = (id: string) => id.charCodeAt(id.length - 1) % 2 === 0;
    receiver.failFirst.set("/flaky-some", some);
    const me = await account();
    const ids: string[] = [];
    for (const path of paths) ids.push(await me.endpoint(path, subject));
    const uids = await attestMany(subject, 20);
    await allDelivered(ids, 40);
    const { mine, ok } = tally(paths);
    expect(mine.every((r) => r.verified)).toBe(true);
    expect([...ok.keys()].sort()).toEqual(pairs(uids, paths));
    expect([...ok.values()].every((n) => n === 1)).toBe(true);
    expectOneIdPerEvent(mine);
    // Each pair: one 500 then one 200 where the receiver failed the first attempt, else one 200.
    for (const path of paths) {
      for (const uid of uids) {
        const statuses = mine.filter((r) => r.path === path && r.uid === uid).map((r) => r.status);
        const failed = receiver.failFirst.get(path)!(mine.find((r) => r.uid === uid)!.webhookId);
        expect({ path, uid, statuses }).toEqual({ path, uid, statuses: failed ? [500, 200] : [200] });
      }
    }
    // PostgreSQL recorded each attempt once: 40 deliveries, one attempt more for each first attempt that failed.
    const failures = mine.filter((r) => r.status === 500).length;
    const [row] = await db`SELECT COUNT(*) AS n, SUM(attempts) AS attempts FROM webhook_deliveries WHERE endpoint_id = ANY(${db.array(ids, "TEXT")})`;
    expect([Number(row.n), Number(row.attempts)]).toEqual([40, 40 + failures]);
    expect(failures).toBeGreaterThanOrEqual(20);
  }, 180_000);

  test("a receiver holding its requests, with a backlog of 300, gets at most 4 at once from all instances and delays no other endpoint", async () => {
    const subject = "did:web:slow.example";
    const backlogSubject = "did:web:backlog.example";
    const paths = ["/slow", "/fast-a", "/fast-b"];
    receiver.hold("/slow");
    const me = await account();
    const slowId = await me.endpoint("/slow", subject);
    await me.patchSubjects(slowId, [subject, backlogSubject]);
    const ids = [slowId, await me.endpoint("/fast-a", subject), await me.endpoint("/fast-b", subject)];
    // The slow endpoint's backlog is older than the others' events, and longer than a claim looks ahead.
    const backlog = await attestMany(backlogSubject, 300);
    const holders = await waitFor("the backlog queued, 4 of it held open under 4 leases", async () => {
      const [row] = await db`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = ${slowId}`;
      if (Number(row.n) !== 300 || receiver.open("/slow") !== 4) return undefined;
      const leased = await db`SELECT lease_holder FROM webhook_deliveries WHERE endpoint_id = ${slowId} AND state = 'pending' AND lease_holder IS NOT NULL`;
      return leased.length === 4 && receiver.open("/slow") === 4 ? new Set(leased.map((r: { lease_holder: string }) => r.lease_holder)) : undefined;
    });
    // Each instance sends 2 at once: the slow endpoint's 4 are held by two instances or three, and no more are sent.
    expect(holders.size).toBeGreaterThanOrEqual(2);
    const uids = await attestMany(subject, 30);
    // The other endpoints get every event while the slow one has delivered none.
    await waitFor("the fast endpoints' 60 deliveries", () => (tally(["/fast-a", "/fast-b"]).ok.size === 60 ? true : undefined));
    expect(tally(["/slow"]).ok.size).toBe(0);
    expect(receiver.maxOpen("/slow")).toBe(4);
    console.log(`[webhooks_multi_instance_test] instances holding the slow endpoint's 4 leases: ${holders.size}`);
    // Released with a 503 (a retry follows), so an answer racing the sender's 10 s deadline never counts as delivered.
    receiver.release("/slow", 503);
    await allDelivered(ids, 390);
    const { mine, ok } = tally(paths);
    expect(mine.every((r) => r.verified)).toBe(true);
    expect([...ok.keys()].sort()).toEqual([...pairs(uids, paths), ...pairs(backlog, ["/slow"])].sort());
    expect([...ok.values()].every((n) => n === 1)).toBe(true);
    expectOneIdPerEvent(mine);
    expect(receiver.maxOpen("/slow")).toBe(4);
    for (const path of paths) expect(receiver.maxOpen(path)).toBeLessThanOrEqual(4);
  }, 240_000);

  test("kill -9 of an instance holding leased deliveries: the others take them over and deliver every event", async () => {
    const subject = "did:web:crash.example";
    const paths = ["/crash-hold", "/crash-ok"];
    receiver.hold("/crash-hold");
    const me = await account();
    const ids: string[] = [];
    for (const path of paths) ids.push(await me.endpoint(path, subject));
    const holdId = ids[0]!;
    const uids = await attestMany(subject, 30);
    // Four requests open at the receiver and four leases in PostgreSQL: every lease is a request held open.
    const leases = () => db`SELECT id, message_id, endpoint_id, lease_holder FROM webhook_deliveries
                              WHERE state = 'pending' AND lease_until_ms IS NOT NULL AND endpoint_id = ANY(${db.array(ids, "TEXT")})`;
    const atFour = await waitFor("4 held requests, each under a lease", async () => {
      if (receiver.open("/crash-hold") !== 4) return undefined;
      const rows = (await leases()).filter((r: { endpoint_id: string }) => r.endpoint_id === holdId);
      return rows.length === 4 && receiver.open("/crash-hold") === 4 ? rows as { lease_holder: string }[] : undefined;
    });
    const pidOf = (holder: string) => Number(holder.split(":").at(-2));
    const byPid = new Map<number, number>();
    for (const r of atFour) byPid.set(pidOf(r.lease_holder), (byPid.get(pidOf(r.lease_holder)) ?? 0) + 1);
    const victim = instances.find((p) => p.proc.pid === [...byPid.entries()].sort((a, b) => b[1] - a[1])[0]![0])!;
    expect(victim).toBeDefined();

    // Stopped, the victim can neither record nor give up what it leased; the receiver then answers 200 to its held
    // requests, which it will never record: the at-least-once duplicate, made on purpose. The others' held requests
    // get a 503 (a retry follows), so none of their answers racing a sender's 10 s deadline counts as delivered.
    victim.proc.kill("SIGSTOP");
    const victimLeased = (await leases()).filter((r: { lease_holder: string }) => pidOf(r.lease_holder) === victim.proc.pid) as { id: string; message_id: string; endpoint_id: string }[];
    expect(victimLeased.length).toBeGreaterThan(0);
    const victimHeld = new Set(victimLeased.filter((d) => d.endpoint_id === holdId).map((d) => d.message_id));
    const answered = new Set(receiver.release("/crash-hold", (id) => (victimHeld.has(id) ? 200 : 503)));
    victim.proc.kill("SIGKILL");
    await victim.proc.exited;
    const survivors = instances.filter((p) => p !== victim);

    await allDelivered(ids, 60);
    const { mine, ok } = tally(paths);
    expect(mine.every((r) => r.verified)).toBe(true);
    expect([...ok.keys()].sort()).toEqual(pairs(uids, paths));
    expectOneIdPerEvent(mine);
    // A pair answered 2xx twice is one the victim had leased, and both carried its one webhook-id.
    const pathOf = new Map([[ids[0]!, paths[0]!], [ids[1]!, paths[1]!]]);
    const allowed = new Set(victimLeased.map((d) => `${d.message_id} ${pathOf.get(d.endpoint_id)}`));
    const twice = mine.filter((r) => r.status === 200 && ok.get(`${r.uid} ${r.path}`)! > 1);
    for (const r of twice) expect(allowed.has(`${r.webhookId} ${r.path}`)).toBe(true);
    expect([...ok.values()].every((n) => n === 1 || n === 2)).toBe(true);
    // The victim's requests held open were answered 200 while it was stopped: each is told again by a survivor.
    const heldByVictim = [...victimHeld].filter((id) => answered.has(id)).sort();
    expect(heldByVictim.length).toBeGreaterThan(0);
    expect([...new Set(twice.filter((r) => r.path === "/crash-hold").map((r) => r.webhookId))].sort()).toEqual(heldByVictim);
    expect(receiver.maxOpen("/crash-hold")).toBeLessThanOrEqual(4);
    const sum = (await deliveredMetric(survivors)).reduce((a, b) => a + b, 0);
    expect(sum).toBeGreaterThan(0);
    console.log(`[webhooks_multi_instance_test] victim leased ${victimLeased.length} (${heldByVictim.length} held open); pairs delivered twice: ${new Set(twice.map((r) => `${r.webhookId} ${r.path}`)).size}`);
    instances = survivors;
  }, 240_000);
});
