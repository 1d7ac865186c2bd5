/**
 * The same signature sent twice at once (a client's retry racing its first try), on the public relay through the real
 * service on the devnet. Both pass the replay lookup before either is recorded; one is sent, the other is 409
 * DUPLICATE with nothing sent, and gives back the attester token it took (a duplicate sent after the first is
 * answered from the replay record before the guard and takes none): found by attack, it kept it, so one attestation
 * spent two of the attester's hour. Not a copy simulated ahead, nor another signature over the attester's nonce in
 * flight: each keeps its token, so the attester's hour bounds what such requests cost the node (found by review: 20
 * other signatures over a nonce in flight cost 20 simulations and never met a 429). And a 409 DUPLICATE that names no outcome ("being processed": the first try still
 * running) is not kept under its Idempotency-Key: the first try may give the signature back (here its simulation gets
 * no answer, 500 RPC_ERROR), and the retry under that key then runs; it replayed "being processed" for 24 hours.
 */
import { describe, expect, test } from "bun:test";
import { generatePrivateKey } from "viem/accounts";
import { type RpcCall } from "./support/rpc_proxy.ts";
import { proxiedRelay } from "./support/proxied_relay.ts";
import { signedReviewBody } from "./support/review_signer.ts";

/** The attester's hourly allowance on the public relay: small, so that a token kept shows. */
const ATTESTER_PER_HOUR = 3;
const { proxy, target, isDelegateBalance, post } = proxiedRelay(ATTESTER_PER_HOUR);
const review = (n: number) => ({ subject: `did:web:at-once-${n}.test`, version: "1", ratingValue: 4, reviewBody: `at once ${n}`, screenshotUrls: [], proofs: [] });

/**
 * Holds the service's exchanges that read the delegate's balance (each request's, after its replay lookup and the
 * guard) until `count` such reads arrived (reads of two requests may share one exchange); returns the release, which
 * says whether they all arrived while held: the race under test took place. Ten seconds without them opens the gate
 * (so a test fails on that answer, not on its timeout).
 */
function holdBalanceReads(count: number): () => boolean {
  let arrived = 0;
  let together = false;
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let opened = false;
  const timer = setTimeout(() => {
    opened = true;
    open();
  }, 10_000);
  proxy.onHttp = async (calls) => {
    const reads = calls.filter(isDelegateBalance).length;
    if (reads === 0) return undefined;
    arrived += reads;
    if (arrived >= count && !opened) {
      together = true;
      opened = true;
      open();
    }
    await gate;
    return undefined;
  };
  return () => {
    clearTimeout(timer);
    open();
    proxy.onHttp = undefined;
    return together;
  };
}

/**
 * Leaves the relay having found, at its last check, that the delegate wallet could not pay (a write answered 503 while
 * its balance reads 0): its next requests are not simulated ahead, and a duplicate refused at its claim cost no
 * simulation (one that did keeps its attester token).
 */
async function notSimulatedAhead() {
  const spare = await signedReviewBody(target(), generatePrivateKey(), { nonce: 0n, data: review(99) });
  proxy.onAnswer = (call, answer) => (isDelegateBalance(call) ? { ...answer, result: "0x0" } : answer);
  try {
    expect((await post("/v1/delegated-attest", spare)).status).toBe(503);
  } finally {
    proxy.onAnswer = undefined;
  }
}

/** The attester's next writes of the hour, nonces `from`…: 200 each while its tokens last. */
async function nextWrites(key: `0x${string}`, from: bigint, count: number, seed: number) {
  const statuses = [];
  for (let n = 0n; n < BigInt(count); n++) {
    statuses.push((await post("/v1/delegated-attest", await signedReviewBody(target(), key, { nonce: from + n, data: review(seed + Number(n)) }))).status);
  }
  return statuses;
}

describe("the same signature twice at once", () => {
  test("two singles: one sent, the other 409 DUPLICATE, one attester token spent", async () => {
    const key = generatePrivateKey();
    const body = await signedReviewBody(target(), key, { nonce: 0n, data: review(0) });
    await notSimulatedAhead();
    const release = holdBalanceReads(2);
    let answers: Awaited<ReturnType<typeof post>>[];
    let together = false;
    try {
      answers = await Promise.all([post("/v1/delegated-attest", body), post("/v1/delegated-attest", body)]);
    } finally {
      together = release();
    }
    expect(together).toBe(true);
    expect(answers.map((a) => [a.status, a.body.code ?? null]).sort()).toEqual([[200, null], [409, "DUPLICATE"]]);
    // One attestation made: the hour's other two go through.
    expect(await nextWrites(key, 1n, ATTESTER_PER_HOUR - 1, 1)).toEqual([200, 200]);
  }, 60_000);

  test("a batch and a single with the same signature: one sent, the attester's other writes unharmed", async () => {
    const key = generatePrivateKey();
    const body = await signedReviewBody(target(), key, { nonce: 0n, data: review(10) });
    await notSimulatedAhead();
    const release = holdBalanceReads(2);
    let batch: Awaited<ReturnType<typeof post>>;
    let single: Awaited<ReturnType<typeof post>>;
    let together = false;
    try {
      [batch, single] = await Promise.all([post("/v1/delegated-attest/batch", { requests: [body] }), post("/v1/delegated-attest", body)]);
    } finally {
      together = release();
    }
    expect(together).toBe(true);
    const item = batch.body.results[0] as Record<string, unknown>;
    expect([typeof item.uid === "string" ? 200 : item.status, single.status].sort()).toEqual([200, 409]);
    expect(await nextWrites(key, 1n, ATTESTER_PER_HOUR - 1, 11)).toEqual([200, 200]);
  }, 60_000);
});

describe("a retry under a new Idempotency-Key while the first try is in flight", () => {
  test("its 409 DUPLICATE (being processed) is not kept once the first try gave the signature back; one naming the uid is", async () => {
    // Not simulated ahead of its claim (a wallet that could not pay at its last check is not): the first try is held
    // at its simulation with its replay record claimed, so the retry finds it "being processed".
    await notSimulatedAhead();
    const body = await signedReviewBody(target(), generatePrivateKey(), { nonce: 0n, data: review(21) });
    let reached!: () => void;
    const simulating = new Promise<void>((resolve) => (reached = resolve));
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const simulation = (calls: readonly RpcCall[]) => calls.some((call) => call.method === "eth_estimateGas");
    // Only the first simulation is held: should the retry be simulated too (ahead of its claim), it is answered and
    // the test fails on its answer rather than hanging.
    let holding = true;
    proxy.onHttp = async (calls) => {
      if (!holding || !simulation(calls)) return undefined;
      holding = false;
      reached();
      await held;
      return undefined;
    };
    proxy.onCall = (call) => (call.method === "eth_estimateGas" ? { code: -32000, message: "header not found" } : undefined);
    let first: Awaited<ReturnType<typeof post>>;
    let second: Awaited<ReturnType<typeof post>>;
    const retryKey = { "idempotency-key": crypto.randomUUID() };
    try {
      const firstTry = post("/v1/delegated-attest", body, { "idempotency-key": crypto.randomUUID() });
      await simulating;
      second = await post("/v1/delegated-attest", body, retryKey);
      release();
      first = await firstTry;
    } finally {
      release();
      proxy.onHttp = undefined;
      proxy.onCall = undefined;
    }
    expect([first.status, first.body.code]).toEqual([500, "RPC_ERROR"]);
    expect([second.status, second.body.code, second.body.details ?? null]).toEqual([409, "DUPLICATE", null]);
    // The signature was given back: the retry under the second key runs and writes.
    const again = await post("/v1/delegated-attest", body, retryKey);
    expect([again.status, again.replayed]).toEqual([200, null]);
    expect(again.body.uid).toMatch(/^0x[0-9a-f]{64}$/);
    // A 409 naming the attestation's uid is the request's outcome: kept under its key.
    const landedKey = { "idempotency-key": crypto.randomUUID() };
    const landed = await post("/v1/delegated-attest", body, landedKey);
    expect([landed.status, landed.body.code, landed.body.details, landed.replayed]).toEqual([409, "DUPLICATE", again.body.uid, null]);
    const replayed = await post("/v1/delegated-attest", body, landedKey);
    expect([replayed.status, replayed.replayed, replayed.body]).toEqual([409, "true", landed.body]);
  }, 60_000);
});

describe("another signature over the attester's nonce while the first is in flight", () => {
  test("it is 409 DUPLICATE and keeps its attester token: the attester's hour bounds such requests", async () => {
    // Found by review: it gave its token back, so an attester's other signatures over one nonce, sent from many
    // addresses while the first was in flight, each cost the node its reads and a simulation ahead, never 429.
    const key = generatePrivateKey();
    const bodies = [await signedReviewBody(target(), key, { nonce: 0n, data: review(30) }), await signedReviewBody(target(), key, { nonce: 0n, data: review(31) })];
    const release = holdBalanceReads(2);
    let answers: Awaited<ReturnType<typeof post>>[];
    let together = false;
    try {
      answers = await Promise.all(bodies.map((body) => post("/v1/delegated-attest", body)));
    } finally {
      together = release();
    }
    expect(together).toBe(true);
    expect(answers.map((a) => [a.status, a.body.code ?? null]).sort()).toEqual([[200, null], [409, "DUPLICATE"]]);
    // Two of the hour's three tokens spent: one more write, then 429.
    expect(await nextWrites(key, 1n, ATTESTER_PER_HOUR - 1, 32)).toEqual([200, 429]);
  }, 60_000);
});
