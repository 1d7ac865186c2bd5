/**
 * A witness request under an `Idempotency-Key` that died with its instance (decisions §23: "exact across a crash";
 * found by attacking the paid writes): the retry that takes the key over answers from the write the dead request
 * reserved, and never writes a second witness. Before, the witness route noted nothing under its key, so the retry
 * ran the witness again: a second transaction and a second sponsored write. The route, the SQLite idempotency store
 * and the domain's resume are the real ones; the witness use case is a stand-in that reserves, signs and then hangs,
 * as a request whose instance died does.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { encodeFunctionData, type Hex, keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { silentLogger } from "../../adapters/observability/mod.ts";
import { createSqliteIdempotency, openSqliteStorage } from "../../adapters/sqlite/mod.ts";
import { EAS_ABI } from "../../domain/eas_abi.ts";
import { createIdempotency, IDEMPOTENCY_LEASE_MS } from "../../domain/idempotency/mod.ts";
import { encodeSchemaData } from "../../domain/schema_data.ts";
import { findSchemaByName } from "../../domain/schemas.ts";
import { type ControllerWitness, createWitnessResume } from "../../domain/witness/mod.ts";
import { fakeClock, fakeWriteLedger } from "../../ports/fakes/mod.ts";
import type { ReleaseCause } from "../../ports/submissions.ts";
import { witnessRoutes } from "./witness.ts";
import { decodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { testPaymentGate, testPaymentHeader, testPaymentKey } from "../testing.ts";
import type { PaymentGate } from "../x402_gate.ts";

const WITNESS = findSchemaByName("controller-witness")!;
const ACCOUNT = { id: "acc-1", address: "0x00000000000000000000000000000000000000a1", plan: "free", createdAtMs: 0 };
const BODY = JSON.stringify({ subjectDid: "did:web:crash.example", controllerDid: "did:pkh:eip155:1:0x00000000000000000000000000000000000000b2" });
const KEY = `0x${"11".repeat(32)}` as const;

/** A witness transaction as the witness wallet signs it: `attest` of the witness schema's data. */
async function signedWitness(nonce: number) {
  const data = encodeSchemaData(WITNESS.schema, { subject: "did:web:crash.example", controller: "did:pkh:eip155:1:0x00000000000000000000000000000000000000b2", method: "dns-txt", observedAt: 1_800_000_000n });
  if (!data.ok) throw new Error("unreachable");
  const call = encodeFunctionData({
    abi: EAS_ABI,
    functionName: "attest",
    args: [{ schema: `0x${"cc".repeat(32)}`, data: { recipient: `0x${"dd".repeat(20)}`, expirationTime: 0n, revocable: false, refUID: `0x${"00".repeat(32)}`, data: data.value as Hex, value: 0n } }],
  });
  const raw = await privateKeyToAccount(KEY).signTransaction({ type: "eip1559", chainId: 31337, nonce, to: `0x${"ee".repeat(20)}`, data: call, gas: 200_000n, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n });
  return { raw, txHash: keccak256(raw), wallet: privateKeyToAccount(KEY).address.toLowerCase() as Hex, nonce };
}

/** The witness routes for ACCOUNT's session over `parts`, the resume reading `ledger` on `clock`. */
function witnessApp(parts: {
  witness: ControllerWitness;
  ledger: ReturnType<typeof fakeWriteLedger>;
  clock: ReturnType<typeof fakeClock>;
  idempotency: ReturnType<typeof createIdempotency>;
  payments: PaymentGate | undefined;
}) {
  return new Elysia().use(witnessRoutes({
    sessions: { authenticate: () => Promise.resolve({ ok: true, value: { account: ACCOUNT, session: {} } }) } as never,
    witness: parts.witness,
    witnessResume: createWitnessResume({ ledger: parts.ledger, nowMs: () => parts.clock.nowMs() }),
    log: silentLogger,
    idempotency: parts.idempotency,
    payments: parts.payments,
  }));
}

/**
 * The route over the real idempotency rule; `witness` is told how far the stand-in goes before its instance dies
 * (`signed`: reserved and signed; `reserved`: reserved only), and whether the retry's own run completes.
 */
function setUp(paid: { readonly gate: PaymentGate; readonly header: string } | undefined = undefined) {
  const clock = fakeClock();
  const ledger = fakeWriteLedger();
  const idempotency = createIdempotency({ store: createSqliteIdempotency(new Database(":memory:")), clock });
  let runs = 0;
  let dies: "signed" | "reserved" | undefined;
  let reachedDeath: () => void = () => {};
  const witness = (async (_body, _session, options = {}) => {
    runs++;
    const id = `w${runs}`;
    await ledger.reserve({ id, accountId: ACCOUNT.id, year: 2027, fingerprint: "f", createdAtMs: clock.nowMs() }, 10);
    await options.onReserved?.(`witness-write:${id}`);
    if (dies === "reserved") {
      reachedDeath();
      return await new Promise(() => {});
    }
    const tx = await signedWitness(runs);
    await ledger.markSigned(id, tx, clock.nowMs());
    if (dies === "signed") {
      reachedDeath();
      return await new Promise(() => {});
    }
    await ledger.commit(id, { txHash: tx.txHash, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, clock.nowMs());
    return { result: { ok: true, value: { success: true, uid: `0x${"ab".repeat(32)}`, txHash: tx.txHash, blockNumber: 9, observedAt: 1_800_000_000, method: "dns-txt" } }, deprecated: false, deprecation: undefined };
  }) as ControllerWitness;
  const app = witnessApp({ witness, ledger, clock, idempotency, payments: paid?.gate });
  const path = paid === undefined ? "/v1/controller-witness" : "/v1/paid/controller-witness";
  const headers: Record<string, string> = { "content-type": "application/json", "idempotency-key": "crash-1", ...(paid === undefined ? {} : { "payment-signature": paid.header }) };
  const post = () => app.handle(new Request(`http://localhost${path}`, { method: "POST", headers, body: BODY }));
  /** Sends the first request, which dies where `at` says; resolves once it got there (its answer never comes). */
  const dying = async (at: "signed" | "reserved") => {
    dies = at;
    const there = new Promise<void>((resolve) => (reachedDeath = resolve));
    void post();
    await there;
    dies = undefined;
  };
  const pastLease = () => clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
  return { ledger, post, dying, pastLease, runs: () => runs };
}

describe("a witness request that died under its Idempotency-Key (decisions §23)", () => {
  test("signed and then mined by the reconciler: the retry answers the witness as written, with no second write", async () => {
    const { ledger, post, dying, pastLease, runs } = setUp();
    await dying("signed");
    // While the transaction is on its way: OUTCOME_UNKNOWN naming it, and the key stays with the write.
    pastLease();
    const pending = await post();
    const { txHash } = ledger.writes.get("w1")!;
    expect([pending.status, await pending.json()]).toEqual([503, { error: "The witness transaction was sent but its outcome is not known yet; it will be settled", code: "OUTCOME_UNKNOWN", details: txHash }]);
    expect((await post()).status).toBe(409);
    // The reconciler finds it mined.
    await ledger.commit("w1", { txHash: txHash!, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, 0);
    pastLease();
    const answered = await post();
    expect([answered.status, await answered.json()]).toEqual([200, { success: true, uid: `0x${"ab".repeat(32)}`, txHash, blockNumber: 9, observedAt: 1_800_000_000, method: "dns-txt" }]);
    expect(runs()).toBe(1);
    expect([...ledger.writes.values()].map((w) => w.state)).toEqual(["committed"]);
    // That answer is the key's from now on.
    const replayed = await post();
    expect([replayed.status, replayed.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
  });

  test("died before signing: nothing can land, its reservation is given back and the retry writes the witness once", async () => {
    const { ledger, post, dying, pastLease, runs } = setUp();
    await dying("reserved");
    pastLease();
    const answered = await post();
    expect(answered.status).toBe(200);
    expect(runs()).toBe(2);
    expect([...ledger.writes.values()].map((w) => [w.id, w.state])).toEqual([["w1", "released"], ["w2", "committed"]]);
  });
});

/**
 * The same over the x402 gate (decisions §13): the paid alias, a real SQLite payment ledger and the real gate, a
 * facilitator stand-in that verifies as `valid` says and counts its settlements. Before, the paid witness noted no
 * write under its key and the retry met its own payment's replay key: 409 `PAYMENT_ALREADY_USED` while the witness
 * stood on chain, never settled.
 */
async function paidSetUp() {
  const { payments } = await openSqliteStorage(":memory:");
  const facilitator = { valid: true, settlements: 0 };
  const verify: FacilitatorClient["verify"] = () =>
    Promise.resolve(facilitator.valid ? { isValid: true } : { isValid: false, invalidReason: "invalid_exact_evm_payload_authorization_valid_before" });
  const settle: FacilitatorClient["settle"] = (_payload, requirements) => {
    facilitator.settlements++;
    return Promise.resolve({ success: true, transaction: `0x${"5e".repeat(32)}`, network: requirements.network });
  };
  const gate = testPaymentGate(payments, { verify, settle });
  const header = await testPaymentHeader(gate, "http://localhost/v1/paid/controller-witness");
  return { ...setUp({ gate, header }), payments, facilitator, record: () => payments.find(testPaymentKey(header)) };
}

describe("a paid witness request that died under its Idempotency-Key (decisions §23 with §13)", () => {
  test("signed, then mined: the retry answers the witness and settles its payment once; no second write or charge", async () => {
    const { ledger, post, dying, pastLease, runs, facilitator, record } = await paidSetUp();
    await dying("signed");
    expect((await record())?.state).toBe("reserved");
    pastLease();
    const pending = await post();
    expect([pending.status, (await pending.json() as { code: string }).code]).toEqual([503, "OUTCOME_UNKNOWN"]);
    expect([(await record())?.state, facilitator.settlements]).toEqual(["work_unknown", 0]);
    const { txHash } = ledger.writes.get("w1")!;
    await ledger.commit("w1", { txHash: txHash!, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, 0);
    pastLease();
    const answered = await post();
    expect([answered.status, await answered.json()]).toEqual([200, { success: true, uid: `0x${"ab".repeat(32)}`, txHash, blockNumber: 9, observedAt: 1_800_000_000, method: "dns-txt" }]);
    expect(decodePaymentResponseHeader(answered.headers.get("payment-response")!)).toMatchObject({ success: true, transaction: `0x${"5e".repeat(32)}` });
    expect([runs(), facilitator.settlements]).toEqual([1, 1]);
    expect(await record()).toMatchObject({ state: "settled", workRef: txHash, settlementTx: `0x${"5e".repeat(32)}` });
    const replayed = await post();
    expect([replayed.status, replayed.headers.get("idempotent-replayed"), facilitator.settlements]).toEqual([200, "true", 1]);
  });

  test("an authorization that ran out while the request was dead: the witness is answered, unsettled and recorded so", async () => {
    const { ledger, post, dying, pastLease, runs, facilitator, record } = await paidSetUp();
    await dying("signed");
    const { txHash } = ledger.writes.get("w1")!;
    await ledger.commit("w1", { txHash: txHash!, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, 0);
    facilitator.valid = false;
    pastLease();
    const answered = await post();
    expect(answered.status).toBe(200);
    expect(decodePaymentResponseHeader(answered.headers.get("payment-response")!)).toMatchObject({
      success: false,
      errorReason: "invalid_exact_evm_payload_authorization_valid_before",
    });
    expect([runs(), facilitator.settlements]).toEqual([1, 0]);
    expect(await record()).toMatchObject({ state: "settle_failed", failureReason: "invalid_exact_evm_payload_authorization_valid_before" });
  });

  test("died before signing: its write and its payment are given back, and the retry is paid for and written once", async () => {
    const { ledger, post, dying, pastLease, runs, facilitator, record } = await paidSetUp();
    await dying("reserved");
    pastLease();
    const answered = await post();
    expect(answered.status).toBe(200);
    expect([runs(), facilitator.settlements]).toEqual([2, 1]);
    expect([...ledger.writes.values()].map((w) => [w.id, w.state])).toEqual([["w1", "released"], ["w2", "committed"]]);
    expect((await record())?.state).toBe("settled");
  });
});

/**
 * The route over the real idempotency rule and a stand-in witness whose first run is answered 503 `OUTCOME_UNKNOWN`
 * (signed and sent, its receipt never came: that answer kept under the key), every later one mined. `paid`: the paid
 * alias over the real gate and a SQLite payment ledger, as `paidSetUp` has it.
 */
async function keptSetUp(paid = false) {
  const clock = fakeClock();
  const ledger = fakeWriteLedger();
  const idempotency = createIdempotency({ store: createSqliteIdempotency(new Database(":memory:")), clock });
  let runs = 0;
  const witness = (async (_body, _session, options = {}) => {
    runs++;
    const id = `w${runs}`;
    await ledger.reserve({ id, accountId: ACCOUNT.id, year: 2027, fingerprint: "f", createdAtMs: clock.nowMs() }, 10);
    await options.onReserved?.(`witness-write:${id}`);
    const tx = await signedWitness(runs);
    await ledger.markSigned(id, tx, clock.nowMs());
    await ledger.markSent(id, clock.nowMs());
    if (runs === 1) {
      return { result: { ok: false, code: "OUTCOME_UNKNOWN", message: "The witness transaction was sent but its outcome is not known yet; it will be settled", details: tx.txHash }, deprecated: false, deprecation: undefined };
    }
    await ledger.commit(id, { txHash: tx.txHash, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, clock.nowMs());
    return { result: { ok: true, value: { success: true, uid: `0x${"ab".repeat(32)}`, txHash: tx.txHash, blockNumber: 9, observedAt: 1_800_000_000, method: "dns-txt" } }, deprecated: false, deprecation: undefined };
  }) as ControllerWitness;
  const { payments } = await openSqliteStorage(":memory:");
  const facilitator = { settlements: 0 };
  const gate = paid
    ? testPaymentGate(payments, {
      verify: () => Promise.resolve({ isValid: true }),
      settle: (_payload, requirements) => {
        facilitator.settlements++;
        return Promise.resolve({ success: true, transaction: `0x${"5e".repeat(32)}`, network: requirements.network });
      },
    })
    : undefined;
  const header = gate === undefined ? undefined : await testPaymentHeader(gate, "http://localhost/v1/paid/controller-witness");
  const app = witnessApp({ witness, ledger, clock, idempotency, payments: gate });
  const path = paid ? "/v1/paid/controller-witness" : "/v1/controller-witness";
  const post = async (key = "kept-1") => {
    const headers: Record<string, string> = { "content-type": "application/json", "idempotency-key": key, ...(header === undefined ? {} : { "payment-signature": header }) };
    const res = await app.handle(new Request(`http://localhost${path}`, { method: "POST", headers, body: BODY }));
    return { status: res.status, replayed: res.headers.get("idempotent-replayed"), body: await res.json() as Record<string, unknown>, paid: res.headers.get("payment-response") };
  };
  const record = () => payments.find(testPaymentKey(header!));
  return { ledger, post, runs: () => runs, facilitator, record };
}

const GIVEN_BACK = "The witness transaction failed; nothing of it was written; send it again under a new key";

/** A request that died after signing, its write then given back on `cause` and its lease past: the retry's answer. */
async function retryAfterGivenBack(cause: ReleaseCause) {
  const { ledger, post, dying, pastLease, runs } = setUp();
  await dying("signed");
  const { txHash } = ledger.writes.get("w1")!;
  await ledger.release("w1", 0, cause);
  pastLease();
  return { answer: await post(), txHash, post, pastLease, runs };
}

describe("a witness answered 503 OUTCOME_UNKNOWN under its Idempotency-Key, its write then given back on a proven cause (decisions §23)", () => {
  test("the retry answers 500 SUBMISSION_FAILED, kept for the key; nothing is written again under it, a new key writes the witness", async () => {
    const { ledger, post, runs } = await keptSetUp();
    expect(await post()).toMatchObject({ status: 503, replayed: null, body: { code: "OUTCOME_UNKNOWN" } });
    // The reconciler gave the write back: the node refused its bytes, nothing of it can land.
    const { txHash } = ledger.writes.get("w1")!;
    await ledger.release("w1", 0, "refused");
    const failed = await post();
    expect(failed).toEqual({ status: 500, replayed: "true", body: { error: GIVEN_BACK, code: "SUBMISSION_FAILED", details: txHash }, paid: null });
    // Kept: replayed as it is. Before, the retry ran the witness again under the key (a second write).
    expect(await post()).toEqual(failed);
    expect(runs()).toBe(1);
    expect(await post("kept-2")).toMatchObject({ status: 200, replayed: null, body: { success: true } });
    expect([...ledger.writes.values()].map((w) => [w.id, w.state])).toEqual([["w1", "released"], ["w2", "committed"]]);
  });

  test("paid: the retry answers the failure and forgets the payment; its authorization pays for the witness under a new key", async () => {
    const { ledger, post, runs, facilitator, record } = await keptSetUp(true);
    expect(await post()).toMatchObject({ status: 503, body: { code: "OUTCOME_UNKNOWN" } });
    expect((await record())?.state).toBe("work_unknown");
    await ledger.release("w1", 0, "reverted");
    // Before: 409 PAYMENT_ALREADY_USED, kept for the key's 24 hours, the payment `work_unknown` for good.
    const failed = await post();
    expect(failed).toMatchObject({ status: 500, replayed: "true", body: { error: GIVEN_BACK, code: "SUBMISSION_FAILED" }, paid: null });
    expect(await record()).toBeUndefined();
    expect(await post()).toEqual(failed);
    expect([runs(), facilitator.settlements]).toEqual([1, 0]);
    const again = await post("kept-2");
    expect(again).toMatchObject({ status: 200, replayed: null, body: { success: true } });
    expect(decodePaymentResponseHeader(again.paid!)).toMatchObject({ success: true });
    expect([runs(), facilitator.settlements, (await record())?.state]).toEqual([2, 1, "settled"]);
  });

  test("a request that died after signing, its write given back before the retry: the same failure, never a second write", async () => {
    const { answer: failed, txHash, post, runs } = await retryAfterGivenBack("replaced");
    expect([failed.status, await failed.json()]).toEqual([500, { error: GIVEN_BACK, code: "SUBMISSION_FAILED", details: txHash }]);
    const replayed = await post();
    expect([replayed.status, replayed.headers.get("idempotent-replayed"), runs()]).toEqual([500, "true", 1]);
  });
});

describe("a witness answered 503 OUTCOME_UNKNOWN under its Idempotency-Key, its write then given back for its silence alone (found in review)", () => {
  const UNKNOWN = "The witness transaction was sent but its outcome is not known: it may still be written; ask again under the same key later";
  const UID = `0x${"ab".repeat(32)}`;

  test("the retry is told the outcome is still unknown (the kept 503 again), never that nothing was written; once found mined, the witness", async () => {
    const { ledger, post, runs } = await keptSetUp();
    const first = await post();
    expect(first).toMatchObject({ status: 503, replayed: null, body: { code: "OUTCOME_UNKNOWN" } });
    // The reconciler gave the write back for want of any word of it: that proves nothing, the transaction may still land.
    await ledger.release("w1", 0, "silence");
    // Before: 500 SUBMISSION_FAILED "nothing of it was written; send it again under a new key", kept for 24 hours.
    expect(await post()).toEqual({ ...first, replayed: "true" });
    expect(await post()).toEqual({ ...first, replayed: "true" });
    // It landed: the reconciler's look at the write charges it, and the retry gets the witness.
    const { txHash } = ledger.writes.get("w1")!;
    await ledger.commit("w1", { txHash: txHash!, uid: UID, blockNumber: 9n }, 0);
    expect(await post()).toMatchObject({ status: 200, replayed: "true", body: { success: true, uid: UID, txHash } });
    expect(runs()).toBe(1);
  });

  test("paid: the payment stays `work_unknown` while the write may land (its authorization cannot pay for a second one); settled once found mined", async () => {
    const { ledger, post, runs, facilitator, record } = await keptSetUp(true);
    expect(await post()).toMatchObject({ status: 503, body: { code: "OUTCOME_UNKNOWN" } });
    await ledger.release("w1", 0, "silence");
    // Before: the payment was forgotten, the payer reused its authorization under a new key, and the first transaction
    // landing later made one payment two writes, the payment gone from `ops payments list`.
    expect(await post()).toMatchObject({ status: 503, replayed: "true", body: { code: "OUTCOME_UNKNOWN" }, paid: null });
    expect([(await record())?.state, facilitator.settlements]).toEqual(["work_unknown", 0]);
    expect(await post("kept-2")).toMatchObject({ status: 409, body: { code: "PAYMENT_ALREADY_USED" } });
    const { txHash } = ledger.writes.get("w1")!;
    await ledger.commit("w1", { txHash: txHash!, uid: UID, blockNumber: 9n }, 0);
    const answered = await post();
    expect(answered).toMatchObject({ status: 200, replayed: "true", body: { success: true, txHash } });
    expect(decodePaymentResponseHeader(answered.paid!)).toMatchObject({ success: true });
    expect([runs(), facilitator.settlements, (await record())?.state]).toEqual([1, 1, "settled"]);
  });

  test("a request that died after signing, its write given back for its silence: 503 OUTCOME_UNKNOWN, not kept, never a second write", async () => {
    const { answer: unknown, txHash, post, pastLease, runs } = await retryAfterGivenBack("silence");
    expect([unknown.status, await unknown.json()]).toEqual([503, { error: UNKNOWN, code: "OUTCOME_UNKNOWN", details: txHash }]);
    pastLease();
    const again = await post();
    expect([again.status, again.headers.get("idempotent-replayed"), (await again.json() as { code: string }).code]).toEqual([503, null, "OUTCOME_UNKNOWN"]);
    expect(runs()).toBe(1);
  });
});

/**
 * One authorization under two `Idempotency-Key`s (decisions §23 with §13; found in review): a request under K1 whose
 * witness failed gave its payment back and died before its answer was kept under K1; the payer sent the same payment
 * under K2, which reserved it and is still working; then K1's retry took K1 over. The payment found under the replay
 * key is K2's, not the dead request's. Before, the retry took it for its own: its noted write had written nothing, so it
 * released K2's live reservation and ran afresh, reserving the authorization again: two witnesses for one payment (its
 * second settlement a free write), K2's payment record overwritten by K1's. The route, the gate, the SQLite idempotency
 * store and payment ledger and the domain's resume are the real ones; the ledger's `release` is where K1's request dies.
 */
async function twoKeysSetUp() {
  const clock = fakeClock();
  const ledger = fakeWriteLedger();
  const idempotency = createIdempotency({ store: createSqliteIdempotency(new Database(":memory:")), clock });
  const { payments: stored } = await openSqliteStorage(":memory:");
  let diesAtRelease = false;
  let died: () => void = () => {};
  const payments = {
    ...stored,
    async release(key: string) {
      await stored.release(key);
      if (!diesAtRelease) return;
      diesAtRelease = false;
      died();
      await new Promise(() => {});
    },
  };
  const facilitator = { settlements: 0 };
  const gate = testPaymentGate(payments, {
    verify: () => Promise.resolve({ isValid: true }),
    settle: (_payload, requirements) => {
      facilitator.settlements++;
      return Promise.resolve({ success: true, transaction: `0x${"5e".repeat(32)}`, network: requirements.network });
    },
  });
  const header = await testPaymentHeader(gate, "http://localhost/v1/paid/controller-witness");
  // How each run goes: `refused` (the chain refused the write: given back, nothing written), `held` (waits for `go`,
  // then written), `held-refused` (waits for `go`, then refused).
  const plans: ("refused" | "held" | "held-refused" | "written")[] = [];
  let go: () => void = () => {};
  let holding: () => void = () => {};
  let runs = 0;
  const witness = (async (_body, _session, options = {}) => {
    const run = ++runs;
    const id = `w${run}`;
    const plan = plans.shift() ?? "written";
    await ledger.reserve({ id, accountId: ACCOUNT.id, year: 2027, fingerprint: "f", createdAtMs: clock.nowMs() }, 10);
    await options.onReserved?.(`witness-write:${id}`);
    if (plan === "held" || plan === "held-refused") {
      await new Promise<void>((resolve) => {
        go = resolve;
        holding();
      });
    }
    if (plan === "refused" || plan === "held-refused") {
      await ledger.release(id, clock.nowMs(), "unsent");
      return { result: { ok: false, code: "SUBMISSION_FAILED", message: "The chain refused the witness transaction; nothing was written or charged" }, deprecated: false, deprecation: undefined };
    }
    const tx = await signedWitness(run);
    await ledger.markSigned(id, tx, clock.nowMs());
    await ledger.commit(id, { txHash: tx.txHash, uid: `0x${"ab".repeat(32)}`, blockNumber: 9n }, clock.nowMs());
    return { result: { ok: true, value: { success: true, uid: `0x${"ab".repeat(32)}`, txHash: tx.txHash, blockNumber: 9, observedAt: 1_800_000_000, method: "dns-txt" } }, deprecated: false, deprecation: undefined };
  }) as ControllerWitness;
  const app = witnessApp({ witness, ledger, clock, idempotency, payments: gate });
  const post = (key: string) =>
    app.handle(new Request("http://localhost/v1/paid/controller-witness", {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": key, "payment-signature": header },
      body: BODY,
    }));
  /** K1's request: its witness refused, its payment given back, and then its instance dies. */
  const diedAfterGivingBack = async (key: string) => {
    plans.push("refused");
    diesAtRelease = true;
    const there = new Promise<void>((resolve) => (died = resolve));
    void post(key);
    await there;
  };
  /** K2's request, held in its witness (its payment reserved) until `release()` lets it finish: written, or refused. */
  const working = async (key: string, then: "written" | "refused" = "written") => {
    plans.push(then === "written" ? "held" : "held-refused");
    const there = new Promise<void>((resolve) => (holding = resolve));
    const answer = post(key);
    await there;
    return { answer, release: () => go() };
  };
  const record = () => payments.find(testPaymentKey(header));
  return { clock, ledger, post, diedAfterGivingBack, working, record, facilitator, runs: () => runs };
}

describe("a paid witness whose dead request's retry meets its payment reserved under another Idempotency-Key (decisions §23 with §13)", () => {
  const codeOf = async (answer: Response) => [answer.status, (await answer.json() as { code: string }).code, answer.headers.get("idempotent-replayed")];

  test("while the other key's payment is open the retry is 409 PAYMENT_IN_PROGRESS, not kept, the other key's reservation untouched; one witness, one settlement", async () => {
    const { clock, ledger, post, diedAfterGivingBack, working, record, facilitator, runs } = await twoKeysSetUp();
    await diedAfterGivingBack("k1");
    expect(await record()).toBeUndefined();
    // K1's lease runs out; K2's request, begun now, holds its own.
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const k2 = await working("k2");
    const reserved = await record();
    expect(reserved?.state).toBe("reserved");
    // K1's retry takes K1 over. Before: it released K2's reservation, ran its witness again and settled the payment;
    // then (the first fix) it was 409 PAYMENT_ALREADY_USED kept under K1 for 24 hours while K2 could still give it back.
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_IN_PROGRESS", null]);
    expect(await record()).toEqual(reserved);
    expect([runs(), facilitator.settlements]).toEqual([2, 0]);
    // Not kept, and K1's record given back: its next retry is a new request, which meets the payment in flight at the
    // gate's replay check before its key is taken (409 PAYMENT_ALREADY_USED, kept for no key, as a fresh key's would).
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_ALREADY_USED", null]);
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_ALREADY_USED", null]);
    expect(await record()).toEqual(reserved);
    // K2's request finishes as it would have: its witness written, its payment settled once.
    k2.release();
    const answered = await k2.answer;
    expect(answered.status).toBe(200);
    expect(decodePaymentResponseHeader(answered.headers.get("payment-response")!)).toMatchObject({ success: true });
    expect([runs(), facilitator.settlements]).toEqual([2, 1]);
    expect([...ledger.writes.values()].map((w) => [w.id, w.state])).toEqual([["w1", "released"], ["w2", "committed"]]);
    expect(await record()).toMatchObject({ state: "settled", workRef: ledger.writes.get("w2")!.txHash });
    // Now the payment is used: K1's retry is told so, nothing run.
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_ALREADY_USED", null]);
    expect(runs()).toBe(2);
  });

  test("K2 fails: its payment given back, K1's retry runs and is written and settled (200), then kept", async () => {
    const { clock, ledger, post, diedAfterGivingBack, working, record, facilitator, runs } = await twoKeysSetUp();
    await diedAfterGivingBack("k1");
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const k2 = await working("k2", "refused");
    // Before: this 409 PAYMENT_ALREADY_USED was kept under K1, and replayed after K2 gave the payment back, while the
    // same payment under a fresh key went through.
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_IN_PROGRESS", null]);
    k2.release();
    const failed = await k2.answer;
    expect([failed.status, (await failed.json() as { code: string }).code]).toEqual([500, "SUBMISSION_FAILED"]);
    expect(await record()).toBeUndefined();
    const retried = await post("k1");
    expect(retried.status).toBe(200);
    expect(retried.headers.get("idempotent-replayed")).toBeNull();
    expect(decodePaymentResponseHeader(retried.headers.get("payment-response")!)).toMatchObject({ success: true });
    expect([runs(), facilitator.settlements]).toEqual([3, 1]);
    expect([...ledger.writes.values()].map((w) => [w.id, w.state])).toEqual([["w1", "released"], ["w2", "released"], ["w3", "committed"]]);
    expect(await record()).toMatchObject({ state: "settled", workRef: ledger.writes.get("w3")!.txHash });
    // K1's answer is kept now: its retries are told the same, nothing run or charged again.
    const again = await post("k1");
    expect([again.status, again.headers.get("idempotent-replayed"), runs(), facilitator.settlements]).toEqual([200, "true", 3, 1]);
  });

  test("the other key's payment already settled when K1's retry comes: 409 PAYMENT_ALREADY_USED, kept under K1", async () => {
    const { clock, post, diedAfterGivingBack, working, record, facilitator, runs } = await twoKeysSetUp();
    await diedAfterGivingBack("k1");
    clock.set(clock.nowMs() + IDEMPOTENCY_LEASE_MS + 1);
    const k2 = await working("k2");
    k2.release();
    expect((await k2.answer).status).toBe(200);
    const settled = await record();
    expect(settled?.state).toBe("settled");
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_ALREADY_USED", null]);
    expect(await codeOf(await post("k1"))).toEqual([409, "PAYMENT_ALREADY_USED", "true"]);
    expect([runs(), facilitator.settlements, await record()]).toEqual([2, 1, settled]);
  });
});
