import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, type Hex, createPublicClient, createTestClient, createWalletClient, getAddress, http, parseAbi } from "viem";
import { generatePrivateKey, mnemonicToAccount, privateKeyToAccount } from "viem/accounts";
import { KNOWN_SCHEMAS, computeSchemaUid } from "../../domain/schemas.ts";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { startAnvil } from "./_anvil.ts";
import { createStateCheckpointer } from "./_state.ts";
import { ANVIL_DEV_ADDRESSES, ANVIL_DEV_KEYS, type Devnet, startDevnet } from "./mod.ts";

const REGISTRY_ABI = parseAbi([
  "struct SchemaRecord { bytes32 uid; address resolver; bool revocable; string schema; }",
  "function getSchema(bytes32 uid) view returns (SchemaRecord)",
]);
const EAS_ABI = parseAbi(["function version() view returns (string)", "function getSchemaRegistry() view returns (address)"]);

const forgeBuilt = existsSync(join(import.meta.dir, "..", "..", "out", "EAS.sol", "EAS.json"));
const primaryArtifacts = forgeBuilt ? "forge" : "npm";

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ats-devnet-"));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function clientFor(devnet: Devnet) {
  return createPublicClient({ cacheTime: 0, transport: http(devnet.rpcUrl), pollingInterval: 50 });
}

describe(`startDevnet() on an ephemeral chain (${primaryArtifacts} artifacts)`, () => {
  let devnet: Devnet;
  let dataDir: string;
  const witnessKey = generatePrivateKey();
  beforeAll(async () => {
    dataDir = join(tempDir(), "devnet");
    devnet = await startDevnet({ dataDir, persist: false, artifacts: primaryArtifacts, witnessPrivateKey: witnessKey });
  });
  afterAll(async () => {
    await devnet?.stop();
  });

  test("deploys EAS 1.4.0 on top of the SchemaRegistry", async () => {
    const client = clientFor(devnet);
    expect(await client.getChainId()).toBe(31337);
    expect(devnet.chainName).toBe("ATS Devnet");
    expect(await client.readContract({ address: devnet.easAddress, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
    expect(await client.readContract({ address: devnet.easAddress, abi: EAS_ABI, functionName: "getSchemaRegistry" }))
      .toBe(devnet.schemaRegistryAddress);
    const deployment = await client.getCode({ blockNumber: devnet.deployBlock, address: devnet.schemaRegistryAddress });
    expect(deployment?.length).toBeGreaterThan(2);
  });

  test("registers every known schema with its string and revocability", async () => {
    const client = clientFor(devnet);
    expect(Object.keys(devnet.schemaUids).sort()).toEqual(KNOWN_SCHEMAS.map((s) => s.name).sort());
    for (const definition of KNOWN_SCHEMAS) {
      const uid = devnet.schemaUids[definition.name]!;
      expect(uid).toBe(computeSchemaUid(definition));
      const record = await client.readContract({
        address: devnet.schemaRegistryAddress,
        abi: REGISTRY_ABI,
        functionName: "getSchema",
        args: [uid],
      });
      expect(record).toEqual({
        uid,
        resolver: "0x0000000000000000000000000000000000000000",
        revocable: definition.revocable,
        schema: definition.schema,
      });
    }
  });

  test("writes trust anchors naming the chain, EAS, the current schemas and the witness", async () => {
    expect(devnet.trustAnchorsPath).toBe(join(dataDir, "trust-anchors.json"));
    const anchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8")) as TrustAnchors;
    const { "linked-identifier-legacy": legacy, ...announced } = devnet.schemaUids;
    expect(legacy).toBeDefined();
    expect(anchors).toEqual({
      version: 1,
      updatedAt: expect.any(String),
      widgetOrigins: [],
      chains: { "eip155:31337": { name: "ATS Devnet", easContract: devnet.easAddress, schemas: announced } },
      registries: [{
        type: "approved-issuers",
        issuers: [{
          address: privateKeyToAccount(witnessKey).address,
          label: "ATS Devnet Witness",
          schemas: ["controller-witness"],
          status: "active",
          validFrom: expect.any(String),
        }],
      }],
    } as unknown as TrustAnchors);
    expect(Number.isNaN(Date.parse(anchors.updatedAt))).toBe(false);
    // Trusted from the deployment block, in whole seconds like EAS's attestation `time`.
    const deployTime = (await clientFor(devnet).getBlock({ blockNumber: devnet.deployBlock })).timestamp;
    expect(anchors.registries[0]?.issuers[0]?.validFrom).toBe(new Date(Number(deployTime) * 1000).toISOString());
    const record = JSON.parse(readFileSync(join(dataDir, "devnet.json"), "utf8"));
    expect(record).toMatchObject({
      chainId: 31337,
      easAddress: devnet.easAddress,
      schemaRegistryAddress: devnet.schemaRegistryAddress,
      deployBlock: devnet.deployBlock.toString(),
      schemaUids: devnet.schemaUids,
    });
    expect(existsSync(join(dataDir, "anvil-state.json"))).toBe(false);
  });

  test("funds the delegate and a witness key Anvil does not know", async () => {
    const client = clientFor(devnet);
    expect(devnet.keys.deployer).toBe(ANVIL_DEV_KEYS[0]!);
    expect(devnet.keys.delegate).toBe(ANVIL_DEV_KEYS[1]!);
    expect(devnet.keys.witness).toBe(witnessKey);
    expect(devnet.keys.users).toEqual(ANVIL_DEV_KEYS.slice(3));
    for (const key of [devnet.keys.delegate, devnet.keys.witness, ...devnet.keys.users]) {
      expect(await client.getBalance({ address: privateKeyToAccount(key).address })).toBeGreaterThanOrEqual(10n ** 21n);
    }
  });

  test("ANVIL_DEV_KEYS are the dev accounts of Anvil's mnemonic", async () => {
    const accounts = await createWalletClient({ transport: http(devnet.rpcUrl) }).getAddresses();
    const mnemonic = "test test test test test test test test test test test junk";
    ANVIL_DEV_KEYS.forEach((key, i) => {
      const address = privateKeyToAccount(key).address;
      expect(address).toBe(mnemonicToAccount(mnemonic, { addressIndex: i }).address);
      expect(address).toBe(getAddress(accounts[i]!));
    });
    // ANVIL_DEV_ADDRESSES, which the raw-key rule refuses off a devnet, are theirs.
    // With them, the next ten of the same published mnemonic (Hardhat's twenty default accounts).
    const published = Array.from({ length: 20 }, (_, i) => mnemonicToAccount("test test test test test test test test test test test junk", { addressIndex: i }).address.toLowerCase());
    expect(new Set(ANVIL_DEV_ADDRESSES)).toEqual(new Set(published));
    for (const key of ANVIL_DEV_KEYS) expect(ANVIL_DEV_ADDRESSES.has(privateKeyToAccount(key).address.toLowerCase())).toBe(true);
  });

  test(`deploys the same contracts from ${forgeBuilt ? "npm" : "forge"} artifacts`, async () => {
    if (!forgeBuilt) return; // no forge build: only the npm artifacts exist
    const other = await startDevnet({ dataDir: tempDir(), persist: false, artifacts: "npm", witnessPrivateKey: witnessKey });
    try {
      expect(other.easAddress).toBe(devnet.easAddress);
      for (const address of [devnet.easAddress, devnet.schemaRegistryAddress]) {
        const code = await clientFor(other).getCode({ address });
        expect(code?.length).toBeGreaterThan(2);
        expect(code).toBe(await clientFor(devnet).getCode({ address }));
      }
    } finally {
      await other.stop();
    }
  });
});

test("startDevnet() reuses a persisted deployment and keeps state written just before a restart", async () => {
  const dataDir = tempDir();
  const probe = privateKeyToAccount(generatePrivateKey()).address as Address;
  const first = await startDevnet({ dataDir, artifacts: primaryArtifacts });
  let firstBlock: bigint;
  try {
    const test = createTestClient({ mode: "anvil", transport: http(first.rpcUrl) });
    // Stopped well within the 2 s checkpoint interval: only the save in stop() can keep this.
    await test.setBalance({ address: probe, value: 123_456_789n });
    await test.mine({ blocks: 3 });
    firstBlock = await clientFor(first).getBlockNumber({ cacheTime: 0 });
  } finally {
    await first.stop();
  }
  const anchorsBefore = readFileSync(first.trustAnchorsPath, "utf8");

  const second = await startDevnet({ dataDir, artifacts: primaryArtifacts });
  try {
    const client = clientFor(second);
    expect(second.easAddress).toBe(first.easAddress);
    expect(second.schemaRegistryAddress).toBe(first.schemaRegistryAddress);
    expect(second.deployBlock).toBe(first.deployBlock);
    expect(second.schemaUids).toEqual(first.schemaUids);
    expect(await client.getBalance({ address: probe })).toBe(123_456_789n);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBeGreaterThanOrEqual(firstBlock);
    // Nothing changed, so the anchors file (and its updatedAt) is left alone.
    expect(readFileSync(second.trustAnchorsPath, "utf8")).toBe(anchorsBefore);
  } finally {
    await second.stop();
  }
});

test("startDevnet() redeploys when the chain state is lost", async () => {
  const dataDir = tempDir();
  const first = await startDevnet({ dataDir, artifacts: primaryArtifacts });
  await first.stop();
  rmSync(join(dataDir, "anvil-state.json"));
  const otherWitness = generatePrivateKey();
  const second = await startDevnet({ dataDir, artifacts: primaryArtifacts, witnessPrivateKey: otherWitness });
  try {
    const client = clientFor(second);
    expect(await client.readContract({ address: second.easAddress, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
    const uid: Hex = second.schemaUids["controller-witness"]!;
    const record = await client.readContract({ address: second.schemaRegistryAddress, abi: REGISTRY_ABI, functionName: "getSchema", args: [uid] });
    expect(record.uid).toBe(uid);
    const anchors = JSON.parse(readFileSync(second.trustAnchorsPath, "utf8")) as TrustAnchors;
    expect(anchors.registries[0]?.issuers[0]?.address).toBe(privateKeyToAccount(otherWitness).address);
  } finally {
    await second.stop();
  }
});

test("startDevnet() sets an unreadable state file aside and starts a new chain", async () => {
  const dataDir = tempDir();
  writeFileSync(join(dataDir, "anvil-state.json"), "{\"truncated");
  const devnet = await startDevnet({ dataDir, artifacts: primaryArtifacts });
  try {
    expect(await clientFor(devnet).readContract({ address: devnet.easAddress, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
    expect(readdirSync(dataDir).some((name) => name.startsWith("anvil-state.json.unreadable-"))).toBe(true);
  } finally {
    await devnet.stop();
  }
});

describe("createStateCheckpointer()", () => {
  /** A fetch that counts `anvil_dumpState` calls and holds each answer until the test releases it. */
  function heldDumps() {
    const held: (() => void)[] = [];
    let dumps = 0;
    const fetchFn = (async (input: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(input, init);
      if ((JSON.parse(String(init?.body)) as { method: string }).method !== "anvil_dumpState") return response;
      dumps++;
      await new Promise<void>((resolve) => held.push(resolve));
      return response;
    }) as unknown as typeof fetch;
    return {
      fetchFn,
      dumps: () => dumps,
      /** Waits for dump number `n` to be held, then lets it through. */
      async release(n: number) {
        while (held.length < n) await Bun.sleep(5);
        held[n - 1]!();
      },
      async waitForDumps(n: number) {
        while (dumps < n) await Bun.sleep(5);
      },
    };
  }

  function tracked(promise: Promise<void>) {
    const state = { done: false, promise };
    promise.then(() => {
      state.done = true;
    });
    return state;
  }

  test("coalesces concurrent calls: one save runs, one more covers every call that came meanwhile; a block mined during a dump makes it dump again", async () => {
    const anvil = await startAnvil({ chainId: 31337, log: () => {} });
    try {
      const stateFile = join(tempDir(), "anvil-state.json");
      const savedHead = () => Number(JSON.parse(readFileSync(stateFile, "utf8")).block.number);
      const test = createTestClient({ mode: "anvil", transport: http(anvil.rpcUrl) });
      const held = heldDumps();
      const { checkpoint } = createStateCheckpointer({ rpcUrl: anvil.rpcUrl, stateFile, log: () => {}, fetchFn: held.fetchFn });

      const first = tracked(checkpoint()); // dump 1 begins at block 0
      await held.waitForDumps(1);
      await test.mine({ blocks: 1 });
      const second = tracked(checkpoint());
      const third = tracked(checkpoint());
      await held.release(1);
      // A block came during dump 1: Anvil may have read its accounts and its blocks on either side of it, so the
      // save dumps again (dump 2) before it writes anything.
      await held.waitForDumps(2);
      expect(first.done).toBe(false);
      await held.release(2);
      await first.promise;
      expect(savedHead()).toBe(1);
      // Dump 1 began before they called: they wait for the next save (dump 3).
      await held.waitForDumps(3);
      expect(second.done || third.done).toBe(false);
      await held.release(3);
      await Promise.all([second.promise, third.promise]);
      await test.mine({ blocks: 1 });
      const fourth = tracked(checkpoint());
      await held.waitForDumps(4);
      expect(fourth.done).toBe(false);
      await held.release(4);
      await fourth.promise;
      expect(savedHead()).toBe(2);
      expect(held.dumps()).toBe(4);

      // Ten at once from idle (the last save's bookkeeping done): the first runs, the nine others share one more.
      await Bun.sleep(10);
      const many = Array.from({ length: 10 }, () => checkpoint());
      await held.release(5);
      await held.release(6);
      await Promise.all(many);
      expect(held.dumps()).toBe(6);
      expect(existsSync(`${stateFile}.tmp`)).toBe(false);
    } finally {
      await anvil.stop();
    }
  });

  test("a save that fails rejects its callers and the next one starts afresh", async () => {
    const anvil = await startAnvil({ chainId: 31337, log: () => {} });
    const stateFile = join(tempDir(), "anvil-state.json");
    const { checkpoint } = createStateCheckpointer({ rpcUrl: anvil.rpcUrl, stateFile, log: () => {} });
    await checkpoint();
    const before = readFileSync(stateFile, "utf8");
    await anvil.stop();
    await expect(checkpoint()).rejects.toThrow();
    await expect(checkpoint()).rejects.toThrow();
    // The last good state is left as it was.
    expect(readFileSync(stateFile, "utf8")).toBe(before);
  });
});
