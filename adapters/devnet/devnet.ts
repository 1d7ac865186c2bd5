import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Address, type Hex, getAddress } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Anvil, AnvilOptions } from "./_anvil.ts";
import { type DevnetChainOptions, type DevnetChainRun, startDevnetChain } from "./_chain.ts";
import { devnetTrustAnchors, writeTrustAnchorsIfChanged } from "./_files.ts";
import { TEST_USD } from "./_token.ts";

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
  /**
   * `DEVNET_CHAINS` (decisions §30): 2 starts a second Anvil, chain {@link DEVNET_SECOND_CHAIN_ID}, with EAS deployed,
   * its state under `dataDir/chain-31338`, on `port + 1` when a port is given; the trust anchors describe both.
   * Default 1.
   */
  chains?: 1 | 2 | undefined;
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
  /**
   * Every chain of the devnet, this one first (`DEVNET_CHAINS=2`: then chain 31338, its own EAS deployment, schema UIDs
   * and x402 token; its Anvil is saved by `checkpoint()` and stopped by `stop()` with the first).
   */
  chains: DevnetChain[];
  /** Saves the state (when persisted), then stops Anvil. */
  stop(): Promise<void>;
};

/** One chain of the devnet. */
export type DevnetChain = {
  rpcUrl: string;
  chainId: number;
  /** CAIP-2, as the trust anchors key it. */
  caip2: string;
  easAddress: Address;
  schemaRegistryAddress: Address;
  deployBlock: bigint;
  schemaUids: Record<string, Hex>;
  x402Token: Address;
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

/**
 * The addresses of {@link ANVIL_DEV_KEYS}, lowercase, and of the next ten accounts of the same published mnemonic
 * (`test test … junk`: Hardhat's twenty default accounts, `anvil --accounts 20`). Their keys are published with every
 * Anvil and Hardhat: on a chain that is not a devnet anything sent to them is taken at once, so a signer answering for
 * one counts as a raw key (app/signers.ts `checkRawKeys`), whatever holds it (a keystore, an HSM). Before, accounts 10
 * to 19 were not on the list.
 */
export const ANVIL_DEV_ADDRESSES: ReadonlySet<string> = new Set([
  "0xbcd4042de499d14e55001ccbb24a551f3b954096",
  "0x71be63f3384f5fb98995898a86b02fb2426c5788",
  "0xfabb0ac9d68b0b445fb7357272ff202c5651694a",
  "0x1cbd3b2770909d4e10f157cabc84c7264073c9ec",
  "0xdf3e18d64bc6a983f673ab319ccae4f1a57c7097",
  "0xcd3b766ccdd6ae721141f452c550ca635964ce71",
  "0x2546bcd3c84621e976d8185a91a922ae77ecec30",
  "0xbda5747bfd65f08deb54cb465eb87d40e51b197e",
  "0xdd2fd4581271e230360230f9337d5c0430bf44c0",
  "0x8626f6940e2eb28930efb4cef49b2d1f2c9c1199",
  "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
  "0x70997970c51812dc3a010c7d01b50e0d17dc79c8",
  "0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc",
  "0x90f79bf6eb2c4f870365e785982e1f101e93b906",
  "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65",
  "0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc",
  "0x976ea74026e726554db657fa54763abd0c3a0aa9",
  "0x14dc79964da2c08b23698b3d3cc7ca32193d9955",
  "0x23618e81e3f5cdf7f54c3d65f7fbc0abf5b21e8f",
  "0xa0ee7a142d267c1f36714e4a8f75612f20a79720",
]);

/** The chain name the devnet announces in its trust anchors. */
export const DEVNET_CHAIN_NAME = "ATS Devnet";
/**
 * The name of the second chain of a two-chain devnet (`DEVNET_CHAINS=2`, its chain id {@link DEVNET_SECOND_CHAIN_ID}):
 * with one name for both, a write's answer (`chain`) and the console's chain picker could not tell them apart.
 */
export const DEVNET_SECOND_CHAIN_NAME = "ATS Devnet 2";

const DEFAULT_CHAIN_ID = 31337;
/** The chain id of the devnet's second chain (`DEVNET_CHAINS=2`). */
export const DEVNET_SECOND_CHAIN_ID = 31338;
// The trust anchors announce the current linked-identifier only; the legacy one stays registered for old clients.
const UNANNOUNCED_SCHEMAS = new Set(["linked-identifier-legacy"]);

/** `DEVNET_CHAINS`: 1 (default, also when empty) or 2; anything else is refused with a line naming it. */
export function readDevnetChains(value: string | undefined): 1 | 2 {
  const text = value?.trim() ?? "";
  if (text === "" || text === "1") return 1;
  if (text === "2") return 2;
  throw new Error("DEVNET_CHAINS must be 1 or 2");
}

/** Starts Anvil and makes sure SchemaRegistry, EAS and all schemas are deployed; reuses an existing deployment. */
export async function startDevnet(options: DevnetOptions): Promise<Devnet> {
  const log = options.log ?? (() => {});
  const chainId = options.chainId ?? DEFAULT_CHAIN_ID;
  const deployer = ANVIL_DEV_KEYS[0]!;
  const delegate = options.delegatePrivateKey ?? ANVIL_DEV_KEYS[1]!;
  const witness = options.witnessPrivateKey ?? delegate;
  mkdirSync(options.dataDir, { recursive: true });
  const trustAnchorsPath = join(options.dataDir, "trust-anchors.json");
  const twoChains = (options.chains ?? 1) === 2;
  const nameOf = (id: number) => (twoChains && id === DEVNET_SECOND_CHAIN_ID ? DEVNET_SECOND_CHAIN_NAME : DEVNET_CHAIN_NAME);
  const common: Omit<DevnetChainOptions, "chainId" | "dataDir" | "port" | "chainName"> = {
    persist: options.persist ?? true,
    checkpointIntervalMs: options.checkpointIntervalMs ?? 2_000,
    host: options.host,
    artifacts: options.artifacts ?? "npm",
    deployer,
    funded: [
      ...[delegate, witness].map((key) => privateKeyToAccount(key).address),
      ...[options.delegateAddress, options.witnessAddress].filter((a): a is Address => a !== undefined),
    ],
    mintTo: ANVIL_DEV_KEYS.map((key) => privateKeyToAccount(key).address),
    startAnvil: options.startAnvil,
    binaryDir: join(options.dataDir, "bin"),
    log,
  };
  const runs: DevnetChainRun[] = [await startDevnetChain({ ...common, chainName: nameOf(chainId), chainId, dataDir: options.dataDir, port: options.port })];
  const stop = async () => {
    await Promise.all(runs.map((run) => run.stop()));
  };
  try {
    if (twoChains) {
      const secondId = chainId === DEVNET_SECOND_CHAIN_ID ? DEFAULT_CHAIN_ID : DEVNET_SECOND_CHAIN_ID;
      const port = options.port === undefined || options.port === 0 ? undefined : options.port + 1;
      runs.push(await startDevnetChain({ ...common, chainName: nameOf(secondId), chainId: secondId, dataDir: join(options.dataDir, `chain-${secondId}`), port }));
    }
    const chains = runs.map(describeChain);
    const first = runs[0]!.record;
    writeTrustAnchorsIfChanged(
      trustAnchorsPath,
      devnetTrustAnchors({
        chains: chains.map((c) => ({ chainId: c.chainId, chainName: nameOf(c.chainId), easAddress: c.easAddress, schemas: announced(c.schemaUids) })),
        witnessAddress: options.witnessAddress === undefined ? privateKeyToAccount(witness).address : getAddress(options.witnessAddress),
        witnessLabel: "ATS Devnet Witness",
        validFrom: first.deployedAt,
        updatedAt: new Date().toISOString(),
      }),
    );
    // Deploy on automine, then switch: deploying with interval mining would wait a block per step.
    if (options.blockTime !== undefined && options.blockTime > 0) {
      await Promise.all(runs.map((run) => run.testClient.setIntervalMining({ interval: options.blockTime! })));
    }
    const checkpoints = runs.map((run) => run.checkpoint).filter((c): c is () => Promise<void> => c !== undefined);
    const primary = chains[0]!;
    return {
      rpcUrl: primary.rpcUrl,
      chainId,
      chainName: nameOf(chainId),
      easAddress: primary.easAddress,
      schemaRegistryAddress: primary.schemaRegistryAddress,
      deployBlock: primary.deployBlock,
      schemaUids: primary.schemaUids,
      trustAnchorsPath,
      keys: { deployer, delegate, witness, facilitator: ANVIL_DEV_KEYS[2]!, users: ANVIL_DEV_KEYS.slice(3) },
      x402: { token: primary.x402Token, name: TEST_USD.name, version: TEST_USD.version, decimals: TEST_USD.decimals, payTo: privateKeyToAccount(deployer).address },
      checkpoint: checkpoints.length === 0 ? undefined : async () => {
        await Promise.all(checkpoints.map((c) => c()));
      },
      chains,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function describeChain(run: DevnetChainRun): DevnetChain {
  const r = run.record;
  return {
    rpcUrl: run.rpcUrl,
    chainId: r.chainId,
    caip2: `eip155:${r.chainId}`,
    easAddress: r.easAddress,
    schemaRegistryAddress: r.schemaRegistryAddress,
    deployBlock: run.deployBlock,
    schemaUids: r.schemaUids,
    x402Token: r.x402Token!,
  };
}

function announced(schemaUids: Record<string, Hex>): Record<string, Hex> {
  return Object.fromEntries(Object.entries(schemaUids).filter(([name]) => !UNANNOUNCED_SCHEMAS.has(name)));
}
