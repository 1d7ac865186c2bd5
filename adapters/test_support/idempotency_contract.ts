import { expect, test } from "bun:test";
import type { Storage } from "../../ports/storage.ts";
import { T0, fresh } from "./_helpers.ts";

/** The storage contract's tests of idempotency keys (decisions §23); registered inside its describe, `open` gives the storage under test. */
export function idempotencyContract(open: () => Promise<Storage>) {
  test("idempotency keys (decisions §23): begun once; a done key keeps its answer; a running one is held, or taken over by the same request once its lease passed; expired ones go", async () => {
    const { idempotency } = await open();
    const scope = fresh("account");
    const record = (fingerprint: string, nowMs: number) => ({ scope, key: "k", fingerprint, createdAtMs: nowMs, expiresAtMs: nowMs + 86_400_000, leaseUntilMs: nowMs + 300_000 });
    expect(await idempotency.find(scope, "k")).toBeUndefined();
    expect(await idempotency.begin(record("f1", T0))).toEqual({ kind: "started", submissionId: null });
    // find reads the record as it stands (one read by the primary key, nothing written).
    expect(await idempotency.find(scope, "k")).toMatchObject({ scope, key: "k", state: "running", fingerprint: "f1", answer: null, leaseUntilMs: T0 + 300_000 });
    expect(await idempotency.begin(record("f1", T0 + 1))).toMatchObject({ kind: "exists", record: { state: "running", fingerprint: "f1", answer: null, leaseUntilMs: T0 + 300_000 } });
    // The same key in another scope is another key.
    expect(await idempotency.begin({ ...record("f2", T0), scope: fresh("client") })).toEqual({ kind: "started", submissionId: null });
    // A dead request's key (lease passed): another request may not take it, the same one may, with the submission
    // the dead one opened.
    await idempotency.attach(scope, "k", "sub-1");
    expect(await idempotency.begin(record("f2", T0 + 300_000))).toMatchObject({ kind: "exists", record: { fingerprint: "f1", submissionId: "sub-1" } });
    expect(await idempotency.begin(record("f1", T0 + 300_000))).toEqual({ kind: "started", submissionId: "sub-1" });
    expect(await idempotency.begin(record("f1", T0 + 300_001))).toMatchObject({ kind: "exists", record: { state: "running", leaseUntilMs: T0 + 600_000, createdAtMs: T0 } });
    const answer = { status: 409, headers: { "content-type": "application/json", "retry-after": "3" }, body: '{"code":"DUPLICATE"}' };
    await idempotency.complete(scope, "k", answer);
    expect(await idempotency.find(scope, "k")).toMatchObject({ state: "done", answer, submissionId: "sub-1" });
    expect(await idempotency.begin(record("f1", T0 + 900_000))).toMatchObject({ kind: "exists", record: { state: "done", answer, expiresAtMs: T0 + 86_400_000 } });
    // Completed keys are not abandoned; an abandoned running key is free again.
    await idempotency.abandon(scope, "k");
    expect(await idempotency.begin(record("f1", T0 + 900_001))).toMatchObject({ kind: "exists", record: { state: "done" } });
    const other = { ...record("f3", T0), key: "k2" };
    expect(await idempotency.begin(other)).toEqual({ kind: "started", submissionId: null });
    await idempotency.abandon(scope, "k2");
    expect(await idempotency.begin(other)).toEqual({ kind: "started", submissionId: null });
    // Kept 24 h: expired, a key begins afresh, with any request.
    expect(await idempotency.begin(record("f9", T0 + 86_400_000))).toEqual({ kind: "started", submissionId: null });
    expect(await idempotency.begin(record("f9", T0 + 86_400_001))).toMatchObject({ kind: "exists", record: { state: "running", fingerprint: "f9", answer: null } });
    expect(await idempotency.prune(T0 + 3 * 86_400_000)).toBeGreaterThanOrEqual(2);
    expect(await idempotency.begin(record("f1", T0 + 3 * 86_400_000))).toEqual({ kind: "started", submissionId: null });
  });

  test("idempotency keys: thirty concurrent begins of one key start exactly one", async () => {
    const { idempotency } = await open();
    const scope = fresh("account");
    const outcomes = await Promise.all(Array.from({ length: 30 }, () =>
      idempotency.begin({ scope, key: "same", fingerprint: "f", createdAtMs: T0, expiresAtMs: T0 + 86_400_000, leaseUntilMs: T0 + 300_000 })));
    expect(outcomes.filter((o) => o.kind === "started")).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === "exists")).toHaveLength(29);
  });
  test("idempotency keys: a done key noting a submission is taken back to running by one of its retries while it holds the kept answer", async () => {
    const { idempotency } = await open();
    const scope = fresh("account");
    const record = (key: string) => ({ scope, key, fingerprint: "f", createdAtMs: T0, expiresAtMs: T0 + 86_400_000, leaseUntilMs: T0 + 300_000 });
    const unknown = { status: 503, headers: { "content-type": "application/json" }, body: '{"code":"OUTCOME_UNKNOWN"}' };
    const held = (nowMs: number) => ({ fingerprint: "f", answer: unknown, nowMs, leaseUntilMs: nowMs + 300_000 });
    await idempotency.begin(record("noted"));
    await idempotency.attach(scope, "noted", "sub-1");
    await idempotency.complete(scope, "noted", unknown);
    // Another request's fingerprint, another answer, or past the key's 24 hours: not taken.
    expect(await idempotency.reopen!(scope, "noted", { ...held(T0 + 1), fingerprint: "g" })).toBe(false);
    expect(await idempotency.reopen!(scope, "noted", { ...held(T0 + 1), answer: { ...unknown, body: "{}" } })).toBe(false);
    expect(await idempotency.reopen!(scope, "noted", held(T0 + 86_400_000))).toBe(false);
    const raced = await Promise.all(Array.from({ length: 10 }, () => idempotency.reopen!(scope, "noted", held(T0 + 1))));
    expect(raced.filter(Boolean)).toHaveLength(1);
    expect(await idempotency.find(scope, "noted")).toMatchObject({ state: "running", answer: null, submissionId: "sub-1", leaseUntilMs: T0 + 300_001 });
    // Its new answer is kept as a first request's is.
    const mined = { status: 200, headers: {}, body: '{"uid":"0x1"}' };
    await idempotency.complete(scope, "noted", mined);
    expect(await idempotency.find(scope, "noted")).toMatchObject({ state: "done", answer: mined, submissionId: "sub-1" });
    expect(await idempotency.reopen!(scope, "noted", held(T0 + 2))).toBe(false);
    // A key that noted no submission is never taken back.
    await idempotency.begin(record("bare"));
    await idempotency.complete(scope, "bare", unknown);
    expect(await idempotency.reopen!(scope, "bare", held(T0 + 1))).toBe(false);
  });
}
