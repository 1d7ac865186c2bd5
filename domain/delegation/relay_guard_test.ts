import { describe, expect, test } from "bun:test";
import { fakeClock, fakeGasBudget } from "../../ports/fakes/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createRelayGuard, GAS_WINDOW_MS } from "./relay_guard.ts";

function setup(options: { enabled?: boolean; ip?: number; attester?: number; gas?: bigint; clientGas?: bigint; attesterGas?: bigint } = {}) {
  const clock = fakeClock(10 * GAS_WINDOW_MS + 1_000);
  const refusals: string[] = [];
  const budget = fakeGasBudget();
  const guard = createRelayGuard({
    enabled: options.enabled ?? true,
    clientRate: createRateLimiter(clock, { capacity: options.ip ?? 3, perMinute: options.ip ?? 3 }),
    attesterRate: createRateLimiter(clock, { capacity: options.attester ?? 2, perMinute: (options.attester ?? 2) / 60 }),
    gasBudget: budget,
    gasPerHour: options.gas ?? 1_000_000n,
    clientGasPerHour: options.clientGas,
    attesterGasPerHour: options.attesterGas,
    typicalGas: 300_000n,
    clock,
    onRefusal: (reason) => refusals.push(reason),
  });
  return { clock, guard, budget, refusals };
}

describe("createRelayGuard()", () => {
  test("per client address: past the rate, 429 with Retry-After; another address is not affected", async () => {
    const { guard, refusals } = setup({ ip: 3, attester: 100 });
    for (let i = 0; i < 3; i++) expect(await guard.admit({ clientKey: "1.2.3.4", attester: `0x${i}` })).toBeUndefined();
    expect(await guard.admit({ clientKey: "1.2.3.4", attester: "0x9" })).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: 20 });
    expect(await guard.admit({ clientKey: "5.6.7.8", attester: "0x9" })).toBeUndefined();
    expect(refusals).toEqual(["client"]);
  });

  test("per attester, per hour, whatever the address", async () => {
    const { guard, clock } = setup({ ip: 100, attester: 2 });
    expect(await guard.admit({ clientKey: "a", attester: "0xAbC" })).toBeUndefined();
    expect(await guard.admit({ clientKey: "b", attester: "0xabc" })).toBeUndefined();
    const refused = await guard.admit({ clientKey: "c", attester: "0xabc" });
    expect(refused).toMatchObject({ code: "RATE_LIMITED" });
    // A token every half hour (two per hour), to the second.
    expect(Math.abs((refused?.retryAfterSeconds ?? 0) - 1_800)).toBeLessThanOrEqual(1);
    clock.set(clock.nowMs() + 30 * 60_000 + 1_000);
    expect(await guard.admit({ clientKey: "c", attester: "0xabc" })).toBeUndefined();
  });

  test("the gas budget: no room for a typical attestation is 429 until the next hour; a charge that does not fit adds nothing", async () => {
    const { guard, budget, clock } = setup({ ip: 100, attester: 100, gas: 1_000_000n });
    expect(await guard.charge(600_000n)).toBeUndefined();
    expect(await guard.admit({ clientKey: "a", attester: "0x1" })).toBeUndefined();
    expect(await guard.charge(500_000n)).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: 3_599 });
    expect([...budget.windows.values()]).toEqual([600_000n]);
    expect(await guard.charge(200_000n)).toBeUndefined();
    expect(await guard.admit({ clientKey: "a", attester: "0x1" })).toMatchObject({ code: "RATE_LIMITED" });
    clock.set(clock.nowMs() + GAS_WINDOW_MS);
    expect(await guard.admit({ clientKey: "a", attester: "0x1" })).toBeUndefined();
  });

  test("issue 43: a client address's share of the hour: past it, 429 for that address alone, at admission (before any RPC) and at the charge", async () => {
    const { guard, budget, refusals, clock } = setup({ ip: 100, attester: 100, gas: 10_000_000n, clientGas: 1_000_000n });
    const a = { clientKey: "1.2.3.4", attester: "0x1" };
    expect(await guard.admit(a)).toBeUndefined();
    expect(await guard.charge(600_000n, a)).toBeUndefined();
    // 400,000 left of the share: a charge of 500,000 does not fit and adds nothing, to the share or to the hour.
    const over = await guard.charge(500_000n, { ...a, attester: "0x2" });
    expect(over).toMatchObject({ code: "RATE_LIMITED", retryAfterSeconds: 3_599, message: expect.stringMatching(/address's share/) });
    expect([...budget.windows.values()]).toEqual([600_000n]);
    expect(await guard.charge(300_000n, { ...a, attester: "0x3" })).toBeUndefined();
    // 100,000 left: no room for a typical attestation, refused at admission; another address is served.
    expect(await guard.admit({ ...a, attester: "0x4" })).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/address's share/) });
    expect(await guard.admit({ clientKey: "5.6.7.8", attester: "0x4" })).toBeUndefined();
    expect(await guard.charge(900_000n, { clientKey: "5.6.7.8", attester: "0x4" })).toBeUndefined();
    expect(refusals).toEqual(["client_gas", "client_gas"]);
    clock.set(clock.nowMs() + GAS_WINDOW_MS);
    expect(await guard.admit(a)).toBeUndefined();
  });

  test("a refusal for the hour's budget or the client address's share at admission takes no attester token", async () => {
    // The attester's token was taken before the budget and the shares were read: each refusal spent the attester's hour.
    const { guard, refusals } = setup({ ip: 100, attester: 1, gas: 10_000_000n, clientGas: 1_000_000n });
    expect(await guard.charge(800_000n, { clientKey: "1.2.3.4", attester: "0x9" })).toBeUndefined();
    for (let i = 0; i < 3; i++) {
      expect(await guard.admit({ clientKey: "1.2.3.4", attester: "0xabc" })).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/address's share/) });
    }
    // The attester's one token of the hour is still there, for another address.
    expect(await guard.admit({ clientKey: "5.6.7.8", attester: "0xabc" })).toBeUndefined();
    expect(await guard.admit({ clientKey: "5.6.7.8", attester: "0xabc" })).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/attester/) });
    expect(refusals).toEqual(["client_gas", "client_gas", "client_gas", "attester"]);
  });

  test("issue 43: an attester's share of the hour, whatever the addresses its requests come from", async () => {
    const { guard, refusals } = setup({ ip: 100, attester: 100, gas: 10_000_000n, attesterGas: 700_000n });
    expect(await guard.charge(400_000n, { clientKey: "a", attester: "0xAbC" })).toBeUndefined();
    expect(await guard.admit({ clientKey: "b", attester: "0xabc" })).toBeUndefined();
    expect(await guard.charge(400_000n, { clientKey: "b", attester: "0xabc" })).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/attester's share/) });
    expect(await guard.charge(300_000n, { clientKey: "c", attester: "0xabc" })).toBeUndefined();
    expect(await guard.admit({ clientKey: "c", attester: "0xabc" })).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/attester's share/) });
    expect(await guard.admit({ clientKey: "c", attester: "0xdef" })).toBeUndefined();
    expect(refusals).toEqual(["attester_gas", "attester_gas"]);
  });

  test("the private relay: a free account's share of the hour; a paying account has none", async () => {
    const clock = fakeClock(10 * GAS_WINDOW_MS + 1_000);
    const budget = fakeGasBudget();
    const guard = createRelayGuard({
      enabled: true,
      relay: "private",
      gasBudget: budget,
      gasPerHour: 10_000_000n,
      clientGasPerHour: (key) => (key.startsWith("free:") ? 1_000_000n : undefined),
      typicalGas: 300_000n,
      clock,
    });
    const free = { clientKey: "free:acct-1", attester: "0x1" };
    expect(await guard.charge(800_000n, free)).toBeUndefined();
    expect(await guard.admit(free)).toMatchObject({ code: "RATE_LIMITED", message: expect.stringMatching(/account's share of the private relay/) });
    expect(await guard.charge(300_000n, free)).toMatchObject({ code: "RATE_LIMITED" });
    // Another free account has its own share; a paying one none, only the hour's budget.
    expect(await guard.admit({ clientKey: "free:acct-2", attester: "0x2" })).toBeUndefined();
    const paid = { clientKey: "paid:acct-3", attester: "0x3" };
    expect(await guard.charge(5_000_000n, paid)).toBeUndefined();
    expect(await guard.admit(paid)).toBeUndefined();
    expect([...budget.windows.values()]).toEqual([5_800_000n]);
  });

  test("PUBLIC_RELAY=off closes the route", () => {
    expect(setup({ enabled: false }).guard.open()).toMatchObject({ code: "PUBLIC_RELAY_DISABLED" });
    expect(setup().guard.open()).toBeUndefined();
  });
});
