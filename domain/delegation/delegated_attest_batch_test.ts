import { describe, expect, test } from "bun:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeGasBudget, fakeReplayStore } from "../../ports/fakes/mod.ts";
import { buildAttestTypedData, ZERO_UID } from "./attest_typed_data.ts";
import { type CallerTicket, createDelegatedAttest, type DelegatedAttestDeps } from "./delegated_attest.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { fail } from "../result.ts";
import { createRelayGuard } from "./relay_guard.ts";
import { countingGuard, spentOf, testRelayGuard } from "./_testing.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import type { DelegatedAttestCall } from "../../ports/eas.ts";
import { attestCalldataBytes, batchCalldataBytes, MAX_CALLDATA_BYTES } from "./_calldata_size.ts";
import { keepsStoredAnswer } from "../idempotency/mod.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const OTHER_SCHEMA = "0x2b0d1100f7943c0c2ea29e35c1286bd860fa752124e035cafb503bb83f234805";
const alice = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const bob = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const carol = privateKeyToAccount(generatePrivateKey());

function setup(overrides: Partial<DelegatedAttestDeps> = {}) {
  const clock = fakeClock();
  const eas = fakeEasReader();
  const delegate = fakeDelegate();
  const replay = fakeReplayStore();
  const deps: DelegatedAttestDeps = {
    clock,
    eas,
    delegate,
    replay,
    mainnet: false,
    subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
    ...overrides,
  };
  const attest = createDelegatedAttest(deps);
  return { clock, eas, delegate, replay, attest, batch: attest.batch! };
}

async function signed(
  env: { clock: { nowMs: () => number }; eas: { chainId: number; easAddress: `0x${string}` } },
  over: { nonce?: bigint; schema?: `0x${string}`; data?: `0x${string}`; signer?: typeof alice } = {},
) {
  const signer = over.signer ?? alice;
  const message = {
    attester: signer.address,
    schema: over.schema ?? SCHEMA,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n,
    revocable: false,
    refUID: ZERO_UID,
    data: over.data ?? REVIEW_DATA,
    value: 0n,
    nonce: over.nonce ?? 0n,
    deadline: BigInt(Math.floor(env.clock.nowMs() / 1000) + 600),
  } as const;
  const typedData = buildAttestTypedData(env.eas, message);
  const signature = await signer.signTypedData(typedData);
  const strings = Object.fromEntries(Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
  return {
    attester: signer.address,
    signature,
    prepared: { delegatedRequest: { ...strings, easContractAddress: env.eas.easAddress, chainId: env.eas.chainId } },
  } as { attester: string; signature: string; prepared: Record<string, any> };
}

const codes = (results: readonly { ok: boolean; code?: string }[]) => results.map((r) => (r.ok ? "ok" : r.code));

/** A caller ticket per admitted item, recording what became of it (the private relay's sponsored writes). */
function tickets() {
  const log: string[] = [];
  const admit = (_request: unknown, index: number): Promise<CallerTicket> =>
    Promise.resolve({
      release: () => Promise.resolve(void log.push(`release ${index}`)),
      onSigned: () => Promise.resolve(void log.push(`signed ${index}`)),
      onSent: () => Promise.resolve(),
      onMined: () => Promise.resolve(void log.push(`mined ${index}`)),
    });
  return { log, admit };
}

describe("delegated attestation batches (decisions §23)", () => {
  test("valid and invalid requests mixed: each answered in order as the single route would, the valid sent in one transaction", async () => {
    const env = setup();
    const bodies = [
      await signed(env),
      { ...(await signed(env, { signer: bob, data: reviewData("0xb0b0") })), attester: alice.address },
      await signed(env, { schema: OTHER_SCHEMA, signer: bob }),
      await signed(env, { signer: bob }),
      { attester: alice.address },
    ];
    const outcome = await env.batch(bodies);
    expect(codes(outcome.results)).toEqual(["ok", "ATTESTER_MISMATCH", "SCHEMA_NOT_SUBSIDIZED", "ok", "INVALID_INPUT"]);
    expect(env.delegate.batches).toHaveLength(1);
    expect(env.delegate.sent).toHaveLength(0);
    expect(env.delegate.batches[0]!.map((c) => c.attester)).toEqual([alice.address, bob.address]);
    const uids = outcome.results.filter((r) => r.ok).map((r) => (r.ok ? r.value.uid : null));
    expect(new Set(uids).size).toBe(2);
    expect(outcome.results[0]).toMatchObject({ ok: true, value: { txHash: outcome.txHash } });
    // Each sent item's replay record holds its own uid; the refused ones hold nothing.
    for (const r of outcome.results.filter((r) => r.ok)) expect([...env.replay.rows.values()].some((row) => r.ok && row.uid === r.value.uid && row.state === "mined")).toBe(true);
    expect(env.replay.rows.size).toBe(2);
  });

  test("onSubmitting runs once before signing with every request's place: the sent ones' replay keys, the refused ones' answers", async () => {
    const env = setup();
    const bodies = [await signed(env), { attester: alice.address }, await signed(env, { signer: bob })];
    const seen: { key: string; layout: readonly unknown[]; sentBefore: number }[] = [];
    const outcome = await env.batch(bodies, {
      onSubmitting: (_chainId, key, layout) => Promise.resolve(void seen.push({ key, layout, sentBefore: env.delegate.batches.length })),
    });
    expect(seen).toHaveLength(1);
    const keys = [...env.replay.rows.values()].map((r) => r.key);
    const layout = seen[0]!.layout as readonly ({ ref: string } | { refused: { ok: false; code: string } })[];
    expect(seen[0]!.sentBefore).toBe(0);
    expect(layout.map((item) => "ref" in item ? typeof item.ref : item.refused.code)).toEqual(["string", "INVALID_INPUT", "string"]);
    expect(seen[0]!.key).toBe((layout[0] as { ref: string }).ref);
    expect(layout.flatMap((item) => "ref" in item ? [item.ref] : []).sort()).toEqual(keys.sort());
    // Each sent key's replay record holds the uid its result answers.
    for (const [index, item] of layout.entries()) {
      const result = outcome.results[index]!;
      if ("ref" in item) expect((await env.replay.find(env.eas.chainId, item.ref))?.uid).toBe(result.ok ? result.value.uid : "not sent");
    }
  });

  test("two requests of one attester signed for consecutive nonces, in order: both sent, in nonce order", async () => {
    const env = setup();
    env.eas.nonces.set(alice.address.toLowerCase(), 4n);
    const outcome = await env.batch([await signed(env, { nonce: 4n }), await signed(env, { nonce: 5n, data: reviewData("0x5678") })]);
    expect(codes(outcome.results)).toEqual(["ok", "ok"]);
    expect(env.delegate.batches[0]!.map((c) => c.data.data)).toEqual([reviewData("0x1234"), reviewData("0x5678")]);
    expect([...env.replay.rows.values()].map((row) => row.nonce).sort()).toEqual([4n, 5n]);
  });

  test("requests of one attester out of nonce order: the one whose nonce does not fit is refused before sending", async () => {
    const env = setup();
    const outcome = await env.batch([await signed(env, { nonce: 1n, data: reviewData("0x5678") }), await signed(env, { nonce: 0n })]);
    expect(codes(outcome.results)).toEqual(["ATTESTER_MISMATCH", "ok"]);
    expect(env.delegate.batches).toEqual([[expect.objectContaining({ data: expect.objectContaining({ data: reviewData("0x1234") }) })]]);
    // A gap is refused too: nonce 2 after 0 leaves EAS's nonce 1 unused.
    const gap = setup();
    const skipped = await gap.batch([await signed(gap, { nonce: 0n }), await signed(gap, { nonce: 2n, data: reviewData("0x5678") })]);
    expect(codes(skipped.results)).toEqual(["ok", "ATTESTER_MISMATCH"]);
  });

  test("a replayed request in a batch is DUPLICATE, in another batch or twice in the same", async () => {
    const env = setup();
    const body = await signed(env);
    expect(codes((await env.batch([body])).results)).toEqual(["ok"]);
    env.eas.nonces.set(alice.address.toLowerCase(), 1n);
    const again = await env.batch([body, await signed(env, { nonce: 1n, signer: alice, data: reviewData("0x99") })]);
    expect(codes(again.results)).toEqual(["DUPLICATE", "ok"]);
    const twice = setup();
    const same = await twice.batch([await signed(twice), await signed(twice)]);
    expect(codes(same.results)).toEqual(["ok", "DUPLICATE"]);
  });

  test("gas budget and rate limits count items: only the items sent are charged, each its share of the batch's gas", async () => {
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: 3 });
    const env = setup({ clock, guard });
    const outcome = await env.batch([
      await signed(env, { nonce: 0n }),
      await signed(env, { schema: OTHER_SCHEMA, nonce: 1n }),
      await signed(env, { nonce: 1n, data: reviewData("0x01") }),
      await signed(env, { nonce: 2n, data: reviewData("0x02") }),
      await signed(env, { nonce: 3n, data: reviewData("0x03") }),
    ]);
    // The attester's allowance of 3 is spent by the three items that reached the guard; the fourth is limited.
    expect(codes(outcome.results)).toEqual(["ok", "SCHEMA_NOT_SUBSIDIZED", "ok", "ok", "RATE_LIMITED"]);
    const used = [...budget.windows.values()].reduce((a, b) => a + b, 0n);
    // The fake simulation: 50,000 + 100,000 per call, split over the 3 items sent (each share rounded up).
    expect(used).toBe(350_001n);
    expect(env.delegate.batches[0]).toHaveLength(3);
  });

  test("the budget running out mid-batch refuses the items it cannot pay for, and the later items of their attester", async () => {
    const clock = fakeClock();
    const guard = createRelayGuard({ enabled: true, gasBudget: fakeGasBudget(), gasPerHour: 300_000n, typicalGas: 1n, clock });
    const env = setup({ clock, guard });
    const outcome = await env.batch([
      await signed(env, { nonce: 0n }),
      await signed(env, { signer: bob }),
      await signed(env, { nonce: 1n, data: reviewData("0x01") }),
    ]);
    // Three items: 350,000 gas, a share of 116,667 each; the budget of 300,000 pays two.
    expect(codes(outcome.results)).toEqual(["ok", "ok", "RATE_LIMITED"]);
    expect(env.delegate.batches[0]).toHaveLength(2);
  });

  test("items charged in one round and refused in a later one get their gas back: only the items sent are charged (decisions §23)", async () => {
    // Found by attacking the batches: each round charged every item its share, a smaller round's larger share was then
    // refused, and what the refused items had paid was kept, so a batch that sent nothing spent the hour's budget.
    const clock = fakeClock();
    const budget = fakeGasBudget();
    const guard = createRelayGuard({ enabled: true, gasBudget: budget, gasPerHour: 240_000n, typicalGas: 1n, clock });
    const env = setup({ clock, guard });
    const fresh = () => privateKeyToAccount(generatePrivateKey());
    const outcome = await env.batch([await signed(env, { signer: fresh() }), await signed(env, { signer: fresh() }), await signed(env, { signer: fresh() }), await signed(env, { signer: fresh() })]);
    // Rounds of 4, 3 and 2 items each raise the share until the budget refuses; what the refused paid comes back, so
    // the last round can pay for one item. Before: nothing sent, and 237,500 of the 240,000 charged.
    expect(codes(outcome.results)).toEqual(["ok", "RATE_LIMITED", "RATE_LIMITED", "RATE_LIMITED"]);
    expect(env.delegate.batches.map((b) => b.length)).toEqual([1]);
    // Charged: the one item sent, its transaction's gas (150,000 for one item here), nothing for the three refused.
    expect([...budget.windows.values()]).toEqual([150_000n]);
  });

  test("a batch too large for one block sends the part that fits; the rest is told to come again in a smaller batch (it was 500 RPC_ERROR for every item)", async () => {
    const env = setup();
    // A block holds 4 items of this fake's (450,000 gas); the batch has 10.
    env.delegate.blockGasLimit = 450_000n;
    const fresh = () => privateKeyToAccount(generatePrivateKey());
    const requests = [];
    for (let i = 0; i < 10; i++) requests.push(await signed(env, { signer: fresh() }));
    const outcome = await env.batch(requests);
    expect(codes(outcome.results)).toEqual(["ok", "ok", "ok", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT", "INVALID_INPUT"]);
    expect(outcome.results[9]).toMatchObject({ message: expect.stringContaining("send it again in a smaller batch") });
    expect(env.delegate.batches.map((b) => b.length)).toEqual([3]);
    // Halving: 10, 5, 3 items simulated.
    expect(env.delegate.batchSimulations).toBe(3);
    // What was not sent may be sent again: its record was given back.
    expect((await env.batch(requests.slice(3, 6))).results.every((r) => r.ok)).toBe(true);
  });

  test("each simulation of a batch searches up to its requests' share of MAX_GAS_PER_TX; a request past its share is refused, the rest sent", async () => {
    // A request's cap: 120,000 allowed per transaction, less the 1.2 headroom, 100,000 of search. Before, a batch's
    // estimate ran at the node's cap (a block's gas), so a batch of contract attesters ran their code at that.
    const env = setup({ maxGasPerTx: 120_000n });
    const costly = reviewData("0xc0571y");
    env.delegate.callGas = (call) => (call.data.data === costly ? 400_000n : 10_000n);
    const fresh = () => privateKeyToAccount(generatePrivateKey());
    const requests = [await signed(env, { signer: fresh() }), await signed(env, { signer: fresh() }), await signed(env, { signer: fresh(), data: costly }), await signed(env, { signer: fresh() })];
    const outcome = await env.batch(requests);
    expect(env.delegate.batchCaps).toEqual([400_000n, 200_000n]);
    // 4 items (460,000 > 400,000): the later half told to come again; 2 items (70,000 ≤ 200,000) sent.
    expect(codes(outcome.results)).toEqual(["ok", "ok", "INVALID_INPUT", "INVALID_INPUT"]);
    expect(outcome.results[2]).toMatchObject({ message: "The batch needs more gas than its requests may spend (120000 each) or a block holds: this request was not sent; send it again in a smaller batch" });
    expect(env.delegate.batches.map((b) => b.length)).toEqual([2]);
    // Alone, the costly request is refused as the single route refuses it; nothing sent.
    const alone = await env.batch([requests[2]!]);
    expect(alone.results[0]).toMatchObject({ ok: false, code: "INVALID_INPUT", message: "The attestation needs more gas: more than the 120000 allowed per transaction; nothing was sent" });
    expect(env.delegate.batchCaps).toEqual([400_000n, 200_000n, 100_000n]);
    expect(env.delegate.batches.map((b) => b.length)).toEqual([2]);
  });

  test("an item EAS would revert is refused with the single route's answer, the later items of its attester with it, the rest sent", async () => {
    const env = setup();
    env.delegate.revertsInBatch = (call) => (call.data.data === reviewData("0xbad0") ? "InvalidSchema" : undefined);
    const outcome = await env.batch([
      await signed(env, { signer: bob }),
      await signed(env, { nonce: 0n, data: reviewData("0xbad0") }),
      await signed(env, { nonce: 1n, data: reviewData("0x01") }),
      await signed(env, { signer: bob, nonce: 1n, data: reviewData("0x02") }),
    ]);
    expect(codes(outcome.results)).toEqual(["ok", "INVALID_INPUT", "ATTESTER_MISMATCH", "ok"]);
    expect(outcome.results[1]).toMatchObject({ message: "EAS rejected the attestation: InvalidSchema" });
    expect(env.delegate.batches[0]!.map((c) => c.data.data)).toEqual([reviewData("0x1234"), reviewData("0x02")]);
    // The refused items' signatures are given back: nothing of them is on record.
    expect(env.replay.rows.size).toBe(2);
  });

  test("issue 43: narrowing is bounded: 30 reverting items of 30 attesters cost at most 30 + ⌈log₂ 30⌉ + 1 simulations, one bad item ⌈log₂ 30⌉ + 2", async () => {
    const signers = Array.from({ length: 30 }, () => privateKeyToAccount(generatePrivateKey()));
    const env = setup();
    env.delegate.revertsInBatch = (call) => (call.data.data === reviewData("0xbad0") ? "InvalidExpirationTime" : undefined);
    const all = await env.batch(await Promise.all(signers.map((signer) => signed(env, { signer, data: reviewData("0xbad0") }))));
    expect(codes(all.results)).toEqual(Array(30).fill("INVALID_INPUT"));
    expect(env.delegate.batches).toHaveLength(0);
    // Before: one halving per reverting item, 150 simulations.
    expect(env.delegate.batchSimulations).toBeLessThanOrEqual(36);

    const one = setup();
    one.delegate.revertsInBatch = (call) => (call.data.data === reviewData("0xbad0") ? "InvalidExpirationTime" : undefined);
    const bodies = await Promise.all(signers.map((signer, i) => signed(one, { signer, data: i === 17 ? reviewData("0xbad0") : reviewData("0x01") })));
    const outcome = await one.batch(bodies);
    expect(codes(outcome.results)).toEqual(signers.map((_, i) => (i === 17 ? "INVALID_INPUT" : "ok")));
    expect(one.delegate.batches[0]).toHaveLength(29);
    expect(one.delegate.batchSimulations).toBeLessThanOrEqual(7);

    // Every other item reverting: each good one is still sent, within the same bound.
    const half = setup();
    half.delegate.revertsInBatch = (call) => (call.data.data === reviewData("0xbad0") ? "InvalidExpirationTime" : undefined);
    const mixed = await half.batch(await Promise.all(signers.map((signer, i) => signed(half, { signer, data: i % 2 === 0 ? reviewData("0xbad0") : reviewData("0x01") }))));
    expect(codes(mixed.results)).toEqual(signers.map((_, i) => (i % 2 === 0 ? "INVALID_INPUT" : "ok")));
    expect(half.delegate.batches[0]).toHaveLength(15);
    expect(half.delegate.batchSimulations).toBeLessThanOrEqual(36);
  });

  test("the caller's tickets follow the one transaction: mined items committed, refused ones released", async () => {
    const env = setup();
    const { log, admit } = tickets();
    const outcome = await env.batch([await signed(env), await signed(env, { signer: bob })], { admit });
    expect(codes(outcome.results)).toEqual(["ok", "ok"]);
    expect(log.sort()).toEqual(["mined 0", "mined 1", "signed 0", "signed 1"]);
  });

  test("the caller's precheck runs for each item with its place, before any RPC: an item it refuses costs no read", async () => {
    const env = setup();
    const { admit } = tickets();
    const asked: number[] = [];
    const precheck = (_request: unknown, index: number) => (asked.push(index), Promise.resolve(index === 1 ? { ...fail("SCHEMA_NOT_ELIGIBLE", "no"), status: 403 } : undefined));
    const outcome = await env.batch([await signed(env), await signed(env, { signer: bob })], { admit, precheck });
    expect(codes(outcome.results)).toEqual(["ok", "SCHEMA_NOT_ELIGIBLE"]);
    expect([asked.sort(), env.eas.calls]).toEqual([[0, 1], 1]);
  });

  test("a batch the node never took releases every item, so the same requests may be sent again", async () => {
    const env = setup();
    env.delegate.submission = { ok: false, reason: "not-broadcast" };
    const { log, admit } = tickets();
    const bodies = [await signed(env), await signed(env, { signer: bob })];
    const outcome = await env.batch(bodies, { admit });
    expect(codes(outcome.results)).toEqual(["SUBMISSION_FAILED", "SUBMISSION_FAILED"]);
    expect(env.replay.rows.size).toBe(0);
    expect(log.filter((l) => l.startsWith("release")).sort()).toEqual(["release 0", "release 1"]);
    env.delegate.submission = undefined;
    expect(codes((await env.batch(bodies)).results)).toEqual(["ok", "ok"]);
  });

  test("a batch the signer gave no signature for: every item 503 SIGNER_UNAVAILABLE and released, the same requests work again (decisions §27)", async () => {
    const env = setup();
    env.delegate.submission = { ok: false, reason: "signer-unavailable" };
    const { log, admit } = tickets();
    const bodies = [await signed(env), await signed(env, { signer: bob })];
    const outcome = await env.batch(bodies, { admit });
    expect(codes(outcome.results)).toEqual(["SIGNER_UNAVAILABLE", "SIGNER_UNAVAILABLE"]);
    expect(outcome.results[0]).toMatchObject({ unavailable: true, retryAfterSeconds: 5 });
    expect(env.replay.rows.size).toBe(0);
    expect(log.filter((l) => l.startsWith("release")).sort()).toEqual(["release 0", "release 1"]);
    env.delegate.submission = undefined;
    expect(codes((await env.batch(bodies)).results)).toEqual(["ok", "ok"]);
  });

  test("a batch the signer gave no signature for gives each item's attester token back: the same batch is sent once the signer is back", async () => {
    // Each item's token was kept: an attester with 2 an hour was refused (429) for up to an hour after the outage.
    const clock = fakeClock();
    const guard = createRelayGuard({
      enabled: true,
      clientRate: createRateLimiter(clock, { capacity: 100, perMinute: 100 }),
      attesterRate: createRateLimiter(clock, { capacity: 2, perMinute: 0.05 }),
      gasBudget: fakeGasBudget(),
      gasPerHour: 1_000_000_000n,
      typicalGas: 300_000n,
      clock,
    });
    const env = setup({ clock, guard });
    env.delegate.submission = { ok: false, reason: "signer-unavailable" };
    const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") })];
    expect(codes((await env.batch(bodies)).results)).toEqual(["SIGNER_UNAVAILABLE", "SIGNER_UNAVAILABLE"]);
    expect(codes((await env.batch(bodies)).results)).toEqual(["SIGNER_UNAVAILABLE", "SIGNER_UNAVAILABLE"]);
    env.delegate.submission = undefined;
    expect(codes((await env.batch(bodies)).results)).toEqual(["ok", "ok"]);
  });

  test("a batch whose delegate nonce or fees could not be read before signing: every item 500 RPC_ERROR, signature, reservation, gas and attester token given back", async () => {
    // Each item was 500 SUBMISSION_FAILED ("the chain refused the transaction"), its gas and attester token kept.
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: 2 });
    const env = setup({ clock, guard });
    env.delegate.submission = { ok: false, reason: "rpc-error" };
    const { log, admit } = tickets();
    const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") })];
    const window = clock.nowMs() - (clock.nowMs() % 3_600_000);
    for (let i = 0; i < 2; i++) {
      const outcome = await env.batch(bodies, { admit });
      expect(codes(outcome.results)).toEqual(["RPC_ERROR", "RPC_ERROR"]);
      expect(outcome).toMatchObject({ txHash: null, sent: "not-broadcast" });
    }
    expect(env.replay.rows.size).toBe(0);
    expect(await budget.used(window)).toBe(0n);
    expect(env.delegate.batches).toHaveLength(0);
    // Nothing signed: every reservation released, none kept.
    expect([...new Set(log)].sort()).toEqual(["release 0", "release 1"]);
    env.delegate.submission = undefined;
    // Both of the attester's tokens of the hour are still there.
    expect(codes((await env.batch(bodies)).results)).toEqual(["ok", "ok"]);
  });

  test("a batch nothing of which was sent because the chain did not answer its balance read or simulation (every item 500 RPC_ERROR) or its delegate cannot pay (503 SUBMISSION_FAILED): each attester's token given back once", async () => {
    // Nothing was recorded or sent, yet the tokens taken at admission were kept: with 1 an hour left, one such answer
    // and the retry once the chain answered (the wallet funded) was 429 for both.
    const faults = {
      "balance read": { code: "RPC_ERROR", funds: "rpc-error" },
      simulation: { code: "RPC_ERROR", simulation: { ok: false, reason: "rpc-error" } },
      "low balance": { code: "SUBMISSION_FAILED", funds: "low" },
      "simulation's insufficient funds": { code: "SUBMISSION_FAILED", simulation: { ok: false, reason: "insufficient-funds" } },
    } as const;
    for (const [fault, arm] of Object.entries(faults)) {
      const clock = fakeClock();
      const { guard, budget } = testRelayGuard(clock, { attesterPerHour: 2 });
      const env = setup({ clock, guard });
      const window = clock.nowMs() - (clock.nowMs() % 3_600_000);
      // One of each attester's two spent first, so the buckets are not full at the give-backs: given back twice, a
      // token would be a third write of the hour (a full bucket hides it, refilled only up to its capacity).
      expect([fault, codes((await env.batch([await signed(env), await signed(env, { signer: bob })])).results)]).toEqual([fault, ["ok", "ok"]]);
      const [used, sent] = [await budget.used(window), env.delegate.sent.length];
      for (const who of [alice, bob]) env.eas.nonces.set(who.address.toLowerCase(), 1n);
      if ("funds" in arm) env.delegate.funds = arm.funds;
      else env.delegate.simulation = arm.simulation;
      const bodies = [await signed(env, { nonce: 1n }), await signed(env, { signer: bob, nonce: 1n })];
      for (let i = 0; i < 2; i++) expect([fault, codes((await env.batch(bodies)).results)]).toEqual([fault, [arm.code, arm.code]]);
      expect([fault, env.replay.rows.size, env.delegate.sent.length, await budget.used(window)]).toEqual([fault, 2, sent, used]);
      env.delegate.funds = "ok";
      env.delegate.simulation = { ok: true, gas: 200_000n };
      expect([fault, codes((await env.batch(bodies)).results)]).toEqual([fault, ["ok", "ok"]]);
      // Given back once each: the hour's two are spent now.
      env.eas.nonces.set(alice.address.toLowerCase(), 2n);
      expect([fault, codes((await env.batch([await signed(env, { nonce: 2n })])).results)]).toEqual([fault, ["RATE_LIMITED"]]);
    }
  });

  test("an item the guard refuses at the charge (the client address's gas share) gives its attester's token back", async () => {
    const clock = fakeClock();
    const { guard } = testRelayGuard(clock, { attesterPerHour: 1, clientGasPerHour: 350_000n, typicalGas: 100_000n });
    const env = setup({ clock, guard });
    // Two items (250,000 gas, 125,000 each) fit; three (350,000, 116,667 each) do not: the third is refused.
    const bodies = [await signed(env), await signed(env, { signer: bob }), await signed(env, { signer: carol })];
    const first = await env.batch(bodies, { clientKey: "192.0.2.1" });
    expect(codes(first.results)).toEqual(["ok", "ok", "RATE_LIMITED"]);
    // Carol's one token of the hour was given back with the refusal: her request is sent from another address.
    expect(codes((await env.batch([bodies[2]!], { clientKey: "192.0.2.2" })).results)).toEqual(["ok"]);
  });

  test("a batch reverted on chain settles every item as reverted, the same transaction hash in each answer", async () => {
    const env = setup();
    env.delegate.submission = { ok: false, reason: "reverted", txHash: `0x${"e".repeat(64)}`, blockNumber: 9n };
    const outcome = await env.batch([await signed(env), await signed(env, { signer: bob })]);
    expect(outcome.results).toEqual([
      expect.objectContaining({ code: "SUBMISSION_FAILED", details: `0x${"e".repeat(64)}` }),
      expect.objectContaining({ code: "SUBMISSION_FAILED", details: `0x${"e".repeat(64)}` }),
    ]);
    expect([...env.replay.rows.values()].map((r) => r.state)).toEqual(["reverted", "reverted"]);
  });

  test("a batch with no valid request sends nothing", async () => {
    const env = setup();
    const outcome = await env.batch([{ attester: alice.address }, await signed(env, { schema: OTHER_SCHEMA })]);
    expect(outcome.txHash).toBeNull();
    expect(codes(outcome.results)).toEqual(["INVALID_INPUT", "SCHEMA_NOT_SUBSIDIZED"]);
    expect(env.delegate.batchSimulations).toBe(0);
  });
});

describe("delegated attestation batches: an attester's later requests after one refused for the service's sake", () => {
  /** A guard whose attesters may write `perHour` an hour, with `gasPerHour` of gas for all. */
  function guarded(perHour: number, gasPerHour = 1_000_000_000n) {
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: perHour, gasPerHour, typicalGas: 1n });
    const env = setup({ clock, guard });
    const window = clock.nowMs() - (clock.nowMs() % 3_600_000);
    return { ...env, budget, window };
  }

  test("one attester's consecutive nonces while the chain fails the first one's reads or the wallet cannot pay: every request answered so, every token back, the same batch then sent", async () => {
    // The later requests were verified against the chain's nonce without the first one's, refused 400 ATTESTER_MISMATCH
    // (NONCE_AHEAD) and kept their attester tokens: the same batch once the chain answered was [ok, 429, 429].
    const faults = {
      "balance read": { code: "RPC_ERROR", arm: (env: ReturnType<typeof guarded>) => void (env.delegate.funds = "rpc-error") },
      "low balance": { code: "SUBMISSION_FAILED", arm: (env: ReturnType<typeof guarded>) => void (env.delegate.funds = "low") },
      "the first nonce read": {
        code: "RPC_ERROR",
        arm: (env: ReturnType<typeof guarded>) => {
          const read = env.eas.getAttesterNonce;
          let left = 1;
          env.eas.getAttesterNonce = ((...args: Parameters<typeof read>) => (left-- > 0 ? Promise.resolve({ ok: false, reason: "rpc-error" }) : read(...args))) as typeof read;
        },
      },
    } as const;
    for (const [fault, { code, arm }] of Object.entries(faults)) {
      const env = guarded(3);
      const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") }), await signed(env, { nonce: 2n, data: reviewData("0x02") })];
      const { log, admit } = tickets();
      arm(env);
      const down = await env.batch(bodies, { admit });
      expect([fault, codes(down.results)]).toEqual([fault, [code, code, code]]);
      expect([fault, down.results.map((r) => !r.ok && r.details === "NONCE_AHEAD")]).toEqual([fault, [false, false, false]]);
      expect([fault, env.replay.rows.size, env.delegate.batchSimulations, log]).toEqual([fault, 0, 0, []]);
      env.delegate.funds = "ok";
      expect([fault, codes((await env.batch(bodies)).results)]).toEqual([fault, ["ok", "ok", "ok"]]);
    }
  });

  test("an attester's request the guard refuses at the charge: its later requests get the same 429, not ATTESTER_MISMATCH, their tokens back", async () => {
    // Two requests, 250,000 gas, 125,000 each; the hour has 100,000: the first is refused, the second with it.
    const env = guarded(2, 100_000n);
    const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") })];
    const outcome = await env.batch(bodies);
    expect(codes(outcome.results)).toEqual(["RATE_LIMITED", "RATE_LIMITED"]);
    expect(outcome.results[1]).toMatchObject({ message: expect.stringContaining("request 0") });
    expect(env.delegate.batches).toHaveLength(0);
    // Both tokens came back (the attester may write two an hour): the same batch is refused again by the budget, not
    // by the attester's rate, as often as it comes.
    for (let round = 0; round < 2; round++) {
      const again = await env.batch(bodies);
      expect(codes(again.results)).toEqual(["RATE_LIMITED", "RATE_LIMITED"]);
      expect(again.results[0]).toMatchObject({ message: expect.stringContaining("gas budget") });
    }
  });

  test("a batch whose submission record could not be opened (onSubmitting throws): every item's gas and attester token go back", async () => {
    // The records and tickets were released, but the gas charged and the attester tokens were kept.
    const env = guarded(1);
    const bodies = [await signed(env), await signed(env, { signer: bob })];
    const { log, admit } = tickets();
    const broken = { admit, onSubmitting: () => Promise.reject(new Error("database down")) };
    await expect(env.batch(bodies, broken)).rejects.toThrow("database down");
    expect([env.replay.rows.size, await env.budget.used(env.window), [...new Set(log)].sort()]).toEqual([0, 0n, ["release 0", "release 1"]]);
    expect(codes((await env.batch(bodies)).results)).toEqual(["ok", "ok"]);
  });
});

describe("createDelegatedAttest().batch(): a batch the node refused costs nothing (decisions §23)", () => {
  /** A guard whose attester may write twice an hour, counting the gas and tokens it is given back. */
  function refusedEnv() {
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: 2, clientGasPerHour: 400_000n, attesterGasPerHour: 400_000n, typicalGas: 100_000n });
    const { guard: counted, given } = countingGuard(guard);
    const env = setup({ clock, guard: counted });
    const spent = spentOf(budget, clock, alice.address);
    return { ...env, given, spent };
  }

  test("a batch transaction the node refused: every item 500 SUBMISSION_FAILED, each item's gas refunded once and its attester token given back once; the same batch then goes through", async () => {
    // Before, a batch the node refused kept each item's gas (giveBack's `keepGas`, since removed: every unsent item's gas
    // goes back now): the client's and the attester's shares, less than two such batches, refused the invited retry 429
    // for the rest of the hour, and the attester's two tokens of the hour were spent.
    const env = refusedEnv();
    env.delegate.submission = { ok: false, reason: "not-broadcast" };
    const { log, admit } = tickets();
    const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") })];
    const outcome = await env.batch(bodies, { admit, clientKey: "192.0.2.1" });
    expect(codes(outcome.results)).toEqual(["SUBMISSION_FAILED", "SUBMISSION_FAILED"]);
    expect(outcome).toMatchObject({ txHash: null, sent: "not-broadcast" });
    expect(env.given.refunds).toHaveLength(2);
    expect(env.given.refunds.reduce((sum, gas) => sum + gas, 0n)).toBe(250_000n);
    expect(env.given.tokens).toBe(2);
    expect(await env.spent()).toEqual({ hour: 0n, shares: [0n, 0n] });
    expect(env.replay.rows.size).toBe(0);
    expect([...new Set(log)].sort()).toEqual(["release 0", "release 1", "signed 0", "signed 1"]);
    env.delegate.submission = undefined;
    expect(codes((await env.batch(bodies, { clientKey: "192.0.2.1" })).results)).toEqual(["ok", "ok"]);
    expect(await env.spent()).toEqual({ hour: 250_000n, shares: [250_000n, 250_000n] });
  });

  test("a batch whose delegate wallet's shared nonce could not be taken: every item 500 INTERNAL_ERROR saying so, each item's gas and token given back once", async () => {
    const env = refusedEnv();
    env.delegate.submission = { ok: false, reason: "nonce-unavailable" };
    const bodies = [await signed(env, { nonce: 0n }), await signed(env, { nonce: 1n, data: reviewData("0x01") })];
    const outcome = await env.batch(bodies, { clientKey: "192.0.2.1" });
    expect(codes(outcome.results)).toEqual(["INTERNAL_ERROR", "INTERNAL_ERROR"]);
    expect(outcome.results[0]).toMatchObject({ message: expect.stringContaining("could not take its delegate wallet's next nonce; nothing was sent") });
    expect([env.given.refunds.length, env.given.tokens]).toEqual([2, 2]);
    expect(await env.spent()).toEqual({ hour: 0n, shares: [0n, 0n] });
    expect([env.replay.rows.size, env.delegate.batches.length]).toEqual([0, 0]);
    env.delegate.submission = undefined;
    expect(codes((await env.batch(bodies, { clientKey: "192.0.2.1" })).results)).toEqual(["ok", "ok"]);
  });
});

describe("delegated attestation batches: an attester's later requests after one refused for the service's sake, each still checked without the chain", () => {
  test("each later request gets its own refusal from the checks that need no chain (expired, on record, wrong schema); only one that passes them is answered with the earlier one's, and none takes a token", async () => {
    // Found by review: every later request was answered "send them again together" unchecked, so one that could
    // never pass (an expired deadline, a wrong schema) learned it only after a retry, an hour after a 429, and a
    // signature on record lost its 409 DUPLICATE with the uid.
    const clock = fakeClock();
    const guard = createRelayGuard({
      enabled: true,
      clientRate: createRateLimiter(clock, { capacity: 100, perMinute: 100 }),
      attesterRate: createRateLimiter(clock, { capacity: 3, perMinute: 3 / 60 }),
      gasBudget: fakeGasBudget(),
      gasPerHour: 1_000_000_000n,
      typicalGas: 1n,
      clock,
    });
    const env = setup({ clock, guard });
    const recorded = await signed(env, { nonce: 0n });
    const first = await env.batch([recorded]);
    expect(codes(first.results)).toEqual(["ok"]);
    const uid = first.results[0]!.ok ? first.results[0]!.value.uid : undefined;
    env.eas.nonces.set(alice.address.toLowerCase(), 1n);
    const expired = await signed(env, { nonce: 2n, data: reviewData("0x02") });
    expired.prepared.delegatedRequest.deadline = String(Math.floor(clock.nowMs() / 1000) - 1);
    const bodies = [
      await signed(env, { nonce: 1n, data: reviewData("0x01") }),
      expired,
      recorded,
      await signed(env, { nonce: 2n, data: reviewData("0x03") }),
      await signed(env, { nonce: 3n, schema: OTHER_SCHEMA }),
    ];
    const read = env.eas.getAttesterNonce;
    let left = 1;
    env.eas.getAttesterNonce = ((...args: Parameters<typeof read>) => (left-- > 0 ? Promise.resolve({ ok: false, reason: "rpc-error" }) : read(...args))) as typeof read;
    const { log, admit } = tickets();
    const outcome = await env.batch(bodies, { admit });
    expect(codes(outcome.results)).toEqual(["RPC_ERROR", "SIGNATURE_EXPIRED", "DUPLICATE", "RPC_ERROR", "SCHEMA_NOT_SUBSIDIZED"]);
    expect(outcome.results[2]).toMatchObject({ details: uid });
    expect(outcome.results[3]).toMatchObject({ message: expect.stringContaining("request 0") });
    expect([env.replay.rows.size, env.delegate.batches.length, log]).toEqual([1, 1, []]);
    // The attester's hour: one token spent by the first batch, none by this one (request 0's given back), two left.
    const again = await env.batch([bodies[0]!, bodies[3]!, await signed(env, { nonce: 3n, data: reviewData("0x04") })]);
    expect(codes(again.results)).toEqual(["ok", "ok", "RATE_LIMITED"]);
  });
});

describe("a batch of more call data than a node takes in one transaction", () => {
  test("is cut to the longest run of its items that fits MAX_CALLDATA_BYTES before any simulation or charge; the rest 400 INVALID_INPUT (send again in a smaller batch), their records and gas given back", async () => {
    // Data of zero bytes is cheap to store: 50 items of 2.6 KiB fit the gas caps and passed 128 KiB, and the node
    // refused the batch after its reads and a signature, everything given back: a refusal a request could make again.
    const budget = fakeGasBudget();
    const clock = fakeClock();
    const guard = createRelayGuard({ enabled: true, gasBudget: budget, gasPerHour: 100_000_000n, typicalGas: 0n, clock });
    const env = setup({ clock, guard });
    const big = reviewData("x".repeat(45 * 1024));
    const bodies = [];
    for (let nonce = 0n; nonce < 4n; nonce++) bodies.push(await signed(env, { nonce, data: big }));
    const { log, admit } = tickets();
    const outcome = await env.batch(bodies, { admit, clientKey: "192.0.2.1" });
    expect(codes(outcome.results)).toEqual(["ok", "ok", "INVALID_INPUT", "INVALID_INPUT"]);
    expect(outcome.results[2]).toMatchObject({ message: expect.stringContaining("smaller batch") });
    expect(env.delegate.batches).toHaveLength(1);
    expect(env.delegate.batches[0]).toHaveLength(2);
    // The oversized batch was never simulated: every simulation saw at most the two items sent.
    expect(env.delegate.batchSimulations).toBe(1);
    expect(env.replay.rows.size).toBe(2);
    expect(log.filter((entry) => entry.startsWith("release")).sort()).toEqual(["release 2", "release 3"]);
  });

  test("one item alone over the bound is refused as the single route refuses it", async () => {
    const env = setup();
    const outcome = await env.batch([await signed(env, { data: reviewData("x".repeat(121 * 1024)) })]);
    expect(codes(outcome.results)).toEqual(["INVALID_INPUT"]);
    expect(env.delegate.batches).toHaveLength(0);
    expect(env.delegate.batchSimulations).toBe(0);
    expect(env.replay.rows.size).toBe(0);
  });
});

describe("a batch one item of which is too large to be sent even alone", () => {
  test("that item is told to send it alone (the single route takes it), its attester's later items to send it first, not to re-sign; the others are sent (the cut stopped at it: every later item was told to come again in a smaller batch, it too)", async () => {
    const env = setup();
    // Within the single route's bound, over a batch's (a batch of one carries its request's head and arrays too).
    const huge = reviewData("x".repeat(119 * 1024));
    const hugeCall = { schema: SCHEMA, attester: alice.address, deadline: 1n, data: { data: huge } } as unknown as DelegatedAttestCall;
    expect([attestCalldataBytes(hugeCall) <= MAX_CALLDATA_BYTES, batchCalldataBytes([hugeCall]) > MAX_CALLDATA_BYTES]).toEqual([true, true]);
    const bodies = [
      await signed(env, { signer: bob }),
      await signed(env, { data: huge }),
      await signed(env, { signer: carol }),
      await signed(env, { nonce: 1n }),
    ];
    const outcome = await env.batch(bodies);
    // It was told the single route's "more than a node takes" (the single route takes it), the later item ATTESTER_MISMATCH, "re-sign".
    expect(codes(outcome.results)).toEqual(["ok", "INVALID_INPUT", "ok", "INVALID_INPUT"]);
    expect(outcome.results[1]).toMatchObject({ message: expect.stringContaining("too large to be sent in a batch, even alone; nothing was sent: send it alone, on the single route") });
    expect(outcome.results[1]).not.toMatchObject({ message: expect.stringContaining("smaller batch") });
    expect(outcome.results[3]).toMatchObject({ message: expect.stringContaining("send request 1 alone first, then this one") });
    expect(outcome.results[3]).not.toMatchObject({ message: expect.stringContaining("re-sign") });
    expect(env.delegate.batches).toHaveLength(1);
    expect(env.delegate.batches[0]!.map((call) => call.attester.toLowerCase())).toEqual([bob.address.toLowerCase(), carol.address.toLowerCase()]);
    expect(env.replay.rows.size).toBe(2);
  });
});

describe("a batch not sent because a request's deadline passed while it waited for the delegate wallet", () => {
  /** The batch's 200 as the routes word it and keep it under an Idempotency-Key (http/routes/delegation/_batch.ts). */
  const storedAnswer = (outcome: Awaited<ReturnType<ReturnType<typeof setup>["batch"]>>) => ({
    status: 200,
    body: JSON.stringify({
      submissionId: null,
      txHash: outcome.txHash,
      results: outcome.results.map((r) => (r.ok ? { uid: r.value.uid } : { status: 400, error: r.message, code: r.code, ...(r.details === undefined ? {} : { details: r.details }) })),
    }),
  });

  test("is not kept under its Idempotency-Key: the same batch sent again sends the others, the expired one refused on arrival as its answer said", async () => {
    const env = setup();
    const soon = await signed(env);
    const soonNext = await signed(env, { nonce: 1n });
    env.clock.set(env.clock.nowMs() + 300_000);
    const later = await signed(env, { signer: bob });
    // The wallet's lock is held until 400 s more went by (other sends ahead): alice's deadlines passed, bob's did not.
    env.delegate.lock = () => Promise.resolve(env.clock.set(env.clock.nowMs() + 400_000));
    const first = await env.batch([soon, soonNext, later]);
    expect(first.txHash).toBeNull();
    expect(env.delegate.expired).toBe(1);
    expect(codes(first.results)).toEqual(["SIGNATURE_EXPIRED", "SIGNATURE_EXPIRED", "INVALID_INPUT"]);
    // Bob's was not sent and may be sent again, in this very batch too: the answer is not the key's.
    expect(first.results[2]).toMatchObject({ message: expect.stringContaining("may be sent again") });
    expect(keepsStoredAnswer(storedAnswer(first))).toBe(false);

    // The retry under the key runs: alice's are refused on arrival (expired, as answered), bob's is sent.
    env.delegate.lock = undefined;
    const retry = await env.batch([soon, soonNext, later]);
    expect(codes(retry.results)).toEqual(["SIGNATURE_EXPIRED", "SIGNATURE_EXPIRED", "ok"]);
    expect(env.delegate.batches).toHaveLength(1);
  });

  test("an attester's request after its expired one is told it cannot go without that one signed again, which the retry confirms", async () => {
    const env = setup();
    const soon = await signed(env);
    env.clock.set(env.clock.nowMs() + 300_000);
    const next = await signed(env, { nonce: 1n });
    env.delegate.lock = () => Promise.resolve(env.clock.set(env.clock.nowMs() + 400_000));
    const first = await env.batch([soon, next]);
    expect(codes(first.results)).toEqual(["SIGNATURE_EXPIRED", "INVALID_INPUT"]);
    expect(first.results[1]).toMatchObject({ message: expect.stringContaining("sign request 0 again with a later deadline") });
    expect(first.results[1]).not.toMatchObject({ message: expect.stringContaining("may be sent again") });
    expect(keepsStoredAnswer(storedAnswer(first))).toBe(false);

    env.delegate.lock = undefined;
    const retry = await env.batch([soon, next]);
    // Its nonce follows the expired one's, not yet used: ATTESTER_MISMATCH (NONCE_AHEAD), as its answer said.
    expect(codes(retry.results)).toEqual(["SIGNATURE_EXPIRED", "ATTESTER_MISMATCH"]);
    expect(env.delegate.batches).toHaveLength(0);
  });
});
