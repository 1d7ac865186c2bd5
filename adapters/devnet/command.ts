// `bun run devnet` (adapters/devnet/cli.ts) and `ats devnet` (the binary and the image, through app/commands.ts): a
// persistent devnet for local development. Prints one JSON line describing it on stdout, logs on stderr, and runs
// until SIGINT/SIGTERM. Anvil listens on 127.0.0.1 on a free port unless DEVNET_HOST and DEVNET_PORT say otherwise
// (the compose file's devnet profile: 0.0.0.0:8545, so the service's containers reach it). The chain is kept under
// DATA_DIR/devnet (default .ats/devnet); DELEGATE_PRIVATE_KEY and WITNESS_PRIVATE_KEY name wallets to fund.
// DEVNET_CHAINS=2 starts a second chain (31338, decisions §30); the line then also lists `chains`.
import { join } from "node:path";
import type { Hex } from "viem";
import { type Devnet, readDevnetChains, startDevnet } from "./devnet.ts";

type Env = Readonly<Record<string, string | undefined>>;

class UsageError extends Error {}

function privateKeyFromEnv(env: Env, name: string): Hex | undefined {
  const value = env[name]?.trim();
  if (value === undefined || value === "") return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(value)) throw new UsageError(`${name} must be a 0x-prefixed 32-byte hex private key`);
  return value as Hex;
}

/** DEVNET_PORT: a TCP port, or undefined for a free one. */
function portFromEnv(env: Env): number | undefined {
  const value = env.DEVNET_PORT?.trim();
  if (value === undefined || value === "") return undefined;
  if (!/^[0-9]+$/.test(value) || Number(value) > 65_535) throw new UsageError("DEVNET_PORT must be a TCP port number");
  return Number(value);
}

/** The line printed on stdout: everything a client of the devnet needs. */
function describe(devnet: Devnet): Record<string, unknown> {
  return {
    rpcUrl: devnet.rpcUrl,
    chainId: devnet.chainId,
    easAddress: devnet.easAddress,
    schemaRegistryAddress: devnet.schemaRegistryAddress,
    deployBlock: devnet.deployBlock.toString(),
    schemaUids: devnet.schemaUids,
    trustAnchorsPath: devnet.trustAnchorsPath,
    keys: devnet.keys,
    // Only with a second chain: a single chain's line stays as it was.
    ...(devnet.chains.length > 1
      ? { chains: devnet.chains.map((c) => ({ ...c, deployBlock: c.deployBlock.toString() })) }
      : {}),
  };
}

/** Runs the devnet until SIGINT or SIGTERM; resolves to the process's exit code. */
export async function runDevnetCommand(env: Env): Promise<number> {
  // Installed before starting so a signal during start-up still stops Anvil cleanly.
  const stopRequested = new Promise<void>((resolve) => {
    process.once("SIGINT", () => resolve());
    process.once("SIGTERM", () => resolve());
  });
  let devnet: Devnet;
  try {
    let chains: 1 | 2;
    try {
      chains = readDevnetChains(env.DEVNET_CHAINS);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
    devnet = await startDevnet({
      chains,
      dataDir: join(env.DATA_DIR?.trim() || ".ats", "devnet"),
      persist: true,
      host: env.DEVNET_HOST?.trim() || undefined,
      port: portFromEnv(env),
      delegatePrivateKey: privateKeyFromEnv(env, "DELEGATE_PRIVATE_KEY"),
      witnessPrivateKey: privateKeyFromEnv(env, "WITNESS_PRIVATE_KEY"),
      log: (line) => process.stderr.write(`${line}\n`),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(error instanceof UsageError ? `${message}\n` : `Devnet failed to start: ${message}\n`);
    return 1;
  }
  process.stdout.write(`${JSON.stringify(describe(devnet))}\n`);
  await stopRequested;
  process.stderr.write("stopping devnet\n");
  await devnet.stop();
  return 0;
}
