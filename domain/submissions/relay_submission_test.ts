import { describe, expect, test } from "bun:test";
import { createIdempotency, IDEMPOTENCY_LEASE_MS } from "../idempotency/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { fail, ok } from "../result.ts";
import { fakeClock, fakeIdempotencyStore, fakeRandom, fakeReplayStore, fakeSubmissionRecords } from "../../ports/fakes/mod.ts";
import { createRelaySubmission, type OnSubmitting, type RelayWrite } from "./relay_submission.ts";
import { createSubmissionStatus } from "./submission_status.ts";
import { createSubmissionTracker } from "./submission_tracker.ts";

const TX = `0x${"ab".repeat(32)}`;
const UID = `0x${"cd".repeat(32)}`;
const KEY = `0x${"11".repeat(65)}`;
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const mined = ok({ txHash: TX, uid: UID, blockNumber: 5n });

/** The use case over fakes, with a relay that records its submission, then waits for `mine()` unless told not to. */
function setup(options: { hold?: boolean; refuse?: boolean; throws?: boolean } = {}) {
  const clock = fakeClock();
  const records = fakeSubmissionRecords();
  const replay = fakeReplayStore();
  const store = fakeIdempotencyStore();
  const status = createSubmissionStatus({ records, replay, head: () => Promise.resolve(5n), confirmations: 1 });
  const tracking = { tracker: createSubmissionTracker({ records, random: fakeRandom(), clock }), status, log: quiet };
  const sent: string[] = [];
  let mine: (() => void) | undefined;
  const send = async (input: string, onSubmitting: OnSubmitting | undefined) => {
    sent.push(input);
    if (options.refuse) return fail("SCHEMA_NOT_SUBSIDIZED", "no");
    await replay.claim({ key: KEY, chainId: 1, attester: "0xa", nonce: BigInt(sent.length), deadline: 2_000_000_000n, createdAtMs: 1 });
    await onSubmitting?.(1, KEY);
    if (options.throws) throw new Error("node gone");
    if (options.hold && sent.length === 1) await new Promise<void>((resolve) => (mine = resolve));
    await replay.finish(1, KEY, { state: "mined", txHash: TX, uid: UID, blockNumber: 5n });
    return mined;
  };
  const submission = createRelaySubmission({ idempotency: createIdempotency({ store, clock }), tracking }, send);
  const write = (input: string, key?: string, async = false): RelayWrite<string> => ({
    scope: "client:203.0.113.7",
    async,
    input,
    ...(key === undefined ? {} : { keyed: { key, method: "POST", path: "/v1/delegated-attest", body: input } }),
  });
  /** Waits until the first relay holds its transaction (its submission recorded). */
  const held = async () => {
    while (mine === undefined) await Bun.sleep(1);
  };
  return { submission, write, sent, status, clock, store, held, mine: () => mine?.() };
}

const answer = (status: number, body: string) => ({ status, headers: { "content-type": "application/json" }, body });

describe("createRelaySubmission() (issue 47 item 2: idempotency, record, relay, settle in one use case)", () => {
  test("without a key: the relay runs once, its submission is opened when it hands the transaction on and settled with its outcome", async () => {
    const env = setup();
    const run = await env.submission(env.write("a"));
    expect(run.keep).toBeUndefined();
    if (run.outcome.kind !== "answered") throw new Error(run.outcome.kind);
    expect(run.outcome.result).toEqual(mined);
    const read = await env.status.read(run.outcome.submissionId!);
    expect(read.ok && read.value.state).toBe("confirmed");
    expect(env.sent).toEqual(["a"]);
  });

  test("a refusal before anything is handed on opens no submission", async () => {
    const env = setup({ refuse: true });
    const run = await env.submission(env.write("a"));
    expect(run.outcome).toEqual({ kind: "answered", result: fail("SCHEMA_NOT_SUBSIDIZED", "no"), submissionId: undefined });
  });

  test("with a key: the kept answer is replayed, another request under the key is refused, the relay ran once", async () => {
    const env = setup();
    const first = await env.submission(env.write("a", "k1"));
    expect(first.outcome.kind).toBe("answered");
    await first.keep!(answer(200, "{\"ok\":1}"));
    const again = await env.submission(env.write("a", "k1"));
    expect(again.outcome).toEqual({ kind: "replay", answer: answer(200, "{\"ok\":1}") });
    const other = await env.submission(env.write("b", "k1"));
    expect(other.outcome).toMatchObject({ kind: "key-refused", code: "IDEMPOTENCY_KEY_REUSED" });
    expect(env.sent).toEqual(["a"]);
  });

  test("a retry while the first still runs is refused in use, with a wait; an answer not kept (429) frees the key", async () => {
    const env = setup({ hold: true });
    const first = env.submission(env.write("a", "k2"));
    await env.held();
    const retry = await env.submission(env.write("a", "k2"));
    expect(retry.outcome).toMatchObject({ kind: "key-refused", code: "IDEMPOTENCY_KEY_IN_USE", retryAfterSeconds: 1 });
    env.mine();
    await (await first).keep!(answer(429, ""));
    const later = await env.submission(env.write("a", "k2"));
    expect(later.outcome.kind).toBe("answered");
    expect(env.sent.length).toBe(2);
  });

  test("async: accepted once the submission is recorded; the relay runs on and settles it", async () => {
    const env = setup({ hold: true });
    const run = await env.submission(env.write("a", undefined, true));
    if (run.outcome.kind !== "accepted") throw new Error(run.outcome.kind);
    const id = run.outcome.submissionId;
    const open = await env.status.read(id);
    expect(open.ok && open.value.state).toBe("pending");
    env.mine();
    let settled = await env.status.read(id);
    while (settled.ok && settled.value.state === "pending") settled = (await Bun.sleep(1), await env.status.read(id));
    settled = await env.status.read(id);
    expect(settled.ok && settled.value.state).toBe("confirmed");
  });

  test("a retry of a request that died after opening its submission answers from the submission, without relaying again", async () => {
    const env = setup({ hold: true });
    void env.submission(env.write("a", "k3"));
    await env.held();
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const retry = await env.submission(env.write("a", "k3"));
    if (retry.outcome.kind !== "resumed") throw new Error(retry.outcome.kind);
    expect(retry.outcome.view?.state).toBe("pending");
    expect(env.sent).toEqual(["a"]);
  });

  test("a resumed submission still on its way is not kept under the key: once settled, the next retry answers with its outcome", async () => {
    const env = setup({ hold: true });
    void env.submission(env.write("a", "k5"));
    await env.held();
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const onItsWay = await env.submission(env.write("a", "k5"));
    if (onItsWay.outcome.kind !== "resumed") throw new Error(onItsWay.outcome.kind);
    expect(onItsWay.outcome.view?.state).toBe("pending");
    // The route words it 202; before, that answer was kept and replayed for 24 hours.
    await onItsWay.keep!(answer(202, "{\"state\":\"pending\"}"));
    env.mine();
    let settled = await env.status.read(onItsWay.outcome.submissionId);
    while (settled.ok && settled.value.state === "pending") settled = (await Bun.sleep(1), await env.status.read(onItsWay.outcome.submissionId));
    // The key stays with the write while its lease runs; past it, the next retry asks again.
    expect((await env.submission(env.write("a", "k5"))).outcome).toMatchObject({ kind: "key-refused", code: "IDEMPOTENCY_KEY_IN_USE" });
    env.clock.set(env.clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const after = await env.submission(env.write("a", "k5"));
    if (after.outcome.kind !== "resumed") throw new Error(after.outcome.kind);
    expect(after.outcome.view).toMatchObject({ state: "confirmed", uid: UID });
    // Settled, its answer is kept: the next retry replays it.
    await after.keep!(answer(200, "{\"uid\":1}"));
    expect((await env.submission(env.write("a", "k5"))).outcome).toEqual({ kind: "replay", answer: answer(200, "{\"uid\":1}") });
    expect(env.sent).toEqual(["a"]);
  });

  test("a relay that throws gives the key back: the retry runs", async () => {
    const env = setup({ throws: true });
    await expect(env.submission(env.write("a", "k4"))).rejects.toThrow("node gone");
    await expect(env.submission(env.write("a", "k4"))).rejects.toThrow("node gone");
    expect(env.sent.length).toBe(2);
  });
});

describe("createRelaySubmission() of a kept 503 OUTCOME_UNKNOWN taken back (decisions §23)", () => {
  test("each retry answered from its submission gives its turn back and takes a lookup instead: polling costs no writes", async () => {
    const env = setup({ hold: true });
    // Three turns and ten lookups, none coming back while the test runs.
    const turns = createRateLimiter(env.clock, { capacity: 3, perMinute: 0.0001 });
    const lookups = createRateLimiter(env.clock, { capacity: 10, perMinute: 0.0001 });
    const rated = (w: RelayWrite<string>): RelayWrite<string> => ({ ...w, rate: { key: "c", turns, lookups, message: () => "slow" } });
    const first = env.submission(rated(env.write("a", "k6")));
    await env.held();
    // The first request was answered 503 OUTCOME_UNKNOWN (its receipt never came), kept with its submission noted.
    const id = "client:203.0.113.7\nk6";
    const unknown = answer(503, JSON.stringify({ error: "x", code: "OUTCOME_UNKNOWN" }));
    env.store.records.set(id, { ...env.store.records.get(id)!, state: "done", answer: unknown });
    // Still on its way: each retry takes the key back, is answered the kept 503, and leaves the turns as they were.
    for (let i = 0; i < 5; i++) expect((await env.submission(rated(env.write("a", "k6")))).outcome).toEqual({ kind: "replay", answer: unknown });
    // New work still has the two turns the first request left: before, the retries had spent them (429).
    expect((await env.submission(rated(env.write("b", "k7")))).outcome.kind).toBe("answered");
    expect((await env.submission(rated(env.write("c", "k8")))).outcome.kind).toBe("answered");
    expect((await env.submission(rated(env.write("d", "k9")))).outcome.kind).toBe("rate-limited");
    env.mine();
    await first;
    expect(env.sent).toEqual(["a", "b", "c"]);
  });
});
