/**
 * The guard on the public relay (decisions §12): per-client-address and per-attester token buckets and an
 * hourly gas budget, all checked before any RPC, so that a script with fresh keys cannot empty the delegate
 * wallet. The budget is charged with the simulated gas once the simulation passed, before anything is sent.
 * The private relay has a guard of its own with the gas budget alone (`PRIVATE_RELAY_GAS_BUDGET_PER_HOUR`, issue
 * 23): its sponsored writes bound what an account writes, not the gas a write may burn without landing.
 */
import type { Clock } from "../../ports/clock.ts";
import type { GasBudget } from "../../ports/gas_budget.ts";
import type { RateLimit } from "../rate_limit.ts";
import { fail, type Fail } from "../result.ts";

/** A refusal of the guard: 429 `RATE_LIMITED` with `Retry-After`, or 403 `PUBLIC_RELAY_DISABLED`. */
export type GuardFailure = Fail<"RATE_LIMITED" | "PUBLIC_RELAY_DISABLED"> & { readonly retryAfterSeconds?: number };

/** The budget's window: one UTC hour. */
export const GAS_WINDOW_MS = 3_600_000;

/** What the guard needs. */
export type RelayGuardDeps = {
  /** `PUBLIC_RELAY=off` closes the public route. */
  readonly enabled: boolean;
  /**
   * Absent: no per-client or per-attester rate (the private relay's guard is its gas budget alone, issue 23). The
   * service counts both in the storage, once for every instance (decisions §21).
   */
  readonly clientRate?: RateLimit | undefined;
  readonly attesterRate?: RateLimit | undefined;
  readonly gasBudget: GasBudget;
  /** Which relay the refusals name: "public" (default) or "private". */
  readonly relay?: "public" | "private" | undefined;
  /** Gas units per hour (`PUBLIC_RELAY_GAS_BUDGET_PER_HOUR`, `PRIVATE_RELAY_GAS_BUDGET_PER_HOUR`). */
  readonly gasPerHour: bigint;
  /** The gas a request must find room for before any RPC (a typical attestation). */
  readonly typicalGas: bigint;
  readonly clock: Clock;
  /** Counts refusals by reason (client, attester, budget, disabled). */
  readonly onRefusal?: ((reason: "client" | "attester" | "budget" | "disabled") => void) | undefined;
};

/** The guard's two checks: admission before any RPC, and the charge of the simulated gas. */
export type RelayGuard = {
  /** The route is open at all; checked right after the body parses. */
  readonly open: () => GuardFailure | undefined;
  /** Takes the client's and the attester's tokens and checks the budget has room; undefined: admitted. */
  readonly admit: (caller: { readonly clientKey: string; readonly attester: string }) => Promise<GuardFailure | undefined>;
  /** Charges `gas` to this hour's budget atomically; a failure when it does not fit (nothing charged). */
  readonly charge: (gas: bigint) => Promise<GuardFailure | undefined>;
};

/** Builds the guard. */
export function createRelayGuard(deps: RelayGuardDeps): RelayGuard {
  const window = () => {
    const now = deps.clock.nowMs();
    const start = now - (now % GAS_WINDOW_MS);
    return { start, retryAfterSeconds: Math.max(1, Math.ceil((start + GAS_WINDOW_MS - now) / 1000)) };
  };
  const limited = (reason: "client" | "attester" | "budget", retryAfterSeconds: number, message: string): GuardFailure => {
    deps.onRefusal?.(reason);
    return { ...fail("RATE_LIMITED" as const, message), retryAfterSeconds };
  };
  const overBudget = (retryAfterSeconds: number) =>
    limited("budget", retryAfterSeconds, `The ${deps.relay ?? "public"} relay's gas budget for this hour is spent; try again later`);
  return {
    open() {
      if (deps.enabled) return undefined;
      deps.onRefusal?.("disabled");
      return fail("PUBLIC_RELAY_DISABLED", "The public relay is closed on this service; use the private relay");
    },
    async admit(caller) {
      const client = await deps.clientRate?.take(caller.clientKey);
      if (client !== undefined && !client.allowed) {
        return limited("client", client.retryAfterSeconds, "Too many delegated attestations from this address; try again later");
      }
      const attester = await deps.attesterRate?.take(caller.attester.toLowerCase());
      if (attester !== undefined && !attester.allowed) {
        return limited("attester", attester.retryAfterSeconds, "Too many delegated attestations for this attester; try again later");
      }
      const { start, retryAfterSeconds } = window();
      if ((await deps.gasBudget.used(start)) + deps.typicalGas > deps.gasPerHour) return overBudget(retryAfterSeconds);
      return undefined;
    },
    async charge(gas) {
      const { start, retryAfterSeconds } = window();
      return (await deps.gasBudget.charge(start, gas, deps.gasPerHour)) ? undefined : overBudget(retryAfterSeconds);
    },
  };
}
