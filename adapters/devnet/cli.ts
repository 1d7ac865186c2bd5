// `bun run devnet`: a persistent devnet for local development. Prints one JSON line describing it on stdout,
// logs on stderr, and runs until SIGINT/SIGTERM.
import { join } from "node:path";
import type { Hex } from "viem";
import { type Devnet, startDevnet } from "./mod.ts";

function privateKeyFromEnv(name: string): Hex | undefined {
  const value = process.env[name]?.trim();
  if (value === undefined || value === "") return undefined;
  if (!/^0x[0-9a-fA-F]{64}$/.test(value)) {
    process.stderr.write(`${name} must be a 0x-prefixed 32-byte hex private key\n`);
    process.exit(1);
  }
  return value as Hex;
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
  };
}

const dataDir = join(process.env.DATA_DIR?.trim() || ".ats", "devnet");
const delegatePrivateKey = privateKeyFromEnv("DELEGATE_PRIVATE_KEY");
const witnessPrivateKey = privateKeyFromEnv("WITNESS_PRIVATE_KEY");

// Installed before starting so a signal during start-up still stops Anvil cleanly.
const stopRequested = new Promise<void>((resolve) => {
  process.once("SIGINT", () => resolve());
  process.once("SIGTERM", () => resolve());
});

let devnet: Devnet;
try {
  devnet = await startDevnet({
    dataDir,
    persist: true,
    delegatePrivateKey,
    witnessPrivateKey,
    log: (line) => process.stderr.write(`${line}\n`),
  });
} catch (error) {
  process.stderr.write(`Devnet failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}

process.stdout.write(`${JSON.stringify(describe(devnet))}\n`);
await stopRequested;
process.stderr.write("stopping devnet\n");
await devnet.stop();
process.exit(0);
