/**
 * The guard on the public relay (decisions §12): per-client-address and per-attester token buckets and an
 * hourly gas budget, all checked before any RPC, so that a script with fresh keys cannot empty the delegate
 * wallet. The budget is charged with the simulated gas once the simulation passed, before anything is sent. Issue 43:
 * each client address and each attester may be charged at most its share of the hour's budget
 * (`PUBLIC_RELAY_GAS_PER_CLIENT_PER_HOUR`, `PUBLIC_RELAY_GAS_PER_ATTESTER_PER_HOUR`), checked with the budget before
 * any RPC and charged with it atomically, so one client cannot spend the hour for everyone.
 * The private relay has a guard of its own with the gas budget (`PRIVATE_RELAY_GAS_BUDGET_PER_HOUR`, issue 23): its
 * sponsored writes bound what an account writes, not the gas a write may burn without landing; and each free account
 * may be charged at most its share (`PRIVATE_RELAY_GAS_PER_FREE_ACCOUNT_PER_HOUR`), as free accounts cost nothing to
 * make.
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
  /**
   * The most gas one client's requests may be charged per hour (issue 43: a client address on the public relay), or the
   * share of each client key (the private relay: free accounts only, undefined for a key with no share); absent: none.
   */
  readonly clientGasPerHour?: bigint | ((clientKey: string) => bigint | undefined) | undefined;
  /** The most gas one attester's requests may be charged per hour (issue 43); absent: no share. */
  readonly attesterGasPerHour?: bigint | undefined;
  /** The gas a request must find room for before any RPC (a typical attestation). */
  readonly typicalGas: bigint;
  readonly clock: Clock;
  /** Counts refusals by reason (client, attester, budget, their gas shares, disabled). */
  readonly onRefusal?: ((reason: RefusalReason) => void) | undefined;
};

/** Why the guard refused: a rate, the hour's budget, a client's or an attester's share of it, or the relay closed. */
export type RefusalReason = "client" | "attester" | "budget" | "client_gas" | "attester_gas" | "disabled";

/** Whose request is charged: the client's address key and the attester (as `admit` was given them). */
export type GuardCaller = { readonly clientKey: string; readonly attester: string };

/** The guard's two checks: admission before any RPC, and the charge of the simulated gas. */
export type RelayGuard = {
  /** The route is open at all; checked right after the body parses. */
  readonly open: () => GuardFailure | undefined;
  /**
   * Takes the client's token, checks the budget and the shares have room, then takes the attester's token unless
   * `attesterRate` is false (its signature is not proven yet: see {@link admitAttester}); a refusal of the budget or a
   * share takes no attester token. Undefined: admitted.
   */
  readonly admit: (caller: GuardCaller, options?: { readonly attesterRate?: boolean }) => Promise<GuardFailure | undefined>;
  /** Takes the attester's token once its signature is proven (verified against the chain's nonce); undefined: admitted. */
  readonly admitAttester: (attester: string) => Promise<GuardFailure | undefined>;
  /**
   * Charges `gas` to this hour's budget, and to the caller's client and attester shares, atomically; a failure when
   * it does not fit (nothing charged).
   */
  readonly charge: (gas: bigint, caller?: GuardCaller | undefined) => Promise<GuardFailure | undefined>;
  /**
   * Gives back `gas` charged this hour (with the caller's shares) when nothing was sent for it (decisions §23): the
   * signer gave no signature (§27), the node refused the transaction, a read or the wallet's nonce failed before
   * signing, the deadline came in the wallet's queue. An hour that turned in between gets it instead: the budget is a bound.
   */
  readonly refund?: ((gas: bigint, caller?: GuardCaller | undefined) => Promise<void>) | undefined;
  /**
   * Gives back the attester's token (`admit`, {@link admitAttester}) of a request the service then did not send: its
   * signer gave no signature (decisions §27: "no quota charged"), its deadline came within the margin while it
   * waited for the delegate wallet, the wallet's nonce or fees could not be read (or its shared nonce taken) before
   * signing, the node refused the signed transaction (its reasons are the service's), the wallet could not
   * pay (its balance, or the simulation's insufficient funds), {@link charge} refused its gas, the caller's submission
   * record could not be opened, or it was refused as the duplicate of the same signature sent at once and was not
   * simulated ahead. Not for another signature over a nonce in flight, nor a copy simulated ahead: each is a request
   * that cost the node its reads (given back, an attester's signatures over one nonce, sent from many addresses while
   * the first was in flight, were never bounded by its hour). Before, a client that obeyed `Retry-After: 5` through a signer outage spent its
   * attester's hour on answers that said nothing was charged, and was refused for up to an hour once the signer was
   * back. The client address's per-minute rate keeps its token: it bounds requests, whatever became of them.
   */
  readonly giveBackAttester?: ((attester: string) => Promise<void>) | undefined;
};

/** Builds the guard. */
export function createRelayGuard(deps: RelayGuardDeps): RelayGuard {
  const window = () => {
    const now = deps.clock.nowMs();
    const start = now - (now % GAS_WINDOW_MS);
    return { start, retryAfterSeconds: Math.max(1, Math.ceil((start + GAS_WINDOW_MS - now) / 1000)) };
  };
  const limited = (reason: Exclude<RefusalReason, "disabled">, retryAfterSeconds: number, message: string): GuardFailure => {
    deps.onRefusal?.(reason);
    return { ...fail("RATE_LIMITED" as const, message), retryAfterSeconds };
  };
  const relay = deps.relay ?? "public";
  const overBudget = (retryAfterSeconds: number) =>
    limited("budget", retryAfterSeconds, `The ${relay} relay's gas budget for this hour is spent; try again later`);
  const clientShareSpent = (retryAfterSeconds: number) =>
    limited("client_gas", retryAfterSeconds, `This ${relay === "public" ? "address" : "account"}'s share of the ${relay} relay's gas budget for this hour is spent; try again later`);
  const attesterShareSpent = (retryAfterSeconds: number) =>
    limited("attester_gas", retryAfterSeconds, `This attester's share of the ${relay} relay's gas budget for this hour is spent; try again later`);
  const clientShareKey = (caller: GuardCaller) => `client:${caller.clientKey}`;
  const attesterShareKey = (caller: GuardCaller) => `attester:${caller.attester.toLowerCase()}`;
  /** The refusal when `gas` more does not fit the hour, the client's share or the attester's (one read of all three). */
  const whichIsFull = async (start: number, caller: GuardCaller | undefined, gas: bigint, retryAfterSeconds: number) => {
    const shares = sharesOf(caller);
    const usage = await deps.gasBudget.usage(start, shares.map((share) => share.key));
    if (usage.total + gas > deps.gasPerHour) return overBudget(retryAfterSeconds);
    for (const [i, share] of shares.entries()) {
      if (usage.byKey[i]! + gas > share.limit) return share.key.startsWith("client:") ? clientShareSpent(retryAfterSeconds) : attesterShareSpent(retryAfterSeconds);
    }
    return undefined;
  };
  const clientLimit = (caller: GuardCaller): bigint | undefined =>
    typeof deps.clientGasPerHour === "function" ? deps.clientGasPerHour(caller.clientKey) : deps.clientGasPerHour;
  const sharesOf = (caller: GuardCaller | undefined) => [
    ...(caller !== undefined && clientLimit(caller) !== undefined ? [{ key: clientShareKey(caller), limit: clientLimit(caller)! }] : []),
    ...(caller !== undefined && deps.attesterGasPerHour !== undefined ? [{ key: attesterShareKey(caller), limit: deps.attesterGasPerHour }] : []),
  ];
  async function takeAttester(attester: string): Promise<GuardFailure | undefined> {
    const taken = await deps.attesterRate?.take(attester.toLowerCase());
    if (taken === undefined || taken.allowed) return undefined;
    return limited("attester", taken.retryAfterSeconds, "Too many delegated attestations for this attester; try again later");
  }
  return {
    open() {
      if (deps.enabled) return undefined;
      deps.onRefusal?.("disabled");
      return fail("PUBLIC_RELAY_DISABLED", "The public relay is closed on this service; use the private relay");
    },
    async admit(caller, options = {}) {
      const client = await deps.clientRate?.take(caller.clientKey);
      if (client !== undefined && !client.allowed) {
        return limited("client", client.retryAfterSeconds, "Too many delegated attestations from this address; try again later");
      }
      // The budget and the shares (a read) before the attester's token (a take): a request refused for the hour's
      // budget or a client address's share takes nothing of its attester's allowance. Taken first, a client whose
      // share was spent spent the attester's hour with each refusal.
      const { start, retryAfterSeconds } = window();
      const full = await whichIsFull(start, caller, deps.typicalGas, retryAfterSeconds);
      if (full !== undefined) return full;
      if (options.attesterRate !== false) return await takeAttester(caller.attester);
      return undefined;
    },
    admitAttester: takeAttester,
    async charge(gas, caller) {
      const { start, retryAfterSeconds } = window();
      if (await deps.gasBudget.charge(start, gas, deps.gasPerHour, sharesOf(caller))) return undefined;
      // Refused: say which part had no room (a read only on this path).
      return (await whichIsFull(start, caller, gas, retryAfterSeconds)) ?? overBudget(retryAfterSeconds);
    },
    async giveBackAttester(attester) {
      await deps.attesterRate?.take(attester.toLowerCase(), -1);
    },
    async refund(gas, caller) {
      // A negative charge never passes a limit: the stores add it as they add a charge.
      if (gas > 0n) await deps.gasBudget.charge(window().start, -gas, deps.gasPerHour, sharesOf(caller));
    },
  };
}
