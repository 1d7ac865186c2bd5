import { describe, expect, test } from "bun:test";
import { encodeAbiParameters, serializeErc6492Signature } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { recoverAddress } from "viem/utils";
import type { ContractSignatureCheck, HexString, Submission, WalletDeployment, WalletDeploymentOutcome } from "../../ports/eas.ts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeFactoryCalls, fakeGasBudget, fakeReplayStore, fakeWalletRefusals } from "../../ports/fakes/mod.ts";
import { createRelayGuard, type RelayGuard } from "./relay_guard.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { buildAttestTypedData, ZERO_UID } from "./attest_typed_data.ts";
import { type CallerTicket, createDelegatedAttest } from "./delegated_attest.ts";
import { parseAttestSignature } from "./signature.ts";
import { MAX_CALLDATA_BYTES } from "./_calldata_size.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

/** A user review's data as every reader decodes it (the relays refuse data that does not decode under its schema). */
const reviewData = (body = "0x1234") =>
  (encodeSchemaData(findSchemaByName("user-review")!.schema, { subject: "did:web:shop.example", version: "1", ratingValue: 5, reviewBody: body, screenshotUrls: [], proofs: [] }) as { value: `0x${string}` }).value;
const REVIEW_DATA = reviewData();


const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const owner = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const stranger = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const WALLET = "0x00000000000000000000000000000000000a11e7" as HexString;
const FACTORY = "0x000000000000000000000000000000000000fac7" as HexString;
const DEPLOY_CALL = "0xabcdef01" as HexString;

/**
 * A chain with one smart-contract wallet owned by `owner`, deployed or not: `isValidSignature` accepts the
 * owner's ECDSA signature of the digest; the factory deploys it. Counts what the use case asked of it.
 */
function setup(options: {
  deployed: boolean;
  checkFails?: boolean;
  deployOutcome?: WalletDeploymentOutcome;
  /** The factory call's estimate (or the code read before it) is not answered: "rpc-error" before any charge or send. */
  estimateFails?: boolean;
  factoryCalls?: ReturnType<typeof fakeFactoryCalls>;
  guard?: RelayGuard;
  submission?: Submission;
  /** A second key the wallet accepts (a multi-owner wallet). */
  alsoAccepts?: HexString;
  /** How long the factory call waits for the delegate wallet's lock (behind a slow node's sends), on the test's clock. */
  waitsForLockMs?: number;
  walletRefusals?: ReturnType<typeof fakeWalletRefusals>;
  /** The chain (default 31337), and a replay store shared with another chain's setup (decisions §30). */
  chainId?: number;
  replay?: ReturnType<typeof fakeReplayStore>;
  /** A wallet that ignores the signature's bytes (a Safe's approved hashes): any deployed check of it is valid. */
  ignoresSignatureBytes?: boolean;
}) {
  const clock = fakeClock();
  const eas = fakeEasReader(options.chainId === undefined ? {} : { chainId: options.chainId });
  let deployed = options.deployed;
  const checks: { deployment?: WalletDeployment | undefined }[] = [];
  const deployments: bigint[] = [];
  const reader = {
    ...eas,
    async getAttesterNonce(attester: HexString, options?: { withCode?: boolean }) {
      const read = await eas.getAttesterNonce(attester);
      return read.ok && options?.withCode ? { ...read, isContract: deployed && attester.toLowerCase() === WALLET } : read;
    },
    async checkContractSignature(input: { signer: HexString; digest: HexString; signature: HexString; deployment?: WalletDeployment | undefined }): Promise<ContractSignatureCheck> {
      checks.push({ deployment: input.deployment });
      if (options.checkFails) return "rpc-error";
      if (input.signer.toLowerCase() !== WALLET) return "invalid";
      if (!deployed && input.deployment?.factory !== FACTORY) return "invalid";
      if (options.ignoresSignatureBytes) return "valid";
      const signer = await recoverAddress({ hash: input.digest, signature: input.signature });
      return signer === owner.address || signer === options.alsoAccepts ? "valid" : "invalid";
    },
  };
  const delegate = {
    ...fakeDelegate({ submission: options.submission }),
    async deployWallet(
      attester: HexString,
      deployment: WalletDeployment,
      charge: (gas: bigint) => Promise<boolean>,
      sendOptions?: { readonly stillValid?: (() => boolean) | undefined },
    ): Promise<WalletDeploymentOutcome> {
      if (deployed) return "deployed";
      if (options.estimateFails) return "rpc-error";
      if (!(await charge(150_000n))) return "refused";
      // The real sender asks `stillValid` once the wallet's lock is held, before signing (adapters/chain/viem_tx_sender.ts).
      clock.set(clock.nowMs() + (options.waitsForLockMs ?? 0));
      if (sendOptions?.stillValid?.() === false) return "expired";
      deployments.push(150_000n);
      if (options.deployOutcome !== undefined) return options.deployOutcome;
      deployed = attester.toLowerCase() === WALLET && deployment.factory === FACTORY;
      return deployed ? "deployed" : "failed";
    },
  };
  const replay = options.replay ?? fakeReplayStore();
  const attest = createDelegatedAttest({
    clock,
    eas: reader,
    delegate,
    replay,
    mainnet: false,
    subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
    factoryCalls: options.factoryCalls,
    guard: options.guard,
    walletRefusals: options.walletRefusals,
  });
  return { clock, eas, delegate, replay, attest, checks, deployments, isDeployed: () => deployed };
}

/** A request with `WALLET` as the attester, signed by `signer` (the wallet's owner, unless a test says otherwise). */
async function walletBody(env: ReturnType<typeof setup>, signer = owner, wrap = (signature: HexString) => signature, nonce = 0n, attester = WALLET) {
  const message = {
    attester,
    schema: SCHEMA,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as HexString,
    expirationTime: 0n,
    revocable: false,
    refUID: ZERO_UID,
    data: REVIEW_DATA,
    value: 0n,
    nonce,
    deadline: BigInt(Math.floor(env.clock.nowMs() / 1000) + 600),
  } as const;
  const typedData = buildAttestTypedData(env.eas, message);
  const signature = await signer.signTypedData(typedData);
  const strings = Object.fromEntries(Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
  return {
    attester,
    signature: wrap(signature),
    prepared: { delegatedRequest: { ...strings, easContractAddress: env.eas.easAddress, chainId: env.eas.chainId } },
  };
}

const wrap6492 = (signature: HexString) => serializeErc6492Signature({ address: FACTORY, data: DEPLOY_CALL, signature });

describe("parseAttestSignature()", () => {
  test("65 bytes are normalized as before; an ERC-6492 wrapping yields the same inner key and its factory call", async () => {
    const signature = await owner.signMessage({ message: "x" });
    const plain = parseAttestSignature(signature);
    const wrapped = parseAttestSignature(wrap6492(signature));
    expect(plain.ok && wrapped.ok).toBe(true);
    if (!plain.ok || !wrapped.ok) return;
    expect(wrapped.value.normalized.hex).toBe(plain.value.normalized.hex);
    expect(wrapped.value.deployment).toEqual({ factory: FACTORY, factoryCalldata: DEPLOY_CALL });
    expect(plain.value.deployment).toBeUndefined();
  });

  test("a wrapping whose inner signature is not 65 bytes, or that is not abi-encoded, is INVALID_SIGNATURE", () => {
    const suffix = "6492".repeat(16);
    const long = serializeErc6492Signature({ address: FACTORY, data: DEPLOY_CALL, signature: `0x${"11".repeat(66)}` });
    expect(parseAttestSignature(long)).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(parseAttestSignature(`0x${"00".repeat(100)}${suffix}`)).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    const badOffset = encodeAbiParameters([{ type: "address" }, { type: "bytes" }, { type: "bytes" }], [FACTORY, DEPLOY_CALL, `0x${"22".repeat(65)}`])
      .replace(/^(0x.{64}).{64}/, `$1${"f".repeat(64)}`);
    expect(parseAttestSignature(`${badOffset}${suffix}`)).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
  });
});

describe("createDelegatedAttest() with smart-contract wallets", () => {
  test("one 65-byte signature a wallet accepts on two chains is each chain's own write: the second is not answered DUPLICATE with the first chain's uid (decisions §30)", async () => {
    // A wallet at the same address on two chains whose `isValidSignature` ignores the bytes (approved hashes): the same
    // 65 bytes are valid for the same review on both. Each chain's relay shares the deployment's replay records.
    const replay = fakeReplayStore();
    const onA = setup({ deployed: true, ignoresSignatureBytes: true, replay });
    const minedOnB: Submission = { ok: true, txHash: `0x${"b".repeat(64)}` as HexString, blockNumber: 7n, uid: `0x${"c".repeat(64)}` as HexString };
    const onB = setup({ deployed: true, ignoresSignatureBytes: true, replay, chainId: 31338, submission: minedOnB });
    const SAME = `0x${"0".repeat(63)}1${"0".repeat(63)}11b` as HexString;
    const a = await onA.attest(await walletBody(onA, owner, () => SAME));
    expect(a).toMatchObject({ ok: true });
    const b = await onB.attest(await walletBody(onB, owner, () => SAME));
    expect(b).toMatchObject({ ok: true, value: { uid: `0x${"c".repeat(64)}` } });
    expect([onA.delegate.sent.length, onB.delegate.sent.length]).toEqual([1, 1]);
    const key = SAME.toLowerCase();
    expect((await replay.find(31337, key))?.uid).toBe(a.ok ? a.value.uid : "not sent");
    expect((await replay.find(31338, key))?.uid).toBe(`0x${"c".repeat(64)}`);
    // On its own chain, the same bytes again are that chain's duplicate, answered with that chain's uid.
    expect(await onB.attest(await walletBody(onB, owner, () => SAME))).toMatchObject({ ok: false, code: "DUPLICATE", details: `0x${"c".repeat(64)}` });
  });

  test("a deployed wallet's ERC-1271 signature is asked of the wallet and submitted as 65 bytes", async () => {
    const env = setup({ deployed: true });
    const result = await env.attest(await walletBody(env));
    expect(result.ok).toBe(true);
    expect(env.checks).toEqual([{ deployment: undefined }]);
    expect(env.delegate.sent[0]?.attester).toBe(WALLET);
    expect(env.deployments).toEqual([]);
  });

  test("the attester's hourly allowance applies to a wallet once its signature is accepted, and to no one else's forgery", async () => {
    const { createRateLimiter } = await import("../rate_limit.ts");
    const clock = fakeClock();
    const attesterRate = createRateLimiter(clock, { capacity: 1, perMinute: 1 / 60 });
    const guard = createRelayGuard({ enabled: true, attesterRate, gasBudget: fakeGasBudget(), gasPerHour: 10_000_000n, typicalGas: 300_000n, clock });
    const coOwner = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6");
    const env = setup({ deployed: true, guard, alsoAccepts: coOwner.address });
    // A forgery in the wallet's name (the wallet refuses it) spends none of it.
    expect(await env.attest(await walletBody(env, stranger))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect((await env.attest(await walletBody(env))).ok).toBe(true);
    // The wallet's next request, signed by its other owner, is over its one an hour (each signing key used to be
    // charged under a key of its own, so a wallet accepting any signature had no allowance at all).
    env.eas.nonces.set(WALLET.toLowerCase(), 1n);
    expect(await env.attest(await walletBody(env, coOwner, (s) => s, 1n))).toMatchObject({ ok: false, code: "RATE_LIMITED" });
  });

  test("a wallet whose accepted signature reverts on chain and simulates again as accepted is refused from then on, before any send", async () => {
    // A wallet that tells a simulation from a transaction (tx.gasprice 0): each of its requests made the delegate pay
    // for a reverted transaction, at no cost to its owner.
    const walletRefusals = fakeWalletRefusals();
    const env = setup({ deployed: true, walletRefusals, submission: { ok: false, reason: "reverted", txHash: "0xdead", blockNumber: 9n } });
    const simulate = env.delegate.simulate;
    const submit = env.delegate.submit;
    let simulations = 0;
    let sends = 0;
    env.delegate.simulate = (call) => (simulations++, simulate(call));
    env.delegate.submit = (call, options) => (sends++, submit(call, options));
    expect(await env.attest(await walletBody(env))).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", details: "0xdead" });
    expect([simulations, sends]).toEqual([2, 1]);
    expect(await walletRefusals.find(env.eas.chainId, WALLET)).toMatchObject({ txHash: "0xdead" });
    // Its next signature (another deadline, so another replay key) is refused before any simulation or send.
    env.clock.set(env.clock.nowMs() + 1_000);
    const again = await env.attest(await walletBody(env));
    expect(again).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(!again.ok && again.message).toContain("0xdead");
    expect([simulations, sends]).toEqual([2, 1]);
  });

  test("a batch holding the wallet and a plain key, reverted on chain and accepted again in simulation: only the wallet is refused", async () => {
    const walletRefusals = fakeWalletRefusals();
    const env = setup({ deployed: true, walletRefusals, submission: { ok: false, reason: "reverted", txHash: "0xbad", blockNumber: 9n } });
    // A plain key's request beside it: recovered, never asked of a contract.
    const byKey = await walletBody(env, stranger, (signature) => signature, 0n, stranger.address);
    const simulateBatch = env.delegate.simulateBatch;
    let simulations = 0;
    env.delegate.simulateBatch = (calls) => (simulations++, simulateBatch(calls));
    const outcome = await env.attest.batch!([await walletBody(env), byKey]);
    expect(outcome.results.map((r) => (r.ok ? "ok" : r.code))).toEqual(["SUBMISSION_FAILED", "SUBMISSION_FAILED"]);
    expect(simulations).toBe(2);
    expect([...walletRefusals.rows.values()].map((r) => [r.wallet, r.txHash])).toEqual([[WALLET, "0xbad"]]);
    env.clock.set(env.clock.nowMs() + 1_000);
    const again = await env.attest.batch!([await walletBody(env)]);
    expect(again.results[0]).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(env.delegate.batches).toHaveLength(1);
  });

  test("a batch that reverted because the chain moved (the simulation now refuses it too) marks no wallet", async () => {
    const walletRefusals = fakeWalletRefusals();
    const env = setup({ deployed: true, walletRefusals, submission: { ok: false, reason: "reverted", txHash: "0xrace", blockNumber: 9n } });
    const simulateBatch = env.delegate.simulateBatch;
    let simulations = 0;
    env.delegate.simulateBatch = (calls) =>
      ++simulations === 1 ? simulateBatch(calls) : Promise.resolve({ ok: false, reason: "reverted", errorName: "InvalidNonce" });
    const outcome = await env.attest.batch!([await walletBody(env)]);
    expect(outcome.results[0]).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(simulations).toBe(2);
    expect(walletRefusals.rows.size).toBe(0);
  });

  test("a wallet's attestation that reverted because the chain moved (the simulation now refuses it too) is not refused", async () => {
    const walletRefusals = fakeWalletRefusals();
    const env = setup({ deployed: true, walletRefusals, submission: { ok: false, reason: "reverted", txHash: "0xrace", blockNumber: 9n } });
    const simulate = env.delegate.simulate;
    let calls = 0;
    env.delegate.simulate = (call) => (++calls === 1 ? simulate(call) : Promise.resolve({ ok: false, reason: "reverted", errorName: "InvalidNonce" }));
    expect(await env.attest(await walletBody(env))).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(calls).toBe(2);
    expect(walletRefusals.rows.size).toBe(0);
  });

  test("the wallet refusing the signature is ATTESTER_MISMATCH with nothing recorded", async () => {
    const env = setup({ deployed: true });
    expect(await env.attest(await walletBody(env, stranger))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(env.replay.rows.size).toBe(0);
    expect(env.delegate.simulations).toBe(0);
  });

  test("the wallet that cannot be asked is RPC_ERROR, never a mismatch, with nothing recorded", async () => {
    const env = setup({ deployed: true, checkFails: true });
    expect(await env.attest(await walletBody(env))).toMatchObject({ ok: false, code: "RPC_ERROR" });
    expect(env.replay.rows.size).toBe(0);
  });

  test("a plain signature of an address with no code is only an EOA's: the chain is not asked", async () => {
    const env = setup({ deployed: false });
    expect(await env.attest(await walletBody(env))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(env.checks).toEqual([]);
  });

  test("an ERC-6492 signature of a counterfactual wallet is checked with its deployment, then the wallet is deployed and the attestation sent", async () => {
    const env = setup({ deployed: false });
    const result = await env.attest(await walletBody(env, owner, wrap6492));
    expect(result.ok).toBe(true);
    expect(env.checks).toEqual([{ deployment: { factory: FACTORY, factoryCalldata: DEPLOY_CALL } }]);
    expect(env.deployments).toEqual([150_000n]);
    expect(env.isDeployed()).toBe(true);
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("the same signature wrapped or not is one replay key: a second submission is DUPLICATE", async () => {
    const env = setup({ deployed: false });
    const body = await walletBody(env, owner, wrap6492);
    expect((await env.attest(body)).ok).toBe(true);
    // ECDSA signing is deterministic: the same request unwrapped is the same 65 bytes.
    const plain = await walletBody(env);
    expect(body.signature.includes(plain.signature.slice(2))).toBe(true);
    expect(await env.attest(plain)).toMatchObject({ ok: false, code: "DUPLICATE" });
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("an ERC-6492 signature by someone else deploys nothing", async () => {
    const env = setup({ deployed: false });
    expect(await env.attest(await walletBody(env, stranger, wrap6492))).toMatchObject({ ok: false, code: "ATTESTER_MISMATCH" });
    expect(env.deployments).toEqual([]);
    expect(env.replay.rows.size).toBe(0);
  });

  test("a factory call that does not deploy the attester: SUBMISSION_FAILED, nothing attested, the signature released", async () => {
    const env = setup({ deployed: false, deployOutcome: "failed" });
    const body = await walletBody(env, owner, wrap6492);
    expect(await env.attest(body)).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(env.delegate.sent).toHaveLength(0);
    expect(env.replay.rows.size).toBe(0);
  });
});

describe("a factory call that burns gas without deploying the wallet (issue 23, finding 2)", () => {
  const BURN = { burned: true, txHash: `0x${"b".repeat(64)}`, blockNumber: 12n, gasUsed: 140_000n } as const;
  /** A caller that records what became of its reservation, as the private relay's sponsored write does. */
  const ticketLog = () => {
    const events: string[] = [];
    const ticket: CallerTicket = {
      release: () => Promise.resolve(void events.push("release")),
      onSigned: () => Promise.resolve(void events.push("signed")),
      onSent: () => Promise.resolve(void events.push("sent")),
      onMined: () => Promise.resolve(void events.push("mined")),
      onBurned: (burn) => Promise.resolve(void events.push(`burned ${burn.txHash.slice(0, 4)} ${burn.blockNumber}`)),
    };
    return { events, caller: { admit: () => Promise.resolve(ticket) } };
  };
  /**
   * A factory call that sent nothing (`deployOutcome`) is answered `expected`, the gas, the record, the signature and
   * the reservation given back; the same request then deploys the wallet.
   */
  async function expectGivenBackThenDeploys(deployOutcome: WalletDeploymentOutcome, expected: Record<string, unknown>) {
    const factoryCalls = fakeFactoryCalls();
    const budget = fakeGasBudget();
    const guard = createRelayGuard({ enabled: true, relay: "private", gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 300_000n, clock: fakeClock() });
    const down = setup({ deployed: false, deployOutcome, factoryCalls, guard });
    const { events, caller } = ticketLog();
    expect(await down.attest(await walletBody(down, owner, wrap6492), caller)).toMatchObject(expected);
    expect([...budget.windows.values()].every((gas) => gas === 0n)).toBe(true);
    expect(factoryCalls.rows.size).toBe(0);
    expect(down.replay.rows.size).toBe(0);
    expect(events).toEqual(["release"]);

    const up = setup({ deployed: false, factoryCalls, guard });
    expect((await up.attest(await walletBody(up, owner, wrap6492))).ok).toBe(true);
    expect(up.isDeployed()).toBe(true);
  }

  test("is recorded for the wallet, charged to the guard's budget and kept by the caller; the wallet's ERC-6492 signatures are then refused before any RPC", async () => {
    const factoryCalls = fakeFactoryCalls();
    const budget = fakeGasBudget();
    const clock = fakeClock();
    const guard = createRelayGuard({ enabled: true, relay: "private", gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 300_000n, clock });
    const env = setup({ deployed: false, deployOutcome: BURN, factoryCalls, guard });
    const { events, caller } = ticketLog();
    const body = await walletBody(env, owner, wrap6492);

    const first = await env.attest(body, caller);
    expect(first).toMatchObject({ ok: false, code: "SUBMISSION_FAILED", details: BURN.txHash });
    expect(events).toEqual([`burned 0xbb 12`]);
    expect([...budget.windows.values()]).toEqual([150_000n]);
    expect(await factoryCalls.find(env.eas.chainId, WALLET)).toMatchObject({ state: "failed", txHash: BURN.txHash, gasUsed: 140_000n });
    expect(env.replay.rows.size).toBe(0);

    const checksBefore = env.checks.length;
    const again = await env.attest(body, caller);
    expect(again).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(env.deployments).toEqual([150_000n]);
    expect(env.checks.length).toBe(checksBefore);
    expect(events).toEqual([`burned 0xbb 12`]);
  });

  test("a wallet whose factory call is already on record (its outcome unknown) gets no second call, and nothing is charged", async () => {
    const factoryCalls = fakeFactoryCalls();
    const budget = fakeGasBudget();
    const guard = createRelayGuard({ enabled: true, gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 300_000n, clock: fakeClock() });
    const env = setup({ deployed: false, factoryCalls, guard });
    await factoryCalls.begin({ chainId: env.eas.chainId, wallet: WALLET, factory: FACTORY, calldataHash: "0x", createdAtMs: 0 });
    const { events, caller } = ticketLog();
    expect(await env.attest(await walletBody(env, owner, wrap6492), caller)).toMatchObject({ ok: false, code: "INVALID_SIGNATURE" });
    expect(env.deployments).toEqual([]);
    expect(budget.windows.size).toBe(0);
    expect(events).toEqual(["release"]);
  });

  test("a deployment the budget refuses sends nothing and leaves no record; one that deploys leaves none either", async () => {
    const factoryCalls = fakeFactoryCalls();
    const refusing = createRelayGuard({ enabled: true, gasBudget: fakeGasBudget(), gasPerHour: 100_000n, typicalGas: 0n, clock: fakeClock() });
    const refused = setup({ deployed: false, factoryCalls, guard: refusing });
    expect(await refused.attest(await walletBody(refused, owner, wrap6492))).toMatchObject({ ok: false, code: "RATE_LIMITED" });
    expect(refused.deployments).toEqual([]);
    expect(factoryCalls.rows.size).toBe(0);

    const env = setup({ deployed: false, factoryCalls });
    expect((await env.attest(await walletBody(env, owner, wrap6492))).ok).toBe(true);
    expect(env.isDeployed()).toBe(true);
    expect(factoryCalls.rows.size).toBe(0);
  });

  test("a delegate signer that gave no signature for the factory call: 503 SIGNER_UNAVAILABLE, the gas, the record, the signature and the reservation given back; the same request then deploys", async () => {
    // It was RPC_ERROR with the budget kept and the wallet's record left 'sent', so every later request of the
    // wallet was refused as if its factory call had failed.
    await expectGivenBackThenDeploys("signer-unavailable", { ok: false, code: "SIGNER_UNAVAILABLE", unavailable: true });
  });

  test("the delegate's nonce or fees not read before the factory call was signed: 500 RPC_ERROR, the gas, the record, the signature and the reservation given back; the same request then deploys", async () => {
    // It was "failed": 500 SUBMISSION_FAILED (kept under an Idempotency-Key), the gas charge kept.
    await expectGivenBackThenDeploys("chain-silent", { ok: false, code: "RPC_ERROR" });
  });

  test("a factory call that sent nothing (its estimate not answered, the delegate's nonce or fees not read, the budget's refusal) gives the attester's token back once", async () => {
    // The estimate's RPC_ERROR kept the token taken once the wallet's signature was verified: with 1 an hour, one
    // failed read and the wallet was refused until the hour turned, though nothing was sent.
    const faults: { name: string; options: Partial<Parameters<typeof setup>[0]>; gasPerHour?: bigint; code: string }[] = [
      { name: "estimate", options: { estimateFails: true }, code: "RPC_ERROR" },
      { name: "nonce read", options: { deployOutcome: "chain-silent" }, code: "RPC_ERROR" },
      { name: "budget", options: {}, gasPerHour: 100_000n, code: "RATE_LIMITED" },
    ];
    for (const fault of faults) {
      const clock = fakeClock();
      const attesterRate = createRateLimiter(clock, { capacity: 1, perMinute: 1 / 60 });
      const guardOf = (gasPerHour: bigint) => createRelayGuard({ enabled: true, attesterRate, gasBudget: fakeGasBudget(), gasPerHour, typicalGas: 0n, clock });
      const down = setup({ deployed: false, ...fault.options, guard: guardOf(fault.gasPerHour ?? 10_000_000n) });
      const body = await walletBody(down, owner, wrap6492);
      for (let i = 0; i < 3; i++) expect([fault.name, await down.attest(body)]).toMatchObject([fault.name, { ok: false, code: fault.code }]);
      const guard = guardOf(10_000_000n);
      const up = setup({ deployed: false, guard });
      expect([fault.name, (await up.attest(await walletBody(up, owner, wrap6492))).ok]).toEqual([fault.name, true]);
      // Given back once each: the hour's one is spent now.
      up.eas.nonces.set(WALLET.toLowerCase(), 1n);
      expect([fault.name, await up.attest(await walletBody(up, owner, undefined, 1n))]).toMatchObject([fault.name, { ok: false, code: "RATE_LIMITED" }]);
    }
  });

  test("a factory call that waited for the wallet's lock until the deadline came within the margin: SIGNATURE_EXPIRED, nothing sent, the gas, the record, the signature and the reservation given back", async () => {
    // The attestation's own send re-checked its deadline under the lock; the factory call did not, so a request that
    // waited there behind a slow node deployed the wallet (gas spent) and was then refused as expired.
    const factoryCalls = fakeFactoryCalls();
    const budget = fakeGasBudget();
    const guard = createRelayGuard({ enabled: true, relay: "private", gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 300_000n, clock: fakeClock() });
    const env = setup({ deployed: false, factoryCalls, guard, waitsForLockMs: 600_000 });
    const { events, caller } = ticketLog();
    const result = await env.attest(await walletBody(env, owner, wrap6492), caller);
    expect(result).toMatchObject({ ok: false, code: "SIGNATURE_EXPIRED" });
    expect(env.deployments).toEqual([]);
    expect(env.isDeployed()).toBe(false);
    expect([...budget.windows.values()].every((gas) => gas === 0n)).toBe(true);
    expect(factoryCalls.rows.size).toBe(0);
    expect(env.replay.rows.size).toBe(0);
    expect(events).toEqual(["release"]);
  });

  test("an attestation that reverted burned gas: a caller with onBurned keeps it charged instead of releasing it", async () => {
    const env = setup({ deployed: true, submission: { ok: false, reason: "reverted", txHash: `0x${"c".repeat(64)}`, blockNumber: 7n } });
    const { events, caller } = ticketLog();
    expect(await env.attest(await walletBody(env), caller)).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(events).toEqual(["signed", "sent", "burned 0xcc 7"]);
  });
});

describe("a factory call the node refused (never broadcast) costs nothing (decisions §23)", () => {
  test("charged, then refused by the node: SUBMISSION_FAILED, its gas and the attester's token given back; the same request then deploys", async () => {
    // Its gas charge and token were kept, though nothing was broadcast.
    const clock = fakeClock();
    const budget = fakeGasBudget();
    const attesterRate = createRateLimiter(clock, { capacity: 1, perMinute: 1 / 60 });
    const guard = createRelayGuard({ enabled: true, attesterRate, gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 0n, clock });
    const down = setup({ deployed: false, deployOutcome: "failed", guard });
    expect(await down.attest(await walletBody(down, owner, wrap6492))).toMatchObject({ ok: false, code: "SUBMISSION_FAILED" });
    expect(down.deployments).toEqual([150_000n]);
    expect([...budget.windows.values()].every((gas) => gas === 0n)).toBe(true);
    const up = setup({ deployed: false, guard });
    expect((await up.attest(await walletBody(up, owner, wrap6492))).ok).toBe(true);
  });
});

describe("a factory call whose delegate wallet's shared nonce could not be taken (the storage failed)", () => {
  test("500 INTERNAL_ERROR as the attestation's own send answers it (never SUBMISSION_FAILED, kept 24 h): the gas, the record, the signature, the reservation and the attester's token given back; the same request then deploys", async () => {
    const clock = fakeClock();
    const budget = fakeGasBudget();
    const factoryCalls = fakeFactoryCalls();
    const attesterRate = createRateLimiter(clock, { capacity: 1, perMinute: 1 / 60 });
    const guard = createRelayGuard({ enabled: true, relay: "private", attesterRate, gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 0n, clock });
    const down = setup({ deployed: false, deployOutcome: "nonce-unavailable", factoryCalls, guard });
    const events: string[] = [];
    const ticket: CallerTicket = {
      release: () => Promise.resolve(void events.push("release")),
      onSigned: () => Promise.resolve(void events.push("signed")),
      onSent: () => Promise.resolve(),
      onMined: () => Promise.resolve(),
    };
    const result = await down.attest(await walletBody(down, owner, wrap6492), { admit: () => Promise.resolve(ticket) });
    expect(result).toMatchObject({ ok: false, code: "INTERNAL_ERROR" });
    expect(down.deployments).toEqual([150_000n]);
    expect([...budget.windows.values()].every((gas) => gas === 0n)).toBe(true);
    expect(factoryCalls.rows.size).toBe(0);
    expect(down.replay.rows.size).toBe(0);
    expect(events).toEqual(["release"]);
    // The attester's one token of the hour went back: the same request goes through.
    const up = setup({ deployed: false, factoryCalls, guard });
    expect((await up.attest(await walletBody(up, owner, wrap6492))).ok).toBe(true);
  });
});

describe("an ERC-6492 factory call of more bytes than a node takes in one transaction", () => {
  // Not stored, so cheap: ~131 KiB of zero bytes fit the public relay's gas cap, and each try was 9 RPC calls and a
  // signature (a billed KMS Sign) for a send the node refused (geth's and reth's 128 KiB), all given back.
  const wrapWith = (calldata: HexString) => (signature: HexString) => serializeErc6492Signature({ address: FACTORY, data: calldata, signature });

  test("is 400 INVALID_INPUT before any RPC, charge or signature (after the replay lookup); one of MAX_CALLDATA_BYTES is read", async () => {
    const signature = await owner.signMessage({ message: "x" });
    const atBound = `0xabcdef01${"00".repeat(MAX_CALLDATA_BYTES - 4)}` as HexString;
    const over = `${atBound}00` as HexString;
    expect(parseAttestSignature(wrapWith(atBound)(signature))).toMatchObject({ ok: true, value: { deployment: { factoryCalldata: atBound } } });
    expect(parseAttestSignature(wrapWith(over)(signature))).toMatchObject({ ok: true, value: { deployment: { factoryCalldata: over } } });

    const budget = fakeGasBudget();
    const guard = createRelayGuard({ enabled: true, gasBudget: budget, gasPerHour: 10_000_000n, typicalGas: 0n, clock: fakeClock() });
    const env = setup({ deployed: false, guard });
    const result = await env.attest(await walletBody(env, owner, wrapWith(over)));
    expect(result).toMatchObject({ ok: false, code: "INVALID_INPUT" });
    expect(env.checks).toEqual([]);
    expect(env.deployments).toEqual([]);
    expect(budget.windows.size).toBe(0);
    expect(env.replay.rows.size).toBe(0);
  });

  test("a signature on record wrapped again with one answers 409 DUPLICATE with its outcome, not 400 (decisions §6)", async () => {
    const env = setup({ deployed: false });
    const first = await env.attest(await walletBody(env, owner, wrap6492));
    expect(first.ok).toBe(true);
    const over = `0xabcdef01${"00".repeat(MAX_CALLDATA_BYTES)}` as HexString;
    const again = await env.attest(await walletBody(env, owner, wrapWith(over)));
    expect(again).toMatchObject({ ok: false, code: "DUPLICATE" });
  });
});
