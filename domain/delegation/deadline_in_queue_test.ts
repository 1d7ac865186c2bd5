/**
 * A signed deadline that comes within DEADLINE_MARGIN_SECONDS while the request waits for the delegate wallet's lock
 * (behind a slow node's sends): it is asked again once the lock is held, before anything is signed (decisions §6). Found
 * by attack: requests that passed the check on arrival were signed and sent after their deadline, reverted on chain at
 * the delegate's cost, and the private relay kept the account's sponsored write for them.
 *
 * The fake delegate's `lock` stands for the wait: the test's clock moves there, before the sender asks `stillValid`.
 */
import { describe, expect, test } from "bun:test";
import { privateKeyToAccount } from "viem/accounts";
import { fakeClock, fakeDelegate, fakeEasReader, fakeGasBudget, fakeReplayStore } from "../../ports/fakes/mod.ts";
import { buildAttestTypedData, ZERO_UID } from "./attest_typed_data.ts";
import { type CallerTicket, createDelegatedAttest } from "./delegated_attest.ts";
import { createRelayGuard } from "./relay_guard.ts";
import { encodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";

const SCHEMA = "0x7ab3911527e5e47eaab9f5a2c571060026532dde8cb4398185553053963b2a47";
const MARGIN = 30;
const alice = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
const bob = privateKeyToAccount("0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a");
const DATA = (encodeSchemaData(findSchemaByName("user-review")!.schema, {
  subject: "did:web:shop.example",
  version: "1",
  ratingValue: 5,
  reviewBody: "0x1234",
  screenshotUrls: [],
  proofs: [],
}) as { value: `0x${string}` }).value;

function setup() {
  const clock = fakeClock();
  const eas = fakeEasReader();
  const delegate = fakeDelegate();
  const replay = fakeReplayStore();
  const budget = fakeGasBudget();
  const guard = createRelayGuard({ enabled: true, gasBudget: budget, gasPerHour: 1_000_000_000n, typicalGas: 300_000n, clock, relay: "private" });
  const attest = createDelegatedAttest({
    clock,
    eas,
    delegate,
    replay,
    guard,
    mainnet: false,
    subsidized: new Map([[SCHEMA, { name: "user-review", revocable: false }]]),
    deadlineMarginSeconds: MARGIN,
  });
  /** The wallet's lock is held until the clock moved `seconds` on (other sends ahead of this one). */
  const waitInQueue = (seconds: number) => {
    delegate.lock = () => Promise.resolve(clock.set(clock.nowMs() + seconds * 1000));
  };
  const nowSeconds = () => Math.floor(clock.nowMs() / 1000);
  return { clock, eas, delegate, replay, budget, attest, waitInQueue, nowSeconds };
}

type Env = ReturnType<typeof setup>;

async function signed(env: Env, signer: typeof alice, deadline: bigint) {
  const message = {
    attester: signer.address,
    schema: SCHEMA,
    recipient: "0x173a347faed486bb69081ef673c6e52c03f57f3e" as `0x${string}`,
    expirationTime: 0n,
    revocable: false,
    refUID: ZERO_UID,
    data: DATA,
    value: 0n,
    nonce: 0n,
    deadline,
  } as const;
  const signature = await signer.signTypedData(buildAttestTypedData(env.eas, message));
  const strings = Object.fromEntries(Object.entries(message).map(([k, v]) => [k, typeof v === "bigint" ? v.toString() : v]));
  return { attester: signer.address, signature, prepared: { delegatedRequest: { ...strings, easContractAddress: env.eas.easAddress, chainId: env.eas.chainId } } };
}

/** The private relay's sponsored writes: what became of each reservation. */
function tickets() {
  const log: string[] = [];
  const ticket = (name: string): CallerTicket => ({
    release: () => Promise.resolve(void log.push(`release ${name}`)),
    onSigned: () => Promise.resolve(void log.push(`signed ${name}`)),
    onSent: () => Promise.resolve(),
    onMined: () => Promise.resolve(void log.push(`mined ${name}`)),
    onBurned: () => Promise.resolve(void log.push(`burned ${name}`)),
  });
  return { log, ticket };
}

const gasCharged = (env: Env) => [...env.budget.windows.values()].reduce((sum, gas) => sum + gas, 0n);

describe("a deadline asked again under the delegate wallet's lock", () => {
  test("one request whose deadline comes within the margin while it waits: 400 SIGNATURE_EXPIRED, nothing signed or sent, everything given back", async () => {
    const env = setup();
    const deadline = BigInt(env.nowSeconds() + MARGIN + 10);
    const body = await signed(env, alice, deadline);
    const { log, ticket } = tickets();
    // Past the margin on arrival (40 s ahead); 11 s in the queue leave 29, within it.
    env.waitInQueue(11);
    const refused = await env.attest(body, { admit: () => Promise.resolve(ticket("alice")) });
    expect(refused).toMatchObject({ ok: false, code: "SIGNATURE_EXPIRED" });
    expect(!refused.ok && refused.message).toContain("nothing was sent");
    expect(env.delegate.expired).toBe(1);
    expect(env.delegate.sent).toHaveLength(0);
    // The sponsored write released, never signed nor burned; the gas charged given back; the signature not used up.
    expect(log.filter((e) => !e.startsWith("release"))).toEqual([]);
    expect(log).toContain("release alice");
    expect(gasCharged(env)).toBe(0n);
    expect(env.replay.rows.size).toBe(0);

    // The same signature, with no wait in front of it, is sent (its record was given back, not burned).
    env.clock.set(env.clock.nowMs() - 11_000);
    env.waitInQueue(0);
    expect(await env.attest(body)).toMatchObject({ ok: true });
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("a wait that leaves the deadline beyond the margin sends as before", async () => {
    const env = setup();
    env.waitInQueue(9);
    expect(await env.attest(await signed(env, alice, BigInt(env.nowSeconds() + MARGIN + 10)))).toMatchObject({ ok: true });
    expect(env.delegate.expired).toBe(0);
    expect(env.delegate.sent).toHaveLength(1);
  });

  test("a batch with an item that expires in the queue sends nothing: that item SIGNATURE_EXPIRED, the other given back to be sent again", async () => {
    const env = setup();
    const soon = await signed(env, alice, BigInt(env.nowSeconds() + MARGIN + 10));
    const later = await signed(env, bob, BigInt(env.nowSeconds() + 600));
    const { log, ticket } = tickets();
    env.waitInQueue(11);
    const outcome = await env.attest.batch!([soon, later], { admit: (_request, index) => Promise.resolve(ticket(String(index))) });
    expect(outcome.txHash).toBeNull();
    expect(outcome.sent).toBe("not-broadcast");
    expect(outcome.results.map((r) => (r.ok ? "ok" : r.code))).toEqual(["SIGNATURE_EXPIRED", "INVALID_INPUT"]);
    expect(!outcome.results[1]!.ok && outcome.results[1]!.message).toContain("may be sent again");
    expect(env.delegate.expired).toBe(1);
    expect(env.delegate.batches).toHaveLength(0);
    expect(log.filter((e) => !e.startsWith("release"))).toEqual([]);
    expect(new Set(log)).toEqual(new Set(["release 0", "release 1"]));
    expect(gasCharged(env)).toBe(0n);
    expect(env.replay.rows.size).toBe(0);

    // The item that did not expire goes through when sent again.
    env.waitInQueue(0);
    expect((await env.attest.batch!([later])).results.map((r) => r.ok)).toEqual([true]);
  });
});
