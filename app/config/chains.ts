/**
 * The chains the deployment serves (decisions §30): the `chains` section. Without `CHAINS_FILE` it holds today's
 * single chain, the one `RPC_URL` names or the embedded devnet's (`DEVNET_CHAINS=2`: a second one, chain 31338).
 */
import { readFileSync } from "node:fs";
import { Type } from "@sinclair/typebox";
import { choice, ConfigError, int, matching, optionalInt, optionalText, raw, readSection, type ReadContext } from "./_declare.ts";
import { type ChainConfig, readChainsFile } from "./_chains_file.ts";

export type { ChainConfig, ChainRole } from "./_chains_file.ts";

/** The `chains` section's variables. */
export const ChainsSection = Type.Object({
  rpcUrl: optionalText("RPC_URL", {
    doc: "(none: embedded devnet)",
    description: "JSON-RPC endpoint of an existing chain",
    check: matching("RPC_URL", /^https?:\/\//, "expected an http(s) URL"),
  }),
  wsUrl: optionalText("RPC_WS_URL", {
    doc: "unset",
    description: "the node's WebSocket endpoint: each newHeads makes the follower poll at once",
    check: matching("RPC_WS_URL", /^wss?:\/\/[^\s]+$/, "expected a ws(s) URL"),
  }),
  startBlock: optionalText("START_BLOCK", {
    doc: "devnet deploy block",
    description: "first block with attestations",
    check: matching("START_BLOCK", /^[0-9]+$/, "expected a block number"),
  }),
  confirmations: optionalInt("INDEX_CONFIRMATIONS", { doc: "12; devnet 0", maximum: 10_000, description: "blocks behind the head that may still be reorganized" }),
  file: optionalText("CHAINS_FILE", { doc: "(none: the one chain of RPC_URL or the devnet)", description: "a JSON list of the chains served (decisions §30)" }),
  defaultChain: optionalText("DEFAULT_CHAIN", { doc: "the first attestations chain", description: "the chain a request that names none is answered on" }),
  devnetChains: int("DEVNET_CHAINS", { default: 1, minimum: 1, maximum: 2, description: "chains of the embedded devnet (2: a second, chain 31338)" }),
  activeChain: choice("NEXT_PUBLIC_ACTIVE_CHAIN", ["testnet", "omachain-testnet", "mainnet", "omachain-mainnet"], {
    default: "omachain-testnet",
    description: "testnet or mainnet; mainnet answers delegated-attest with 501",
    reason: (value) => `expected testnet, omachain-testnet, mainnet or omachain-mainnet, got "${value}"`,
  }),
  trustAnchorsPath: optionalText("TRUST_ANCHORS_PATH", { doc: "devnet's file", description: "trust-anchors JSON (required with RPC_URL or CHAINS_FILE)" }),
  artifactTrustRpcTimeoutMs: int("ARTIFACT_TRUST_RPC_TIMEOUT_MS", {
    default: 8_000,
    minimum: 100,
    maximum: 60_000,
    description: "how long the index follower waits for one JSON-RPC request (retried twice)",
  }),
  rpcSendSync: choice("RPC_SEND_SYNC", ["auto", "off"], {
    default: "auto",
    description: "auto: eth_sendRawTransactionSync while the node mines on arrival; off: never",
    reason: (value) => `expected auto or off, got "${value}"`,
  }),
}, { title: "chains" });

/** The chains served and how the service reads them. */
export type ChainsConfig = {
  /** The default chain's CAIP-2; undefined: the one chain `RPC_URL` names. */
  readonly default: string | undefined;
  /**
   * `DEFAULT_CHAIN` beside `RPC_URL`: the chain id the operator means, checked against the node's at start (another
   * stops it). Before, it was ignored, and the service served whatever chain `RPC_URL` answered for.
   */
  readonly rpcUrlChainId?: number | undefined;
  readonly list: readonly ChainConfig[];
  /** `DEVNET_CHAINS`: chains the embedded devnet starts. */
  readonly devnetChains: 1 | 2;
  readonly activeChain: "testnet" | "mainnet";
  readonly trustAnchorsPath: string | undefined;
  /** `ARTIFACT_TRUST_RPC_TIMEOUT_MS`: one JSON-RPC request of the follower, before it is retried. */
  readonly artifactTrustRpcTimeoutMs: number;
  readonly rpcSendSync: "auto" | "off";
};

/** The chain a request that names none is answered on (and, for now, the one every capability uses). */
export function defaultChain(chains: ChainsConfig): ChainConfig {
  return chains.list.find((chain) => chain.caip2 === chains.default) ?? chains.list[0]!;
}

/**
 * Blocks behind a chain's head that may still be reorganized: its `confirmations` (`INDEX_CONFIRMATIONS` or the chains
 * file), else 12, or 0 on the embedded devnet, which mines on demand and never reorganizes by itself. The index, the
 * submission status, webhooks and kept transaction receipts all count with it.
 */
export function confirmationsOf(chain: Pick<ChainConfig, "confirmations"> | undefined, devnet: boolean): number {
  return chain?.confirmations ?? (devnet ? 0 : 12);
}

/** The chains that carry EAS (index, relays, witness, reads, webhooks). */
export function attestationChains(chains: ChainsConfig): ChainConfig[] {
  return chains.list.filter((chain) => chain.role === "attestations");
}

/** Whether the embedded devnet serves the chains (no `RPC_URL`, no `CHAINS_FILE`). */
export function usesDevnet(env: ReadContext["env"]): boolean {
  return raw(env, "RPC_URL") === undefined && raw(env, "CHAINS_FILE") === undefined;
}

/** Reads the `chains` section: `CHAINS_FILE`'s chains, else today's one. */
export function readChains(ctx: Omit<ReadContext, "values">, readFile: (path: string) => string = (path) => readFileSync(path, "utf8")): ChainsConfig {
  const v = readSection(ChainsSection, ctx);
  const common = {
    devnetChains: v.devnetChains as 1 | 2,
    activeChain: v.activeChain === "mainnet" || v.activeChain === "omachain-mainnet" ? "mainnet" as const : "testnet" as const,
    trustAnchorsPath: v.trustAnchorsPath,
    artifactTrustRpcTimeoutMs: v.artifactTrustRpcTimeoutMs,
    rpcSendSync: v.rpcSendSync,
  };
  if (v.file !== undefined) {
    for (const [name, value] of [["RPC_URL", v.rpcUrl], ["RPC_WS_URL", v.wsUrl], ["START_BLOCK", v.startBlock], ["INDEX_CONFIRMATIONS", v.confirmations]] as const) {
      if (value !== undefined) throw new ConfigError(name, "set, but CHAINS_FILE lists the chains (give it there)");
    }
    if (v.trustAnchorsPath === undefined) throw new ConfigError("TRUST_ANCHORS_PATH", "required when CHAINS_FILE is set");
    const list = readChainsFile(v.file, readFile);
    return { ...common, default: pickDefault(list, v.defaultChain), list };
  }
  if (v.rpcUrl !== undefined && v.trustAnchorsPath === undefined) throw new ConfigError("TRUST_ANCHORS_PATH", "required when RPC_URL is set");
  const startBlock = v.startBlock === undefined ? undefined : BigInt(v.startBlock);
  const one = { rpcUrl: v.rpcUrl, wsUrl: v.wsUrl, startBlock, confirmations: v.confirmations, role: "attestations" as const };
  const list: ChainConfig[] = v.rpcUrl !== undefined
    ? [{ caip2: undefined, chainId: undefined, ...one }]
    : [31337, 31338].slice(0, v.devnetChains).map((chainId, i) => ({
      caip2: `eip155:${chainId}`,
      chainId,
      ...(i === 0 ? one : { rpcUrl: undefined, role: "attestations" as const }),
    }));
  if (v.rpcUrl === undefined) return { ...common, default: pickDefault(list, v.defaultChain), list };
  return { ...common, default: undefined, list, ...(v.defaultChain === undefined ? {} : { rpcUrlChainId: chainIdNamed(v.defaultChain) }) };
}

/** A `DEFAULT_CHAIN` given with `RPC_URL`: a decimal chain id or `eip155:<id>`. */
function chainIdNamed(named: string): number {
  const match = /^(?:eip155:)?([1-9][0-9]{0,15})$/.exec(named);
  if (match === null) throw new ConfigError("DEFAULT_CHAIN", `${named} is not a chain id (8453) or CAIP-2 (eip155:8453)`);
  return Number(match[1]);
}

/** `DEFAULT_CHAIN` (CAIP-2 or a decimal chain id) among the attestation chains; unset: the first of them. */
function pickDefault(list: readonly ChainConfig[], named: string | undefined): string {
  const attestations = list.filter((chain) => chain.role === "attestations");
  if (named === undefined) return attestations[0]!.caip2!;
  const caip2 = /^[1-9][0-9]{0,18}$/.test(named) ? `eip155:${named}` : named;
  if (!attestations.some((chain) => chain.caip2 === caip2)) {
    throw new ConfigError("DEFAULT_CHAIN", `${named} is not an attestation chain the deployment serves`);
  }
  return caip2;
}
