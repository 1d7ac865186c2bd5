/**
 * Several service processes on one PostgreSQL, as operators deploy the service: one Anvil with EAS (the embedded
 * devnet, not persisted) and one throwaway PostgreSQL ({@link startPostgres}) started at once in a temporary directory,
 * then `bun main.ts` processes ({@link startServiceProcess}) on both. The multi-instance tests (e2e/multi_instance_test.ts,
 * e2e/index_failover_test.ts, e2e/webhooks_multi_instance_test.ts, e2e/register_race_postgres_test.ts,
 * e2e/x402_postgres_test.ts) each built this set-up and its teardown by hand; here the environment every instance
 * shares and the teardown order (instances, then PostgreSQL, then the node, then the files) are written once, and a
 * start that fails half-way stops what it started.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Devnet, startDevnet } from "../../adapters/devnet/mod.ts";
import { e2eArtifacts } from "../harness.ts";
import { startPostgres, type TestPostgres } from "./postgres.ts";
import { type ServiceProcess, startServiceProcess } from "./service_process.ts";

/** Options of {@link PostgresInstances.start}. */
export type StartInstancesOptions = {
  /** How many instances start at once (the schema migration is serialized by an advisory lock); 1 unless given. */
  readonly count?: number | undefined;
  /** How long each may take to print where it listens (startServiceProcess's 30 s unless given). */
  readonly timeoutMs?: number | undefined;
  /** Whether the instances get the devnet's witness key (WITNESS_PRIVATE_KEY); true unless given. */
  readonly witness?: boolean | undefined;
};

/** A devnet and a PostgreSQL for service instances, from {@link startPostgresInstances}. */
export type PostgresInstances = {
  /** The temporary directory: the devnet's files in `devnet/`, and the instances' DATA_DIR unless a test names another. */
  readonly dir: string;
  readonly devnet: Devnet;
  /** The server; its `url` names the `postgres` database, which the instances use unless a test names another. */
  readonly pg: TestPostgres;
  /**
   * Starts instances on the devnet and PostgreSQL with `extra` over the shared environment (PORT 0, the devnet's RPC
   * URL, anchors and keys, DATABASE_URL, DATA_DIR, LOG_LEVEL error); {@link PostgresInstances.stop} stops them.
   */
  readonly start: (extra?: Record<string, string>, options?: StartInstancesOptions) => Promise<ServiceProcess[]>;
  /**
   * Stops every instance still running (one a test stopped or killed is skipped), then PostgreSQL and the devnet, and
   * removes the directory; resolves to the exit codes of the instances it stopped, in the order they came up.
   */
  readonly stop: () => Promise<number[]>;
};

const running = (instance: ServiceProcess) => instance.proc.exitCode === null && instance.proc.signalCode === null;

/** Starts the devnet and PostgreSQL at once in a new temporary directory named `<prefix>XXXXXX`; no instance yet. */
export async function startPostgresInstances(prefix: string): Promise<PostgresInstances> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const [chain, server] = await Promise.allSettled([
    startDevnet({ dataDir: join(dir, "devnet"), persist: false, artifacts: e2eArtifacts() }),
    startPostgres(),
  ]);
  if (chain.status === "rejected" || server.status === "rejected") {
    if (server.status === "fulfilled") await server.value.stop();
    if (chain.status === "fulfilled") await chain.value.stop();
    rmSync(dir, { recursive: true, force: true });
    throw chain.status === "rejected" ? chain.reason : (server as PromiseRejectedResult).reason;
  }
  const devnet = chain.value;
  const pg = server.value;
  const instances: ServiceProcess[] = [];
  return {
    dir,
    devnet,
    pg,
    async start(extra = {}, options = {}) {
      const env = {
        PORT: "0",
        RPC_URL: devnet.rpcUrl,
        TRUST_ANCHORS_PATH: devnet.trustAnchorsPath,
        DELEGATE_PRIVATE_KEY: devnet.keys.delegate,
        ...(options.witness === false ? {} : { WITNESS_PRIVATE_KEY: devnet.keys.witness }),
        DATABASE_URL: pg.url,
        DATA_DIR: dir,
        LOG_LEVEL: "error",
        ...extra,
      };
      // Each is kept as it starts, so one that started is stopped even when another of the same call failed.
      return await Promise.all(Array.from({ length: options.count ?? 1 }, async () => {
        const instance = await startServiceProcess(env, options.timeoutMs);
        instances.push(instance);
        return instance;
      }));
    },
    async stop() {
      const codes: number[] = [];
      try {
        for (const instance of instances) if (running(instance)) codes.push(await instance.stop());
      } finally {
        try {
          await pg.stop();
        } finally {
          await devnet.stop();
          rmSync(dir, { recursive: true, force: true });
        }
      }
      return codes;
    },
  };
}
