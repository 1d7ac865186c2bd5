/** Wiring of signing keys and key status (decisions §17): the account's key records and the trust computed for them. */
import { cryptoRandom, systemClock } from "../adapters/system/mod.ts";
import { createKeyTrust, createSigningKeys, type KeyStatus, type KeyTrustMany, type SigningKeys } from "../domain/keys/mod.ts";
import {
  type ControllerAuthorization,
  createCachedOwnershipReads,
  createControllerAuthorization,
  type ResolveDidUrl,
} from "../domain/controller_authorization/mod.ts";
import type { AttestationIndex } from "../ports/attestation_index.ts";
import type { OwnershipChain } from "../ports/ownership_chain.ts";
import { createRateLimiter, type RateLimiter } from "../domain/rate_limit.ts";
import type { WiredAccounts } from "./accounts.ts";
import type { Config } from "./config.ts";
import type { WiredDiscovery } from "./discovery.ts";
import type { Foundation } from "./foundation.ts";
import type { IndexRunner } from "./attestation_index.ts";
import { proofChainsOf } from "./interactions.ts";

/** What the key routes, and other capabilities asking "was this key authorised at that time", need. */
export type WiredKeys = {
  readonly signingKeys: SigningKeys;
  /** The key-status use case (`createKeyStatus`): `(subjectDid, keyDid, at?)`. */
  readonly keyStatus: KeyStatus;
  /** Public lookups per client address: a pure read limit, kept in this process (decisions §21 lets it be per instance). */
  readonly clientRate: RateLimiter;
  readonly maxInFlight: number;
  /** Controller authorization (decisions §25): key status's evidence and rule on who may bind, the §25 verdict. */
  readonly controllerAuthorization: ControllerAuthorization;
  /** DID URL resolution (decisions §25). */
  readonly resolveDidUrl: ResolveDidUrl;
};

const cachedContracts = new WeakMap<Foundation, Map<number, OwnershipChain>>();

/**
 * A contract subject's owner() and transfer proofs: read once and kept (a mined transaction never changes; owner() for
 * DISCOVERY_CACHE_SECONDS), so steady-state answers cost no JSON-RPC call. Read on any chain the deployment reads
 * (decisions §30); on any other chain, not read: never "contract-ownership". One cache per chain and foundation, shared by
 * every chain's key reads and artifact trust.
 */
function contractReadsOf(config: Pick<Config, "chains" | "discovery">, f: Foundation): (chainId: number) => OwnershipChain | undefined {
  const proofChains = proofChainsOf(config, f);
  const cached = cachedContracts.get(f) ?? new Map<number, OwnershipChain>();
  cachedContracts.set(f, cached);
  return (chainId) => {
    const known = cached.get(chainId);
    if (known !== undefined) return known;
    const chain = proofChains.ownership(chainId);
    if (chain === undefined) return undefined;
    const reads = createCachedOwnershipReads(chain, { clock: systemClock }, { ownerMs: config.discovery.discoveryCacheSeconds * 1_000 });
    cached.set(chainId, reads);
    return reads;
  };
}

/**
 * Controller authorization (decisions §25) over the index reads it is given: the route's computation, and artifact
 * trust's for its did:pkh parties over the reads its own answer is pinned to (the same computation, §25).
 */
export function controllerAuthorizationOver(
  config: Pick<Config, "chains" | "discovery">,
  f: Foundation,
  discovery: WiredDiscovery,
): (reads: AttestationIndex) => ControllerAuthorization {
  const contractsOn = contractReadsOf(config, f);
  return (reads) =>
    createControllerAuthorization({
      index: reads,
      trustAnchors: f.trustAnchors,
      clock: systemClock,
      discover: discovery.viewDiscover,
      jwks: discovery.jwks,
      contracts: contractsOn(reads.chainId),
      contractsOn,
      discoveryCacheSeconds: config.discovery.discoveryCacheSeconds,
    });
}

/** Builds key status over the index's reads, the trust anchors and the cached discovery, and the account's key records. */
export function wireKeys(config: Pick<Config, "accounts" | "chains" | "discovery" | "keys">, f: Foundation, index: IndexRunner, discovery: WiredDiscovery, accounts: WiredAccounts): WiredKeys {
  // Each lookup reads the index as pinned for it, from the store alone (decisions §21).
  const trustOver = (reads: AttestationIndex) =>
    createKeyTrust({ index: reads, trustAnchors: f.trustAnchors, clock: systemClock, discover: discovery.viewDiscover, jwks: discovery.jwks });
  const authorizationOver = controllerAuthorizationOver(config, f, discovery);
  const controllerAuthorization: ControllerAuthorization = (request, options) => index.answers.answer((reads) => authorizationOver(reads)(request, options));
  const trust: { status: KeyStatus; many: KeyTrustMany } = {
    status: (subjectDid, keyDid, at, options) => index.answers.answer((reads) => trustOver(reads).status(subjectDid, keyDid, at, options)),
    many: (subjectDids, keyDids) => index.answers.run((reads) => trustOver(reads).many(subjectDids, keyDids)),
  };
  const signingKeys = createSigningKeys({
    store: f.storage.signingKeys,
    clock: systemClock,
    random: cryptoRandom,
    subjectsOf: async (account) => (await accounts.subjects.list(account)).map((s) => s.canonicalDid),
    trust: trust.many,
    maxPerAccount: config.keys.maxPerAccount,
    maxSubjects: config.accounts.subjectsPerAccount,
  });
  const perMinute = config.keys.statusPerMinute;
  return {
    signingKeys,
    keyStatus: trust.status,
    clientRate: createRateLimiter(systemClock, { capacity: perMinute, perMinute }),
    maxInFlight: config.keys.statusMaxInFlight,
    controllerAuthorization,
    resolveDidUrl: discovery.resolveDidUrl,
  };
}
