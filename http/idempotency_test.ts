import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData, type DelegatedAttest, ZERO_UID } from "../domain/delegation/mod.ts";
import { createIdempotency } from "../domain/idempotency/mod.ts";
import { fail, ok } from "../domain/result.ts";
import { fakeClock, fakeEasReader, fakeIdempotencyStore, withReadHook } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { json } from "./errors.ts";
import { idempotent } from "./idempotency.ts";
import { minimalAppDeps } from "./testing.ts";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";

async function signedBody(deadline = BigInt(Math.floor(Date.now() / 1000) + 3600)) {
  const eas = fakeEasReader();
  const message = {
    attester: account.address, schema: SCHEMA as `0x${string}`, recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: REVIEW_DATA, value: 0n, nonce: 0n, deadline,
  };
  const typedData = buildAttestTypedData(eas, message);
  const signature = await account.signTypedData(typedData);
  const strings = JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
  return JSON.stringify({ attester: account.address, signature, prepared: { delegatedRequest: strings, typedData: { ...typedData, message: strings } } });
}

/** The public relay over a use case that counts its calls and, when told, holds its answer until released. */
function setup(
  answer: () => ReturnType<DelegatedAttest> = () => Promise.resolve(ok({ txHash: "0xaa", uid: "0xbb", blockNumber: 7n } as never)),
  keyRate?: RateLimiter,
  keyLookupRate?: RateLimiter,
) {
  let calls = 0;
  let hold: Promise<void> | undefined;
  let release = () => {};
  const delegatedAttest: DelegatedAttest = async () => {
    calls++;
    if (hold !== undefined) await hold;
    return await answer();
  };
  const store = fakeIdempotencyStore();
  const app = createApp({
    ...minimalAppDeps(),
    eas: {
      ...minimalAppDeps().eas,
      delegatedAttest,
      idempotency: createIdempotency({ store, clock: fakeClock() }),
      clientAddress: (request) => request.headers.get("x-test-client") ?? "203.0.113.7",
      keyRate,
      keyLookupRate,
    },
  });
  const post = (body: string, headers: Record<string, string> = {}, path = "/v1/delegated-attest") =>
    app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }));
  return {
    post,
    store,
    calls: () => calls,
    holdNext() {
      hold = new Promise((resolve) => (release = resolve));
      return () => release();
    },
  };
}

describe("Idempotency-Key on the public relay (decisions §23)", () => {
  test("a retry with the same key and body gets the first answer with Idempotent-Replayed, and the use case runs once", async () => {
    const env = setup();
    const body = await signedBody();
    const first = await env.post(body, { "idempotency-key": "4f2c7e1a-0b1d-4c5e-9f00-123456789abc" });
    expect(first.status).toBe(200);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const firstBody = await first.json();
    const again = await env.post(body, { "idempotency-key": '"4f2c7e1a-0b1d-4c5e-9f00-123456789abc"' });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("content-type")).toContain("application/json");
    expect(await again.json()).toEqual(firstBody);
    expect(env.calls()).toBe(1);
  });

  test("an error answer is kept too: the retry replays the refusal without running again", async () => {
    const env = setup(() => Promise.resolve(fail("DUPLICATE", "Signature already used", "0xaa")));
    const body = await signedBody();
    const first = await env.post(body, { "idempotency-key": "k" });
    expect(first.status).toBe(409);
    const again = await env.post(body, { "idempotency-key": "k" });
    expect(again.status).toBe(409);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect((await again.json()).code).toBe("DUPLICATE");
    expect(env.calls()).toBe(1);
  });

  test("the same key with another body is 422 IDEMPOTENCY_KEY_REUSED and runs nothing", async () => {
    const env = setup();
    await env.post(await signedBody(), { "idempotency-key": "k" });
    const other = await env.post(await signedBody(BigInt(Math.floor(Date.now() / 1000) + 7200)), { "idempotency-key": "k" });
    expect(other.status).toBe(422);
    const answer = await other.json();
    expect(answer.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(answer.elapsed).toMatch(/^\d+ms$/);
    expect(env.calls()).toBe(1);
  });

  test("a body too large to read (413) is answered beside its key: the same key with the body made smaller runs", async () => {
    // Found by review: the 413 was kept with an empty body's fingerprint, so the smaller retry was 422 IDEMPOTENCY_KEY_REUSED.
    const env = setup();
    const chunk = new TextEncoder().encode("x".repeat(1 << 20));
    // Streamed, with no Content-Length: the route reads it and cuts it off at the limit (a declared one is refused before routing).
    const stream = () => new ReadableStream<Uint8Array>({ start(c) { for (let i = 0; i < 9; i++) c.enqueue(chunk); c.close(); } });
    const big = await env.post(stream() as never, { "idempotency-key": "big" });
    expect([big.status, (await big.json()).code]).toEqual([413, "PAYLOAD_TOO_LARGE"]);
    const small = await env.post(await signedBody(), { "idempotency-key": "big" });
    expect(small.status).toBe(200);
    expect(env.calls()).toBe(1);
  });

  test("a retry while the first still runs is 409 IDEMPOTENCY_KEY_IN_USE with Retry-After, and is not kept", async () => {
    const env = setup();
    const body = await signedBody();
    const release = env.holdNext();
    const first = env.post(body, { "idempotency-key": "k" });
    // The first request's record is written before its work: wait until the use case runs.
    while (env.calls() === 0) await Bun.sleep(1);
    const second = await env.post(body, { "idempotency-key": "k" });
    expect(second.status).toBe(409);
    expect((await second.json()).code).toBe("IDEMPOTENCY_KEY_IN_USE");
    expect(second.headers.get("retry-after")).toBe("1");
    release();
    expect((await first).status).toBe(200);
    const third = await env.post(body, { "idempotency-key": "k" });
    expect(third.headers.get("idempotent-replayed")).toBe("true");
    expect(env.calls()).toBe(1);
  });

  test("keys are per client address, and a request without a key always runs", async () => {
    const env = setup();
    const body = await signedBody();
    await env.post(body, { "idempotency-key": "k" });
    const elsewhere = await env.post(body, { "idempotency-key": "k", "x-test-client": "198.51.100.9" });
    expect(elsewhere.headers.get("idempotent-replayed")).toBeNull();
    await env.post(body);
    await env.post(body);
    expect(env.calls()).toBe(4);
  });

  test("keyed writes per client address are bounded before the key is stored: refused bodies under new keys no longer fill the store", async () => {
    const env = setup(undefined, createRateLimiter(fakeClock(), { capacity: 3, perMinute: 3 }));
    const statuses: number[] = [];
    // Before: every one of these was kept for 24 hours, 5,000 rows from one address with no limit met.
    for (let i = 0; i < 6; i++) statuses.push((await env.post("{}", { "idempotency-key": `fresh-${i}` })).status);
    expect(statuses).toEqual([400, 400, 400, 429, 429, 429]);
    expect(env.store.records.size).toBe(3);
    // Another address has its own turns; a write without a key takes none.
    expect((await env.post("{}", { "idempotency-key": "fresh-x", "x-test-client": "198.51.100.9" })).status).toBe(400);
    expect((await env.post(await signedBody())).status).toBe(200);
  });

  test("a retry answered from its key takes no turn, and one at the limit gets its kept answer, not 429 (single and batch)", async () => {
    // Found by review: the turn was taken before the key was looked up, so a client retrying after a dropped connection
    // (what the key is for) spent its turns on replays and, at its limit, got 429 instead of its answer.
    const env = setup(undefined, createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }), createRateLimiter(fakeClock(), { capacity: 6, perMinute: 6 }));
    const body = await signedBody();
    const first = await env.post(body, { "idempotency-key": "k1" });
    const firstBody = await first.json();
    expect(first.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const again = await env.post(body, { "idempotency-key": "k1" });
      expect([again.status, again.headers.get("idempotent-replayed"), await again.json()]).toEqual([200, "true", firstBody]);
    }
    // The replays took no turn: the second new key still has one (a batch, answered 404 here and kept under its key).
    const batch = await env.post(JSON.stringify({ requests: [{}] }), { "idempotency-key": "b1" }, "/v1/delegated-attest/batch");
    expect(batch.status).toBe(404);
    // At the limit: new work is 429 and stores nothing; the kept answers are replayed; another body under a key is 422.
    const fresh = await env.post(body, { "idempotency-key": "k2" });
    expect([fresh.status, (await fresh.json()).code, Number(fresh.headers.get("retry-after")) > 0]).toEqual([429, "RATE_LIMITED", true]);
    expect(env.store.records.size).toBe(2);
    const retry = await env.post(body, { "idempotency-key": "k1" });
    expect([retry.status, retry.headers.get("idempotent-replayed"), await retry.json()]).toEqual([200, "true", firstBody]);
    const batchRetry = await env.post(JSON.stringify({ requests: [{}] }), { "idempotency-key": "b1" }, "/v1/delegated-attest/batch");
    expect([batchRetry.status, batchRetry.headers.get("idempotent-replayed")]).toEqual([404, "true"]);
    const other = await env.post(await signedBody(BigInt(Math.floor(Date.now() / 1000) + 7200)), { "idempotency-key": "k1" });
    expect([other.status, (await other.json()).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    expect(env.calls()).toBe(1);
  });

  test("past the limit, lookups of keys are bounded too: unknown keys stop reaching the store once the lookups' turns are spent", async () => {
    const env = setup(undefined, createRateLimiter(fakeClock(), { capacity: 1, perMinute: 1 }), createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }));
    const body = await signedBody();
    expect((await env.post(body, { "idempotency-key": "k1" })).status).toBe(200);
    let reads = 0;
    const find = env.store.find.bind(env.store);
    env.store.find = (scope, key) => (reads++, find(scope, key));
    let begins = 0;
    const begin = env.store.begin.bind(env.store);
    env.store.begin = (record) => (begins++, begin(record));
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await env.post(body, { "idempotency-key": `unknown-${i}` })).status);
    expect(statuses).toEqual([429, 429, 429, 429, 429, 429]);
    // Two looked up (the lookups' turns), none begun or stored; then 429 with no read at all.
    expect([reads, begins, env.store.records.size]).toEqual([2, 0, 1]);
    // The lookups' turns are spent: even a kept key is 429 until they come back (its answer stays kept).
    expect((await env.post(body, { "idempotency-key": "k1" })).status).toBe(429);
    expect(reads).toBe(2);
  });

  test("a key held in flight buys no free 409s: with the lookups spent its 409 keeps its turn, so turns and lookups bound them together", async () => {
    // Found in review: nothing checked that a turn stays spent once the lookups are (step 4); given back anyway, a
    // client holding one key in flight got unlimited 409s, each a write statement (the key's begin), under the rate.
    const env = setup(undefined, createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }), createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }));
    const body = await signedBody();
    let begins = 0;
    const begin = env.store.begin.bind(env.store);
    env.store.begin = (record) => (begins++, begin(record));
    const release = env.holdNext();
    const first = env.post(body, { "idempotency-key": "k" });
    while (env.calls() === 0) await Bun.sleep(1);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await env.post(body, { "idempotency-key": "k" })).status);
    // Two 409s on the lookups (their turns given back), the third on the last turn, then 429 with nothing read.
    expect(statuses).toEqual([409, 409, 409, 429]);
    expect(begins).toBe(4);
    expect((await env.post(body, { "idempotency-key": "other" })).status).toBe(429);
    release();
    expect((await first).status).toBe(200);
    expect([begins, env.calls()]).toEqual([4, 1]);
  });

  test("a 429 is not kept: the retry runs", async () => {
    let refuse = true;
    const env = setup(() => Promise.resolve(refuse ? { ...fail("RATE_LIMITED", "Slow down"), retryAfterSeconds: 5 } : ok({ txHash: "0xaa", uid: "0xbb", blockNumber: 7n } as never)));
    const body = await signedBody();
    expect((await env.post(body, { "idempotency-key": "k" })).status).toBe(429);
    refuse = false;
    const retry = await env.post(body, { "idempotency-key": "k" });
    expect(retry.status).toBe(200);
    expect(retry.headers.get("idempotent-replayed")).toBeNull();
    expect(env.calls()).toBe(2);
  });

  test("an empty, overlong or non-printable key is 400 INVALID_INPUT before any work", async () => {
    const env = setup();
    const body = await signedBody();
    for (const key of ['""', "x".repeat(256), "a\tb"]) {
      const answer = await env.post(body, { "idempotency-key": key });
      expect(answer.status).toBe(400);
      expect((await answer.json()).code).toBe("INVALID_INPUT");
    }
    expect(env.calls()).toBe(0);
  });
});

describe("idempotent() of a kept 503 OUTCOME_UNKNOWN (the witness and the paid writes)", () => {
  test("a retry answers from the write its request noted: replayed as kept while on its way, the outcome once settled, run again when nothing was written", async () => {
    const idempotency = createIdempotency({ store: fakeIdempotencyStore(), clock: fakeClock() });
    const unknown = () => new Response(JSON.stringify({ error: "x", code: "OUTCOME_UNKNOWN", details: "0xab" }), { status: 503, headers: { "content-type": "application/json" } });
    let runs = 0;
    let resumes = 0;
    let stands: "on-its-way" | "written" | "nothing" = "on-its-way";
    const write = {
      scope: "account:a",
      body: '{"subject":"did:web:a.test"}',
      resume: (noted: string) => {
        resumes++;
        expect(noted).toBe("witness-write:w1");
        if (stands === "nothing") return Promise.resolve(undefined);
        return Promise.resolve(stands === "written" ? Response.json({ uid: "0x1" }) : unknown());
      },
    };
    const run = async ({ attach }: { attach?: ((noted: string) => Promise<void>) | undefined }) => {
      runs++;
      if (runs > 1) return Response.json({ uid: "0x2" });
      await attach?.("witness-write:w1");
      return unknown();
    };
    const send = async (w: typeof write | Omit<typeof write, "resume">) => {
      const res = await idempotent(idempotency, new Request("http://x/v1/controller-witness", { method: "POST", headers: { "idempotency-key": "k" } }), w, run);
      return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, unknown> };
    };
    expect(await send(write)).toMatchObject({ status: 503, replayed: null });
    // Still on its way: replayed as kept; a route that cannot resume replays it too.
    expect(await send(write)).toMatchObject({ status: 503, replayed: "true", body: { code: "OUTCOME_UNKNOWN" } });
    expect(await send({ scope: write.scope, body: write.body })).toMatchObject({ status: 503, replayed: "true" });
    stands = "written";
    expect(await send(write)).toEqual({ status: 200, replayed: "true", body: { uid: "0x1" } });
    // Kept now: replayed without asking again.
    expect(await send(write)).toEqual({ status: 200, replayed: "true", body: { uid: "0x1" } });
    expect([runs, resumes]).toEqual([1, 2]);

    // Nothing written (the route's resume says so: never signed): the request runs again under the key, as a dead
    // request's retry does. A write signed and then given back is the route's failure, kept (witness_resume_test).
    const again = createIdempotency({ store: fakeIdempotencyStore(), clock: fakeClock() });
    [runs, resumes, stands] = [0, 0, "nothing"];
    const sendAgain = async () => {
      const res = await idempotent(again, new Request("http://x/v1/controller-witness", { method: "POST", headers: { "idempotency-key": "k" } }), write, run);
      return { status: res.status, replayed: res.headers.get("idempotent-replayed") };
    };
    expect(await sendAgain()).toEqual({ status: 503, replayed: null });
    expect(await sendAgain()).toEqual({ status: 200, replayed: null });
    expect(await sendAgain()).toEqual({ status: 200, replayed: "true" });
    expect([runs, resumes]).toEqual([2, 1]);
  });

  test("a resume answering what is not kept (a paid write's payment another key's request holds: 409 PAYMENT_IN_PROGRESS) leaves the kept answer as it was", async () => {
    const idempotency = createIdempotency({ store: fakeIdempotencyStore(), clock: fakeClock() });
    const unknown = () => json({ error: "x", code: "OUTCOME_UNKNOWN", details: "0xab" }, 503);
    let runs = 0;
    const write = {
      scope: "x402:0xpayer",
      body: "{}",
      resume: () => Promise.resolve(json({ error: "In use by another request", code: "PAYMENT_IN_PROGRESS" }, 409)),
    };
    const run = async ({ attach }: { attach?: ((noted: string) => Promise<void>) | undefined }) => {
      runs++;
      await attach?.("witness-write:w1");
      return unknown();
    };
    const send = async () => {
      const res = await idempotent(idempotency, new Request("http://x/v1/paid/controller-witness", { method: "POST", headers: { "idempotency-key": "k" } }), write, run);
      return { status: res.status, replayed: res.headers.get("idempotent-replayed") };
    };
    expect(await send()).toEqual({ status: 503, replayed: null });
    // Before: the 409 was answered and the key's record dropped with the kept 503, and the next retry ran the write again.
    expect(await send()).toEqual({ status: 503, replayed: "true" });
    expect(await send()).toEqual({ status: 503, replayed: "true" });
    expect(runs).toBe(1);
  });
});

describe("a write whose scope its run verifies (a paid write's payer, named by its payment header)", () => {
  function setupVerified() {
    const store = fakeIdempotencyStore();
    const clock = fakeClock();
    const idempotency = createIdempotency({ store, clock, leaseMs: 1_000 });
    const request = (body: string) =>
      new Request("http://localhost/v1/paid/delegated-attest", { method: "POST", headers: { "idempotency-key": "order-1" }, body });
    const write = (body: string) => ({ scope: "x402:0xpayer", body, verifiedInRun: true });
    return { store, clock, idempotency, request, write };
  }

  test("a run that answers before its scope is verified takes no key: its answer (409 PAYMENT_ALREADY_USED) is kept for none, and the next request under the key runs", async () => {
    // Found by attacking the paid routes: a header naming the payer, with a spent nonce and no signature of its, had its
    // 409 kept under that payer's key, and the payer's own request under it was 422 for 24 hours.
    const env = setupVerified();
    const refused = await idempotent(env.idempotency, env.request("forged"), env.write("forged"), async () =>
      json({ error: "This payment authorization was already used", code: "PAYMENT_ALREADY_USED" }, 409));
    expect(refused.status).toBe(409);
    expect(env.store.records.size).toBe(0);
    let ran = 0;
    const paid = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine"), async ({ begin }) => {
      expect(await begin!()).toBeUndefined();
      ran++;
      return json({ uid: "0x01" });
    });
    expect([paid.status, ran, env.store.records.size]).toEqual([200, 1, 1]);
  });

  test("a key taken once verified is answered as any: its retry replayed, another request 422 and one meanwhile 409, all before their runs; a run that meets a held key at `begin` answers it", async () => {
    const env = setupVerified();
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    let began!: () => void;
    const taken = new Promise<void>((resolve) => (began = resolve));
    const first = idempotent(env.idempotency, env.request("genuine"), env.write("genuine"), async ({ begin }) => {
      expect(await begin!()).toBeUndefined();
      began();
      await held;
      return json({ uid: "0x01" });
    });
    await taken;
    const never = async () => {
      throw new Error("ran");
    };
    const meanwhile = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine"), never);
    expect([meanwhile.status, meanwhile.headers.get("retry-after")]).toEqual([409, "1"]);
    const other = await idempotent(env.idempotency, env.request("other"), env.write("other"), never);
    expect([other.status, (await other.json() as { code: string }).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    release();
    expect((await first).status).toBe(200);
    const retry = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine"), never);
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);

    // Two at once under a fresh key: both find it free, the second meets the first's record at `begin`.
    const second = setupVerified();
    let loserRuns!: () => void;
    const loserRunning = new Promise<void>((resolve) => (loserRuns = resolve));
    let winnerTook!: () => void;
    const winnerTaken = new Promise<void>((resolve) => (winnerTook = resolve));
    const winner = idempotent(second.idempotency, second.request("a"), second.write("a"), async ({ begin }) => {
      await loserRunning;
      expect(await begin!()).toBeUndefined();
      winnerTook();
      return json({ uid: "0x02" });
    });
    const loser = idempotent(second.idempotency, second.request("b"), second.write("b"), async ({ begin }) => {
      loserRuns();
      await winnerTaken;
      return (await begin!()) ?? json({ uid: "0x03" });
    });
    expect([(await loser).status, (await winner).status]).toEqual([422, 200]);
  });

  test("the record of a request that died with the same bytes is taken over before the run (its resume), as any write's", async () => {
    const env = setupVerified();
    await env.idempotency({ scope: "x402:0xpayer", key: "order-1", method: "POST", path: "/v1/paid/delegated-attest", body: "genuine" }).then((d) =>
      d.kind === "run" ? d.attach("sub-1") : undefined);
    env.clock.set(env.clock.nowMs() + 2_000);
    let resumed: string | undefined;
    const answer = await idempotent(env.idempotency, env.request("genuine"), { ...env.write("genuine"), resume: async (noted) => {
      resumed = noted;
      return json({ uid: "0x01" });
    } }, async () => {
      throw new Error("ran");
    });
    expect([answer.status, resumed]).toEqual([200, "sub-1"]);
  });
});

describe("a paid write's key between its read and its take (found by review of the verified begin)", () => {
  const KEYED = { scope: "x402:0xpayer", key: "order-1", method: "POST", path: "/v1/paid/delegated-attest" };

  /** The verified writes' setup over a store whose key read runs `afterRead` once it has read (then forgets it). */
  function setupRace() {
    const store = fakeIdempotencyStore();
    const clock = fakeClock();
    const { store: hooked, onRead } = withReadHook(store);
    const idempotency = createIdempotency({ store: hooked, clock, leaseMs: 1_000 });
    const request = (body: string) =>
      new Request("http://localhost/v1/paid/delegated-attest", { method: "POST", headers: { "idempotency-key": "order-1" }, body });
    const write = (body: string, resume?: (noted: string) => Promise<Response | undefined>) => ({ scope: "x402:0xpayer", body, verifiedInRun: true, resume });
    const spent = () => json({ error: "This payment authorization was already used", code: "PAYMENT_ALREADY_USED" }, 409);
    return { store, clock, idempotency, request, write, spent, onRead };
  }

  test("a key read held by the payer's running request, given up before the forged request takes it, is answered from the read: nothing is kept for the forged header, and the payer's retry runs", async () => {
    // Before: a key read held (422 or 409) went the old way, writing its record before anything was verified; the
    // payer's request ending with an answer not kept freed it meanwhile, so the forged header took it and its 409
    // PAYMENT_ALREADY_USED was kept there: the payer's retry was 422 for 24 hours.
    const env = setupRace();
    const payer = await env.idempotency({ ...KEYED, body: "genuine" });
    env.onRead(async () => {
      if (payer.kind === "run") await payer.finish(undefined);
    });
    let forgedRuns = 0;
    const forged = await idempotent(env.idempotency, env.request("forged"), env.write("forged"), async () => (forgedRuns++, env.spent()));
    expect([forged.status, (await forged.json() as { code: string }).code, forgedRuns, env.store.records.size]).toEqual([422, "IDEMPOTENCY_KEY_REUSED", 0, 0]);
    const retry = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine"), async ({ begin }) => (await begin!()) ?? json({ uid: "0x01" }));
    expect(retry.status).toBe(200);
  });

  test("a dead request's key that turned free before its retry took it is not held through the run: the run begins it once verified", async () => {
    const env = setupRace();
    const dead = await env.idempotency({ ...KEYED, body: "genuine" });
    if (dead.kind === "run") await dead.attach("sub-1");
    env.clock.set(env.clock.nowMs() + 2_000);
    // Another retry took the dead request's key over and gave it up (its answer not kept) between this one's read and take.
    env.onRead(async () => void (await env.store.abandon(KEYED.scope, KEYED.key)));
    let resumes = 0;
    let heldInRun = -1;
    let begun: boolean | undefined;
    const answer = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine", async () => (resumes++, undefined)), async ({ begin }) => {
      heldInRun = env.store.records.size;
      begun = begin !== undefined;
      return env.spent();
    });
    expect([answer.status, resumes, heldInRun, begun, env.store.records.size]).toEqual([409, 0, 0, true, 0]);
  });

  test("a record with a noted write met at `begin` (dead, or a kept 503 OUTCOME_UNKNOWN, since the read) is resumed as any retry's, not left 409 or replayed unasked", async () => {
    // Dead between the read and `begin`: before, its lease was renewed and the retry told 409 for the lease's 5 minutes.
    const env = setupRace();
    let resumed: string[] = [];
    const resume = async (noted: string) => (resumed.push(noted), json({ uid: "0x01" }));
    let ranOn = 0;
    const answer = await idempotent(env.idempotency, env.request("genuine"), env.write("genuine", resume), async ({ begin }) => {
      const dead = await env.idempotency({ ...KEYED, body: "genuine" });
      if (dead.kind === "run") await dead.attach("sub-1");
      env.clock.set(env.clock.nowMs() + 2_000);
      const held = await begin!();
      if (held !== undefined) return held;
      ranOn++;
      return json({ uid: "0x02" });
    });
    expect([answer.status, await answer.json(), resumed, ranOn]).toEqual([200, { uid: "0x01" }, ["sub-1"], 0]);
    expect(env.store.records.get(`${KEYED.scope}\n${KEYED.key}`)).toMatchObject({ state: "done", answer: { status: 200 } });

    // A kept 503 OUTCOME_UNKNOWN between the read and `begin`: before, replayed as kept, its write not asked.
    const kept = setupRace();
    resumed = [];
    const unknown = json({ error: "Outcome unknown", code: "OUTCOME_UNKNOWN" }, 503);
    const again = await idempotent(kept.idempotency, kept.request("genuine"), kept.write("genuine", resume), async ({ begin }) => {
      const first = await kept.idempotency({ ...KEYED, body: "genuine" });
      if (first.kind === "run") {
        await first.attach("sub-2");
        await first.finish({ status: 503, headers: {}, body: await unknown.text() });
      }
      return (await begin!()) ?? json({ uid: "0x02" });
    });
    expect([again.status, again.headers.get("idempotent-replayed"), await again.json(), resumed]).toEqual([200, "true", { uid: "0x01" }, ["sub-2"]]);
  });
});
