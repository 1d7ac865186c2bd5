import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { buildAttestTypedData, type DelegatedAttest, ZERO_UID } from "../domain/delegation/mod.ts";
import { createIdempotency, IDEMPOTENCY_LEASE_MS } from "../domain/idempotency/mod.ts";
import { fail, ok } from "../domain/result.ts";
import { createSubmissionStatus, createSubmissionTracker } from "../domain/submissions/mod.ts";
import { fakeClock, fakeEasReader, fakeIdempotencyStore, fakeRandom, fakeReplayStore, fakeSubmissionRecords } from "../ports/fakes/mod.ts";
import { createApp } from "./app.ts";
import { minimalAppDeps, trackedRelayDeps } from "./testing.ts";
import { encodeSchemaData } from "../domain/schema_data.ts";
import { findSchemaByName } from "../domain/schemas.ts";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** One deadline for the file: a body signed again in a later second must be the same body (an idempotent retry). */
const DEADLINE = BigInt(Math.floor(Date.now() / 1000) + 3600);

async function signedBody() {
  const eas = fakeEasReader();
  const message = {
    attester: account.address, schema: SCHEMA as `0x${string}`, recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n, revocable: false, refUID: ZERO_UID, data: REVIEW_DATA, value: 0n, nonce: 0n,
    deadline: DEADLINE,
  };
  const typedData = buildAttestTypedData(eas, message);
  const signature = await account.signTypedData(typedData);
  const strings = JSON.parse(JSON.stringify(message, (_k, v) => (typeof v === "bigint" ? v.toString() : v)));
  return JSON.stringify({ attester: account.address, signature, prepared: { delegatedRequest: strings, typedData: { ...typedData, message: strings } } });
}

/**
 * The public relay over a use case that, unless it refuses, records its submission (a replay claim, then the hook) and
 * waits for `mine()` before answering, as a real send waits for its receipt.
 */
function setup(refusal?: ReturnType<typeof fail>) {
  const replay = fakeReplayStore();
  const records = fakeSubmissionRecords();
  const clock = fakeClock();
  let mine = () => {};
  let submitted = 0;
  const delegatedAttest: DelegatedAttest = async (_body, caller) => {
    if (refusal !== undefined) return refusal as never;
    const key = `0x${"11".repeat(65)}`;
    await replay.claim({ key, chainId: 1, attester: "0xa", nonce: 0n, deadline: 2_000_000_000n, createdAtMs: 1 });
    await caller?.onSubmitting?.(1, key);
    submitted++;
    await new Promise<void>((resolve) => (mine = resolve));
    await replay.finish(1, key, { state: "mined", txHash: TX, uid: UID, blockNumber: 5n });
    return ok({ txHash: TX as `0x${string}`, uid: UID as `0x${string}`, blockNumber: 5n });
  };
  const app = createApp(trackedRelayDeps(delegatedAttest, { records, replay, clock }));
  const post = (body: string, headers: Record<string, string> = {}) =>
    app.handle(new Request("http://localhost/v1/delegated-attest", { method: "POST", headers: { "content-type": "application/json", ...headers }, body }));
  const get = (path: string) => app.handle(new Request(`http://localhost${path}`));
  return { post, get, clock, mine: () => mine(), submitted: () => submitted };
}

describe("relay submissions over HTTP (decisions §23)", () => {
  test("a relay answer carries submissionId, and GET /v1/submissions/{id} shows it confirmed", async () => {
    const env = setup();
    const answer = env.post(await signedBody());
    while (env.submitted() === 0) await Bun.sleep(1);
    env.mine();
    const res = await answer;
    const body = await res.json() as { submissionId: string; uid: string };
    expect(res.status).toBe(200);
    expect(body.submissionId).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const read = await env.get(`/v1/submissions/${body.submissionId}`);
    expect(read.headers.get("cache-control")).toBe("no-store");
    expect(await read.json()).toMatchObject({ submissionId: body.submissionId, state: "confirmed", txHash: TX, uid: UID, blockNumber: 5, confirmations: 1, feeBumps: 0 });
  });

  test("Prefer: respond-async answers 202 with Location once the submission is recorded; the outcome is polled there; a retry with the key replays the 202", async () => {
    const env = setup();
    const body = await signedBody();
    const headers = { prefer: "respond-async", "idempotency-key": "async-1" };
    const accepted = await env.post(body, headers);
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get("preference-applied")).toBe("respond-async");
    const { submissionId, state } = await accepted.json() as { submissionId: string; state: string };
    expect(state).toBe("pending");
    expect(accepted.headers.get("location")).toBe(`/v1/submissions/${submissionId}`);
    expect(await (await env.get(`/v1/submissions/${submissionId}`)).json()).toMatchObject({ state: "pending" });
    const again = await env.post(body, headers);
    expect([again.status, again.headers.get("idempotent-replayed"), again.headers.get("location")]).toEqual([202, "true", `/v1/submissions/${submissionId}`]);
    env.mine();
    let polled: { state: string } = { state: "pending" };
    for (let tries = 0; tries < 1_000 && polled.state === "pending"; tries++) {
      polled = await (await env.get(`/v1/submissions/${submissionId}`)).json() as { state: string };
      if (polled.state === "pending") await Bun.sleep(1);
    }
    expect(polled).toMatchObject({ state: "confirmed", uid: UID });
    expect(env.submitted()).toBe(1);
  });

  test("a retry of a request that died after opening its submission (its key's lease passed) answers as the submission says, without running again", async () => {
    const env = setup();
    const body = await signedBody();
    // The first request opens its submission and never answers (its instance died).
    void env.post(body, { "idempotency-key": "dead-1" });
    while (env.submitted() === 0) await Bun.sleep(1);
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    const resumed = await env.post(body, { "idempotency-key": "dead-1" });
    const answer = await resumed.json() as { submissionId: string; state: string };
    expect([resumed.status, answer.state, resumed.headers.get("location")]).toEqual([202, "pending", `/v1/submissions/${answer.submissionId}`]);
    expect(env.submitted()).toBe(1);
    // Once it is mined, a retry of another dead request over the same submission would answer the success; the
    // submission itself says so.
    env.mine();
    let state = "pending";
    for (let tries = 0; tries < 1_000 && state === "pending"; tries++) {
      state = ((await (await env.get(`/v1/submissions/${answer.submissionId}`)).json()) as { state: string }).state;
      if (state === "pending") await Bun.sleep(1);
    }
    expect(state).toBe("confirmed");
  });

  test("a request its checks refuse gets the same 4xx with Prefer: respond-async, and no submission", async () => {
    const env = setup(fail("SCHEMA_NOT_SUBSIDIZED", "Schema not eligible for gas subsidy"));
    const res = await env.post(await signedBody(), { prefer: "respond-async" });
    const body = await res.json() as Record<string, unknown>;
    expect([res.status, body.code, body.submissionId]).toEqual([403, "SCHEMA_NOT_SUBSIDIZED", undefined]);
  });

  test("an unknown or malformed id is 404 NOT_FOUND; the account's list needs a credential", async () => {
    const env = setup();
    for (const id of ["AAAAAAAAAAAAAAAAAAAAAA", "short", "x".repeat(300)]) {
      const res = await env.get(`/v1/submissions/${id}`);
      expect([res.status, ((await res.json()) as { code: string }).code]).toEqual([404, "NOT_FOUND"]);
    }
    expect((await env.get("/api/private/relay/submissions")).status).toBe(401);
  });
});

describe("batches on the public relay: async answers and retries of a dead request (decisions §23)", () => {
  const UIDS = [`0x${"01".repeat(32)}`, `0x${"02".repeat(32)}`];
  /** A batch use case: request 1 refused by its checks, 0 and 2 sent in one transaction that waits for `mine()`. */
  function batchSetup(options: { dies?: boolean } = {}) {
    const replay = fakeReplayStore();
    const records = fakeSubmissionRecords();
    const clock = fakeClock();
    let mine = () => {};
    let submitted = 0;
    const keys = [`0x${"a1".repeat(65)}`, `0x${"a2".repeat(65)}`];
    const batch: NonNullable<DelegatedAttest["batch"]> = async (_bodies, caller) => {
      for (const [i, key] of keys.entries()) await replay.claim({ key, chainId: 1, attester: "0xa", nonce: BigInt(i), deadline: 2_000_000_000n, createdAtMs: 1 });
      const refused = fail("ATTESTER_MISMATCH", "Signer does not match attester");
      await caller?.onSubmitting?.(1, keys[0]!, [{ ref: keys[0]! }, { refused }, { ref: keys[1]! }]);
      submitted++;
      const mined = new Promise<void>((resolve) => (mine = resolve));
      if (options.dies) {
        // The instance dies with its transaction sent: the chain mines it, and the reconciler finishes its records.
        await mined;
        for (const [i, key] of keys.entries()) await replay.finish(1, key, { state: "mined", txHash: TX, uid: UIDS[i]!, blockNumber: 5n });
        return await new Promise<never>(() => {});
      }
      await mined;
      for (const [i, key] of keys.entries()) await replay.finish(1, key, { state: "mined", txHash: TX, uid: UIDS[i]!, blockNumber: 5n });
      const sent = (i: number) => ok({ txHash: TX as `0x${string}`, uid: UIDS[i]! as `0x${string}`, blockNumber: 5n });
      return { txHash: TX as `0x${string}`, blockNumber: 5n, sent: "mined", results: [sent(0), refused, sent(1)] };
    };
    const delegatedAttest = Object.assign((() => Promise.reject(new Error("unused"))) as unknown as DelegatedAttest, { batch });
    const status = createSubmissionStatus({ records, replay, head: () => Promise.resolve(5n), confirmations: 1 });
    const app = createApp({
      ...minimalAppDeps(),
      eas: {
        ...minimalAppDeps().eas,
        delegatedAttest,
        idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock }),
        tracking: { tracker: createSubmissionTracker({ records, random: fakeRandom(), clock }), status, log: quiet },
      },
      submissions: { status, sessions: { authenticate: () => Promise.resolve(fail("UNAUTHENTICATED", "No session")) } as never },
    });
    const post = async (headers: Record<string, string> = {}) =>
      await app.handle(new Request("http://localhost/v1/delegated-attest/batch", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ requests: [JSON.parse(await signedBody()), JSON.parse(await signedBody()), JSON.parse(await signedBody())] }),
      }));
    const get = (path: string) => app.handle(new Request(`http://localhost${path}`));
    const poll = async (submissionId: string) => {
      let view: { state: string; items?: Record<string, unknown>[] } = { state: "pending" };
      for (let tries = 0; tries < 1_000 && (view.state === "pending" || view.state === "sent"); tries++) {
        view = await (await get(`/v1/submissions/${submissionId}`)).json() as typeof view;
        if (view.state === "pending" || view.state === "sent") await Bun.sleep(1);
      }
      return view;
    };
    return { post, get, poll, clock, replay, mine: () => mine(), submitted: () => submitted };
  }

  test("Prefer: respond-async answers 202 with Location once every request was checked; polling shows each request, the sent ones with their own uids", async () => {
    const env = batchSetup();
    const accepted = await env.post({ prefer: "respond-async" });
    const { submissionId, state } = await accepted.json() as { submissionId: string; state: string };
    expect([accepted.status, state, accepted.headers.get("location"), accepted.headers.get("preference-applied")]).toEqual([202, "pending", `/v1/submissions/${submissionId}`, "respond-async"]);
    const pending = await (await env.get(`/v1/submissions/${submissionId}`)).json() as { items: { state: string }[] };
    expect(pending.items.map((item) => item.state)).toEqual(["pending", "refused", "pending"]);
    env.mine();
    const view = await env.poll(submissionId);
    expect(view).toMatchObject({ state: "confirmed", uid: UIDS[0] });
    expect(view.items).toEqual([
      { index: 0, state: "confirmed", uid: UIDS[0]! },
      { index: 1, state: "refused", uid: null, status: 400, error: "ATTESTER_MISMATCH", message: "Signer does not match attester" },
      { index: 2, state: "confirmed", uid: UIDS[1]! },
    ]);
    expect(env.submitted()).toBe(1);
  });

  test("a retry of a batch whose request died after sending (its key's lease passed) answers the batch with every request's result, sending nothing", async () => {
    const env = batchSetup({ dies: true });
    const key = { "idempotency-key": "dead-batch" };
    void env.post(key);
    while (env.submitted() === 0) await Bun.sleep(1);
    env.mine();
    while ([...env.replay.rows.values()].some((row) => row.state !== "mined")) await Bun.sleep(1);
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    const retry = await env.post(key);
    const answer = await retry.json() as { submissionId: string; txHash: string; results: unknown[] };
    expect([retry.status, answer.txHash, answer.submissionId]).toEqual([200, TX, expect.any(String)]);
    expect(answer.results).toEqual([{ uid: UIDS[0]! }, { status: 400, code: "ATTESTER_MISMATCH", error: "Signer does not match attester" }, { uid: UIDS[1]! }]);
    expect(env.submitted()).toBe(1);
  });
});

describe("the private relay's submissions, keys and async answers (decisions §23)", () => {
  function privateSetup(rates: { readonly accountRate?: RateLimiter; readonly accountLookupRate?: RateLimiter } = {}) {
    const replay = fakeReplayStore();
    const records = fakeSubmissionRecords();
    const clock = fakeClock();
    let runs = 0;
    const accounts: Record<string, { id: string; address: string; plan: "free"; createdAtMs: number }> = {
      alice: { id: "acc-alice", address: account.address, plan: "free", createdAtMs: 0 },
      bob: { id: "acc-bob", address: account.address, plan: "free", createdAtMs: 0 },
    };
    const relay = async (_body: unknown, _caller: unknown, hooks: { onSubmitting?: (chainId: number, key: string) => Promise<void> } = {}) => {
      runs++;
      const key = `0x${runs.toString(16).padStart(130, "0")}`;
      await replay.claim({ key, chainId: 1, attester: "0xa", nonce: BigInt(runs), deadline: 2_000_000_000n, createdAtMs: 1 });
      await hooks.onSubmitting?.(1, key);
      await replay.finish(1, key, { state: "mined", txHash: TX, uid: UID, blockNumber: 5n });
      return ok({ txHash: TX as `0x${string}`, uid: UID as `0x${string}`, blockNumber: 5n });
    };
    const sessions = {
      authenticate: (token: string | undefined) => {
        const found = token === undefined ? undefined : accounts[token];
        return Promise.resolve(found === undefined ? fail("UNAUTHENTICATED", "No session") : ok({ account: found, session: { tokenHash: token, accountId: found.id, createdAtMs: 0, expiresAtMs: 9e15, revokedAtMs: null } }));
      },
    } as never;
    const status = createSubmissionStatus({ records, replay, head: () => Promise.resolve(5n), confirmations: 1 });
    const app = createApp({
      ...minimalAppDeps(),
      privateRelay: {
        sessions, relay: relay as never, readNonce: (() => Promise.reject(new Error("unused"))) as never, chainName: "x", chainId: 1, easAddress: account.address,
        idempotency: createIdempotency({ store: fakeIdempotencyStore(), clock }),
        tracking: { tracker: createSubmissionTracker({ records, random: fakeRandom(), clock }), status, log: quiet },
        ...rates,
      },
      submissions: { status, sessions },
    });
    const post = (who: string, headers: Record<string, string> = {}, body = JSON.stringify({ any: "body" })) =>
      app.handle(new Request("http://localhost/api/private/relay/eas/delegated-attest", {
        method: "POST",
        headers: { "content-type": "application/json", cookie: `ats_session=${who}`, ...headers },
        body,
      }));
    const list = (who: string) => app.handle(new Request("http://localhost/api/private/relay/submissions?limit=10", { headers: { cookie: `ats_session=${who}` } }));
    return { post, list, runs: () => runs };
  }

  test("a retry with the account's key replays; another account's same key is its own; the account's list shows its submissions newest first", async () => {
    const env = privateSetup();
    const first = await env.post("alice", { "idempotency-key": "k" });
    const answer = await first.json() as { submissionId: string; success: boolean };
    expect([first.status, answer.success]).toEqual([200, true]);
    const again = await env.post("alice", { "idempotency-key": "k" });
    expect([again.headers.get("idempotent-replayed"), ((await again.json()) as { submissionId: string }).submissionId]).toEqual(["true", answer.submissionId]);
    const bob = await env.post("bob", { "idempotency-key": "k" });
    expect(bob.headers.get("idempotent-replayed")).toBeNull();
    expect(env.runs()).toBe(2);
    const accepted = await env.post("alice", { prefer: "respond-async" });
    const { submissionId } = await accepted.json() as { submissionId: string };
    expect([accepted.status, accepted.headers.get("location")]).toEqual([202, `/v1/submissions/${submissionId}`]);
    const page = await (await env.list("alice")).json() as { submissions: { submissionId: string }[]; nextCursor: string | null };
    expect(page.submissions.map((s) => s.submissionId).sort()).toEqual([answer.submissionId, submissionId].sort());
    expect(page.nextCursor).toBeNull();
    expect(((await (await env.list("bob")).json()) as { submissions: unknown[] }).submissions).toHaveLength(1);
  });

  test("an account's retry answered from its key takes no write turn; at the limit it gets its kept answer, not 429", async () => {
    // Found by review: the account's turn was taken before the key was looked up, so retries spent the account's writes.
    const env = privateSetup({
      accountRate: createRateLimiter(fakeClock(), { capacity: 2, perMinute: 2 }),
      accountLookupRate: createRateLimiter(fakeClock(), { capacity: 5, perMinute: 5 }),
    });
    const first = await env.post("alice", { "idempotency-key": "k" });
    const answer = await first.json() as { submissionId: string };
    expect(first.status).toBe(200);
    for (let i = 0; i < 2; i++) {
      const again = await env.post("alice", { "idempotency-key": "k" });
      expect([again.status, again.headers.get("idempotent-replayed"), ((await again.json()) as { submissionId: string }).submissionId]).toEqual([200, "true", answer.submissionId]);
    }
    // The replays took none of the account's two writes a minute: a write without a key has the second.
    expect((await env.post("alice")).status).toBe(200);
    const limited = await env.post("alice");
    expect([limited.status, ((await limited.json()) as { code: string }).code, Number(limited.headers.get("retry-after")) > 0]).toEqual([429, "RATE_LIMITED", true]);
    expect((await env.post("alice", { "idempotency-key": "new" })).status).toBe(429);
    const retry = await env.post("alice", { "idempotency-key": "k" });
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    const other = await env.post("alice", { "idempotency-key": "k" }, JSON.stringify({ other: "body" }));
    expect([other.status, ((await other.json()) as { code: string }).code]).toEqual([422, "IDEMPOTENCY_KEY_REUSED"]);
    expect(env.runs()).toBe(2);
  });
});
