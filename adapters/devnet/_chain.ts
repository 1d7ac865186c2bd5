/** One devnet chain: an Anvil with SchemaRegistry, EAS, every known schema and the x402 test token, funded keys. */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Address, type Hex, type PublicClient, createPublicClient, createTestClient, createWalletClient, defineChain, getAddress, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Anvil, type AnvilOptions, startAnvil } from "./_anvil.ts";
import { loadEasArtifacts } from "./_artifacts.ts";
import { ensureDeployment } from "./_deploy.ts";
import { type DeploymentRecord, readDeploymentRecord, writeJsonFile } from "./_files.ts";
import { type StateCheckpointer, createStateCheckpointer } from "./_state.ts";
import { ensureTestUsd } from "./_token.ts";

const FUNDED_BALANCE = parseEther("10000");
const TOP_UP_BELOW = parseEther("1000");

/** How to start one chain of the devnet. */
export type DevnetChainOptions = {
  chainId: number;
  chainName: string;
  /** The chain's own directory: its Anvil state, lock and `devnet.json`. */
  dataDir: string;
  persist: boolean;
  checkpointIntervalMs: number;
  port?: number | undefined;
  host?: string | undefined;
  artifacts: "npm" | "forge";
  /** Anvil dev account #0: deploys. */
  deployer: Hex;
  /** Addresses funded beside the deployer's (the delegate, the witness, signers outside the process). */
  funded: readonly Address[];
  /** Every dev account the x402 test token mints to. */
  mintTo: readonly Address[];
  startAnvil?: ((options: AnvilOptions) => Promise<Anvil>) | undefined;
  /** The directory a compiled executable extracts Anvil into. */
  binaryDir: string;
  log: (line: string) => void;
};

/** A started chain, deployed; `record` is what its `devnet.json` now says. */
export type DevnetChainRun = {
  rpcUrl: string;
  record: DeploymentRecord;
  deployBlock: bigint;
  testClient: ReturnType<typeof createTestClient>;
  checkpoint?: (() => Promise<void>) | undefined;
  stop(): Promise<void>;
};

/** Starts Anvil for one chain and makes sure EAS, every schema and the token are there; reuses an existing deployment. */
export async function startDevnetChain(options: DevnetChainOptions): Promise<DevnetChainRun> {
  const { chainId, log } = options;
  mkdirSync(options.dataDir, { recursive: true });
  const recordPath = join(options.dataDir, "devnet.json");
  const stateFile = options.persist ? join(options.dataDir, "anvil-state.json") : undefined;
  const anvil = await (options.startAnvil ?? startAnvil)({
    chainId,
    port: options.port,
    host: options.host,
    stateFile,
    lockFile: options.persist ? join(options.dataDir, "anvil.lock") : undefined,
    // A kept chain's states sit beside it, so the next start empties what a killed run left.
    cacheDir: options.persist ? join(options.dataDir, "anvil-states") : undefined,
    log,
    binaryDir: options.binaryDir,
  });
  const checkpointer: StateCheckpointer | undefined = stateFile === undefined
    ? undefined
    : createStateCheckpointer({ rpcUrl: anvil.rpcUrl, stateFile, intervalMs: options.checkpointIntervalMs, log });
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
    const record = await deployChain(options, anvil.rpcUrl, recordPath, checkpointer);
    return { ...record, rpcUrl: anvil.rpcUrl, checkpoint: checkpointer?.checkpoint, stop };
  } catch (error) {
    checkpointer?.close();
    await anvil.stop();
    throw error;
  }
}

async function deployChain(
  options: DevnetChainOptions,
  rpcUrl: string,
  recordPath: string,
  checkpointer: StateCheckpointer | undefined,
): Promise<{ record: DeploymentRecord; deployBlock: bigint; testClient: ReturnType<typeof createTestClient> }> {
  const { chainId, log } = options;
  const chain = defineChain({
    id: chainId,
    name: options.chainName,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
  // Batching folds the start-up's parallel checks into a few HTTP round trips.
  const transport = http(rpcUrl, { batch: true });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 50 });
  const walletClient = createWalletClient({ chain, transport, account: privateKeyToAccount(options.deployer), pollingInterval: 50 });
  const testClient = createTestClient({ chain, transport, mode: "anvil", pollingInterval: 50 });

  const record = readDeploymentRecord(recordPath);
  const same = record !== undefined && record.chainId === chainId ? record : undefined;
  const previous = same === undefined
    ? undefined
    : { easAddress: getAddress(same.easAddress), schemaRegistryAddress: getAddress(same.schemaRegistryAddress), deployBlock: BigInt(same.deployBlock) };
  const deployment = await ensureDeployment({ publicClient, walletClient }, loadEasArtifacts(options.artifacts), { previous, log });
  if (!deployment.changed) log(`reusing EAS at ${deployment.easAddress} on chain ${chainId}`);
  const token = await ensureTestUsd({ publicClient, walletClient }, options.mintTo, { previous: same?.x402Token, log });

  // The delegate and witness may be keys Anvil never funded.
  const funded = [...new Set([privateKeyToAccount(options.deployer).address, ...options.funded.map((a) => getAddress(a))])];
  const balances = await Promise.all(funded.map((address) => publicClient.getBalance({ address })));
  await Promise.all(funded.map((address, i) => balances[i]! < TOP_UP_BELOW ? testClient.setBalance({ address, value: FUNDED_BALANCE }) : undefined));

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
  return { record: nextRecord, deployBlock: deployment.deployBlock, testClient };
}

async function blockTimeIso(client: PublicClient, blockNumber: bigint): Promise<string> {
  const block = await client.getBlock({ blockNumber });
  return new Date(Number(block.timestamp) * 1000).toISOString();
}

function wholeSecondsIso(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? new Date(0).toISOString() : new Date(Math.floor(ms / 1000) * 1000).toISOString();
}
