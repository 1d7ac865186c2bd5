/**
 * The index reads of each served chain, as the app is given them (decisions §30): the default chain's are the app's
 * own fields (`attestationList`, `keyStatus`, …: a deployment of one chain, and every test of one), another
 * attestation chain's come in `chainReads` by chain id. Each read route gets them as a {@link PerChain}.
 */
import type { ArtifactTrust } from "../domain/artifact_trust/mod.ts";
import { type ServedChains, singleChain } from "../domain/chains/mod.ts";
import type { ControllerAuthorization } from "../domain/controller_authorization/mod.ts";
import type { CountAttestations, GetAttestation, ListAttestations } from "../domain/index/mod.ts";
import type { KeyStatus } from "../domain/keys/mod.ts";
import type { PerChain } from "./chain_reads.ts";
import type { IndexAnswerCache } from "./index_answer_cache.ts";

/** One chain's reads of its attestation index, and the whole answers kept for them. */
export type ChainIndexReads = {
  readonly artifactTrust?: ArtifactTrust | undefined;
  readonly attestationList?: ListAttestations | undefined;
  readonly attestationQueries?: { readonly count: CountAttestations; readonly get: GetAttestation } | undefined;
  readonly keyStatus?: KeyStatus | undefined;
  readonly controllerAuthorization?: ControllerAuthorization | undefined;
  /** That chain's kept answers (keyed by its own index head); absent or null: none. */
  readonly indexAnswers?: IndexAnswerCache | null | undefined;
};

/** What the app knows of its chains: the served set and the reads of every chain but the default. */
export type AppChains = {
  /** Absent: the one chain `chainId` and `easAddress` name. */
  readonly servedChains?: ServedChains | undefined;
  /** Another attestation chain's reads by chain id; absent: the default chain's only. */
  readonly chainReads?: ReadonlyMap<number, ChainIndexReads> | undefined;
};

/** The served set: the one given, else the app's one chain. */
export function servedOf(deps: AppChains & { readonly chainId: number; readonly easAddress: string }): ServedChains {
  return deps.servedChains ?? singleChain(deps.chainId, deps.easAddress);
}

/** One capability's reads on each chain: `pick` from the default chain's (`own`) or another chain's reads. */
export function perChain<T>(
  served: ServedChains,
  own: ChainIndexReads,
  others: AppChains["chainReads"],
  pick: (reads: ChainIndexReads) => T | undefined,
): PerChain<T> {
  return {
    served,
    on: (chainId) => {
      const reads = chainId === served.default.chainId ? own : others?.get(chainId);
      return reads === undefined ? undefined : pick(reads);
    },
  };
}
