import { describe, expect, test } from "bun:test";
import { fakeClock, fakeIdempotencyStore } from "../../ports/fakes/mod.ts";
import { createIdempotency, IDEMPOTENCY_KEEP_MS, IDEMPOTENCY_LEASE_MS, keepsAnswer, keepsStoredAnswer, parseIdempotencyKey, requestFingerprint } from "./mod.ts";

const request = { scope: "account:a", key: "k-1", method: "POST", path: "/v1/delegated-attest", body: '{"a":1}' };
const answer = { status: 200, headers: { "content-type": "application/json" }, body: '{"uid":"0x1"}' };

function setup() {
  const store = fakeIdempotencyStore();
  const clock = fakeClock();
  return { store, clock, idempotency: createIdempotency({ store, clock }) };
}

describe("parseIdempotencyKey()", () => {
  test("takes a bare key, a quoted string without its quotes, and no header as none", () => {
    expect(parseIdempotencyKey("4f2c7e1a-0b1d-4c5e-9f00-123456789abc")).toEqual({ ok: true, value: "4f2c7e1a-0b1d-4c5e-9f00-123456789abc" });
    expect(parseIdempotencyKey('"abc"')).toEqual({ ok: true, value: "abc" });
    expect(parseIdempotencyKey(null)).toEqual({ ok: true, value: undefined });
    expect(parseIdempotencyKey("x".repeat(255))).toMatchObject({ ok: true });
  });

  test("refuses an empty, a longer or a non-printable key as INVALID_INPUT", () => {
    for (const bad of ["", '""', "x".repeat(256), "a\u0001b", "é"]) expect(parseIdempotencyKey(bad)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
  });
});

describe("requestFingerprint()", () => {
  test("differs by method, path and body, and is stable", () => {
    const base = requestFingerprint(request);
    expect(requestFingerprint({ ...request })).toBe(base);
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(requestFingerprint({ ...request, body: '{"a":2}' })).not.toBe(base);
    expect(requestFingerprint({ ...request, path: "/api/eas/delegated-attest" })).not.toBe(base);
    expect(requestFingerprint({ ...request, method: "PUT" })).not.toBe(base);
  });
});

describe("createIdempotency()", () => {
  test("runs the first request, then replays its stored answer to a retry of the same request", async () => {
    const { idempotency } = setup();
    const first = await idempotency(request);
    expect(first.kind).toBe("run");
    if (first.kind === "run") await first.finish(answer);
    expect(await idempotency(request)).toEqual({ kind: "replay", answer });
  });

  test("a different request under the key is IDEMPOTENCY_KEY_REUSED, while running and once done", async () => {
    const { idempotency } = setup();
    const first = await idempotency(request);
    expect(await idempotency({ ...request, body: "{}" })).toMatchObject({ kind: "reused", code: "IDEMPOTENCY_KEY_REUSED" });
    if (first.kind === "run") await first.finish(answer);
    expect(await idempotency({ ...request, path: "/api/eas/delegated-attest" })).toMatchObject({ kind: "reused" });
  });

  test("a retry while the first still runs is IDEMPOTENCY_KEY_IN_USE with a retry delay", async () => {
    const { idempotency } = setup();
    await idempotency(request);
    expect(await idempotency(request)).toMatchObject({ kind: "in-use", code: "IDEMPOTENCY_KEY_IN_USE", retryAfterSeconds: 1 });
  });

  test("keys are per scope: another account's same key runs", async () => {
    const { idempotency } = setup();
    await idempotency(request);
    expect((await idempotency({ ...request, scope: "account:b" })).kind).toBe("run");
  });

  test("an answer not kept frees the key: the retry runs afresh", async () => {
    const { idempotency } = setup();
    const first = await idempotency(request);
    if (first.kind === "run") await first.finish(undefined);
    expect((await idempotency(request)).kind).toBe("run");
  });

  test("a request that died (lease passed) is taken over by its retry, never by a different request", async () => {
    const { idempotency, clock } = setup();
    await idempotency(request);
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS - 1);
    expect((await idempotency(request)).kind).toBe("in-use");
    clock.set(clock.nowMs() + 1);
    expect((await idempotency({ ...request, body: "{}" })).kind).toBe("reused");
    expect((await idempotency(request)).kind).toBe("run");
    expect((await idempotency(request)).kind).toBe("in-use");
  });

  test("a dead request's retry resumes the submission it opened; one that opened none runs afresh", async () => {
    const { idempotency, clock } = setup();
    const first = await idempotency(request);
    if (first.kind !== "run") throw new Error("expected run");
    expect(first.resumed).toBeUndefined();
    await first.attach("sub-1");
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    expect(await idempotency(request)).toMatchObject({ kind: "run", resumed: "sub-1" });
    const other = await idempotency({ ...request, key: "k-2" });
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    expect(other.kind).toBe("run");
    expect(await idempotency({ ...request, key: "k-2" })).toMatchObject({ kind: "run", resumed: undefined });
  });

  test("a key is kept 24 h, then runs again", async () => {
    const { idempotency, clock, store } = setup();
    const first = await idempotency(request);
    if (first.kind === "run") await first.finish(answer);
    clock.set(clock.nowMs() + IDEMPOTENCY_KEEP_MS - 1);
    expect((await idempotency(request)).kind).toBe("replay");
    clock.set(clock.nowMs() + 1);
    expect(await store.prune(clock.nowMs())).toBe(1);
    expect((await idempotency({ ...request, body: "{}" })).kind).toBe("run");
  });

  test("lookup() answers as the decision would without writing: replay, 422, 409, or undefined where the request would run", async () => {
    const { idempotency, clock, store } = setup();
    const lookup = idempotency.lookup!;
    expect(await lookup(request)).toBeUndefined();
    expect(store.records.size).toBe(0);
    const first = await idempotency(request);
    expect(await lookup(request)).toMatchObject({ kind: "in-use", code: "IDEMPOTENCY_KEY_IN_USE", retryAfterSeconds: 1 });
    expect(await lookup({ ...request, body: "{}" })).toMatchObject({ kind: "reused", code: "IDEMPOTENCY_KEY_REUSED" });
    // A dead request's key: its retry would take it over (run), another body is still 422.
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    expect(await lookup(request)).toBeUndefined();
    expect(await lookup({ ...request, body: "{}" })).toMatchObject({ kind: "reused" });
    if (first.kind === "run") await first.finish(answer);
    expect(await lookup(request)).toEqual({ kind: "replay", answer });
    // Expired (not yet pruned): any request would run.
    clock.set(clock.nowMs() + IDEMPOTENCY_KEEP_MS);
    expect(await lookup({ ...request, body: "{}" })).toBeUndefined();
    expect(store.records.size).toBe(1);
  });

  test("keepsAnswer() keeps errors but not 429, 401 or 402, nor a refusal whose code says nothing was done and to send it again", () => {
    for (const status of [200, 202, 400, 403, 409, 422, 500, 503]) expect(keepsAnswer(status)).toBe(true);
    for (const status of [401, 402, 429]) expect(keepsAnswer(status)).toBe(false);
    for (const [status, code] of [[502, "FACILITATOR_UNAVAILABLE"], [409, "PAYMENT_IN_PROGRESS"], [503, "SIGNER_UNAVAILABLE"], [503, "SHUTTING_DOWN"]] as const) {
      expect(keepsAnswer(status, code)).toBe(false);
      expect(keepsStoredAnswer({ status, body: JSON.stringify({ error: "x", code }) })).toBe(false);
    }
    // The outcome of a write that may have happened is the key's answer: its retry must not send again.
    expect(keepsStoredAnswer({ status: 503, body: JSON.stringify({ error: "x", code: "OUTCOME_UNKNOWN" }) })).toBe(true);
    expect(keepsStoredAnswer({ status: 500, body: "not json" })).toBe(true);
    // A batch whose one transaction the signer gave no signature for: every result 503 SIGNER_UNAVAILABLE, nothing done.
    const unavailable = { status: 503, error: "x", code: "SIGNER_UNAVAILABLE" };
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [unavailable, unavailable] }) })).toBe(false);
    // One refused for its own reason, or one sent: the batch's answer is the key's.
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ results: [unavailable, { status: 400, error: "x", code: "INVALID_INPUT" }] }) })).toBe(true);
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ results: [{ uid: "0x1" }] }) })).toBe(true);
  });

  test("a lookup that could not be made (502 NETWORK_ERROR) did nothing: not kept, so the retry it invites runs once the lookup answers", () => {
    // Before: kept, so a private relay write refused while the subject's DNS failed replayed that 502 for 24 hours.
    const lookupFailed = { status: 502, error: "The subject's ownership could not be looked up", code: "NETWORK_ERROR" };
    expect(keepsAnswer(502, "NETWORK_ERROR")).toBe(false);
    expect(keepsStoredAnswer({ status: 502, body: JSON.stringify(lookupFailed) })).toBe(false);
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [lookupFailed, lookupFailed] }) })).toBe(false);
    // A definitive refusal after the lookups is still the key's answer.
    expect(keepsStoredAnswer({ status: 422, body: JSON.stringify({ error: "x", code: "EVIDENCE_NOT_FOUND" }) })).toBe(true);
    expect(keepsStoredAnswer({ status: 403, body: JSON.stringify({ error: "x", code: "SUBJECT_OWNERSHIP_REQUIRED" }) })).toBe(true);
  });

  test("a failed chain read and a delegate that cannot pay did nothing: not kept, alone or as every item of a batch; a transaction that failed is kept", () => {
    // Before: kept, so a client retrying the 5xx under its key got the same refusal for 24 hours once the wallet was funded.
    const cannotPay = { status: 503, error: "The delegate wallet cannot pay for gas right now; nothing was recorded", code: "SUBMISSION_FAILED" };
    const readFailed = { status: 500, error: "Failed to read the delegate wallet's balance from the chain", code: "RPC_ERROR" };
    for (const refusal of [cannotPay, readFailed]) {
      expect(keepsStoredAnswer({ status: refusal.status, body: JSON.stringify(refusal) })).toBe(false);
      expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [refusal, refusal] }) })).toBe(false);
    }
    // Every item of a batch rate-limited: nothing sent, as the single route's 429 (not kept either).
    const limited = { status: 429, error: "Slow down", code: "RATE_LIMITED" };
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [limited, limited] }) })).toBe(false);
    // A reverted transaction (500 SUBMISSION_FAILED with its hash) is the key's answer.
    expect(keepsStoredAnswer({ status: 500, body: JSON.stringify({ error: "The attestation transaction reverted", code: "SUBMISSION_FAILED", details: "0xabc" }) })).toBe(true);
  });
});

describe("keepsAnswer() of a relay's 409 DUPLICATE", () => {
  test("one that names no outcome (being processed, a nonce in flight) is not kept; one naming the uid or the transaction is", () => {
    // "Being processed" was kept: the other request then gave the signature back (a chain read failed), and a retry
    // under this key replayed the 409 for 24 hours while the same request without the key went through.
    const uid = `0x${"a".repeat(64)}`;
    const processing = { error: "Duplicate submission: it is being processed", code: "DUPLICATE" };
    const inFlight = { error: "Another submission for this attester and nonce is already in flight", code: "DUPLICATE" };
    const landed = { error: "Duplicate submission: already attested", code: "DUPLICATE", details: uid };
    for (const refusal of [processing, inFlight]) {
      expect(keepsAnswer(409, refusal.code)).toBe(false);
      expect(keepsStoredAnswer({ status: 409, body: JSON.stringify(refusal) })).toBe(false);
      expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [{ status: 409, ...refusal }] }) })).toBe(false);
    }
    expect(keepsAnswer(409, "DUPLICATE", { details: uid })).toBe(true);
    expect(keepsStoredAnswer({ status: 409, body: JSON.stringify(landed) })).toBe(true);
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ submissionId: null, txHash: null, results: [{ status: 409, ...landed }] }) })).toBe(true);
    // Another route's 409 with no code, and a batch with one answer kept, are kept as before.
    expect(keepsAnswer(409)).toBe(true);
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ results: [{ status: 409, ...processing }, { status: 400, error: "x", code: "INVALID_INPUT" }] }) })).toBe(true);
  });
});

describe("keepsAnswer(): an internal error", () => {
  test("a 500 INTERNAL_ERROR is not kept (a thrown error's answer never was): the relays' delegate wallet whose shared nonce could not be taken sent nothing", () => {
    const body = JSON.stringify({ error: "The service could not take its delegate wallet's next nonce; nothing was sent, and the same signature may be submitted again", code: "INTERNAL_ERROR" });
    expect(keepsAnswer(500, "INTERNAL_ERROR")).toBe(false);
    expect(keepsStoredAnswer({ status: 500, body })).toBe(false);
    expect(keepsStoredAnswer({ status: 200, body: JSON.stringify({ results: [{ status: 500, error: "x", code: "INTERNAL_ERROR" }, { status: 500, error: "x", code: "INTERNAL_ERROR" }] }) })).toBe(false);
    // The node's refusal (500 SUBMISSION_FAILED) is a transaction that failed, and is kept as before.
    expect(keepsAnswer(500, "SUBMISSION_FAILED")).toBe(true);
  });
});

describe("keepsStoredAnswer() of a batch that sent nothing", () => {
  test("one refused for nothing done beside others refused for their own reasons is not kept; with a transaction sent it is", () => {
    const silent = { status: 500, error: "x", code: "RPC_ERROR" };
    const onRecord = { status: 409, error: "x", code: "DUPLICATE", details: "0xabc" };
    const expired = { status: 400, error: "x", code: "SIGNATURE_EXPIRED" };
    const body = (txHash: string | null, results: unknown[]) => JSON.stringify({ submissionId: null, txHash, results });
    expect(keepsStoredAnswer({ status: 200, body: body(null, [silent, onRecord]) })).toBe(false);
    expect(keepsStoredAnswer({ status: 200, body: body(null, [expired, silent]) })).toBe(false);
    // Refused each for its own reason: the batch's answer is the key's.
    expect(keepsStoredAnswer({ status: 200, body: body(null, [expired, onRecord]) })).toBe(true);
    // A transaction was sent: what it did is the key's answer, whatever else was refused.
    expect(keepsStoredAnswer({ status: 200, body: body("0x01", [{ uid: "0x1" }, silent]) })).toBe(true);
  });
});

describe("keepsAnswer() of a relay's 409 DUPLICATE naming a transaction on its way", () => {
  test("is not kept, alone or as a batch's did-nothing item; one naming a mined or reverted outcome is", () => {
    // It was kept: the reconciler then released the record (its deadline passed with nothing on chain, or no verdict
    // on its bytes), and a retry under the key replayed "on its way" for 24 hours though the signature was accepted again.
    const hash = `0x${"b".repeat(64)}`;
    const onItsWay = { error: "Duplicate submission: its transaction is on its way", code: "DUPLICATE", details: hash };
    const mined = { error: "Duplicate submission: already attested", code: "DUPLICATE", details: hash };
    const reverted = { error: "Duplicate submission: its transaction reverted", code: "DUPLICATE", details: hash };
    const batch = (txHash: string | null, results: unknown[]) => JSON.stringify({ submissionId: null, txHash, results });
    expect(keepsAnswer(409, "DUPLICATE", { details: hash, error: onItsWay.error })).toBe(false);
    expect(keepsStoredAnswer({ status: 409, body: JSON.stringify(onItsWay) })).toBe(false);
    // The EAS routes' body carries `elapsed` too.
    expect(keepsStoredAnswer({ status: 409, body: JSON.stringify({ ...onItsWay, elapsed: "0.01s" }) })).toBe(false);
    expect(keepsStoredAnswer({ status: 200, body: batch(null, [{ status: 409, ...onItsWay }]) })).toBe(false);
    // As the batch rule treats the other did-nothing items: beside one refused for its own reason with nothing sent,
    // not kept; in a batch that sent its transaction, kept.
    const expired = { status: 400, error: "x", code: "SIGNATURE_EXPIRED" };
    expect(keepsStoredAnswer({ status: 200, body: batch(null, [expired, { status: 409, ...onItsWay }]) })).toBe(false);
    expect(keepsStoredAnswer({ status: 200, body: batch("0x01", [{ uid: "0x1" }, { status: 409, ...onItsWay }]) })).toBe(true);
    // A mined or reverted outcome is final: kept, alone and in a batch.
    for (const final of [mined, reverted]) {
      expect(keepsAnswer(409, "DUPLICATE", { details: hash, error: final.error })).toBe(true);
      expect(keepsStoredAnswer({ status: 409, body: JSON.stringify(final) })).toBe(true);
      expect(keepsStoredAnswer({ status: 200, body: batch(null, [{ status: 409, ...final }]) })).toBe(true);
    }
  });
});

describe("keepsStoredAnswer() of a batch a request of which expired in the delegate wallet's queue", () => {
  test("the others given back (INVALID_INPUT, BATCH_EXPIRED) make it not kept; expired requests alone are kept, as the single route's expiry is", () => {
    const expired = { status: 400, error: "x", code: "SIGNATURE_EXPIRED" };
    const givenBack = { status: 400, error: "x", code: "INVALID_INPUT", details: "BATCH_EXPIRED" };
    const body = (results: unknown[]) => JSON.stringify({ submissionId: null, txHash: null, results });
    expect(keepsStoredAnswer({ status: 200, body: body([expired, givenBack]) })).toBe(false);
    // Nothing else to send: the retry would be refused as expired on arrival, as the single route's 400 is (kept).
    expect(keepsStoredAnswer({ status: 200, body: body([expired, expired]) })).toBe(true);
    expect(keepsStoredAnswer({ status: 400, body: JSON.stringify(expired) })).toBe(true);
    // Another 400 INVALID_INPUT beside an expired request is its own refusal: kept.
    expect(keepsStoredAnswer({ status: 200, body: body([expired, { status: 400, error: "x", code: "INVALID_INPUT" }]) })).toBe(true);
  });
});

describe("createIdempotency() of a kept 503 OUTCOME_UNKNOWN", () => {
  const unknown = { status: 503, headers: { "content-type": "application/json" }, body: JSON.stringify({ error: "x", code: "OUTCOME_UNKNOWN", details: "0xab" }) };
  const unknownBatch = { status: 200, headers: {}, body: JSON.stringify({ submissionId: "s-1", txHash: "0xab", results: [{ status: 503, error: "x", code: "OUTCOME_UNKNOWN", details: "0xab" }] }) };

  test("whose request noted a submission: the retry takes the key back to answer from it, and one retry at a time does", async () => {
    for (const kept of [unknown, unknownBatch]) {
      const { idempotency, store } = setup();
      const first = await idempotency(request);
      if (first.kind !== "run") throw new Error(first.kind);
      await first.attach("s-1");
      await first.finish(kept);
      const retry = await idempotency(request);
      if (retry.kind !== "run") throw new Error(retry.kind);
      expect([retry.resumed, retry.kept]).toEqual(["s-1", kept]);
      expect(store.records.get(`${request.scope}\n${request.key}`)?.state).toBe("running");
      // While it answers, another retry waits; another request under the key is still refused.
      expect(await idempotency(request)).toMatchObject({ kind: "in-use", code: "IDEMPOTENCY_KEY_IN_USE" });
      expect(await idempotency({ ...request, body: "{}" })).toMatchObject({ kind: "reused" });
      // Still on its way: the kept answer is given back, and replayed as before.
      await retry.finish(kept);
      expect(await idempotency.lookup!(request)).toEqual({ kind: "replay", answer: kept });
      const settled = await idempotency(request);
      if (settled.kind !== "run") throw new Error(settled.kind);
      // Settled: its answer is kept in place of "unknown", and replayed from then on.
      await settled.finish(answer);
      expect(await idempotency(request)).toEqual({ kind: "replay", answer });
    }
  });

  test("without a noted submission, or any other kept answer, is replayed as kept", async () => {
    for (const [kept, noted] of [[unknown, false], [answer, true], [{ ...unknown, status: 500 }, true]] as const) {
      const { idempotency } = setup();
      const first = await idempotency(request);
      if (first.kind !== "run") throw new Error(first.kind);
      if (noted) await first.attach("s-1");
      await first.finish(kept);
      expect(await idempotency(request)).toEqual({ kind: "replay", answer: kept });
    }
  });
});

describe("held()", () => {
  test("reads the key without writing, telling apart a key free to begin (none, expired) and a dead request's with this fingerprint", async () => {
    const { idempotency, clock, store } = setup();
    const held = idempotency.held!;
    expect(await held(request)).toEqual({ kind: "free" });
    expect(store.records.size).toBe(0);
    const first = await idempotency(request);
    expect(await held(request)).toMatchObject({ kind: "in-use" });
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS);
    expect(await held(request)).toEqual({ kind: "dead" });
    expect(await held({ ...request, body: "{}" })).toMatchObject({ kind: "reused" });
    if (first.kind === "run") await first.finish(answer);
    expect(await held(request)).toEqual({ kind: "replay", answer });
    clock.set(clock.nowMs() + IDEMPOTENCY_KEEP_MS);
    expect(await held(request)).toEqual({ kind: "free" });
  });
});
