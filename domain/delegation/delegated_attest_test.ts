import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeReplayStore } from "../../ports/fakes/mod.ts";
import { buildAttestTypedData, ZERO_UID } from "./attest_typed_data.ts";
import { fail } from "../result.ts";
import { createDelegatedAttest, type DelegatedAttestDeps, NONCE_AHEAD, NONCE_MOVED } from "./delegated_attest.ts";
import { countingGuard, spentOf, testRelayGuard } from "./_testing.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const OTHER_SCHEMA = "0x2b0d1100f7943c0c2ea29e35c1286bd860fa752124e035cafb503bb83f234805";
const account = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

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
  return { clock, eas, delegate, replay, attest: createDelegatedAttest(deps) };
}

async function signedBody(
  env: { clock: { nowMs: () => number }; eas: { chainId: number; easAddress: `0x${string}` } },
  over: { nonce?: bigint; deadline?: bigint; schema?: `0x${string}`; revocable?: boolean; data?: `0x${string}`; signer?: typeof account } = {},
) {
  const signer = over.signer ?? account;
  const message = {
    attester: signer.address,
    schema: over.schema ?? SCHEMA,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n,
    revocable: over.revocable ?? false,
    refUID: ZERO_UID,
    data: over.data ?? REVIEW_DATA,
    value: 0n,
    nonce: over.nonce ?? 0n,
    deadline: over.deadline ?? BigInt(Math.floor(env.clock.nowMs() / 1000) + 600),
  } as const;
  const typedData = buildAttestTypedData(env.eas, message);
  const signature = await signer.signTypedData(typedData);
  const strings = Object.fromEntries(
    Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]),
  );
  return {
    attester: signer.address,
    signature,
    prepared: {
      delegatedRequest: { ...strings, easContractAddress: env.eas.easAddress, chainId: env.eas.chainId },
      typedData: { domain: typedData.domain, types: typedData.types, message: strings },
    },
  } as { attester: string; signature: string; prepared: Record<string, any> };
}

describe("createDelegatedAttest()", () => {
  test("submits a valid signature once and returns the uid", async () => {
    const env = setup();
    const result = await env.attest(await signedBody(env));
    expect(result).toMatchObject({ ok: true });
    expect(env.delegate.sent).toHaveLength(1);
    expect(env.delegate.sent[0]?.signature.v === 27 || env.delegate.sent[0]?.signature.v === 28).toBe(true);
  });

  test("a signature that recovers to the attester for the nonce it names asks no code of the attester; one that does not, does (issue 43)", async () => {
    const fake = fakeEasReader();
    const asked: (boolean | undefined)[] = [];
    const eas = {
      ...fake,
      getAttesterNonce(attester: `0x${string}`, options?: { readonly withCode?: boolean }) {
        asked.push(options?.withCode);
        return fake.getAttesterNonce(attester);
      },
    };
    const env = setup({ eas });
    expect(await env.attest(await signedBody(env))).toMatchObject({ ok: true });
    expect(asked).toEqual([false]);
    // Someone else's signature for this attester: whether the attester is a contract wallet decides the verdict.
    const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
    const forged = await signedBody(env, { signer: other });
    expect(await env.attest({ ...forged, attester: account.address, prepared: { ...forged.prepared, delegatedRequest: { ...forged.prepared.delegatedRequest, attester: account.address } } }))
      .toMatchObject({ ok: false });
    expect(asked).toEqual([false, true]);
  });

  test("a deadline within DEADLINE_MARGIN_SECONDS is refused before any RPC: it would pass before the transaction is mined", async () => {
    // A deadline a few seconds ahead passed the check and the simulation (at the latest block's time), then reverted
    // on chain with DeadlineExpired, the delegate paying the gas.
    const env = setup({ deadlineMarginSeconds: 30 });
    const now = Math.floor(env.clock.nowMs() / 1000);
    for (const ahead of [1, 3, 30]) {
      const refused = await env.attest(await signedBody(env, { deadline: BigInt(now + ahead) }));
      expect(refused).toMatchObject({ ok: false, code: "SIGNATURE_EXPIRED" });
      expect(!refused.ok && refused.message).toContain("more than 30 seconds ahead");
    }
    expect(env.eas.calls).toBe(0);
    const written = await signedBody(env, { deadline: BigInt(now + 60) });
    expect(await env.attest(written)).toMatchObject({ ok: true });
    // The same signature sent again inside the margin is still its outcome, never "sign again" (a second review).
    env.clock.set(env.clock.nowMs() + 45_000);
    expect(await env.attest(written)).toMatchObject({ ok: false, code: "DUPLICATE" });
  });

  test("rejects missing fields, mainnet, unsubsidised and expired requests without RPC", async () => {
    const env = setup();
    const body = await signedBody(env);
    const missing = await env.attest({ attester: body.attester });
    expect(missing).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(!missing.ok && missing.message).toContain("prepared, signature");

    const mainnet = setup({ mainnet: true });
    expect(await mainnet.attest(body)).toMatchObject({ ok: false, code: "MAINNET_NOT_SUPPORTED" });

    expect(await env.attest(await signedBody(env, { schema: OTHER_SCHEMA }))).toMatchObject({
      ok: false,
      code: "SCHEMA_NOT_SUBSIDIZED",
    });
    expect(await env.attest(await signedBody(env, { deadline: 0n }))).toMatchObject({
      ok: false,
      code: "SIGNATURE_EXPIRED",
    });
    const past = BigInt(Math.floor(env.clock.nowMs() / 1000));
    expect(await env.attest(await signedBody(env, { deadline: past }))).toMatchObject({
      ok: false,
      code: "SIGNATURE_EXPIRED",
    });
    expect(await env.attest({ ...body, signature: "0x1234" })).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(await env.attest(await signedBody(env, { revocable: true }))).toMatchObject({
      ok: false,
      code: "INVALID_INPUT",
    });
    expect(env.eas.calls).toBe(0);
    expect(mainnet.eas.calls).toBe(0);
    expect(env.delegate.simulations).toBe(0);
  });

  test("a request failing several checks gets the first one in decisions §6 order, with no RPC before the nonce", async () => {
    const env = setup();
    const expiredAt = BigInt(Math.floor(env.clock.nowMs() / 1000) - 1);
    const cases: Array<[string, Record<string, any>, Partial<DelegatedAttestDeps>, string]> = [];
    const unsubsidisedExpired = await signedBody(env, { schema: OTHER_SCHEMA, deadline: expiredAt, revocable: true });
    cases.push(["mainnet before allowlist", { ...unsubsidisedExpired, signature: "0x12" }, { mainnet: true }, "MAINNET_NOT_SUPPORTED"]);
    cases.push(["allowlist before deadline", { ...unsubsidisedExpired, signature: "0x12" }, {}, "SCHEMA_NOT_SUBSIDIZED"]);
    const expiredWrongRevocable = await signedBody(env, { deadline: expiredAt, revocable: true });
    cases.push(["deadline before signature shape", { ...expiredWrongRevocable, signature: "0x12" }, {}, "SIGNATURE_EXPIRED"]);
    const wrongRevocable = await signedBody(env, { revocable: true });
    cases.push(["signature shape before revocability", { ...wrongRevocable, signature: "0x12" }, {}, "INVALID_SIGNATURE"]);
    cases.push(["revocability before the delegate key", wrongRevocable, { delegate: undefined }, "INVALID_INPUT"]);
    cases.push(["delegate key before the nonce read", await signedBody(env), { delegate: undefined, eas: fakeEasReader({ failing: true }) }, "NO_DELEGATE_KEY"]);
    const someoneElse = { ...(await signedBody(env)), attester: "0x1111111111111111111111111111111111111111" };
    cases.push(["nonce read before recovery", someoneElse, { eas: fakeEasReader({ failing: true }) }, "RPC_ERROR"]);
    for (const [name, body, overrides, code] of cases) {
      const run = setup(overrides);
      const result = await run.attest(body);
      expect({ name, code: result.ok ? "ok" : result.code }).toEqual({ name, code });
      expect({ name, sent: run.delegate.sent.length }).toEqual({ name, sent: 0 });
      if (code !== "RPC_ERROR") expect({ name, reads: run.eas.calls }).toEqual({ name, reads: 0 });
    }
  });

  test("the server rebuilds the typed data: the client's domain, types and primary type are ignored", async () => {
    const env = setup();
    const body = await signedBody(env);
    body.prepared.typedData.domain = { name: "Evil", version: "9", chainId: 1, verifyingContract: "0x2222222222222222222222222222222222222222" };
    body.prepared.typedData.types = { Attest: [{ name: "attester", type: "address" }] };
    body.prepared.typedData.primaryType = "Other";
    expect(await env.attest(body)).toMatchObject({ ok: true });
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("a signature over another EAS domain does not verify, whatever the client claims", async () => {
    const env = setup();
    const otherEas = fakeEasReader({ easAddress: "0x3333333333333333333333333333333333333333" });
    const body = await signedBody({ clock: env.clock, eas: otherEas });
    body.prepared.typedData.domain.verifyingContract = env.eas.easAddress;
    body.prepared.delegatedRequest.easContractAddress = env.eas.easAddress;
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(env.delegate.sent).toHaveLength(0);
  });

  test("mainnet is refused before the signature is looked at", async () => {
    const env = setup({ mainnet: true });
    const body = await signedBody(env);
    expect(await env.attest({ ...body, signature: "garbage" })).toMatchObject({ code: "MAINNET_NOT_SUPPORTED" });
  });

  test("a replay is DUPLICATE with no RPC, whatever the encoding of the signature", async () => {
    const env = setup();
    const body = await signedBody(env);
    expect((await env.attest(body)).ok).toBe(true);
    const calls = env.eas.calls;
    const sig = body.signature;
    const r = sig.slice(2, 66);
    const s = BigInt(`0x${sig.slice(66, 130)}`);
    const v = Number.parseInt(sig.slice(130), 16);
    const highS = `0x${r}${(N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}`;
    const zeroOne = `0x${r}${sig.slice(66, 130)}${(v - 27).toString(16).padStart(2, "0")}`;
    for (const variant of [sig, sig.toUpperCase().replace("0X", "0x"), highS, zeroOne]) {
      expect(await env.attest({ ...body, signature: variant })).toMatchObject({ ok: false, code: "DUPLICATE" });
    }
    expect(env.eas.calls).toBe(calls);
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("a signature on record for another chain's EAS is not a DUPLICATE here: it is checked as any other (found by attack)", async () => {
    const a = setup();
    const body = await signedBody(a);
    const written = await a.attest(body);
    expect(written.ok).toBe(true);
    // Chain B's relay over the one store; the body names no chain (it was routed to B's default), so only the record
    // could tie it to A. Before, B answered 409 DUPLICATE with A's uid.
    const b = setup({ replay: a.replay, eas: fakeEasReader({ chainId: 31338 }) });
    const { chainId: _chainId, easContractAddress: _eas, ...unnamed } = body.prepared.delegatedRequest;
    const answer = await b.attest({ ...body, prepared: { delegatedRequest: unnamed } });
    expect(answer).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(b.delegate.sent).toHaveLength(0);
    // On its own chain the record still answers the resend.
    expect(await a.attest(body)).toMatchObject({ ok: false, code: "DUPLICATE", details: written.ok ? written.value.uid : "" });
  });

  test("a signature for an old nonce is ATTESTER_MISMATCH with NONCE_MOVED", async () => {
    const env = setup();
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    const result = await env.attest(await signedBody(env, { nonce: 0n }));
    expect(result).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", details: NONCE_MOVED });
    expect(env.replay.rows.size).toBe(0);
  });

  test("a signature for a later nonce than the attester's is ATTESTER_MISMATCH with NONCE_AHEAD (it said NONCE_MOVED: the chain had not moved)", async () => {
    const env = setup();
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    const result = await env.attest(await signedBody(env, { nonce: 3n }));
    expect(result).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", details: NONCE_AHEAD, message: expect.stringContaining("ahead of the attester's nonce 1") });
    expect(env.replay.rows.size).toBe(0);
  });

  test("a signature by someone else is ATTESTER_MISMATCH and burns nothing", async () => {
    const env = setup();
    const body = await signedBody(env);
    const result = await env.attest({ ...body, attester: "0x1111111111111111111111111111111111111111" });
    expect(result).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(env.replay.rows.size).toBe(0);
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("a failure before broadcast releases the signature for a retry", async () => {
    const env = setup();
    env.delegate.simulation = { ok: false, reason: "rpc-error" };
    const body = await signedBody(env);
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "RPC_ERROR" });
    env.delegate.simulation = { ok: true, gas: 1n };
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("a retry tells the truth: 409 with the uid once mined, with the hash while sent (decisions §15)", async () => {
    const env = setup();
    const body = await signedBody(env);
    const first = await env.attest(body);
    expect(first.ok).toBe(true);
    const again = await env.attest(body);
    expect(again).toMatchObject({ ok: false, code: "DUPLICATE", details: first.ok ? first.value.uid : "" });

    const lost = setup();
    lost.delegate.submission = { ok: false, reason: "unknown-outcome", txHash: `0x${"1".padStart(64, "a")}` };
    const lostBody = await signedBody(lost);
    expect(await lost.attest(lostBody)).toMatchObject({ ok: false, code: "OUTCOME_UNKNOWN", details: `0x${"1".padStart(64, "a")}` });
    const [row] = lost.replay.rows.values();
    expect(row).toMatchObject({ state: "sent", txHash: `0x${"1".padStart(64, "a")}`, tx: { nonce: 0 } });
    expect(await lost.attest(lostBody)).toMatchObject({ ok: false, code: "DUPLICATE", details: `0x${"1".padStart(64, "a")}` });
  });

  test("a send the chain refused is released: SUBMISSION_FAILED, and the same signature works again", async () => {
    const env = setup();
    env.delegate.submission = { ok: false, reason: "not-broadcast" };
    const body = await signedBody(env);
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(env.replay.rows.size).toBe(0);
    env.delegate.submission = undefined;
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("a delegate wallet that cannot pay is refused before anything is recorded, with no simulation", async () => {
    const env = setup();
    env.delegate.funds = "low";
    const body = await signedBody(env);
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", unavailable: true });
    expect([env.replay.rows.size, env.delegate.simulations]).toEqual([0, 0]);
    env.delegate.funds = "ok";
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("the transaction is stored before it is sent, and not sent when its record was released meanwhile", async () => {
    const env = setup();
    const body = await signedBody(env);
    const markSigned = env.replay.markSigned;
    let stateAtSigning: string | undefined;
    env.replay.markSigned = async (chainId, key, tx) => {
      stateAtSigning = (await env.replay.find(chainId, key))?.state;
      await env.replay.release(chainId, key);
      return await markSigned(chainId, key, tx);
    };
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect([stateAtSigning, env.delegate.sent.length, env.replay.rows.size]).toEqual(["checked", 0, 0]);
  });

  test("MAX_GAS_PER_TX: a simulation needing more is INVALID_INPUT before any gas, and the signature stays usable", async () => {
    const env = setup({ maxGasPerTx: 100_000n });
    env.delegate.simulation = { ok: true, gas: 200_000n };
    const body = await signedBody(env);
    const result = await env.attest(body);
    expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect([env.delegate.sent.length, env.replay.rows.size]).toEqual([0, 0]);
  });

  test("a caller's admission runs after the signature verified: a refusal records nothing; its ticket follows the submission or is released", async () => {
    const env = setup();
    const events: string[] = [];
    const ticket = {
      release: () => Promise.resolve(void events.push("release")),
      onSigned: () => Promise.resolve(void events.push("signed")),
      onSent: () => Promise.resolve(void events.push("sent")),
      onMined: () => Promise.resolve(void events.push("mined")),
    };
    const body = await signedBody(env);
    expect(await env.attest(body, { admit: () => Promise.resolve({ ...fail("SCHEMA_NOT_ELIGIBLE", "no"), status: 403 }) }))
      .toMatchObject({ ok: false, code: "SCHEMA_NOT_ELIGIBLE", status: 403 });
    expect(env.replay.rows.size).toBe(0);
    env.delegate.simulation = { ok: false, reason: "reverted", errorName: "InvalidSchema" };
    await env.attest(body, { admit: () => Promise.resolve(ticket) });
    expect(events).toEqual(["release"]);
    env.delegate.simulation = { ok: true, gas: 1n };
    events.length = 0;
    expect((await env.attest(body, { admit: () => Promise.resolve(ticket) })).ok).toBe(true);
    expect(events).toEqual(["signed", "sent", "mined"]);
  });

  test("a caller's precheck refuses before any RPC, after the replay lookup: a signature on record still answers DUPLICATE", async () => {
    let funds = 0;
    const env = setup();
    const checkFunds = env.delegate.checkFunds;
    env.delegate.checkFunds = () => (funds++, checkFunds());
    const body = await signedBody(env);
    const seen: string[] = [];
    const refuse = (request: { attester: string }) => (seen.push(request.attester), Promise.resolve({ ...fail("SCHEMA_NOT_ELIGIBLE", "no"), status: 403 }));
    expect(await env.attest(body, { precheck: refuse })).toMatchObject({ ok: false, code: "SCHEMA_NOT_ELIGIBLE", status: 403 });
    expect([env.eas.calls, funds, env.replay.rows.size, seen]).toEqual([0, 0, 0, [account.address]]);
    // Admitted, then sent; the same signature again is its outcome whatever the precheck would now say.
    expect((await env.attest(body, { precheck: () => Promise.resolve(undefined) })).ok).toBe(true);
    const calls = env.eas.calls;
    expect(await env.attest(body, { precheck: refuse })).toMatchObject({ ok: false, code: "DUPLICATE" });
    expect([env.eas.calls, seen.length]).toEqual([calls, 1]);
  });

  test("an EAS revert in simulation is INVALID_INPUT naming it and spends nothing", async () => {
    const env = setup();
    env.delegate.simulation = { ok: false, reason: "reverted", errorName: "InvalidSchema" };
    const result = await env.attest(await signedBody(env));
    expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(!result.ok && result.message).toContain("InvalidSchema");
    expect(env.delegate.sent).toHaveLength(0);
  });

  test("onSubmitting runs once the checks passed, with the recorded signature, before anything is sent; not for a refused request; a throw sends nothing and gives the signature back", async () => {
    const env = setup();
    const seen: { key: string; sentBefore: number; state: string | undefined }[] = [];
    const onSubmitting = async (chainId: number, key: string) => {
      seen.push({ key, sentBefore: env.delegate.sent.length, state: (await env.replay.find(chainId, key))?.state });
    };
    env.delegate.simulation = { ok: false, reason: "reverted", errorName: "InvalidSchema" };
    expect(await env.attest(await signedBody(env, { data: reviewData("0xaa") }), { onSubmitting })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(seen).toHaveLength(0);
    env.delegate.simulation = { ok: true, gas: 100_000n };
    expect(await env.attest(await signedBody(env), { onSubmitting })).toMatchObject({ ok: true });
    expect(seen).toEqual([{ key: expect.stringMatching(/^0x[0-9a-f]{130}$/), sentBefore: 0, state: "checked" }]);
    const failing = async () => {
      throw new Error("storage down");
    };
    const body = await signedBody(env, { nonce: 1n, data: reviewData("0xbb") });
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    await expect(env.attest(body, { onSubmitting: failing })).rejects.toThrow("storage down");
    expect(env.delegate.sent).toHaveLength(1);
    expect(env.replay.rows.size).toBe(1);
  });

  test("RPC down while reading the nonce is RPC_ERROR", async () => {
    const env = setup({ eas: fakeEasReader({ failing: true }) });
    expect(await env.attest(await signedBody(env))).toMatchObject({ ok: false, code: "RPC_ERROR" });
  });

  test("no delegate key is NO_DELEGATE_KEY before any RPC", async () => {
    const env = setup({ delegate: undefined });
    expect(await env.attest(await signedBody(env))).toMatchObject({ ok: false, code: "NO_DELEGATE_KEY" });
    expect(env.eas.calls).toBe(0);
  });

  test("two signatures for one attester nonce at once: one succeeds, one is refused", async () => {
    const env = setup();
    const a = await signedBody(env, { data: reviewData("0x01") });
    const b = await signedBody(env, { data: reviewData("0x02") });
    const results = await Promise.all([env.attest(a), env.attest(b)]);
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.find((r) => !r.ok)).toMatchObject({ ok: false, code: "DUPLICATE" });
    expect(env.delegate.sent).toHaveLength(1);
  });

  // Issue 33: the second request passed the replay lookup before the first was recorded, then read the nonce after the
  // first was mined. The interleaving is forced: the second's nonce read waits until the first has finished.
  for (const withNonce of [true, false]) {
    test(`the same signature twice at once, the second reading the nonce after the first was mined: 409 DUPLICATE with the first's uid (${withNonce ? "NONCE_MOVED" : "no client nonce"})`, async () => {
      const env = setup();
      const body = await signedBody(env);
      if (!withNonce) {
        delete body.prepared.delegatedRequest.nonce;
        delete body.prepared.typedData.message.nonce;
      }
      const read = env.eas.getAttesterNonce;
      let reachedNonceRead!: () => void;
      const reached = new Promise<void>((resolve) => (reachedNonceRead = resolve));
      let firstMined!: () => void;
      const mined = new Promise<void>((resolve) => (firstMined = resolve));
      let reads = 0;
      env.eas.getAttesterNonce = (async (attester: `0x${string}`) => {
        if (++reads === 1) {
          reachedNonceRead();
          await mined;
        }
        return await read(attester);
      }) as typeof read;
      const second = env.attest(body);
      await reached;
      expect(env.replay.rows.size).toBe(0); // the second is past its replay lookup with nothing on record
      const first = await env.attest(body);
      expect(first.ok).toBe(true);
      env.eas.nonces.set(account.address.toLowerCase(), 1n); // EAS moved the attester's nonce when it was mined
      firstMined();
      expect(await second).toMatchObject({ ok: false, code: "DUPLICATE", details: first.ok ? first.value.uid : "" });
      expect([reads, env.delegate.sent.length, env.replay.rows.size]).toEqual([2, 1, 1]);
    });
  }

  test("a moved nonce with no record of the signature stays ATTESTER_MISMATCH NONCE_MOVED, and records nothing", async () => {
    const env = setup();
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    let finds = 0;
    const find = env.replay.find;
    env.replay.find = (chainId, key) => (finds++, find(chainId, key));
    expect(await env.attest(await signedBody(env))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", details: NONCE_MOVED });
    expect([finds, env.replay.rows.size]).toEqual([2, 0]);
  });
});

describe("createDelegatedAttest() behind the public relay guard (decisions §12)", () => {
  const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
  const stranger = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");

  function guarded(options: { enabled?: boolean; ip?: number; attesterPerHour?: number; gasPerHour?: bigint; clientGasPerHour?: bigint; overrides?: Partial<DelegatedAttestDeps> } = {}) {
    const clock = fakeClock();
    const refusals: string[] = [];
    const { guard, budget } = testRelayGuard(clock, {
      enabled: options.enabled,
      clientPerMinute: options.ip,
      attesterPerHour: options.attesterPerHour,
      gasPerHour: options.gasPerHour,
      clientGasPerHour: options.clientGasPerHour,
      onRefusal: (reason) => refusals.push(reason),
    });
    return { ...setup({ clock, guard, ...options.overrides }), clock, budget, refusals };
  }
  /** What reached the chain or the replay store: a refusal of the guard must change none of it. */
  const footprint = (env: ReturnType<typeof guarded>) => ({
    reads: env.eas.calls,
    simulations: env.delegate.simulations,
    sent: env.delegate.sent.length,
    records: env.replay.rows.size,
    charges: env.budget.charges,
  });
  /**
   * The fault gone, the attester's two writes of the hour are still there: `body` and the next nonce's are sent. The
   * allowance itself still holds: a third write this hour is refused, and a token given back never passes it.
   */
  async function expectHourOfTwoUnspent(env: ReturnType<typeof guarded>, body: Awaited<ReturnType<typeof signedBody>>) {
    expect((await env.attest(body, { clientKey: "192.0.2.9" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect((await env.attest(await signedBody(env, { nonce: 1n }), { clientKey: "192.0.2.9" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 2n);
    expect(await env.attest(await signedBody(env, { nonce: 2n }), { clientKey: "192.0.2.9" })).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    expect(env.refusals).toEqual(["attester"]);
  }

  test("a signer that gives no signature: 503 SIGNER_UNAVAILABLE with Retry-After; the gas charged is given back, the signature unused (decisions §27)", async () => {
    const env = guarded();
    env.delegate.submission = { ok: false, reason: "signer-unavailable" };
    const body = await signedBody(env);
    const window = env.clock.nowMs() - (env.clock.nowMs() % 3_600_000);
    expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({ ok: false, code: "SIGNER_UNAVAILABLE", unavailable: true, retryAfterSeconds: 5 });
    expect(env.replay.rows.size).toBe(0);
    expect(await env.budget.used(window)).toBe(0n);
    env.delegate.submission = undefined;
    expect((await env.attest(body, { clientKey: "192.0.2.1" })).ok).toBe(true);
  });

  test("a signer outage spends none of the attester's hourly allowance: answers that say nothing was charged charge nothing (decisions §27)", async () => {
    // The attester's token was kept: with 2 an hour, two 503s through an outage, then 429 for up to an hour once the
    // signer was back.
    const env = guarded({ attesterPerHour: 2 });
    env.delegate.submission = { ok: false, reason: "signer-unavailable" };
    const body = await signedBody(env);
    for (let i = 0; i < 3; i++) expect(await env.attest(body, { clientKey: `192.0.2.${i}` })).toMatchObject({ ok: false, code: "SIGNER_UNAVAILABLE" });
    env.delegate.submission = undefined;
    await expectHourOfTwoUnspent(env, body);
  });

  test("the delegate wallet's nonce or fees not read before signing: 500 RPC_ERROR, the signature, the gas and the attester's token given back", async () => {
    // It was 500 SUBMISSION_FAILED ("the chain refused the transaction"), kept under an Idempotency-Key, with the
    // attester's token and the gas charge spent though nothing was signed or sent.
    const env = guarded({ attesterPerHour: 2 });
    env.delegate.submission = { ok: false, reason: "rpc-error" };
    const body = await signedBody(env);
    const window = env.clock.nowMs() - (env.clock.nowMs() % 3_600_000);
    for (let i = 0; i < 3; i++) {
      const down = await env.attest(body, { clientKey: `192.0.2.${i}` });
      expect(down).toMatchObject({ ok: false, code: "RPC_ERROR" });
    }
    expect(env.replay.rows.size).toBe(0);
    expect(await env.budget.used(window)).toBe(0n);
    expect(env.delegate.sent).toHaveLength(0);
    env.delegate.submission = undefined;
    await expectHourOfTwoUnspent(env, body);
  });

  test("nothing sent because a chain read failed (500 RPC_ERROR: the attester's nonce, the delegate's balance, the simulation) or the delegate cannot pay (503 SUBMISSION_FAILED: the balance check, the simulation's insufficient funds): the attester's token given back once", async () => {
    // The token taken at admission was kept: with 2 an hour, two such answers and the attester was refused until the
    // hour turned, though nothing was sent.
    type Env = ReturnType<typeof guarded>;
    const faults: { name: string; code: string; arm: (env: Env) => void; disarm: (env: Env) => void }[] = [
      { name: "nonce", code: "RPC_ERROR", arm: (env) => void (env.eas.failing = true), disarm: (env) => void (env.eas.failing = false) },
      { name: "balance", code: "RPC_ERROR", arm: (env) => void (env.delegate.funds = "rpc-error"), disarm: (env) => void (env.delegate.funds = "ok") },
      { name: "simulation", code: "RPC_ERROR", arm: (env) => void (env.delegate.simulation = { ok: false, reason: "rpc-error" }), disarm: (env) => void (env.delegate.simulation = { ok: true, gas: 200_000n }) },
      { name: "low balance", code: "SUBMISSION_FAILED", arm: (env) => void (env.delegate.funds = "low"), disarm: (env) => void (env.delegate.funds = "ok") },
      { name: "simulation's insufficient funds", code: "SUBMISSION_FAILED", arm: (env) => void (env.delegate.simulation = { ok: false, reason: "insufficient-funds" }), disarm: (env) => void (env.delegate.simulation = { ok: true, gas: 200_000n }) },
    ];
    for (const fault of faults) {
      const env = guarded({ attesterPerHour: 2 });
      const window = env.clock.nowMs() - (env.clock.nowMs() % 3_600_000);
      // One of the hour's two spent first, so the bucket is not full at the give-backs: given back twice, the token
      // would be a third write of the hour (a full bucket hides it, refilled only up to its capacity).
      expect((await env.attest(await signedBody(env), { clientKey: "192.0.2.8" })).ok).toBe(true);
      const used = await env.budget.used(window);
      env.eas.nonces.set(account.address.toLowerCase(), 1n);
      const body = await signedBody(env, { nonce: 1n });
      fault.arm(env);
      for (let i = 0; i < 3; i++) {
        expect([fault.name, await env.attest(body, { clientKey: `192.0.2.${i}` })]).toMatchObject([fault.name, { ok: false, code: fault.code }]);
      }
      expect([fault.name, env.replay.rows.size, env.delegate.sent.length, await env.budget.used(window)]).toEqual([fault.name, 1, 1, used]);
      fault.disarm(env);
      expect((await env.attest(body, { clientKey: "192.0.2.9" })).ok).toBe(true);
      env.eas.nonces.set(account.address.toLowerCase(), 2n);
      // Given back once each: the allowance itself still holds.
      expect([fault.name, await env.attest(await signedBody(env, { nonce: 2n }), { clientKey: "192.0.2.9" })]).toMatchObject([fault.name, { ok: false, code: "RATE_LIMITED" }]);
      expect([fault.name, env.refusals]).toEqual([fault.name, ["attester"]]);
    }
  });

  test("a balance read that fails, or a wallet that cannot pay, before a request without a nonce took the attester's token gives nothing back (no token the attester never spent)", async () => {
    const withoutNonce = (body: Awaited<ReturnType<typeof signedBody>>) => {
      const copy = structuredClone(body);
      delete copy.prepared.delegatedRequest.nonce;
      delete copy.prepared.typedData.message.nonce;
      return copy;
    };
    for (const fault of ["rpc-error", "low"] as const) {
      const env = guarded({ attesterPerHour: 2 });
      // One of the hour's two spent first, so the bucket is not full at the refusals: a token given back that was never
      // taken would be a third write of the hour (a full bucket hides it, refilled only up to its capacity).
      expect((await env.attest(await signedBody(env), { clientKey: "192.0.2.8" })).ok).toBe(true);
      env.eas.nonces.set(account.address.toLowerCase(), 1n);
      const body = withoutNonce(await signedBody(env, { nonce: 1n }));
      env.delegate.funds = fault;
      for (let i = 0; i < 3; i++) expect([fault, await env.attest(body, { clientKey: `192.0.2.${i}` })]).toMatchObject([fault, { ok: false, code: fault === "low" ? "SUBMISSION_FAILED" : "RPC_ERROR" }]);
      env.delegate.funds = "ok";
      expect((await env.attest(body, { clientKey: "192.0.2.9" })).ok).toBe(true);
      env.eas.nonces.set(account.address.toLowerCase(), 2n);
      expect([fault, await env.attest(withoutNonce(await signedBody(env, { nonce: 2n })), { clientKey: "192.0.2.9" })]).toMatchObject([fault, { ok: false, code: "RATE_LIMITED" }]);
      expect([fault, env.refusals]).toEqual([fault, ["attester"]]);
    }
  });

  test("a refusal for the client address's gas share, at admission or at the charge, spends none of the attester's hourly allowance", async () => {
    // The attester's token was taken before the share was checked (admission) and kept after the charge refused: a
    // client whose share was spent spent its attesters' hour with each refusal.
    const env = guarded({ attesterPerHour: 2, clientGasPerHour: 500_000n });
    const body = await signedBody(env);
    // At the charge: the simulated gas (600,000) does not fit the address's share (500,000); admitted (300,000 fits).
    env.delegate.simulation = { ok: true, gas: 600_000n };
    for (let i = 0; i < 3; i++) {
      expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({ ok: false, code: "RATE_LIMITED", message: expect.stringMatching(/address's share/) });
    }
    expect(env.replay.rows.size).toBe(0);
    // One write of 400,000 for the address: 100,000 left, no room for a typical one, so admission refuses it.
    env.delegate.simulation = { ok: true, gas: 400_000n };
    expect((await env.attest(body, { clientKey: "192.0.2.1" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    const next = await signedBody(env, { nonce: 1n });
    for (let i = 0; i < 3; i++) {
      expect(await env.attest(next, { clientKey: "192.0.2.1" })).toMatchObject({ ok: false, code: "RATE_LIMITED", message: expect.stringMatching(/address's share/) });
    }
    // The attester's second token of the hour is still there, for another address.
    expect((await env.attest(next, { clientKey: "192.0.2.2" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 2n);
    expect(await env.attest(await signedBody(env, { nonce: 2n }), { clientKey: "192.0.2.3" })).toMatchObject({ ok: false, code: "RATE_LIMITED", message: expect.stringMatching(/attester/) });
    expect(env.refusals).toEqual(["client_gas", "client_gas", "client_gas", "client_gas", "client_gas", "client_gas", "attester"]);
  });

  test("past the per-address rate: 429 RATE_LIMITED with retryAfterSeconds, before any RPC, nothing recorded; another address is served", async () => {
    const env = guarded({ ip: 2 });
    expect((await env.attest(await signedBody(env), { clientKey: "192.0.2.1" })).ok).toBe(true);
    expect((await env.attest(await signedBody(env, { signer: other }), { clientKey: "192.0.2.1" })).ok).toBe(true);
    const before = footprint(env);
    const refused = await env.attest(await signedBody(env, { signer: stranger }), { clientKey: "192.0.2.1" });
    expect(refused).toMatchObject({ ok: false, code: "RATE_LIMITED", retryAfterSeconds: 30 });
    expect(footprint(env)).toEqual(before);
    expect(env.refusals).toEqual(["client"]);
    expect((await env.attest(await signedBody(env, { signer: stranger }), { clientKey: "192.0.2.2" })).ok).toBe(true);
  });

  test("past the per-attester rate: 429 from any address until the next token; a signature by someone else spends none of it", async () => {
    const env = guarded({ attesterPerHour: 1 });
    const forged = { ...(await signedBody(env, { signer: stranger })), attester: account.address };
    expect(await env.attest(forged, { clientKey: "a" })).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect((await env.attest(await signedBody(env), { clientKey: "b" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    const before = footprint(env);
    const refused = await env.attest(await signedBody(env, { nonce: 1n }), { clientKey: "c" });
    expect(refused).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    const retryAfter = refused.ok ? 0 : refused.retryAfterSeconds ?? 0;
    expect(retryAfter >= 3_599 && retryAfter <= 3_601).toBe(true);
    expect(footprint(env)).toEqual(before);
    expect(env.refusals).toEqual(["attester"]);
    env.clock.set(env.clock.nowMs() + retryAfter * 1000);
    expect((await env.attest(await signedBody(env, { nonce: 1n }), { clientKey: "c" })).ok).toBe(true);
  });

  test("forged requests naming an attester without a nonce spend none of its allowance; its own request without one takes it once verified", async () => {
    const env = guarded({ attesterPerHour: 1 });
    const withoutNonce = (body: Awaited<ReturnType<typeof signedBody>>) => {
      const copy = structuredClone(body);
      delete copy.prepared.delegatedRequest.nonce;
      delete copy.prepared.typedData.message.nonce;
      return copy;
    };
    // Three forgeries in the attester's name, signed by a stranger, without the nonce: each refused, none charged to it.
    for (let i = 0; i < 3; i++) {
      const forged = withoutNonce({ ...(await signedBody(env, { signer: stranger })), attester: account.address });
      forged.prepared.delegatedRequest.attester = account.address;
      forged.prepared.typedData.message.attester = account.address;
      expect(await env.attest(forged, { clientKey: `forger-${i}` })).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    }
    expect(env.refusals).toEqual([]);
    // The attester's own request without a nonce: served, and it took the one token of the hour.
    expect((await env.attest(withoutNonce(await signedBody(env)), { clientKey: "owner" })).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect(await env.attest(withoutNonce(await signedBody(env, { nonce: 1n })), { clientKey: "owner" })).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    expect(env.refusals).toEqual(["attester"]);
  });

  test("no room in this hour's gas budget for a typical attestation: 429 until the next hour, before any RPC", async () => {
    const env = guarded({ gasPerHour: 450_000n });
    env.clock.set(env.clock.nowMs() + 1_000_000); // 1,000 s into the hour
    expect((await env.attest(await signedBody(env), { clientKey: "a" })).ok).toBe(true);
    expect([...env.budget.windows.values()]).toEqual([200_000n]); // the simulated gas
    const before = footprint(env);
    const refused = await env.attest(await signedBody(env, { signer: other }), { clientKey: "b" });
    expect(refused).toMatchObject({ ok: false, code: "RATE_LIMITED", retryAfterSeconds: 2_600 });
    expect(footprint(env)).toEqual(before);
    expect(env.refusals).toEqual(["budget"]);
    env.clock.set(env.clock.nowMs() + 2_600_000);
    expect((await env.attest(await signedBody(env, { signer: other }), { clientKey: "b" })).ok).toBe(true);
  });

  test("simulated gas that does not fit the budget: 429, nothing sent, the signature released for a later try", async () => {
    const env = guarded({ gasPerHour: 350_000n });
    env.delegate.simulation = { ok: true, gas: 400_000n };
    const body = await signedBody(env);
    expect(await env.attest(body, { clientKey: "a" })).toMatchObject({ ok: false, code: "RATE_LIMITED", retryAfterSeconds: 3_600 });
    expect([env.delegate.simulations, env.delegate.sent.length, env.replay.rows.size, env.budget.windows.size]).toEqual([1, 0, 0, 0]);
    env.delegate.simulation = { ok: true, gas: 300_000n };
    expect((await env.attest(body, { clientKey: "a" })).ok).toBe(true);
    expect([...env.budget.windows.values()]).toEqual([300_000n]);
  });

  test("PUBLIC_RELAY=off: 403 PUBLIC_RELAY_DISABLED right after the body parses, before every other check and any RPC", async () => {
    const env = guarded({ enabled: false, overrides: { mainnet: true, delegate: undefined } });
    const body = await signedBody(env);
    expect(await env.attest({ attester: body.attester })).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(await env.attest({ ...body, signature: "0x12" })).toMatchObject({ ok: false, code: "PUBLIC_RELAY_DISABLED" });
    expect(footprint(env)).toEqual({ reads: 0, simulations: 0, sent: 0, records: 0, charges: 0 });
    expect(env.refusals).toEqual(["disabled"]);
  });

  test("the guard follows the body checks and the replay lookup: refused bodies spend no token, a known signature answers past the limits", async () => {
    const env = guarded({ ip: 1, attesterPerHour: 1 });
    const past = BigInt(Math.floor(env.clock.nowMs() / 1000) - 1);
    expect(await env.attest(await signedBody(env, { deadline: past }), { clientKey: "a" })).toMatchObject({ code: "SIGNATURE_EXPIRED" });
    expect(await env.attest(await signedBody(env, { schema: OTHER_SCHEMA }), { clientKey: "a" })).toMatchObject({ code: "SCHEMA_NOT_SUBSIDIZED" });
    expect(await env.attest({ ...(await signedBody(env)), signature: "0x12" }, { clientKey: "a" })).toMatchObject({ code: "INVALID_SIGNATURE" });
    const body = await signedBody(env);
    const first = await env.attest(body, { clientKey: "a" });
    expect(first.ok).toBe(true);
    // Both buckets are empty now; resubmitting the same signature still tells its outcome.
    expect(await env.attest(body, { clientKey: "a" })).toMatchObject({ ok: false, code: "DUPLICATE", details: first.ok ? first.value.uid! : "" });
    expect(env.refusals).toEqual([]);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect(await env.attest(await signedBody(env, { nonce: 1n }), { clientKey: "a" })).toMatchObject({ code: "RATE_LIMITED" });
  });

  test("a refusal of the guard comes before NO_DELEGATE_KEY and the nonce read", async () => {
    const env = guarded({ ip: 1, overrides: { delegate: undefined, eas: fakeEasReader({ failing: true }) } });
    expect(await env.attest(await signedBody(env), { clientKey: "a" })).toMatchObject({ code: "NO_DELEGATE_KEY" });
    expect(await env.attest(await signedBody(env, { signer: other }), { clientKey: "a" })).toMatchObject({ code: "RATE_LIMITED" });
    expect(env.eas.calls).toBe(0);
  });
});

describe("createDelegatedAttest(): the simulation ahead (issue 28)", () => {
  const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");

  /** The order in which the nonce read, the simulation and the replay claim start. */
  function traced() {
    const env = setup();
    const events: string[] = [];
    const read = env.eas.getAttesterNonce;
    env.eas.getAttesterNonce = (attester: `0x${string}`) => (events.push("nonce"), read(attester));
    const simulate = env.delegate.simulate;
    env.delegate.simulate = (call) => (events.push("simulate"), simulate(call));
    const claim = env.replay.claim;
    env.replay.claim = (c) => (events.push("claim"), claim(c));
    return { ...env, events };
  }

  test("once the wallet could pay, a signature proven for the client's nonce is simulated with the nonce read, once", async () => {
    const env = traced();
    expect((await env.attest(await signedBody(env, { signer: other }))).ok).toBe(true);
    // The first request knows nothing of the wallet yet: simulated after the claim, as decisions §6 lists it.
    expect(env.events).toEqual(["nonce", "claim", "simulate"]);
    env.events.length = 0;
    expect((await env.attest(await signedBody(env))).ok).toBe(true);
    expect(env.events).toEqual(["nonce", "simulate", "claim"]);
    expect(env.delegate.simulations).toBe(2);
  });

  test("its answer counts only after the nonce, the funds and the claim: a moved nonce is NONCE_MOVED with nothing recorded", async () => {
    const env = traced();
    expect((await env.attest(await signedBody(env, { signer: other }))).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect(await env.attest(await signedBody(env, { nonce: 0n }))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH", details: NONCE_MOVED });
    expect([...env.replay.rows.values()].filter((r) => r.attester === account.address.toLowerCase())).toEqual([]);
    env.delegate.funds = "low";
    expect(await env.attest(await signedBody(env, { nonce: 1n }))).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", unavailable: true });
    // A wallet that could not pay is not simulated for ahead any more.
    env.delegate.funds = "ok";
    env.events.length = 0;
    expect((await env.attest(await signedBody(env, { nonce: 1n }))).ok).toBe(true);
    expect(env.events).toEqual(["nonce", "claim", "simulate"]);
  });

  test("a revert found ahead is INVALID_INPUT after the claim, and the signature is released for a retry", async () => {
    const env = traced();
    expect((await env.attest(await signedBody(env, { signer: other }))).ok).toBe(true);
    env.delegate.simulation = { ok: false, reason: "reverted", errorName: "InvalidSchema" };
    const body = await signedBody(env);
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(env.events.slice(-3)).toEqual(["nonce", "simulate", "claim"]);
    expect(env.delegate.sent).toHaveLength(1);
    env.delegate.simulation = { ok: true, gas: 1n };
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("a signature that is not the attester's for the client's nonce is never simulated", async () => {
    const env = traced();
    expect((await env.attest(await signedBody(env, { signer: other }))).ok).toBe(true);
    const body = await signedBody(env);
    expect(await env.attest({ ...body, attester: "0x1111111111111111111111111111111111111111" })).toMatchObject({ code: "ATTESTER_MISMATCH" });
    expect(env.delegate.simulations).toBe(1);
  });
});

describe("createDelegatedAttest(): the attester's token of a request that sent nothing", () => {
  /** A guard whose attester may write `perHour` an hour, with room for everything else. */
  function guarded(perHour: number) {
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: perHour });
    const env = setup({ clock, guard });
    const window = clock.nowMs() - (clock.nowMs() % 3_600_000);
    return { ...env, budget, window };
  }

  /** Holds the delegate's balance reads (made once the guard took the tokens) until `n` requests reached them. */
  function holdFunds(delegate: ReturnType<typeof fakeDelegate>, n: number) {
    const check = delegate.checkFunds;
    let arrived = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    delegate.checkFunds = async () => {
      if (++arrived >= n) open();
      await gate;
      return await check();
    };
  }

  test("the same signature twice at once: one sent, the other 409 DUPLICATE with its attester token given back", async () => {
    // The loser passed the replay lookup before the winner's claim, was refused at its own claim with nothing sent, and
    // kept its token: one attestation spent two of the attester's hour (a duplicate sent after spends none).
    const env = guarded(2);
    const body = await signedBody(env);
    holdFunds(env.delegate, 2);
    const answers = await Promise.all([env.attest(body), env.attest(body)]);
    expect(answers.map((a) => (a.ok ? "ok" : a.code)).sort()).toEqual(["DUPLICATE", "ok"]);
    expect(env.delegate.sent).toHaveLength(1);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect((await env.attest(await signedBody(env, { nonce: 1n }))).ok).toBe(true);
  });

  test("two signatures of one attester nonce at once: the one refused as in flight (409 DUPLICATE) keeps its token", async () => {
    // Another signature is a request of its own that cost the node its reads: given back, an attester's signatures over
    // one nonce in flight were never bounded by its hour (found by review).
    const env = guarded(2);
    const bodies = [await signedBody(env), await signedBody(env, { data: reviewData("0x01") })];
    holdFunds(env.delegate, 2);
    const answers = await Promise.all(bodies.map((body) => env.attest(body)));
    expect(answers.map((a) => (a.ok ? "ok" : a.code)).sort()).toEqual(["DUPLICATE", "ok"]);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect(await env.attest(await signedBody(env, { nonce: 1n }))).toMatchObject({ ok: false, code: "RATE_LIMITED" });
  });

  test("the same signature whose nonce read came after the first was mined: 409 DUPLICATE with the uid, its token given back", async () => {
    const env = guarded(2);
    const body = await signedBody(env);
    const read = env.eas.getAttesterNonce;
    let held: Promise<void> | undefined;
    let open!: () => void;
    env.eas.getAttesterNonce = (async (...args: Parameters<typeof read>) => {
      if (held === undefined) {
        held = new Promise<void>((resolve) => (open = resolve));
        await held;
      }
      return await read(...args);
    }) as typeof read;
    const late = env.attest(body);
    await Bun.sleep(0);
    expect(held).toBeDefined();
    expect((await env.attest(body)).ok).toBe(true);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    open();
    expect(await late).toMatchObject({ ok: false, code: "DUPLICATE", details: expect.stringMatching(/^0x/) });
    expect((await env.attest(await signedBody(env, { nonce: 1n }))).ok).toBe(true);
  });

  test("a submission record that could not be opened (onSubmitting throws): the gas charged and the attester token go back", async () => {
    const env = guarded(1);
    const body = await signedBody(env);
    const broken = { onSubmitting: () => Promise.reject(new Error("database down")) };
    await expect(env.attest(body, broken)).rejects.toThrow("database down");
    expect(await env.budget.used(env.window)).toBe(0n);
    expect(env.replay.rows.size).toBe(0);
    expect((await env.attest(body)).ok).toBe(true);
  });

  test("an attester's other signatures over a nonce in flight, from many addresses: 429 once its hour is spent, simulations bounded", async () => {
    // Found by review: each was answered 409 DUPLICATE and gave its token back, so 20 of them cost 20 simulations ahead
    // and the reads before them, and never 429.
    const env = guarded(2);
    let open!: () => void;
    const held = new Promise<void>((resolve) => (open = resolve));
    env.delegate.lock = () => held;
    const first = env.attest(await signedBody(env), { clientKey: "client 0" });
    while (env.replay.rows.size === 0) await Bun.sleep(1);
    // One after the other, each after the one before was answered (sent at once, the hour would refuse them at admission).
    const others = [];
    for (let i = 1; i <= 20; i++) {
      others.push(await env.attest(await signedBody(env, { data: reviewData(`0x${i.toString(16).padStart(2, "0")}`) }), { clientKey: `client ${i}` }));
    }
    // The hour's second token went to one of them (409, simulated ahead); every other is refused before any RPC.
    expect(others.map((a) => (a.ok ? "ok" : a.code)).sort()).toEqual(["DUPLICATE", ...Array.from({ length: 19 }, () => "RATE_LIMITED" as const)]);
    expect(env.delegate.simulations).toBe(2);
    open();
    expect((await first).ok).toBe(true);
  });

  test("the same signature from several addresses at once, each simulated ahead: the copy refused as a duplicate keeps its token", async () => {
    // Copies of one signature all pass the replay lookup before the first claim; each that cost a simulation keeps its
    // token, so the attester's hour bounds them (found by review). One that was not simulated gives it back (above).
    const env = guarded(2);
    const other = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
    // Another attester's write: the wallet could pay at its last check, so the next requests are simulated ahead.
    expect((await env.attest(await signedBody(env, { signer: other }))).ok).toBe(true);
    const body = await signedBody(env);
    holdFunds(env.delegate, 2);
    const answers = await Promise.all(Array.from({ length: 4 }, (_, i) => env.attest(body, { clientKey: `client ${i}` })));
    expect(answers.map((a) => (a.ok ? "ok" : a.code)).sort()).toEqual(["DUPLICATE", "RATE_LIMITED", "RATE_LIMITED", "ok"]);
    expect(env.delegate.simulations).toBe(3);
    env.eas.nonces.set(account.address.toLowerCase(), 1n);
    expect(await env.attest(await signedBody(env, { nonce: 1n }))).toMatchObject({ ok: false, code: "RATE_LIMITED" });
  });
});

describe("createDelegatedAttest(): a send the node refused costs nothing (decisions §23)", () => {
  /**
   * A guard whose attester may write once an hour and whose client key and attester may each be charged less than
   * two sends' gas, counting what it is given back.
   */
  function refusedEnv() {
    const clock = fakeClock();
    const { guard, budget } = testRelayGuard(clock, { attesterPerHour: 1, clientGasPerHour: 300_000n, attesterGasPerHour: 300_000n, typicalGas: 200_000n });
    const { guard: counted, given } = countingGuard(guard);
    const env = setup({ clock, guard: counted });
    const spent = spentOf(budget, clock, account.address);
    return { ...env, given, spent };
  }

  test("a transaction the node refused (never broadcast): 500 SUBMISSION_FAILED, its gas refunded once and the attester's token given back once; the same signature then goes through", async () => {
    // The gas stayed charged: a client's or a free account's share (less than two sends) refused the invited retry
    // 429 for the rest of the hour, though nothing was broadcast.
    const env = refusedEnv();
    env.delegate.submission = { ok: false, reason: "not-broadcast" };
    const body = await signedBody(env);
    expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({
      ok: false,
      code: "SUBMISSION_FAILED",
      message: "The chain refused the transaction; nothing was sent, and the same signature may be submitted again",
    });
    expect(env.given).toEqual({ refunds: [200_000n], tokens: 1 });
    expect(await env.spent()).toEqual({ hour: 0n, shares: [0n, 0n] });
    expect(env.replay.rows.size).toBe(0);
    env.delegate.submission = undefined;
    expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({ ok: true });
    expect(await env.spent()).toEqual({ hour: 200_000n, shares: [200_000n, 200_000n] });
  });

  test("the delegate wallet's shared nonce not taken (its storage failed): 500 INTERNAL_ERROR saying so, not the chain's refusal; gas and token given back once", async () => {
    // It was the node's refusal ("The chain refused the transaction"), untrue: the chain was never asked.
    const env = refusedEnv();
    env.delegate.submission = { ok: false, reason: "nonce-unavailable" };
    const body = await signedBody(env);
    expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({
      ok: false,
      code: "INTERNAL_ERROR",
      message: "The service could not take its delegate wallet's next nonce; nothing was sent, and the same signature may be submitted again",
    });
    expect(env.given).toEqual({ refunds: [200_000n], tokens: 1 });
    expect(await env.spent()).toEqual({ hour: 0n, shares: [0n, 0n] });
    expect([env.replay.rows.size, env.delegate.sent.length]).toEqual([0, 0]);
    env.delegate.submission = undefined;
    expect(await env.attest(body, { clientKey: "192.0.2.1" })).toMatchObject({ ok: true });
  });
});

describe("createDelegatedAttest(): an attestation of more call data than a node takes in one transaction", () => {
  test("400 INVALID_INPUT before any charge or signature, the signature given back; one just under the bound is sent", async () => {
    const env = setup();
    const result = await env.attest(await signedBody(env, { data: reviewData("x".repeat(121 * 1024)) }));
    expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(env.delegate.sent).toHaveLength(0);
    expect(env.replay.rows.size).toBe(0);
    expect((await env.attest(await signedBody(env, { data: reviewData("x".repeat(110 * 1024)) }))).ok).toBe(true);
  });
});

describe("createDelegatedAttest(): an attestation of more call data than a node takes, refused by its checks", () => {
  test("400 INVALID_INPUT with no RPC at all and no token taken (it was refused after the attester's nonce, the balance and the simulation were read and the attester's token taken)", async () => {
    const clock = fakeClock();
    const { guard } = testRelayGuard(clock, { attesterPerHour: 1 });
    const env = setup({ clock, guard });
    let balanceReads = 0;
    const checkFunds = env.delegate.checkFunds;
    env.delegate.checkFunds = () => (balanceReads++, checkFunds());
    const result = await env.attest(await signedBody(env, { data: reviewData("x".repeat(121 * 1024)) }));
    expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT", message: expect.stringContaining("call data") });
    expect([env.eas.calls, balanceReads, env.delegate.simulations, env.delegate.sent.length, env.replay.rows.size]).toEqual([0, 0, 0, 0, 0]);
    // The attester's one write of the hour is still there.
    expect(await env.attest(await signedBody(env))).toMatchObject({ ok: true });
  });

  test("after the replay lookup (decisions §6): a signature on record whose data is over the bound answers 409 DUPLICATE with its uid, not 400", async () => {
    // Recorded and mined before the bound (or by another instance): a resend was told 400 INVALID_INPUT, not its outcome.
    const env = setup();
    const body = await signedBody(env, { data: reviewData("x".repeat(121 * 1024)) });
    const key = body.signature.toLowerCase();
    const { chainId } = env.eas;
    const uid = `0x${"c".repeat(64)}`;
    const claim = { key, chainId, attester: account.address, nonce: 0n, deadline: BigInt(body.prepared.delegatedRequest.deadline), createdAtMs: 0 };
    expect(await env.replay.claim(claim)).toBe("claimed");
    await env.replay.finish(chainId, key, { state: "mined", txHash: `0x${"d".repeat(64)}`, uid, blockNumber: 7n });
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "DUPLICATE", details: uid });
    expect([env.eas.calls, env.delegate.simulations, env.delegate.sent.length]).toEqual([0, 0, 0]);
  });
});
