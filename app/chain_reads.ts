/**
 * The public reads of every attestation chain but the default (decisions §30), each over its own index: artifact
 * trust, the list and its queries, key status and controller authorization, with their own kept answers. Built once
 * per service; the routes and the MCP tools share them.
 */
import type { ChainIndexReads } from "../http/app.ts";
import { createIndexAnswerCache } from "../http/index_answer_cache.ts";
import { systemClock } from "../adapters/system/mod.ts";
import type { WiredAccounts } from "./accounts.ts";
import { type ChainIndex, type IndexRunner, wireArtifactTrust } from "./attestation_index.ts";
import type { Config } from "./config.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
import { controllerAuthorizationOver, wireKeys } from "./keys.ts";

/** What the other chains' reads are built from. */
export type ChainReadsSources = {
  readonly otherChains?: readonly ChainIndex[] | undefined;
  readonly discovery: WiredDiscovery;
  readonly accounts: WiredAccounts;
};

const built = new WeakMap<readonly ChainIndex[], ReadonlyMap<number, ChainIndexReads>>();

/** Each other attestation chain's reads by chain id (empty with one chain); the same map for the same chains. */
export function wireChainReads(
  config: Pick<Config, "accounts" | "chains" | "discovery" | "index" | "keys">,
  f: Foundation,
  c: ChainReadsSources,
): ReadonlyMap<number, ChainIndexReads> {
  const others = c.otherChains ?? [];
  const known = built.get(others);
  if (known !== undefined) return known;
  const reads = new Map<number, ChainIndexReads>();
  for (const other of others) {
    const keys = wireKeys(config, f, other.index, c.discovery, c.accounts);
    reads.set(other.chain.chainId, {
      artifactTrust: wireArtifactTrust(
        f,
        other.index,
        c.discovery,
        { chainId: other.chain.chainId, easAddress: other.easAddress },
        controllerAuthorizationOver(config, f, c.discovery),
      ),
      attestationList: other.attestationList,
      attestationQueries: other.attestationQueries,
      keyStatus: keys.keyStatus,
      controllerAuthorization: keys.controllerAuthorization,
      indexAnswers: answerCache(config, other.index),
    });
  }
  built.set(others, reads);
  return reads;
}

/**
 * Whole answers of the index reads, per poll generation of the shared index (issue 34): each instance its own. This
 * instance's follower steps are the change signal; another instance's polls are seen within INDEX_HEAD_REUSE_MS.
 */
export function answerCache(config: Pick<Config, "discovery" | "index">, index: IndexRunner) {
  if (config.index.answerCacheMb === 0) return null;
  const cache = createIndexAnswerCache({
    head: index.head,
    clock: systemClock,
    stallSeconds: config.index.stallSeconds,
    pollMs: config.index.pollMs,
    discoverySeconds: config.discovery.discoveryCacheSeconds,
    maxBytes: config.index.answerCacheMb * 1024 * 1024,
    headReuseMs: config.index.headReuseMs,
  });
  index.onMoved(cache.headChanged);
  return cache;
}
