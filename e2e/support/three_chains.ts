/**
 * Three local chains for tests of several chains (decisions §30): two attestation chains with EAS (31337 and 31338,
 * the devnet's `DEVNET_CHAINS=2`, trust anchors describing both) and one proof chain (a bare Anvil, 31339 by
 * default). Each is reached through a JSON-RPC proxy that records every call, so a test counts calls per chain. A
 * `CHAINS_FILE` naming the three (proxy URLs) is written beside the anchors.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { type Anvil, type Devnet, startAnvil, startDevnet } from "../../adapters/devnet/mod.ts";
import { type RpcProxy, startRpcProxy } from "./rpc_proxy.ts";

/** One of the three chains. */
export type TestChain = {
  readonly chainId: number;
  readonly caip2: string;
  readonly role: "attestations" | "proofs";
  /** The proxy's URL: what a service under test is given. */
  readonly rpcUrl: string;
  /** The node itself, for a test's own reads and writes that must not be counted. */
  readonly nodeUrl: string;
  /** Every JSON-RPC call the proxy saw. */
  readonly proxy: RpcProxy;
  /** Attestation chains only. */
  readonly easAddress?: Address | undefined;
  readonly schemaUids?: Record<string, Hex> | undefined;
  /** Attestation chains only: the devnet's x402 test token on this chain (EIP-3009, minted to every dev account). */
  readonly x402Token?: Address | undefined;
};

/** The three chains running. */
export type ThreeChains = {
  /** Attestation chains first (the default first), then the proof chain. */
  readonly chains: readonly [TestChain, TestChain, TestChain];
  /** The devnet's anchors: both attestation chains, its witness. */
  readonly trustAnchorsPath: string;
  /** `[{caip2, rpcUrl, role}]`, the proxies' URLs. */
  readonly chainsFilePath: string;
  /** The devnet's keys (the same dev accounts hold ether on all three chains). */
  readonly keys: Devnet["keys"];
  /** The x402 test token's name, version and the devnet's payee (`token` is the default chain's; each chain's is its `x402Token`). */
  readonly x402: Devnet["x402"];
  /** The JSON-RPC calls of one chain by method, e.g. `calls(31339, "eth_getTransactionReceipt")`. */
  readonly calls: (chainId: number, method?: string) => number;
  readonly stop: () => Promise<void>;
};

/** Starts the three chains under `dataDir` (ephemeral chains; the files are written there). */
export async function startThreeChains(options: { dataDir: string; proofChainId?: number | undefined }): Promise<ThreeChains> {
  mkdirSync(options.dataDir, { recursive: true });
  const proofChainId = options.proofChainId ?? 31339;
  const devnet = await startDevnet({ dataDir: join(options.dataDir, "devnet"), persist: false, chains: 2 });
  let anvil: Anvil | undefined;
  const proxies: RpcProxy[] = [];
  const stop = async () => {
    await Promise.all(proxies.map((p) => p.stop()));
    await Promise.all([devnet.stop(), anvil?.stop()]);
  };
  try {
    anvil = await startAnvil({ chainId: proofChainId, log: () => {}, binaryDir: join(options.dataDir, "bin") });
    const proxied = (nodeUrl: string) => {
      const proxy = startRpcProxy(nodeUrl);
      proxies.push(proxy);
      return proxy;
    };
    const attesting = devnet.chains.map((c): TestChain => {
      const proxy = proxied(c.rpcUrl);
      return { chainId: c.chainId, caip2: c.caip2, role: "attestations", rpcUrl: proxy.url, nodeUrl: c.rpcUrl, proxy, easAddress: c.easAddress, schemaUids: c.schemaUids, x402Token: c.x402Token };
    });
    const proofProxy = proxied(anvil.rpcUrl);
    const proof: TestChain = { chainId: proofChainId, caip2: `eip155:${proofChainId}`, role: "proofs", rpcUrl: proofProxy.url, nodeUrl: anvil.rpcUrl, proxy: proofProxy };
    const chains = [attesting[0]!, attesting[1]!, proof] as const;
    const chainsFilePath = join(options.dataDir, "chains.json");
    writeFileSync(chainsFilePath, JSON.stringify(chains.map((c) => ({ caip2: c.caip2, rpcUrl: c.rpcUrl, role: c.role })), null, 2));
    return {
      chains,
      trustAnchorsPath: devnet.trustAnchorsPath,
      chainsFilePath,
      keys: { ...devnet.keys, users: [...devnet.keys.users] },
      x402: devnet.x402,
      calls: (chainId, method) => {
        const chain = chains.find((c) => c.chainId === chainId);
        if (chain === undefined) throw new Error(`No test chain ${chainId}`);
        return chain.proxy.calls.filter((call) => method === undefined || call.method === method).length;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * The service's environment on the three chains (`bun main.ts` through startServiceProcess): their chains file and
 * anchors, the test keys (raw: chains 31338 and 31339 are not devnet ids to the raw-key rule, decisions §27, hence
 * `ALLOW_RAW_KEYS`), and `DATA_DIR` under `dir`. A test adds its own variables after these.
 */
export function threeChainsServiceEnv(three: ThreeChains, dir: string): Record<string, string> {
  return {
    PORT: "0",
    CHAINS_FILE: three.chainsFilePath,
    TRUST_ANCHORS_PATH: three.trustAnchorsPath,
    DELEGATE_PRIVATE_KEY: three.keys.delegate,
    ALLOW_RAW_KEYS: "true",
    WITNESS_PRIVATE_KEY: three.keys.witness,
    DATA_DIR: join(dir, "service"),
  };
}
