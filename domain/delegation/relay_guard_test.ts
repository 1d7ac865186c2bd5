import { describe, expect, test } from "bun:test";
import { fakeClock } from "../../ports/fakes.ts";
import type { GasBudget } from "../../ports/gas_budget.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createRelayGuard, GAS_WINDOW_MS } from "./relay_guard.ts";

/** A gas budget in memory, with the stores' rule: a charge that would pass the limit adds nothing. */
function memoryBudget() {
  const windows = new Map<number, bigint>();
  return {
    windows,
    used: (start: number) => Promise.resolve(windows.get(start) ?? 0n),
    charge(start: number, gas: bigint, limit: bigint) {
      const next = (windows.get(start) ?? 0n) + gas;
      if (next > limit) return Promise.resolve(false);
      windows.set(start, next);
      return Promise.resolve(true);
    },
  } satisfies GasBudget & { windows: Map<number, bigint> };
}

function setup(options: { enabled?: boolean; ip?: number; attester?: number; gas?: bigint } = {}) {
  const clock = fakeClock(10 * GAS_WINDOW_MS + 1_000);
  const refusals: string[] = [];
  const budget = memoryBudget();
  const guard = createRelayGuard({
    enabled: options.enabled ?? true,
    clientRate: createRateLimiter(clock, { capacity: options.ip ?? 3, perMinute: options.ip ?? 3 }),
    attesterRate: createRateLimiter(clock, { capacity: options.attester ?? 2, perMinute: (options.attester ?? 2) / 60 }),
    gasBudget: budget,
    gasPerHour: options.gas ?? 1_000_000n,
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

  test("PUBLIC_RELAY=off closes the route", () => {
    expect(setup({ enabled: false }).guard.open()).toMatchObject({ code: "PUBLIC_RELAY_DISABLED" });
    expect(setup().guard.open()).toBeUndefined();
  });
});
