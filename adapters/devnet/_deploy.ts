import {
  type Account,
  type Address,
  type Chain,
  type Hash,
  type Hex,
  type PublicClient,
  type TransactionReceipt,
  type Transport,
  type WalletClient,
  getAddress,
  isAddressEqual,
  parseEventLogs,
  zeroAddress,
} from "viem";
import { KNOWN_SCHEMAS, computeSchemaUid } from "../../domain/schemas.ts";
import type { EasArtifacts } from "./_artifacts.ts";

/** The clients a deployment runs through. */
export type DeployClients = {
  publicClient: PublicClient<Transport, Chain>;
  walletClient: WalletClient<Transport, Chain, Account>;
};

/** A deployment to reuse, as far as it still exists on the chain. */
export type KnownDeployment = { easAddress: Address; schemaRegistryAddress: Address; deployBlock: bigint };

/** The deployment after `ensureDeployment`. */
export type EnsuredDeployment = KnownDeployment & {
  schemaUids: Record<string, Hex>;
  /** True when SchemaRegistry was (re)deployed, i.e. this is a new deployment. */
  freshRegistry: boolean;
  /** Anything deployed or registered. */
  changed: boolean;
};

/** Makes sure SchemaRegistry, EAS on top of it and every known schema exist, deploying only what is missing. */
export async function ensureDeployment(
  clients: DeployClients,
  artifacts: EasArtifacts,
  options: { previous?: KnownDeployment | undefined; log: (line: string) => void },
): Promise<EnsuredDeployment> {
  const { previous, log } = options;
  const registryAbi = artifacts.schemaRegistry.abi;
  let changed = false;

  const [registryOk, easOk] = previous
    ? await Promise.all([
      isSchemaRegistry(clients, artifacts, previous.schemaRegistryAddress),
      isEasOn(clients, artifacts, previous.easAddress, previous.schemaRegistryAddress),
    ])
    : [false, false];

  let schemaRegistryAddress: Address;
  let deployBlock: bigint;
  if (previous && registryOk) {
    schemaRegistryAddress = previous.schemaRegistryAddress;
    deployBlock = previous.deployBlock;
  } else {
    const deployed = await deploy(clients, artifacts.schemaRegistry, []);
    schemaRegistryAddress = deployed.address;
    deployBlock = deployed.block;
    changed = true;
    log(`deployed SchemaRegistry at ${schemaRegistryAddress} (block ${deployBlock})`);
  }

  let easAddress: Address;
  if (previous && registryOk && easOk) {
    easAddress = previous.easAddress;
  } else {
    easAddress = (await deploy(clients, artifacts.eas, [schemaRegistryAddress])).address;
    changed = true;
    log(`deployed EAS at ${easAddress}`);
  }

  const expected = KNOWN_SCHEMAS.map((definition) => ({ definition, uid: computeSchemaUid(definition) }));
  const records = await Promise.all(expected.map(({ uid }) => readSchema(clients, registryAbi, schemaRegistryAddress, uid)));
  const missing = expected.filter((_, i) => records[i]?.uid !== expected[i]?.uid);
  for (const [i, record] of records.entries()) {
    const { definition, uid } = expected[i]!;
    if (record.uid === uid && (record.schema !== definition.schema || record.revocable !== definition.revocable)) {
      // Impossible unless the registry is not what it claims: the UID hashes schema and revocability.
      throw new Error(`Schema ${definition.name} at ${uid} does not match its definition`);
    }
  }

  if (missing.length > 0) {
    // Sent one after another in nonce order, their receipts then awaited together. Sent all at once, they reached
    // Anvil out of order, and its automine could leave one whose nonce gap had just filled unmined, with no later
    // transaction to mine it: a CI run's devnet then polled 60 s for a receipt that never came.
    const account = clients.walletClient.account;
    const nonce = await clients.publicClient.getTransactionCount({ address: account.address, blockTag: "pending" });
    const hashes: Hash[] = [];
    for (const [i, { definition }] of missing.entries()) {
      hashes.push(await clients.walletClient.writeContract({
        address: schemaRegistryAddress,
        abi: registryAbi,
        functionName: "register",
        args: [definition.schema, zeroAddress, definition.revocable],
        nonce: nonce + i,
      }));
    }
    const receipts = await Promise.all(hashes.map((hash) => receiptOf(clients, hash)));
    for (const [i, receipt] of receipts.entries()) {
      const { definition, uid } = missing[i]!;
      const registered = parseEventLogs({ abi: registryAbi, logs: receipt.logs, eventName: "Registered" })
        .map((event) => (event.args as { uid?: Hex }).uid);
      if (receipt.status !== "success" || registered[0] !== uid) {
        throw new Error(`Registering schema ${definition.name} gave UID ${registered[0] ?? "none"}, expected ${uid}`);
      }
    }
    changed = true;
    log(`registered ${missing.length} schema(s): ${missing.map((m) => m.definition.name).join(", ")}`);
  }

  const schemaUids = Object.fromEntries(expected.map(({ definition, uid }) => [definition.name, uid]));
  return {
    easAddress,
    schemaRegistryAddress,
    deployBlock,
    schemaUids,
    freshRegistry: !(previous && registryOk),
    changed,
  };
}

async function hasCode(clients: DeployClients, address: Address): Promise<boolean> {
  const code = await clients.publicClient.getCode({ address });
  return code !== undefined && code !== "0x";
}

async function isSchemaRegistry(clients: DeployClients, artifacts: EasArtifacts, address: Address): Promise<boolean> {
  try {
    if (!(await hasCode(clients, address))) return false;
    await clients.publicClient.readContract({ address, abi: artifacts.schemaRegistry.abi, functionName: "version" });
    return true;
  } catch {
    return false;
  }
}

async function isEasOn(clients: DeployClients, artifacts: EasArtifacts, address: Address, registry: Address): Promise<boolean> {
  try {
    if (!(await hasCode(clients, address))) return false;
    const bound = await clients.publicClient.readContract({ address, abi: artifacts.eas.abi, functionName: "getSchemaRegistry" });
    return typeof bound === "string" && isAddressEqual(bound as Address, registry);
  } catch {
    return false;
  }
}

type SchemaRecord = { uid: Hex; resolver: Address; revocable: boolean; schema: string };

async function readSchema(clients: DeployClients, abi: EasArtifacts["schemaRegistry"]["abi"], registry: Address, uid: Hex): Promise<SchemaRecord> {
  return (await clients.publicClient.readContract({ address: registry, abi, functionName: "getSchema", args: [uid] })) as SchemaRecord;
}

async function deploy(
  clients: DeployClients,
  artifact: EasArtifacts["eas"],
  args: readonly unknown[],
): Promise<{ address: Address; block: bigint }> {
  const hash = await clients.walletClient.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args });
  const receipt = await receiptOf(clients, hash);
  if (receipt.status !== "success" || !receipt.contractAddress) throw new Error(`Deployment transaction ${hash} failed`);
  return { address: getAddress(receipt.contractAddress), block: receipt.blockNumber };
}

// With automine the receipt exists as soon as the transaction is accepted; ask once before polling.
async function receiptOf(clients: DeployClients, hash: Hash): Promise<TransactionReceipt> {
  try {
    return await clients.publicClient.getTransactionReceipt({ hash });
  } catch {
    return await clients.publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50, timeout: 60_000 });
  }
}
