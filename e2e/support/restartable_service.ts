/**
 * A real Anvil (the embedded devnet, not persisted) and the service as a process on it, started again and again on
 * the same data directory: the set-up of the tests that kill the service while its transaction waits in the node's
 * pool and see what the next start settles (e2e/fee_bump_test.ts, e2e/relay_batch_crash_test.ts,
 * e2e/relay_batch_fee_bump_test.ts). Call it at the top of a test file: it registers its own beforeAll and afterAll.
 */
import { afterAll, beforeAll } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Hex } from "viem";
import { type Devnet, startDevnet } from "../../adapters/devnet/mod.ts";
import { e2eArtifacts, TEST_RELAY_LIMITS } from "../harness.ts";
import { type ServiceProcess, startServiceProcess } from "./service_process.ts";

/** What a test file gets: the devnet, raw JSON-RPC to it, and starts of the service on one data directory. */
export type RestartableService = {
  /** The devnet (set once beforeAll ran). */
  readonly devnet: () => Devnet;
  /** The service's data directory (its SQLite file is `ats.sqlite` there). */
  readonly dataDir: () => string;
  /** One JSON-RPC call to the devnet; an error answer throws. */
  readonly rpc: (method: string, params?: unknown[]) => Promise<any>;
  /** Starts the service on the devnet and the data directory, `env` added; every start is stopped after the file. */
  readonly start: (env?: Record<string, string>) => Promise<ServiceProcess>;
  /**
   * The hash of the first transaction from `from` in the node's pending block, once there is one, however long a
   * loaded machine takes (the test's limit stops a broken run).
   */
  readonly pendingFrom: (from: string) => Promise<Hex>;
  /** The transactions from `from` in the node's pending block. */
  readonly poolFrom: (from: string) => Promise<{ hash: Hex; from: string; nonce: Hex }[]>;
};

/** Registers the devnet's and the services' lifetime with the test file; `prefix` names the temporary directory. */
export function restartableService(prefix: string): RestartableService {
  let dir: string | undefined;
  let devnet: Devnet | undefined;
  const running: ServiceProcess[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    devnet = await startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() });
  });
  afterAll(async () => {
    for (const service of running) if (service.proc.exitCode === null && service.proc.signalCode === null) await service.stop();
    await devnet?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const theDevnet = () => {
    if (devnet === undefined) throw new Error("the devnet is not started yet (beforeAll)");
    return devnet;
  };
  const dataDir = () => join(dir!, "service");
  async function rpc(method: string, params: unknown[] = []): Promise<any> {
    const res = await fetch(theDevnet().rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    const body = await res.json() as { result?: unknown; error?: { message: string } };
    if (body.error) throw new Error(`${method}: ${body.error.message}`);
    return body.result;
  }
  async function poolFrom(from: string) {
    const block = await rpc("eth_getBlockByNumber", ["pending", true]) as { transactions: { hash: Hex; from: string; nonce: Hex }[] };
    return block.transactions.filter((t) => t.from.toLowerCase() === from.toLowerCase());
  }
  return {
    devnet: theDevnet,
    dataDir,
    rpc,
    poolFrom,
    async start(env = {}) {
      const chain = theDevnet();
      const service = await startServiceProcess({
        PORT: "0",
        RPC_URL: chain.rpcUrl,
        TRUST_ANCHORS_PATH: chain.trustAnchorsPath,
        DELEGATE_PRIVATE_KEY: chain.keys.delegate,
        WITNESS_PRIVATE_KEY: chain.keys.witness,
        DATA_DIR: dataDir(),
        LOG_LEVEL: "error",
        ...TEST_RELAY_LIMITS,
        ...env,
      });
      running.push(service);
      return service;
    },
    async pendingFrom(from) {
      for (;;) {
        const ours = await poolFrom(from);
        if (ours.length > 0) return ours[0]!.hash;
        await Bun.sleep(25);
      }
    },
  };
}
