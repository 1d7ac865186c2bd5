import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Devnet, type DevnetOptions, startDevnet } from "../adapters/devnet/mod.ts";
import { silentLogger } from "../adapters/observability/mod.ts";
import { readConfig } from "../app/config.ts";
import { type Service, startService } from "../app/service.ts";
import { containerAnvil, DEFAULT_ANVIL_IMAGE, probeContainerRuntime } from "./support/anvil_container.ts";

export { freePort } from "./support/free_port.ts";

/**
 * Counts JSON-RPC traffic: HTTP round trips and methods, in order. The index follower's own reads of the chain
 * (`x-ats-reader: index-follower`, decisions §21) are counted apart: `roundTrips`, `methods` and `trips` are the
 * requests' calls, `followerTrips` the follower's.
 */
export type RpcCounter = {
  readonly fetch: typeof fetch;
  readonly roundTrips: () => number;
  readonly methods: () => string[];
  /** The JSON-RPC methods of each HTTP round trip, in order. */
  readonly trips: () => string[][];
  /** The JSON-RPC methods of each of the index follower's round trips, in order. */
  readonly followerTrips: () => string[][];
  readonly reset: () => void;
};

/** Wraps `fetch` so a test can count the service's RPC round trips and JSON-RPC methods. */
export function countingFetch(): RpcCounter {
  let trips: { methods: string[]; follower: boolean }[] = [];
  const wrapped = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const methods: string[] = [];
    try {
      const body = JSON.parse(String(init?.body ?? "null"));
      for (const call of Array.isArray(body) ? body : [body]) if (call?.method) methods.push(call.method);
    } catch {
      // not JSON-RPC
    }
    trips.push({ methods, follower: new Headers(init?.headers).get("x-ats-reader") === "index-follower" });
    return await fetch(input, init);
  }) as typeof fetch;
  const own = () => trips.filter((t) => !t.follower).map((t) => [...t.methods]);
  return {
    fetch: wrapped,
    roundTrips: () => own().length,
    methods: () => own().flat(),
    trips: own,
    followerTrips: () => trips.filter((t) => t.follower).map((t) => [...t.methods]),
    reset: () => {
      trips = [];
    },
  };
}

/** A devnet plus the real service on loopback, on temporary files. */
export type Stack = {
  readonly devnet: Devnet;
  readonly service: Service;
  readonly baseUrl: string;
  readonly rpc: RpcCounter;
  readonly dir: string;
  /**
   * Has the service's index follower poll the chain now and waits for it: after a test wrote to the chain itself, the
   * service's public reads see the write (they answer from the index alone, decisions §21).
   */
  readonly sync: () => Promise<void>;
  /** Starts a second service process-in-process on the same chain and database (a restart). */
  /** Another service on the same database; `reconcileClock`: the clock its submission reconciler reads. */
  readonly restartService: (env?: Record<string, string>, options?: { reconcileClock?: { readonly nowMs: () => number } }) => Promise<Service>;
  readonly stop: () => Promise<void>;
};

/**
 * Has a freshly started service's follower reach the chain's head before a test reads (not an instance that does not
 * follow: it reads what others index). Best effort: a test of a chain that does not answer sees its index stale.
 */
async function syncIndex(service: Service, env: Record<string, string>): Promise<void> {
  if (env.INDEX_FOLLOW !== "false") await service.index.catchUp();
}

/** Relay limits far above what any test sends (e2e/public_relay_guard_test.ts and e2e/factory_gas_drain_test.ts set their own). */
export const TEST_RELAY_LIMITS = {
  PUBLIC_RELAY_IP_RATE_PER_MINUTE: "1000000",
  NONCE_RATE_PER_MINUTE: "1000000",
  PUBLIC_RELAY_ATTESTER_RATE_PER_HOUR: "1000000",
  PUBLIC_RELAY_GAS_BUDGET_PER_HOUR: "1000000000000",
  PRIVATE_RELAY_GAS_BUDGET_PER_HOUR: "1000000000000",
  PRIVATE_RELAY_ACCOUNT_RATE_PER_MINUTE: "1000000",
} as const;

/**
 * The relays' gas budgets are per UTC hour (domain/delegation/relay_guard.ts): a test that spends a budget and then
 * expects a refusal must run within one hour, or a new hour's budget serves the request it expects refused. When less
 * than `neededMs` is left of the current hour, this waits until the next one began: a wait for the clock to reach a
 * point, not a race against work. A test calling it allows for the wait in its time limit ({@link BUDGET_HOUR_TEST_MS}).
 */
export async function withinOneBudgetHour(neededMs = BUDGET_HOUR_NEEDED_MS): Promise<void> {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < neededMs) await Bun.sleep(left + 100);
}
/** What a budget test may take once it began, at most. */
export const BUDGET_HOUR_NEEDED_MS = 60_000;
/** The time limit of a test that calls {@link withinOneBudgetHour}: the wait, then the test's own minute. */
export const BUDGET_HOUR_TEST_MS = 2 * BUDGET_HOUR_NEEDED_MS + 10_000;

/** Which compiled contracts e2e deploys: forge's build when present (CI builds it first), else npm's. */
export function e2eArtifacts(): "forge" | "npm" {
  return existsSync(join(import.meta.dir, "..", "out", "EAS.sol", "EAS.json")) ? "forge" : "npm";
}

/** Where e2e runs Anvil: a local process (default) or a container (`ANVIL_RUNTIME=container`). */
export type AnvilRuntime = "process" | "container";

/** Reads `ANVIL_RUNTIME` (`process` or `container`; unset: `process`). */
export function anvilRuntime(env: Record<string, string | undefined> = process.env): AnvilRuntime {
  const value = env.ANVIL_RUNTIME?.trim() || "process";
  if (value !== "process" && value !== "container") throw new Error(`ANVIL_RUNTIME must be process or container, not ${value}`);
  return value;
}

/** The container image for `ANVIL_RUNTIME=container`: `ANVIL_IMAGE`, default the foundry image. */
export function anvilImage(env: Record<string, string | undefined> = process.env): string {
  return env.ANVIL_IMAGE?.trim() || DEFAULT_ANVIL_IMAGE;
}

/** How startStack starts Anvil: undefined for the local process, else a container starter (the runtime must answer). */
async function anvilStarter(): Promise<DevnetOptions["startAnvil"]> {
  if (anvilRuntime() === "process") return undefined;
  const runtime = await probeContainerRuntime();
  if (!runtime.available) throw new Error(`ANVIL_RUNTIME=container but no container runtime answers: ${runtime.reason}`);
  return containerAnvil(anvilImage());
}

/** How long a step of a stack's start or sync may run before {@link reportingSlow} says which one it is. */
const SLOW_STEP_MS = 15_000;

/**
 * Runs `work`, and says on stderr which step it is (`what()`, read each time) once it has run for SLOW_STEP_MS and at
 * each SLOW_STEP_MS after. A hook that runs out of time tells nothing of where it waited; these lines named the one
 * hang seen so far (the devnet polling for a receipt Anvil never mined, docs/testing.md).
 */
async function reportingSlow<T>(what: () => string, work: Promise<T>): Promise<T> {
  const started = performance.now();
  const timer = setInterval(() => console.error(`[e2e harness] ${what()}, ${((performance.now() - started) / 1000).toFixed(0)} s so far`), SLOW_STEP_MS);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}

/** Starts a fresh chain with EAS deployed and the service against it. */
export async function startStack(
  options: {
    env?: Record<string, string>;
    devnet?: Partial<DevnetOptions>;
    /** Wraps the counting fetch the service uses for RPC (e.g. to time RPC waits). */
    wrapRpcFetch?: (inner: typeof fetch) => typeof fetch;
    /** Extra trusted root for did.json fetches (the test CA). */
    didJsonCa?: string;
    /** The RPC URL the service is given, from the devnet's (e.g. a fault proxy in front of it). */
    rpcUrlFor?: (devnetRpcUrl: string) => string;
    /**
     * How long the service's sync sends wait for the node's answer (default 100 ms). A fault test whose node (or proxy)
     * always answers sets it long: on a loaded machine an answer later than 100 ms takes the sender down another path
     * (it asks about the hash first), and the test's outcome would depend on the machine's speed.
     */
    sendSyncGraceMs?: number;
    /** The clock the service's kept fees age by (a test that counts calls per write moves it by hand). */
    feeClock?: () => number;
    /** How often expired challenges, sessions and limit rows are pruned (default every minute). */
    pruneIntervalMs?: number;
  } = {},
): Promise<Stack> {
  const startAnvil = await anvilStarter();
  const dir = mkdtempSync(join(tmpdir(), "ats-e2e-"));
  let devnetSaid = "nothing yet";
  const devnet = await reportingSlow(() => `startStack: the devnet is still starting (its last line: ${devnetSaid})`, startDevnet({
    dataDir: join(dir, "devnet"),
    persist: false,
    artifacts: e2eArtifacts(),
    startAnvil,
    ...options.devnet,
    log: (line) => {
      devnetSaid = line;
      options.devnet?.log?.(line);
    },
  }));
  const rpc = countingFetch();
  const rpcFetch = options.wrapRpcFetch ? options.wrapRpcFetch(rpc.fetch) : rpc.fetch;
  const env = (extra: Record<string, string> = {}) => ({
    PORT: "0",
    RPC_URL: options.rpcUrlFor?.(devnet.rpcUrl) ?? devnet.rpcUrl,
    TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
    WITNESS_PRIVATE_KEY: devnet.keys.witness,
    DATABASE_PATH: join(dir, "ats.sqlite"),
    DATA_DIR: dir,
    // Public reads answer from the index alone (decisions §21). The follower polls at start, when a test asks
    // (`stack.sync()`) and when a write of the service is mined (its nudge), never on a timer, so what a test
    // counts never depends on the machine's speed. The index's own tests set their own interval.
    INDEX_FOLLOW: "true",
    INDEX_POLL_MS: "3600000",
    INDEX_STALL_SECONDS: "86400",
    // Every request comes from 127.0.0.1 and many attesters are reused: the public relay's guard has its own test.
    ...TEST_RELAY_LIMITS,
    ...options.env,
    ...extra,
  });
  const { didJsonCa, sendSyncGraceMs, feeClock, pruneIntervalMs } = options;
  const serviceOptions = { log: silentLogger, rpcFetch, didJsonCa, sendSyncGraceMs, feeClock, pruneIntervalMs };
  let service: Service;
  try {
    service = await reportingSlow(
      () => "startStack: the service is still starting",
      startService(readConfig(env()), serviceOptions),
    );
    await reportingSlow(() => "startStack: the new service's index is still catching up", syncIndex(service, env()));
  } catch (error) {
    await devnet.stop();
    throw error;
  }
  const extra: Service[] = [];
  return {
    devnet,
    service,
    baseUrl: service.url,
    rpc,
    dir,
    async restartService(more, options) {
      const next = await startService(readConfig(env(more)), { ...serviceOptions, ...options });
      extra.push(next);
      await syncIndex(next, env(more));
      return next;
    },
    sync: async () => {
      const caughtUp = await reportingSlow(() => "stack.sync(): the index is still catching up", service.index.catchUp());
      if (!caughtUp) throw new Error("The index did not catch up with the chain");
    },
    async stop() {
      let step = "stopping the services";
      await reportingSlow(() => `stack.stop(): still ${step}`, (async () => {
        for (const s of extra) await s.stop();
        await service.stop();
        step = "stopping the devnet";
        await devnet.stop();
      })());
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
