/** Test support for this folder's tests: the public relay guard the use cases are tested behind. */
import type { Clock } from "../../ports/clock.ts";
import { fakeGasBudget } from "../../ports/fakes/mod.ts";
import { createRateLimiter } from "../rate_limit.ts";
import { createRelayGuard, type RefusalReason, type RelayGuard } from "./relay_guard.ts";

/** What a test changes of {@link testRelayGuard}'s guard; each absent field keeps its default. */
export type TestRelayGuardOptions = {
  enabled?: boolean | undefined;
  /** One client address's requests a minute (default 100). */
  clientPerMinute?: number | undefined;
  /** One attester's writes an hour (default 100). */
  attesterPerHour?: number | undefined;
  /** Default 1,000,000,000. */
  gasPerHour?: bigint | undefined;
  clientGasPerHour?: bigint | undefined;
  attesterGasPerHour?: bigint | undefined;
  /** Default 300,000. */
  typicalGas?: bigint | undefined;
  onRefusal?: ((reason: RefusalReason) => void) | undefined;
};

/** A public relay guard on `clock` with both rates and a fake gas budget, returned with it for the test to read. */
export function testRelayGuard(clock: Clock, options: TestRelayGuardOptions = {}) {
  const budget = fakeGasBudget();
  const perMinute = options.clientPerMinute ?? 100;
  const perHour = options.attesterPerHour ?? 100;
  const guard = createRelayGuard({
    enabled: options.enabled ?? true,
    clientRate: createRateLimiter(clock, { capacity: perMinute, perMinute }),
    attesterRate: createRateLimiter(clock, { capacity: perHour, perMinute: perHour / 60 }),
    gasBudget: budget,
    gasPerHour: options.gasPerHour ?? 1_000_000_000n,
    clientGasPerHour: options.clientGasPerHour,
    attesterGasPerHour: options.attesterGasPerHour,
    typicalGas: options.typicalGas ?? 300_000n,
    clock,
    onRefusal: options.onRefusal,
  });
  return { guard, budget };
}

/** `guard` counting the gas refunds and the attester tokens it is given back, and what they are. */
export function countingGuard(guard: RelayGuard) {
  const given = { refunds: [] as bigint[], tokens: 0 };
  const counted: RelayGuard = {
    ...guard,
    refund: async (gas, caller) => {
      given.refunds.push(gas);
      await guard.refund!(gas, caller);
    },
    giveBackAttester: async (attester) => {
      given.tokens++;
      await guard.giveBackAttester!(attester);
    },
  };
  return { guard: counted, given };
}

/** The hour's gas spent on `clock`'s hour, and the shares of client 192.0.2.1 and `attester`. */
export function spentOf(budget: ReturnType<typeof fakeGasBudget>, clock: Clock, attester: string) {
  const window = clock.nowMs() - (clock.nowMs() % 3_600_000);
  return async () => ({
    hour: await budget.used(window),
    shares: (await budget.usage(window, ["client:192.0.2.1", `attester:${attester.toLowerCase()}`])).byKey,
  });
}
