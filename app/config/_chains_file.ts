/** `CHAINS_FILE` (decisions §30): a JSON list of chains, each refused with one line naming the file and the chain. */
import { ConfigError } from "./_declare.ts";

/** What a chain is served for: EAS and everything on it, or transaction proofs only. */
export type ChainRole = "attestations" | "proofs";

/** One chain the deployment serves. */
export type ChainConfig = {
  /** `eip155:<chainId>`; undefined: the chain `RPC_URL` names, whose id is read from the node at start. */
  readonly caip2: string | undefined;
  readonly chainId: number | undefined;
  /** Undefined: the embedded devnet's. */
  readonly rpcUrl: string | undefined;
  /** A `ws(s)://` endpoint whose `newHeads` make the chain's follower poll at once. */
  readonly wsUrl?: string | undefined;
  /** The first block with attestations; undefined: the devnet's deploy block, else 0. */
  readonly startBlock?: bigint | undefined;
  /** Blocks behind the head that may still be reorganized; undefined: 12, 0 on the embedded devnet. */
  readonly confirmations?: number | undefined;
  /**
   * The chain mines only when it has transactions (an Anvil or Hardhat node, a quiet app chain whose one node mines on
   * demand): the reconciler may then take its node's `pending` block for the next block once the head stood still
   * (domain/delegation/_signed_deadline.ts). Undefined: true on the embedded devnet, else false (a still head may be a
   * stalled node).
   */
  readonly minesOnDemand?: boolean | undefined;
  readonly role: ChainRole;
};

const fail = (reason: string) => new ConfigError("CHAINS_FILE", reason);

/** Reads and checks the chains file: well-formed entries, each chain once, at least one attestation chain. */
export function readChainsFile(path: string, readFile: (path: string) => string): ChainConfig[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFile(path));
  } catch {
    throw fail(`cannot read JSON from ${path}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0) throw fail("expected a JSON list of chains ({caip2, rpcUrl, role, …})");
  const chains = parsed.map((entry, i) => chainEntry(entry, i + 1));
  const seen = new Set<string>();
  for (const chain of chains) {
    if (seen.has(chain.caip2!)) throw fail(`${chain.caip2} is named twice`);
    seen.add(chain.caip2!);
  }
  if (!chains.some((chain) => chain.role === "attestations")) throw fail(`no chain has role "attestations"`);
  return chains;
}

/** One entry: `{caip2, rpcUrl, wsUrl?, startBlock?, confirmations?, minesOnDemand?, role}`. */
function chainEntry(entry: unknown, n: number): ChainConfig {
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) throw fail(`chain ${n}: expected an object`);
  const e = entry as Record<string, unknown>;
  const known = new Set(["caip2", "rpcUrl", "wsUrl", "startBlock", "confirmations", "minesOnDemand", "role"]);
  const unknown = Object.keys(e).find((key) => !known.has(key));
  if (unknown !== undefined) throw fail(`chain ${n}: unknown field ${unknown}`);
  if (typeof e.caip2 !== "string" || !/^eip155:[1-9][0-9]{0,15}$/.test(e.caip2)) throw fail(`chain ${n}: expected caip2 such as eip155:8453`);
  const name = `chain ${e.caip2}`;
  if (typeof e.rpcUrl !== "string" || !/^https?:\/\/[^\s]+$/.test(e.rpcUrl)) throw fail(`${name}: expected rpcUrl, an http(s) URL`);
  if (e.wsUrl !== undefined && (typeof e.wsUrl !== "string" || !/^wss?:\/\/[^\s]+$/.test(e.wsUrl))) throw fail(`${name}: expected wsUrl, a ws(s) URL`);
  if (e.role !== "attestations" && e.role !== "proofs") throw fail(`${name}: expected role "attestations" or "proofs"`);
  const whole = (value: unknown) => (typeof value === "number" && Number.isSafeInteger(value) && value >= 0) || (typeof value === "string" && /^[0-9]{1,20}$/.test(value));
  if (e.startBlock !== undefined && !whole(e.startBlock)) throw fail(`${name}: expected startBlock, a block number`);
  if (e.confirmations !== undefined && (typeof e.confirmations !== "number" || !whole(e.confirmations) || e.confirmations > 10_000)) {
    throw fail(`${name}: expected confirmations, a number from 0 to 10000`);
  }
  if (e.minesOnDemand !== undefined && typeof e.minesOnDemand !== "boolean") throw fail(`${name}: expected minesOnDemand, true or false`);
  return {
    caip2: e.caip2,
    chainId: Number(e.caip2.slice("eip155:".length)),
    rpcUrl: e.rpcUrl,
    wsUrl: e.wsUrl as string | undefined,
    startBlock: e.startBlock === undefined ? undefined : BigInt(e.startBlock as number | string),
    confirmations: e.confirmations as number | undefined,
    minesOnDemand: e.minesOnDemand as boolean | undefined,
    role: e.role,
  };
}
