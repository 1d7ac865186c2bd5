/**
 * The e2e smart-contract wallet (`e2e/contracts/TestWallet.sol`): compiled with the project's forge set-up
 * (offline, the npm solc) into `out-e2e/`, deployed by a CREATE2 factory so that a wallet can also sign
 * before it exists (ERC-6492).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Account,
  type Chain,
  encodeFunctionData,
  type Hex,
  pad,
  type PublicClient,
  serializeErc6492Signature,
  type Transport,
  type WalletClient,
} from "viem";

const ROOT = join(import.meta.dir, "..", "..");

type Artifact = { abi: unknown[]; bytecode: { object: Hex } };
let artifacts: { wallet: Artifact; factory: Artifact } | undefined;

/** Compiles the wallet and its factory once per process (forge's cache makes later runs a no-op). */
export function testWalletArtifacts(): { wallet: Artifact; factory: Artifact } {
  if (artifacts !== undefined) return artifacts;
  const forge = join(ROOT, "node_modules/@foundry-rs/forge-linux-amd64/bin/forge");
  const built = spawnSync(forge, ["build", "--offline", "--contracts", "e2e/contracts", "--out", "out-e2e", "--cache-path", "cache-e2e"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  if (built.status !== 0) throw new Error(`forge build of e2e/contracts failed: ${built.stderr || built.stdout}`);
  const read = (name: string) => JSON.parse(readFileSync(join(ROOT, "out-e2e/TestWallet.sol", `${name}.json`), "utf8")) as Artifact;
  artifacts = { wallet: read("TestWallet"), factory: read("TestWalletFactory") };
  return artifacts;
}

const FACTORY_ABI = [
  {
    type: "function",
    name: "deploy",
    stateMutability: "nonpayable",
    inputs: [{ name: "owner", type: "address" }, { name: "salt", type: "bytes32" }],
    outputs: [{ name: "wallet", type: "address" }],
  },
  {
    type: "function",
    name: "predict",
    stateMutability: "view",
    inputs: [{ name: "owner", type: "address" }, { name: "salt", type: "bytes32" }],
    outputs: [{ name: "", type: "address" }],
  },
] as const;

type Wallet = WalletClient<Transport, Chain | undefined, Account>;

/** A deployed factory: predicts wallet addresses, deploys them, and wraps a signature for an undeployed one. */
export type WalletFactory = {
  readonly address: Hex;
  readonly predict: (owner: Hex, salt: number) => Promise<Hex>;
  readonly deploy: (owner: Hex, salt: number) => Promise<Hex>;
  /** The ERC-6492 form of `signature`: the factory call that deploys the wallet, then the signature itself. */
  readonly wrap6492: (owner: Hex, salt: number, signature: Hex) => Hex;
};

/** Deploys the factory with `deployer` and returns its helpers. */
export async function deployWalletFactory(deployer: Wallet, client: PublicClient): Promise<WalletFactory> {
  const { factory } = testWalletArtifacts();
  const hash = await deployer.deployContract({ abi: factory.abi, bytecode: factory.bytecode.object, chain: deployer.chain });
  const receipt = await client.waitForTransactionReceipt({ hash });
  return factoryAt(receipt.contractAddress as Hex, deployer, client);
}

/**
 * Deploys `e2e/contracts/GasDrainFactory.sol` (issue 23): the same `deploy(owner, salt)` and `predict` as the
 * TestWallet factory, but it deploys the wallet only when given more than `deployAbove` gas and burns the gas it
 * was given otherwise; it reverts below `requireAbove`, so a gas estimate comes out about that large.
 */
export async function deployGasDrainFactory(
  deployer: Wallet,
  client: PublicClient,
  limits: { readonly deployAbove: bigint; readonly requireAbove: bigint },
): Promise<WalletFactory> {
  testWalletArtifacts();
  const drain = JSON.parse(readFileSync(join(ROOT, "out-e2e/GasDrainFactory.sol/GasDrainFactory.json"), "utf8")) as Artifact;
  const hash = await deployer.deployContract({
    abi: drain.abi,
    bytecode: drain.bytecode.object,
    args: [limits.deployAbove, limits.requireAbove],
    chain: deployer.chain,
  });
  const receipt = await client.waitForTransactionReceipt({ hash });
  return factoryAt(receipt.contractAddress as Hex, deployer, client);
}

/** The helpers of a factory with TestWalletFactory's `deploy(owner, salt)` and `predict(owner, salt)` at `address`. */
function factoryAt(address: Hex, deployer: Wallet, client: PublicClient): WalletFactory {
  const deployCalldata = (owner: Hex, salt: number) =>
    encodeFunctionData({ abi: FACTORY_ABI, functionName: "deploy", args: [owner, pad(`0x${salt.toString(16)}`, { size: 32 })] });
  const predict = (owner: Hex, salt: number) =>
    client.readContract({ address, abi: FACTORY_ABI, functionName: "predict", args: [owner, pad(`0x${salt.toString(16)}`, { size: 32 })] });
  return {
    address,
    predict,
    async deploy(owner, salt) {
      const tx = await deployer.sendTransaction({ to: address, data: deployCalldata(owner, salt), chain: deployer.chain });
      await client.waitForTransactionReceipt({ hash: tx });
      return await predict(owner, salt);
    },
    wrap6492: (owner, salt, signature) => serializeErc6492Signature({ address, data: deployCalldata(owner, salt), signature }),
  };
}

/**
 * The creation code of a contract whose every call loops until its gas is gone (`JUMPDEST PUSH1 0 JUMP`): the code an
 * attacker names for the node to run (a factory, an `owner()`, an `isValidSignature`).
 */
export const LOOPING_CONTRACT_INITCODE = "0x635b6000566000526004601cf3" as const;
