/**
 * Wiring of the attestation index and what reads it (decisions §11, §21): the chain reads, the follower over the
 * storage's tables (app/index_follower.ts), the attestation list and queries, and artifact trust, each built once.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import { createViemAttestationIndex, createWsNewHeads } from "../adapters/chain/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { type ArtifactTrust, createArtifactTrust } from "../domain/artifact_trust/mod.ts";
import type { ControllerAuthorization } from "../domain/controller_authorization/mod.ts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import { type Config, confirmationsOf, defaultChain } from "./config.ts";
import type { ChainConfig } from "./config/chains.ts";
import type { Address } from "viem";
import type { ServedChain, ServedChains } from "../domain/chains/mod.ts";
import { servedChainsOf } from "./write_chains.ts";
import { webhookConfirmations } from "./webhooks.ts";
import type { WiredDiscovery } from "./discovery.ts";
import { type Foundation, StartupError } from "./foundation.ts";
import {
  type CountAttestations,
  createCountAttestations,
  createGetAttestation,
  createListAttestations,
  createSubjectOf,
  type GetAttestation,
  type ListAttestations,
} from "../domain/index/mod.ts";
import type { AttestationIndex } from "../ports/attestation_index.ts";
import type { Logger } from "../ports/logger.ts";
import { caip2 } from "../domain/identity/mod.ts";
import { INDEX_READER_HEADER, type IndexRunner, wireIndex } from "./index_follower.ts";

export { CATCHING_UP_BLOCKS, INDEX_READER_HEADER, type IndexRunner, type IndexSettings, type IndexStatus, wireIndex } from "./index_follower.ts";

/** The name of the query cursors' key among the deployment's secrets. */
const CURSOR_SECRET = "attestation-cursors";

/**
 * The bytes a chain's own cursor key is first made of: the deployment's first key for the chain that claims it (the
 * default chain when the claim is first made, kept under `attestation-cursors:first-key-chain`), else fresh random bytes.
 */
async function cursorSeed(f: Foundation, chainId: number): Promise<Uint8Array> {
  if (chainId !== f.chainId) return cryptoRandom.bytes(32);
  const claim = await f.storage.secrets.secret(`${CURSOR_SECRET}:first-key-chain`, new TextEncoder().encode(String(chainId)));
  if (new TextDecoder().decode(claim) !== String(chainId)) return cryptoRandom.bytes(32);
  return await f.storage.secrets.secret(CURSOR_SECRET, cryptoRandom.bytes(32));
}

/** One attestation chain's index and the reads of it. */
export type ChainIndex = {
  readonly chain: ServedChain;
  /** The chain's EAS as the anchors write it. */
  readonly easAddress: Address;
  readonly index: IndexRunner;
  readonly attestationList: ListAttestations;
  readonly attestationQueries: { count: CountAttestations; get: GetAttestation };
};

/** What one chain's follower reads: the chain, its node and its anchored schemas. */
type FollowedChain = {
  readonly chainId: number;
  readonly easAddress: Address;
  readonly rpcUrl: string;
  readonly startBlock: bigint;
  readonly schemas: Readonly<Record<string, string>>;
  readonly config: ChainConfig;
};

/**
 * Builds each attestation chain's index (decisions §30: one follower per chain, its own lease and rows keyed by chain,
 * over the one database) and the attestation list read from it. `index` is the default chain's; its `catchUp` and
 * `stop` are every chain's, so a stop ends every follower.
 */
export async function wireAttestationIndex(
  config: Pick<Config, "chains" | "index" | "webhooks">,
  f: Foundation,
): Promise<{
  index: IndexRunner;
  attestationList: ListAttestations;
  attestationQueries: { count: CountAttestations; get: GetAttestation };
  /** The list's and the count's computations per client address (`INDEX_QUERY_RATE_PER_MINUTE`), for the routes and the MCP tool alike. */
  attestationQueryRate: RateLimiter;
  /** The chains served (attestation and proof chains) and the default among them. */
  served: ServedChains;
  /** Every attestation chain's index but the default chain's. */
  otherChains: readonly ChainIndex[];
}> {
  const served = servedChainsOf(config, f);
  const own = defaultChain(config.chains);
  const main = await wireChainIndex(config, f, {
    chainId: f.chainId,
    easAddress: f.easAddress,
    rpcUrl: f.rpcUrl,
    startBlock: f.startBlock,
    schemas: f.chain.schemas,
    config: own,
  });
  const { index } = main;
  // Decisions §30: each chain's index is told of a write mined on that chain (app/write_chains.ts).
  f.afterMined.set(f.chainId, afterMinedOf(f, index));
  f.afterAttested.set(f.chainId, index.attested);
  const otherChains: ChainIndex[] = [];
  for (const chain of served.list) {
    if (chain.role !== "attestations" || chain.chainId === f.chainId) continue;
    const followed = followedChain(config, f, chain);
    const wired = await wireChainIndex(config, f, followed);
    f.afterMined.set(chain.chainId, afterMinedOf(f, wired.index));
    f.afterAttested.set(chain.chainId, wired.index.attested);
    otherChains.push({ chain, easAddress: followed.easAddress, ...wired });
  }
  const attestationQueryRate = createRateLimiter(systemClock, { capacity: config.index.queryPerMinute, perMinute: config.index.queryPerMinute });
  const all = [index, ...otherChains.map((c) => c.index)];
  const everyChain: IndexRunner = {
    ...index,
    catchUp: async () => (await Promise.all(all.map((i) => i.catchUp()))).every(Boolean),
    stop: async () => {
      await Promise.all(all.map((i) => i.stop()));
    },
  };
  return { index: everyChain, attestationList: main.attestationList, attestationQueries: main.attestationQueries, attestationQueryRate, served, otherChains };
}

/**
 * What a chain's index does once a write of this instance is mined on it. One instance (SQLite): the writer's next read
 * polls for the write first (issue 43), unless the follower got there meanwhile. Several on one PostgreSQL: the writer
 * polls before the write is answered, so a read at any instance lists it (the balancer may send the next read
 * elsewhere); not when the follower already holds the write's block.
 */
function afterMinedOf(f: Foundation, index: IndexRunner): (blockNumber: bigint) => Promise<void> {
  return f.storage.kind === "postgres"
    ? async (blockNumber) => {
      const indexed = index.status().indexedBlock;
      if (indexed !== null && BigInt(indexed) >= blockNumber) return;
      index.sighted(blockNumber);
      await index.nudge();
    }
    : (blockNumber) => Promise.resolve(index.wrote(blockNumber));
}

/** Another attestation chain as its follower reads it: its node from the config (or the devnet), its EAS and schemas from the anchors. */
function followedChain(config: Pick<Config, "chains">, f: Foundation, chain: ServedChain): FollowedChain {
  const configured = config.chains.list.find((c) => c.chainId === chain.chainId || c.caip2 === chain.caip2)!;
  const devnetChain = f.devnet?.chains.find((c) => c.chainId === chain.chainId);
  const rpcUrl = configured.rpcUrl ?? devnetChain?.rpcUrl;
  if (rpcUrl === undefined) throw new StartupError(`${chain.caip2}: no rpcUrl to follow it`);
  const anchored = f.trustAnchors.chains[chain.caip2]!;
  return {
    chainId: chain.chainId,
    easAddress: anchored.easContract as Address,
    rpcUrl,
    startBlock: configured.startBlock ?? devnetChain?.deployBlock ?? 0n,
    schemas: anchored.schemas,
    config: configured,
  };
}

/** `log` with the chain's CAIP-2 id in every line's fields. */
function chainLogger(log: Logger, chainId: number): Logger {
  const named = (write: Logger["info"]) => (event: string, fields?: Record<string, unknown>) => write(event, { chain: caip2(chainId), ...fields });
  return { debug: named(log.debug), info: named(log.info), warn: named(log.warn), error: named(log.error) };
}

/** One chain's reads, follower and queries over the one database, its rows keyed by the chain. */
async function wireChainIndex(config: Pick<Config, "chains" | "index" | "webhooks">, f: Foundation, followed: FollowedChain) {
  const { chainId, easAddress, startBlock } = followed;
  const chain = followed.config;
  const wsUrl = chain.wsUrl;
  // Every line of this chain's follower names it (found by attack: with two chains, `index_follow_failed` did not say whose).
  const log = chainLogger(f.log, chainId);
  const reads = (fetchFn: typeof fetch) =>
    createViemAttestationIndex({
      rpcUrl: followed.rpcUrl,
      chainId,
      easAddress,
      startBlock,
      timeoutMs: config.chains.artifactTrustRpcTimeoutMs,
      fetchFn,
      log: (event, fields) => f.log.warn(event, fields),
      keccak: f.keccak256,
    });
  // The one reader of the chain names itself, so a provider's logs (and the tests' counters) tell its calls apart.
  const chainReads = reads(Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set(INDEX_READER_HEADER, "index-follower");
    return f.rpcFetch(input, { ...init, headers });
  }, { preconnect: fetch.preconnect }) as typeof fetch);
  // Schema strings, read once per run when a request first needs them.
  const schemaReads = reads(f.rpcFetch);
  const store = await f.storage.indexStore({ chainId, easAddress });
  const index = wireIndex({
    store,
    chain: chainReads,
    schemas: schemaReads,
    chainId,
    easAddress,
    settings: {
      startBlock,
      confirmations: confirmationsOf(chain, f.devnet !== undefined),
      pollMs: config.index.pollMs,
      stallSeconds: config.index.stallSeconds,
      behindGraceSeconds: config.index.behindGraceSeconds,
      leaseSeconds: config.index.leaseSeconds,
      stepBlocks: BigInt(config.index.stepBlocks),
      follow: config.index.follow,
      webhookConfirmations: webhookConfirmations(config, chain, f.devnet !== undefined),
      subjectOf: createSubjectOf(followed.schemas),
    },
    clock: systemClock,
    keccak: f.keccak256.hex,
    log,
    metrics: f.metrics,
    heads: wsUrl === undefined
      ? undefined
      : createWsNewHeads({ url: wsUrl, chainId, log: (event, fields) => (event === "index_ws_subscribed" ? log.info(event, fields) : log.warn(event, fields)) }),
  });
  // Each read gets its own pin of the index head; the queries' own state is none, so one is built per read.
  // The key of the list's cursors (issue 43): one secret of the deployment, made once and kept in the shared store, so a
  // cursor one instance gave another accepts, and nobody without it can mint one (docs/configuration.md).
  // Decisions §30: a cursor is bound to its chain. Every chain's key is a secret of its own, named by its chain id, so a
  // cursor of one chain given with another is "not ours" (400 INVALID_INPUT, as any forged one). Before, the default
  // chain used the deployment's first key (`attestation-cursors`): a DEFAULT_CHAIN changed (or instances on one database
  // set apart) moved that key to another chain, which then took the old default's cursors. The first key goes to one
  // chain only, the first default to claim it (a claim kept beside it), so the cursors it gave stay good across the
  // upgrade and no later default shares its key.
  const cursorKey = await f.storage.secrets.secret(`${CURSOR_SECRET}:eip155:${chainId}`, await cursorSeed(f, chainId));
  const deps = (reads: AttestationIndex) => ({ reads, store, schemaUids: followed.schemas, startBlock, cursorKey });
  const attestationList: ListAttestations = (query) => index.answers.answer((reads) => createListAttestations(deps(reads))(query));
  const count: CountAttestations = (query) => index.answers.answer((reads) => createCountAttestations(deps(reads))(query));
  const get: GetAttestation = (uid) => index.answers.answer((reads) => createGetAttestation(deps(reads))(uid));
  return { index, attestationList, attestationQueries: { count, get } };
}

/**
 * Builds artifact trust once over the index's store-backed reads, the trust anchors and the cached discovery (decisions
 * §7, §21). Each request's reads are pinned to the index head it answers at: the one use case reads them through
 * `pinned`, which holds that request's own reads while its answer is computed (requests in parallel each see theirs).
 * Registered schema strings, which never change, are then kept from one request to the next.
 */
export function wireArtifactTrust(
  f: Foundation,
  index: IndexRunner,
  discovery: WiredDiscovery,
  chain?: { readonly chainId: number; readonly easAddress: Address },
  authorizationOver?: (reads: AttestationIndex) => ControllerAuthorization,
): ArtifactTrust {
  const pinned = new AsyncLocalStorage<AttestationIndex>();
  const current = (): AttestationIndex => {
    const reads = pinned.getStore();
    if (reads === undefined) throw new Error("artifact trust read the index outside an answer");
    return reads;
  };
  // The chain of the index read (decisions §30): the record names it.
  const reads: AttestationIndex = {
    chainId: chain?.chainId ?? f.chainId,
    easAddress: chain?.easAddress ?? f.easAddress,
    latestBlock: () => current().latestBlock(),
    schemaRecords: (uids, block) => current().schemaRecords(uids, block),
    attestedUids: (query) => current().attestedUids(query),
    attestations: (uids, block) => current().attestations(uids, block),
  };
  const trust = createArtifactTrust({
    index: reads,
    trustAnchors: f.trustAnchors,
    clock: systemClock,
    jws: createWebCryptoJwsVerifier(),
    discover: discovery.viewDiscover,
    // Over the same pinned reads: a did:pkh party's authorization reads the head this answer reads (decisions §25).
    controllerAuthorization: authorizationOver?.(reads),
  });
  return (artifactDid, options) => index.answers.answer((answerReads) => pinned.run(answerReads, () => trust(artifactDid, options)));
}
