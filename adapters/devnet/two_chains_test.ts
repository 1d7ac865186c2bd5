import { afterAll, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, createPublicClient, http, parseAbi } from "viem";
import type { TrustAnchors } from "../../ports/trust_anchors.ts";
import { DEVNET_SECOND_CHAIN_ID, readDevnetChains, startDevnet } from "./mod.ts";

const EAS_ABI = parseAbi(["function version() view returns (string)", "function getSchemaRegistry() view returns (address)"]);
const dataDir = join(mkdtempSync(join(tmpdir(), "ats-devnet-two-")), "devnet");
afterAll(() => rmSync(join(dataDir, ".."), { recursive: true, force: true }));

test("DEVNET_CHAINS=2: a second Anvil (31338) with its own EAS; the trust anchors describe both; a restart reuses both", async () => {
  const devnet = await startDevnet({ dataDir, persist: true, checkpointIntervalMs: 0, chains: 2 });
  let addresses: Address[];
  try {
    expect(devnet.chains.map((c) => [c.chainId, c.caip2])).toEqual([[31337, "eip155:31337"], [DEVNET_SECOND_CHAIN_ID, "eip155:31338"]]);
    expect(devnet.chains[0]).toMatchObject({ rpcUrl: devnet.rpcUrl, easAddress: devnet.easAddress, schemaUids: devnet.schemaUids, x402Token: devnet.x402.token });
    expect(devnet.chains[1]!.rpcUrl).not.toBe(devnet.rpcUrl);
    for (const chain of devnet.chains) {
      const client = createPublicClient({ cacheTime: 0, transport: http(chain.rpcUrl) });
      expect(await client.getChainId()).toBe(chain.chainId);
      expect(await client.readContract({ address: chain.easAddress, abi: EAS_ABI, functionName: "version" })).toBe("1.4.0");
      expect(await client.readContract({ address: chain.easAddress, abi: EAS_ABI, functionName: "getSchemaRegistry" })).toBe(chain.schemaRegistryAddress);
      expect((await client.getCode({ address: chain.x402Token }))?.length).toBeGreaterThan(2);
    }
    // Schema UIDs do not depend on the chain; each chain's registry holds them.
    expect(devnet.chains[1]!.schemaUids).toEqual(devnet.schemaUids);

    const anchors = JSON.parse(readFileSync(devnet.trustAnchorsPath, "utf8")) as TrustAnchors;
    expect(Object.keys(anchors.chains)).toEqual(["eip155:31337", "eip155:31338"]);
    // Each chain its own name (found by attack): with one name, writes' `chain` and the console's picker were ambiguous.
    expect(devnet.chains.map((c) => anchors.chains[c.caip2]!.name)).toEqual(["ATS Devnet", "ATS Devnet 2"]);
    for (const chain of devnet.chains) {
      expect(anchors.chains[chain.caip2]).toMatchObject({ easContract: chain.easAddress });
      expect(Object.keys(anchors.chains[chain.caip2]!.schemas)).not.toContain("linked-identifier-legacy");
    }
    expect(anchors.registries[0]!.issuers).toHaveLength(1);
    // Each chain keeps its own state, lock and record.
    expect(JSON.parse(readFileSync(join(dataDir, "chain-31338", "devnet.json"), "utf8"))).toMatchObject({ chainId: 31338, easAddress: devnet.chains[1]!.easAddress });
    expect(JSON.parse(readFileSync(join(dataDir, "devnet.json"), "utf8"))).toMatchObject({ chainId: 31337, easAddress: devnet.easAddress });
    addresses = devnet.chains.map((c) => c.easAddress);
  } finally {
    await devnet.stop();
  }
  expect(existsSync(join(dataDir, "chain-31338", "anvil-state.json"))).toBe(true);
  const again = await startDevnet({ dataDir, persist: true, checkpointIntervalMs: 0, chains: 2 });
  try {
    expect(again.chains.map((c) => c.easAddress)).toEqual(addresses);
    expect(again.chains.map((c) => c.deployBlock)).toEqual(devnet.chains.map((c) => c.deployBlock));
  } finally {
    await again.stop();
  }
}, 120_000);

test("readDevnetChains(): 1 by default, 2 on request, anything else refused with a line naming it", () => {
  expect(readDevnetChains(undefined)).toBe(1);
  expect(readDevnetChains(" ")).toBe(1);
  expect(readDevnetChains("1")).toBe(1);
  expect(readDevnetChains("2")).toBe(2);
  for (const bad of ["3", "0", "two", "-1"]) expect(() => readDevnetChains(bad)).toThrow("DEVNET_CHAINS must be 1 or 2");
});
