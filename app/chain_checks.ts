/**
 * The start's checks of every served chain's node (decisions §30), and every served chain's gate. The default chain's
 * node must answer its chain id and have EAS at the anchored address, else the start stops. Every other chain's node is
 * asked the same: one that answers and is not the chain meant (another chain id, no EAS) stops the start, a
 * misconfiguration; one that does not answer (a provider's outage) no longer does (one provider down fails closed on
 * its chain only). That chain is served behind its gate (adapters/chain/chain_check_gate.ts) closed: every JSON-RPC
 * exchange with its node waits for the check, asked again on the chain's next exchange (its index follower's poll, a
 * read, a write) at most once a second, until the node answers its own chain id; then it serves. Every chain checked
 * at start is served behind its gate open, the default chain included: an exchange with its node that fails (a network
 * error or HTTP 5xx: a provider's outage, which a switch of its backend follows) closes it again until the node
 * answers its chain id once more. Another chain's id found then keeps the chain closed until a restart, logged at error
 * level (`chain_wrong_node`, naming the setting to fix: `RPC_URL`, and `DEFAULT_CHAIN` when it is not set, the chain's
 * `rpcUrl` in `CHAINS_FILE`, or the devnet's restart): a default chain found wrong fails its writes, reads and
 * /readyz's `rpc` (500 `RPC_ERROR`, 503 `INDEX_STALE`), never serving the other chain's data, while the other chains
 * serve on. An empty answer at EAS's address found then is not final (`chain_check_empty`, warn, and error once it has
 * lasted 10 minutes): a held chain's backend still syncing answers so, and the chain is asked again. Only a real revert
 * there (RPC code 3, or revert data) is the node's answer; an internal error (-32603) without revert data, which viem
 * also reads as a revert, is the node not answering, at start and after it.
 */
import { type Address, BaseError, ContractFunctionRevertedError, ContractFunctionZeroDataError, createPublicClient, http } from "viem";
import { type ChainCheck, type ChainCheckGate, type ChainGateState, createChainCheckGate, type Http1Post, wsChainId } from "../adapters/chain/mod.ts";
import type { Devnet } from "../adapters/devnet/mod.ts";
import { EAS_DOMAIN_VERSION } from "../domain/delegation/mod.ts";
import { EAS_ABI } from "../domain/eas_abi.ts";
import { activeChainAnchors, caip2 } from "../domain/identity/mod.ts";
import type { Logger } from "../ports/logger.ts";
import type { ChainAnchors, TrustAnchors } from "../ports/trust_anchors.ts";
import { type ChainConfig, type ChainsConfig, defaultChain } from "./config.ts";
import { StartupError } from "./startup_error.ts";

/** Every chain's JSON-RPC fetch and kept-alive POST, each served chain's node behind its gate. */
export type ChainGates = {
  /** `fetch` for JSON-RPC, metered; a held chain's node's exchanges wait for its check. */
  readonly rpcFetch: typeof fetch;
  /** `fetch` for JSON-RPC, not metered (a client counting its own calls), behind the same gates. */
  readonly unmeteredRpcFetch: typeof fetch;
  /** The kept-alive POST for a node at `url`, when one serves it; a held chain's waits for its check. */
  readonly rpcPost: (url: string) => Http1Post | undefined;
  /**
   * Serves the chain whose node is at `url` behind a gate, asked again through `metered`: closed when its node did not
   * answer at start, open (`checked`) when it did; `chain.chainId` is the id its node must answer.
   */
  readonly hold: (url: string, chain: ChainConfig, trustAnchors: TrustAnchors, log: Logger, options?: HoldOptions) => void;
  /**
   * Each gated chain's state now, by CAIP-2 id (`/readyz`'s `nodes`): `unchecked` while its node has not answered
   * its chain id (at start, or since a failed exchange; or its EAS's address answered empty, or with an internal error),
   * `checked` once it has, `wrong` once it answered another (or another EAS version, or a revert, at the anchored
   * address).
   */
  readonly held: () => ReadonlyMap<string, ChainGateState>;
};

/** Where a chain's node URL is set, named in the logs of a node found wrong so the operator fixes that setting. */
export type NodeSetting = "RPC_URL" | "CHAINS_FILE" | "devnet";

/** Options of {@link ChainGates.hold}. */
export type HoldOptions = {
  /** The node answered its chain id at start: the gate opens `checked`. Default false. */
  readonly checked?: boolean | undefined;
  /**
   * The setting that names the node; default the chain's own (see `nodeSettingOf`). The default chain is held with the
   * id its node answered at start, which hides that it came from `RPC_URL`: its caller names the setting.
   */
  readonly setting?: NodeSetting | undefined;
  /**
   * Whether the config names the chain's id, so that a restart refuses a node of another chain: `CHAINS_FILE` and the
   * devnet do, `RPC_URL` only beside `DEFAULT_CHAIN`. Without it a restart serves whatever chain the node answers, and
   * `chain_wrong_node`'s action says to set `DEFAULT_CHAIN` too. Default true, false for `RPC_URL`.
   */
  readonly idNamed?: boolean | undefined;
};

/** A node's gate, and the fetches behind it. */
type GatedNode = { readonly gate: ChainCheckGate; readonly metered: typeof fetch; readonly unmetered: typeof fetch };

/**
 * The gates, keyed by the node's URL: every capability's client of a chain (its index follower, its writes, its proof
 * reads) reaches its node through `rpcFetch`, `unmeteredRpcFetch` or `rpcPost` at the chain's URL, so a held chain's
 * exchanges all wait, and any of them failing has the next one check the node first,
 * whoever makes them. Chains are told apart by URL: two served chains on one URL answer one chain id, which the start
 * refuses.
 */
export function createChainGates(metered: typeof fetch, postOf: (url: string) => Http1Post | undefined, unmetered: typeof fetch = metered): ChainGates {
  // Each node's gate and its fetches, by the node's URL.
  const gates = new Map<string, GatedNode>();
  const byChain = new Map<string, ChainCheckGate>();
  // The gate of each URL as clients ask for it (parsed once): an exchange costs one lookup, no URL parse. Bounded: the
  // URLs asked for are the configured nodes' (and a few spellings of them).
  const byAsked = new Map<string, GatedNode | null>();
  const gateOf = (input: RequestInfo | URL): GatedNode | undefined => {
    const asked = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    let gate = byAsked.get(asked);
    if (gate === undefined) {
      gate = gates.get(urlKey(asked)) ?? null;
      if (byAsked.size >= 1_000) byAsked.clear();
      byAsked.set(asked, gate);
    }
    return gate ?? undefined;
  };
  const route = (which: "metered" | "unmetered", inner: typeof fetch) =>
    Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
      if (gates.size === 0) return inner(input, init);
      const node = gateOf(input);
      return node === undefined ? inner(input, init) : node[which](input, init);
    }, { preconnect: fetch.preconnect }) as typeof fetch;
  return {
    rpcFetch: route("metered", metered),
    unmeteredRpcFetch: route("unmetered", unmetered),
    rpcPost: (url) => {
      const post = postOf(url);
      const node = gates.get(urlKey(url));
      return post === undefined || node === undefined ? post : node.gate.post(post);
    },
    held: () => new Map([...byChain].map(([caip2, gate]) => [caip2, gate.state()])),
    hold: (url, chain, trustAnchors, log, options = {}) => {
      const key = urlKey(url);
      // One node answers one chain id: a second chain on it (refused at start unless both answered it) shares its gate.
      if (gates.has(key)) return;
      const checked = options.checked ?? false;
      const setting = options.setting ?? nodeSettingOf(chain);
      const gate = createChainCheckGate({
        caip2: chain.caip2 ?? "RPC_URL",
        check: async (): Promise<ChainCheck> => {
          // A chain checked at start is asked its id alone again: its EAS was read then, and one empty or reverting
          // answer of a lagging backend would close it for good.
          const asked = checked ? { ...chain, role: "proofs" as const } : chain;
          const found = await probeChain(url, trustAnchors, asked, { fetchFn: metered, retryCount: 0, setting });
          if (found.ok) return { kind: "ok" };
          // An empty answer where EAS should be is not final after the start: a held chain's backend that is back but
          // still syncing answers "0x" for a while, and `wrong` closed the chain until a restart. The start's own check
          // still refuses it (checkOtherChains): there, no EAS is a misconfiguration found before anything is served.
          if (found.empty === true) return { kind: "empty", problem: found.message };
          return found.answered ? { kind: "wrong", problem: found.message } : { kind: "unanswered" };
        },
        log: (level, event, fields) => log[level](event, fields),
        initial: checked ? "checked" : "unchecked",
        fixHint: fixHintOf(setting, chain.caip2, options.idNamed ?? setting !== "RPC_URL"),
      });
      gates.set(key, { gate, metered: gate.fetch(metered), unmetered: gate.fetch(unmetered) });
      byAsked.clear();
      byChain.set(chain.caip2 ?? "RPC_URL", gate);
    },
  };
}

/**
 * Checks every served chain's node at start: the default one's (at `rpcUrl`) must answer, every other one answering
 * another chain stops the start, one not answering is held behind its gate. Returns the default chain's id and anchors.
 */
export async function checkChains(
  chains: ChainsConfig,
  deps: { readonly rpcUrl: string; readonly trustAnchors: TrustAnchors; readonly devnet: Devnet | undefined; readonly log: Logger; readonly gates: ChainGates },
): Promise<{ chainId: number; chain: ChainAnchors }> {
  const served = defaultChain(chains);
  const checked = await checkChain(deps.rpcUrl, deps.trustAnchors, served, chains.rpcUrlChainId);
  const { unchecked, answered } = await checkOtherChains(chains, served, deps.trustAnchors, deps.devnet, deps.log);
  // A gate is keyed by its node's URL: another chain on that node would wait behind it, and be served once the node
  // answers the held chain's id. Two chains on one node are a misconfiguration (one node answers one chain id).
  for (const [url, held] of unchecked) {
    const other = chains.list.find((chain) => chain !== held && urlKey(chain === served ? deps.rpcUrl : nodeUrlOf(chain, deps.devnet) ?? "") === urlKey(url));
    if (other !== undefined) throw new StartupError(`CHAINS_FILE: ${held.caip2} and ${other.caip2} name one rpcUrl (one node answers one chain id)`);
  }
  for (const [url, other] of unchecked) deps.gates.hold(url, other, deps.trustAnchors, deps.log);
  // Every chain checked now is served behind its gate too, open: a failed exchange has its node checked again.
  const defaultId = checked.chainId;
  const asServed = { ...served, caip2: served.caip2 ?? caip2(defaultId), chainId: defaultId, role: "attestations" as const };
  const setting = nodeSettingOf(served);
  const idNamed = setting !== "RPC_URL" || chains.rpcUrlChainId !== undefined;
  deps.gates.hold(deps.rpcUrl, asServed, deps.trustAnchors, deps.log, { checked: true, setting, idNamed });
  for (const [url, other] of answered) deps.gates.hold(url, other, deps.trustAnchors, deps.log, { checked: true });
  await checkWsUrls(chains, served, checked.chainId, deps.log);
  return checked;
}

/**
 * The default chain's id, its anchors, and an EAS of the version delegated signatures are made for at the anchored
 * address; any problem, its node not answering included, stops the start.
 */
async function checkChain(
  rpcUrl: string,
  trustAnchors: TrustAnchors,
  served: Pick<ChainConfig, "caip2" | "chainId" | "rpcUrl">,
  meant?: number | undefined,
): Promise<{ chainId: number; chain: ChainAnchors }> {
  const found = await probeChain(rpcUrl, trustAnchors, { ...served, role: "attestations" }, { meant });
  if (!found.ok) throw new StartupError(found.message);
  return { chainId: found.chainId, chain: found.chain! };
}

/**
 * Every chain besides the default one (decisions §30): its node answers its own chain id, and an attestation chain's
 * has EAS at the anchored address. Without it, a chains file whose rpcUrl named another chain's node served that
 * chain's attestations, transactions and owners under this chain's name, and /readyz said ready. A node that answers
 * and is not the chain meant stops the start. A node that does not answer (a provider's outage) no longer does: one
 * provider down fails closed on its chain only. Its chain's node URL is returned, and the chain waits behind its gate
 * (`ChainGates.hold`) until its node is checked; a chain whose node answered is returned too, served behind its gate
 * open.
 */
async function checkOtherChains(
  chains: ChainsConfig,
  served: ChainConfig,
  trustAnchors: TrustAnchors,
  devnet: Devnet | undefined,
  log: Logger,
): Promise<{ unchecked: [string, ChainConfig][]; answered: [string, ChainConfig][] }> {
  const unchecked: [string, ChainConfig][] = [];
  const answered: [string, ChainConfig][] = [];
  await Promise.all(chains.list.filter((chain) => chain !== served).map(async (chain) => {
    const url = nodeUrlOf(chain, devnet);
    if (url === undefined) throw new StartupError(`CHAINS_FILE: no node for ${chain.caip2}`);
    const found = await probeChain(url, trustAnchors, chain);
    if (found.ok) return void answered.push([url, chain]);
    if (found.answered) throw new StartupError(found.message);
    log.warn("chain_unchecked", { chain: chain.caip2, problem: found.message, action: "its routes fail closed until its node answers its chain id" });
    unchecked.push([url, chain]);
  }));
  return { unchecked, answered };
}

/**
 * Where a chain's node is set, as the config read it: `RPC_URL` alone lists one chain without an id (its node's, asked
 * at start), `CHAINS_FILE` gives every chain an id and an `rpcUrl`, and the embedded devnet's chains have an id and
 * no `rpcUrl`.
 */
function nodeSettingOf(chain: { readonly chainId: number | undefined; readonly rpcUrl?: string | undefined }): NodeSetting {
  if (chain.chainId === undefined) return "RPC_URL";
  return chain.rpcUrl === undefined ? "devnet" : "CHAINS_FILE";
}

/**
 * What `chain_wrong_node` tells the operator to do, by where the node is set. `RPC_URL` without `DEFAULT_CHAIN` names
 * no chain id: a restart takes whatever chain the node answers then, so "fix RPC_URL and restart" alone let a node of
 * another chain start serving under its own name; the action says to set `DEFAULT_CHAIN` to the chain meant.
 */
function fixHintOf(setting: NodeSetting, caip2Id: string | undefined, idNamed: boolean): string {
  if (setting === "CHAINS_FILE") return "fix its rpcUrl in CHAINS_FILE and restart";
  // The devnet's nodes are the service's own: a restart starts them again.
  if (setting === "devnet") return "restart (the embedded devnet serves it)";
  if (idNamed) return "fix RPC_URL and restart";
  return `fix RPC_URL (and set DEFAULT_CHAIN=${caip2Id ?? "eip155:<chain id>"} so a restart refuses another chain) and restart`;
}

/**
 * The node, by where it is set, as the subject that begins a message (a startup error's line, a log's `problem`): in
 * sentence case, like every message of the service.
 */
function nodeNamed(setting: NodeSetting, caip2Id: string | undefined): string {
  if (setting === "RPC_URL") return "RPC_URL";
  return setting === "CHAINS_FILE" ? `CHAINS_FILE: the rpcUrl of ${caip2Id}` : `The embedded devnet's node of ${caip2Id}`;
}

/** A chain's node: its `rpcUrl`, else the embedded devnet's node of that chain. */
function nodeUrlOf(chain: ChainConfig, devnet: Devnet | undefined): string | undefined {
  return chain.rpcUrl ?? devnet?.chains.find((c) => c.chainId === chain.chainId)?.rpcUrl;
}

/**
 * What asking a chain's node found: its id (and an attestation chain's anchors), or the problem; `answered` when the
 * node answered and is not the chain meant, `empty` too when that answer was nothing at EAS's address (no code there:
 * a misconfiguration at start, a backend still syncing after it).
 */
type Probed =
  | { readonly ok: true; readonly chainId: number; readonly chain: ChainAnchors | undefined }
  | { readonly ok: false; readonly answered: boolean; readonly empty?: boolean | undefined; readonly message: string };

/**
 * Asks a chain's node its chain id (which must be the one the chain's entry names, when it names one) and, on an
 * attestation chain, EAS's version at the anchored address. A node that does not answer is `answered: false`, and so is
 * one whose `eth_call` fails with neither an empty answer nor a real revert (see `callFailure`).
 */
async function probeChain(
  rpcUrl: string,
  trustAnchors: TrustAnchors,
  served: Pick<ChainConfig, "caip2" | "chainId" | "role"> & { readonly rpcUrl?: string | undefined },
  options: {
    readonly meant?: number | undefined;
    readonly fetchFn?: typeof fetch | undefined;
    readonly retryCount?: number | undefined;
    /** Where the node is set, named in the messages; default the chain's own (`nodeSettingOf`). */
    readonly setting?: NodeSetting | undefined;
  } = {},
): Promise<Probed> {
  const probe = createPublicClient({ transport: http(rpcUrl, { retryCount: options.retryCount ?? 2, timeout: 10_000, fetchFn: options.fetchFn }) });
  const setting = options.setting ?? nodeSettingOf(served);
  const node = nodeNamed(setting, served.caip2);
  let chainId: number;
  try {
    chainId = await probe.getChainId();
  } catch {
    return { ok: false, answered: false, message: `${node} does not answer eth_chainId` };
  }
  if (served.chainId !== undefined && served.chainId !== chainId) {
    // The default chain of RPC_URL alone is asked again with the id it answered at start.
    const message = setting === "RPC_URL" ? `RPC_URL answers chain ${chainId}, not ${served.caip2}` : `${node} answers chain ${chainId}`;
    return { ok: false, answered: true, message };
  }
  // `DEFAULT_CHAIN` beside `RPC_URL` names the chain meant; the node's is checked before anything else is asked of it.
  const meant = options.meant;
  if (meant !== undefined && meant !== chainId) return { ok: false, answered: true, message: `DEFAULT_CHAIN: eip155:${meant} is not the chain RPC_URL serves (eip155:${chainId})` };
  if (served.role !== "attestations") return { ok: true, chainId, chain: undefined };
  const chain = activeChainAnchors(trustAnchors, chainId);
  if (!chain.ok) return { ok: false, answered: true, message: `${chain.message} (TRUST_ANCHORS_PATH)` };
  const easAddress = chain.value.easContract as Address;
  let version: string;
  try {
    version = await probe.readContract({ address: easAddress, abi: EAS_ABI, functionName: "version" });
  } catch (error) {
    // No code at the address (an empty answer) or a revert is the node's answer; anything else is the node not answering.
    const failure = callFailure(error);
    if (failure === "unanswered") return { ok: false, answered: false, message: `${node} does not answer eth_call (EAS's version at ${easAddress})` };
    return { ok: false, answered: true, empty: failure === "empty", message: `No EAS contract answers at ${easAddress} on ${caip2(chainId)}` };
  }
  if (version !== EAS_DOMAIN_VERSION) return { ok: false, answered: true, message: `EAS at ${easAddress} is version ${version}; delegated signatures need ${EAS_DOMAIN_VERSION}` };
  return { ok: true, chainId, chain: chain.value };
}

/** The JSON-RPC code of EIP-1474 for `execution reverted`, which geth and Anvil answer a revert with. */
const EXECUTION_REVERTED = 3;

/**
 * What a failed `eth_call` says: `empty` (no code at the address: viem's zero-data error), `reverted` (the node ran
 * the call and it reverted: RPC code 3, or revert data in the answer), else `unanswered`. viem makes a revert of RPC
 * code -32603 too (an internal error: a node still syncing answers `header not found` so, with no data); read as a
 * revert, that closed a held chain until a restart (`wrong`) while its node recovered. A -32603 with revert data (some
 * nodes answer a revert so) stays a revert.
 */
function callFailure(error: unknown): "empty" | "reverted" | "unanswered" {
  if (!(error instanceof BaseError)) return "unanswered";
  if (error.walk((e) => e instanceof ContractFunctionZeroDataError) !== null) return "empty";
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError) as ContractFunctionRevertedError | null;
  if (reverted === null) return "unanswered";
  // The node's own code, on the RPC error under viem's (`RpcRequestError`, and the `RpcError` built on it).
  const rpc = error.walk((e) => typeof (e as { code?: unknown } | null)?.code === "number") as { code: number } | null;
  const revertData = reverted.raw !== undefined && /^0x[0-9a-fA-F]{8,}$/.test(reverted.raw);
  return rpc?.code === EXECUTION_REVERTED || revertData ? "reverted" : "unanswered";
}

/**
 * Every chain's `wsUrl` (`RPC_WS_URL` for the default one) answers that chain's id (decisions §30), as its rpcUrl must:
 * a WebSocket endpoint of another chain's node gave its heads as this chain's, which froze this chain's index while
 * /readyz said ready. The follower checks it again on each connection (adapters/chain/ws_new_heads.ts). Another chain's
 * `wsUrl` that does not answer is logged and the start goes on (its heads are a hint; the follower polls meanwhile and
 * subscribes only once the node answers its chain's id); the default chain's stops the start.
 */
async function checkWsUrls(chains: ChainsConfig, served: ChainConfig, defaultChainId: number, log: Logger): Promise<void> {
  await Promise.all(chains.list.filter((chain) => chain.wsUrl !== undefined).map(async (chain) => {
    const meant = chain.chainId ?? defaultChainId;
    const name = chain.chainId === undefined ? "RPC_WS_URL" : `the wsUrl of ${chain.caip2}`;
    const prefix = chain.chainId === undefined ? "" : "CHAINS_FILE: ";
    const answered = await wsChainId(chain.wsUrl!, 10_000);
    if (answered === undefined && chain !== served) {
      log.warn("chain_ws_unchecked", { chain: chain.caip2, problem: `${prefix}${name} does not answer eth_chainId`, action: "its index polls until the WebSocket answers its chain id" });
      return;
    }
    if (answered === undefined) throw new StartupError(`${prefix}${name} does not answer eth_chainId`);
    if (answered !== meant) throw new StartupError(`${prefix}${name} answers chain ${answered}, not eip155:${meant}`);
  }));
}

/**
 * A node's URL as the WHATWG parser writes it, without its credentials: viem's transport asks for `http://host:port/`
 * given `http://host:port`, and for `https://host/path` given `https://user:key@host/path` (the credentials go in an
 * `Authorization` header). Keyed with them, a held chain's viem clients went past its gate.
 */
function urlKey(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    return parsed.href;
  } catch {
    return url;
  }
}
