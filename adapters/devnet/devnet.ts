import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type Address,
  type Hex,
  type PublicClient,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseEther,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Anvil, type AnvilOptions, startAnvil } from "./_anvil.ts";
import { loadEasArtifacts } from "./_artifacts.ts";
import { ensureDeployment } from "./_deploy.ts";
import { type DeploymentRecord, devnetTrustAnchors, readDeploymentRecord, writeJsonFile, writeTrustAnchorsIfChanged } from "./_files.ts";
import { type StateCheckpointer, createStateCheckpointer } from "./_state.ts";
import { ensureTestUsd, TEST_USD } from "./_token.ts";

/** How to start the devnet. */
export type DevnetOptions = {
  /** Directory for the Anvil state, `devnet.json` and `trust-anchors.json`; created if missing. */
  dataDir: string;
  /**
   * Default true: the chain is kept in `dataDir/anvil-state.json` across restarts (saved by `checkpoint()`, every
   * `checkpointIntervalMs` when a block was added, and on `stop()`); `dataDir/anvil.lock` names the running Anvil.
   * False: an ephemeral chain.
   */
  persist?: boolean | undefined;
  /** Persisted devnets: milliseconds between checks for new blocks to save; default 2000, 0 turns it off. */
  checkpointIntervalMs?: number | undefined;
  /** Default 31337. */
  chainId?: number | undefined;
  /** Default: a free loopback port. */
  port?: number | undefined;
  /** The address Anvil listens on; default 127.0.0.1 (`0.0.0.0`: reachable from other containers). */
  host?: string | undefined;
  /** Default "npm": the eas-contracts package's artifacts; "forge": `out/` from scripts/forge_build.sh. */
  artifacts?: "npm" | "forge" | undefined;
  /** Default: Anvil dev account #1. */
  delegatePrivateKey?: Hex | undefined;
  /** Default: the delegate key. */
  witnessPrivateKey?: Hex | undefined;
  /** A delegate whose key is outside the process (decisions §27): funded like the delegate key. */
  delegateAddress?: Address | undefined;
  /** A witness whose key is outside the process: funded, and the trust anchors' witness (instead of the key's). */
  witnessAddress?: Address | undefined;
  /** Seconds between blocks once deployed; default: a block per transaction. */
  blockTime?: number | undefined;
  /** Starts the Anvil to deploy into (e.g. in a container); default: a local Anvil process. */
  startAnvil?: ((options: AnvilOptions) => Promise<Anvil>) | undefined;
  log?: ((line: string) => void) | undefined;
};

/** A running devnet with EAS and every known schema. */
export type Devnet = {
  rpcUrl: string;
  chainId: number;
  chainName: string;
  easAddress: Address;
  schemaRegistryAddress: Address;
  deployBlock: bigint;
  /** Every KNOWN_SCHEMAS name -> UID. */
  schemaUids: Record<string, Hex>;
  /** `dataDir/trust-anchors.json`. */
  trustAnchorsPath: string;
  /**
   * Private keys; `users` are further funded Anvil dev accounts (#3..#9) for tests; `facilitator` (#2) settles x402
   * payments.
   */
  keys: { deployer: Hex; delegate: Hex; witness: Hex; facilitator: Hex; users: Hex[] };
  /**
   * The x402 test token (decisions §13): EIP-3009, six decimals, one million minted to each Anvil dev account at
   * deployment; `payTo` is the devnet's default payee (Anvil dev account #0).
   */
  x402: { token: Address; name: string; version: string; decimals: number; payTo: Address };
  /**
   * Persisted devnets only: saves the chain as it is now to the state file, atomically, and resolves once that
   * save (one that began after the call) is on disk. Concurrent calls share saves. Call it after a mined
   * transaction and before telling anyone about it: whatever it covered survives a `kill -9` of the service and
   * of Anvil.
   */
  checkpoint?: (() => Promise<void>) | undefined;
  /** Saves the state (when persisted), then stops Anvil. */
  stop(): Promise<void>;
};

/** The private keys of Anvil's first ten dev accounts (the `test test ... junk` mnemonic). */
export const ANVIL_DEV_KEYS: readonly Hex[] = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
];

/** The chain name the devnet announces in its trust anchors. */
export const DEVNET_CHAIN_NAME = "ATS Devnet";

const DEFAULT_CHAIN_ID = 31337;
// The trust anchors announce the current linked-identifier only; the legacy one stays registered for old clients.
const UNANNOUNCED_SCHEMAS = new Set(["linked-identifier-legacy"]);
const FUNDED_BALANCE = parseEther("10000");
const TOP_UP_BELOW = parseEther("1000");

/** Starts Anvil and makes sure SchemaRegistry, EAS and all schemas are deployed; reuses an existing deployment. */
export async function startDevnet(options: DevnetOptions): Promise<Devnet> {
  const log = options.log ?? (() => {});
  const persist = options.persist ?? true;
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const deployer = ANVIL_DEV_KEYS[0]!;
  const delegate = options.delegatePrivateKey ?? ANVIL_DEV_KEYS[1]!;
  const witness = options.witnessPrivateKey ?? delegate;
  const artifacts = loadEasArtifacts(options.artifacts ?? "npm");

  mkdirSync(options.dataDir, { recursive: true });
  const recordPath = join(options.dataDir, "devnet.json");
  const trustAnchorsPath = join(options.dataDir, "trust-anchors.json");
  const stateFile = persist ? join(options.dataDir, "anvil-state.json") : undefined;

  const anvil = await (options.startAnvil ?? startAnvil)({
    chainId,
    port: options.port,
    host: options.host,
    stateFile,
    lockFile: persist ? join(options.dataDir, "anvil.lock") : undefined,
    log,
    binaryDir: join(options.dataDir, "bin"),
  });
  const checkpointer: StateCheckpointer | undefined = stateFile === undefined ? undefined : createStateCheckpointer({
    rpcUrl: anvil.rpcUrl,
    stateFile,
    intervalMs: options.checkpointIntervalMs ?? 2_000,
    log,
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      checkpointer?.close();
      try {
        await checkpointer?.checkpoint();
      } catch (error) {
        log(`could not save the devnet state before stopping: ${error instanceof Error ? error.message : String(error)}`);
      }
      await anvil.stop();
    })();
    return stopping;
  };

  try {
    const chain = defineChain({
      id: chainId,
      name: DEVNET_CHAIN_NAME,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    });
    // Batching folds the start-up's parallel checks into a few HTTP round trips.
    const transport = http(anvil.rpcUrl, { batch: true });
    const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
    const walletClient = createWalletClient({ chain, transport, account: privateKeyToAccount(deployer), pollingInterval: 50 });
    const testClient = createTestClient({ chain, transport, mode: "anvil", pollingInterval: 50 });

    const record = readDeploymentRecord(recordPath);
    const previous = record && record.chainId === chainId
      ? {
        easAddress: getAddress(record.easAddress),
        schemaRegistryAddress: getAddress(record.schemaRegistryAddress),
        deployBlock: BigInt(record.deployBlock),
      }
      : undefined;
    const deployment = await ensureDeployment({ publicClient, walletClient }, artifacts, { previous, log });
    if (!deployment.changed) log(`reusing EAS at ${deployment.easAddress}`);

    const token = await ensureTestUsd(
      { publicClient, walletClient },
      ANVIL_DEV_KEYS.map((key) => privateKeyToAccount(key).address),
      { previous: record && record.chainId === chainId ? record.x402Token : undefined, log },
    );

    // The delegate and witness may be keys Anvil never funded.
    const funded = [...new Set([
      ...[deployer, delegate, witness].map((key) => privateKeyToAccount(key).address),
      ...[options.delegateAddress, options.witnessAddress].filter((a): a is Address => a !== undefined).map((a) => getAddress(a)),
    ])];
    const balances = await Promise.all(funded.map((address) => publicClient.getBalance({ address })));
    await Promise.all(funded.map((address, i) =>
      balances[i]! < TOP_UP_BELOW ? testClient.setBalance({ address, value: FUNDED_BALANCE }) : undefined
    ));

    // Durable before the deployment record names it (funding included: setBalance mines no block).
    await checkpointer?.checkpoint();

    // The witness is trusted from the deployment block on. Block time, in whole seconds like EAS's `time`: a
    // wall-clock instant with milliseconds would postdate attestations made within the same second.
    const deployedAt = deployment.freshRegistry || record === undefined
      ? await blockTimeIso(publicClient, deployment.deployBlock)
      : wholeSecondsIso(record.deployedAt);
    const nextRecord: DeploymentRecord = {
      version: 1,
      chainId,
      easAddress: deployment.easAddress,
      schemaRegistryAddress: deployment.schemaRegistryAddress,
      deployBlock: deployment.deployBlock.toString(),
      deployedAt,
      schemaUids: deployment.schemaUids,
      x402Token: token,
    };
    writeJsonFile(recordPath, nextRecord);
    const announced = Object.fromEntries(Object.entries(deployment.schemaUids).filter(([name]) => !UNANNOUNCED_SCHEMAS.has(name)));
    writeTrustAnchorsIfChanged(
      trustAnchorsPath,
      devnetTrustAnchors({
        chainId,
        chainName: DEVNET_CHAIN_NAME,
        easAddress: deployment.easAddress,
        schemas: announced,
        witnessAddress: options.witnessAddress === undefined ? privateKeyToAccount(witness).address : getAddress(options.witnessAddress),
        witnessLabel: "ATS Devnet Witness",
        validFrom: deployedAt,
        updatedAt: new Date().toISOString(),
      }),
    );

    // Deploy on automine, then switch: deploying with interval mining would wait a block per step.
    if (options.blockTime !== undefined && options.blockTime > 0) {
      await testClient.setIntervalMining({ interval: options.blockTime });
    }

    return {
      rpcUrl: anvil.rpcUrl,
      chainId,
      chainName: DEVNET_CHAIN_NAME,
      easAddress: deployment.easAddress,
      schemaRegistryAddress: deployment.schemaRegistryAddress,
      deployBlock: deployment.deployBlock,
      schemaUids: deployment.schemaUids,
      trustAnchorsPath,
      keys: { deployer, delegate, witness, facilitator: ANVIL_DEV_KEYS[2]!, users: ANVIL_DEV_KEYS.slice(3) },
      x402: { token, name: TEST_USD.name, version: TEST_USD.version, decimals: TEST_USD.decimals, payTo: privateKeyToAccount(deployer).address },
      checkpoint: checkpointer?.checkpoint,
      stop,
    };
  } catch (error) {
    checkpointer?.close();
    await anvil.stop();
    throw error;
  }
}

async function blockTimeIso(client: PublicClient, blockNumber: bigint): Promise<string> {
  const block = await client.getBlock({ blockNumber });
  return new Date(Number(block.timestamp) * 1000).toISOString();
}

function wholeSecondsIso(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? new Date(0).toISOString() : new Date(Math.floor(ms / 1000) * 1000).toISOString();
}
