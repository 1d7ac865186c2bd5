/**
 * Wiring of the attestation index and what reads it (decisions §11, §21): the chain reads, the follower over the
 * storage's tables (app/index_follower.ts), the attestation list and queries, and artifact trust, each built once.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import { createViemAttestationIndex, createWsNewHeads } from "../adapters/chain/mod.ts";
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { type ArtifactTrust, createArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { createWebCryptoJwsVerifier } from "../client/jws_verifier.ts";
import { type Config, defaultChain } from "./config.ts";
import { webhookConfirmations } from "./webhooks.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
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
import { INDEX_READER_HEADER, type IndexRunner, wireIndex } from "./index_follower.ts";

export { CATCHING_UP_BLOCKS, INDEX_READER_HEADER, type IndexRunner, type IndexSettings, type IndexStatus, wireIndex } from "./index_follower.ts";

/** The name of the query cursors' key among the deployment's secrets. */
const CURSOR_SECRET = "attestation-cursors";

/** Builds the chain reads, the index over the storage's tables, and the attestation list read from it. */
export async function wireAttestationIndex(
  config: Pick<Config, "chains" | "index" | "webhooks">,
  f: Foundation,
): Promise<{
  index: IndexRunner;
  attestationList: ListAttestations;
  attestationQueries: { count: CountAttestations; get: GetAttestation };
  /** The list's and the count's computations per client address (`INDEX_QUERY_RATE_PER_MINUTE`), for the routes and the MCP tool alike. */
  attestationQueryRate: RateLimiter;
}> {
  // The default chain's for now; one follower per chain is decisions §30's next step.
  const chain = defaultChain(config.chains);
  const wsUrl = chain.wsUrl;
  const reads = (fetchFn: typeof fetch) =>
    createViemAttestationIndex({
      rpcUrl: f.rpcUrl,
      chainId: f.chainId,
      easAddress: f.easAddress,
      startBlock: f.startBlock,
      timeoutMs: config.chains.artifactTrustRpcTimeoutMs,
      fetchFn,
      log: (event, fields) => f.log.warn(event, fields),
    });
  // The one reader of the chain names itself, so a provider's logs (and the tests' counters) tell its calls apart.
  const chainReads = reads(Object.assign((input: RequestInfo | URL, init?: RequestInit) => {
    const headers = new Headers(init?.headers);
    headers.set(INDEX_READER_HEADER, "index-follower");
    return f.rpcFetch(input, { ...init, headers });
  }, { preconnect: fetch.preconnect }) as typeof fetch);
  // Schema strings, read once per run when a request first needs them.
  const schemaReads = reads(f.rpcFetch);
  const store = await f.storage.indexStore({ chainId: f.chainId, easAddress: f.easAddress });
  const index = wireIndex({
    store,
    chain: chainReads,
    schemas: schemaReads,
    chainId: f.chainId,
    easAddress: f.easAddress,
    settings: {
      startBlock: f.startBlock,
      // The devnet mines on demand and never reorganizes by itself: nothing to wait for.
      confirmations: chain.confirmations ?? (f.devnet === undefined ? 12 : 0),
      pollMs: config.index.pollMs,
      stallSeconds: config.index.stallSeconds,
      leaseSeconds: config.index.leaseSeconds,
      stepBlocks: BigInt(config.index.stepBlocks),
      follow: config.index.follow,
      webhookConfirmations: webhookConfirmations(config, f.devnet !== undefined),
      subjectOf: createSubjectOf(f.chain.schemas),
    },
    clock: systemClock,
    log: f.log,
    metrics: f.metrics,
    heads: wsUrl === undefined
      ? undefined
      : createWsNewHeads({ url: wsUrl, log: (event, fields) => (event === "index_ws_subscribed" ? f.log.info(event, fields) : f.log.warn(event, fields)) }),
  });
  // One instance (SQLite): the writer's next read polls for the write first (issue 43), unless the follower got there
  // meanwhile. Several on one PostgreSQL: the writer polls before the write is answered, so a read at any instance
  // lists it (the balancer may send the next read elsewhere); not when the follower already holds the write's block.
  f.afterMined.listener = f.storage.kind === "postgres"
    ? async (blockNumber) => {
      const indexed = index.status().indexedBlock;
      if (indexed === null || BigInt(indexed) < blockNumber) await index.nudge();
    }
    : (blockNumber) => Promise.resolve(index.wrote(blockNumber));
  // Each read gets its own pin of the index head; the queries' own state is none, so one is built per read.
  // The key of the list's cursors (issue 43): one secret of the deployment, made once and kept in the shared store, so a
  // cursor one instance gave another accepts, and nobody without it can mint one (docs/configuration.md).
  const cursorKey = await f.storage.secrets.secret(CURSOR_SECRET, cryptoRandom.bytes(32));
  const deps = (reads: AttestationIndex) => ({ reads, store, schemaUids: f.chain.schemas, startBlock: f.startBlock, cursorKey });
  const attestationList: ListAttestations = (query) => index.answers.answer((reads) => createListAttestations(deps(reads))(query));
  const count: CountAttestations = (query) => index.answers.answer((reads) => createCountAttestations(deps(reads))(query));
  const get: GetAttestation = (uid) => index.answers.answer((reads) => createGetAttestation(deps(reads))(uid));
  const attestationQueryRate = createRateLimiter(systemClock, { capacity: config.index.queryPerMinute, perMinute: config.index.queryPerMinute });
  return { index, attestationList, attestationQueries: { count, get }, attestationQueryRate };
}

/**
 * Builds artifact trust once over the index's store-backed reads, the trust anchors and the cached discovery (decisions
 * §7, §21). Each request's reads are pinned to the index head it answers at: the one use case reads them through
 * `pinned`, which holds that request's own reads while its answer is computed (requests in parallel each see theirs).
 * Registered schema strings, which never change, are then kept from one request to the next.
 */
export function wireArtifactTrust(f: Foundation, index: IndexRunner, discovery: WiredDiscovery): ArtifactTrust {
  const pinned = new AsyncLocalStorage<AttestationIndex>();
  const current = (): AttestationIndex => {
    const reads = pinned.getStore();
    if (reads === undefined) throw new Error("artifact trust read the index outside an answer");
    return reads;
  };
  const reads: AttestationIndex = {
    chainId: f.chainId,
    easAddress: f.easAddress,
    latestBlock: () => current().latestBlock(),
    schemaRecords: (uids, block) => current().schemaRecords(uids, block),
    attestedUids: (query) => current().attestedUids(query),
    attestations: (uids, block) => current().attestations(uids, block),
  };
  const trust = createArtifactTrust({ index: reads, trustAnchors: f.trustAnchors, clock: systemClock, jws: createWebCryptoJwsVerifier(), discover: discovery.viewDiscover });
  return (artifactDid) => index.answers.answer((answerReads) => pinned.run(answerReads, () => trust(artifactDid)));
}
