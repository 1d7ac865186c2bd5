/**
 * The attestation index (decisions §11): the EAS contract's `Attested` and `Revoked` events are read once,
 * range by range, into a store (SQLite, or PostgreSQL shared by instances) and followed; requests read the
 * store up to its checkpoint and the chain only for the unconfirmed tail. So a request's log reads cost one
 * `eth_getLogs` whatever the chain's length, instead of one per provider window since the EAS deployment.
 */
import type {
  AttestationIndex,
  AttestedLog,
  ChainHistory,
  IndexCheckpoint,
  IndexFailureReason,
  IndexRead,
  IndexStore,
} from "../../ports/attestation_index.ts";

/** What the follower needs. */
export type IndexFollowerDeps = {
  readonly chain: ChainHistory;
  readonly store: IndexStore;
  /** The first block with EAS events (its deployment block). */
  readonly startBlock: bigint;
  /** Blocks kept out of the index behind the head (`INDEX_CONFIRMATIONS`): reorgs there never touch the store. */
  readonly confirmations: number;
  /** The widest block range one step ingests (and one transaction writes). */
  readonly stepBlocks: bigint;
  /** How many stored checkpoints to compare when the newest no longer matches the chain. */
  readonly historyDepth?: number | undefined;
};

/** What one follower step did. */
export type FollowStep =
  | {
    readonly ok: true;
    readonly head: bigint;
    /** The newest indexed block after the step (undefined: nothing yet). */
    readonly indexedBlock: bigint | undefined;
    /** The newest block the index is meant to reach now: `head - confirmations`. */
    readonly target: bigint;
    readonly ingested?: { readonly from: bigint; readonly to: bigint; readonly events: number } | undefined;
    /** Set when a reorg was found: the block the index went back to (-1: to the start). */
    readonly rewoundTo?: bigint | undefined;
    /** Another follower moved the checkpoint first; nothing was written. */
    readonly raced?: true | undefined;
  }
  | { readonly ok: false; readonly reason: IndexFailureReason };

/**
 * One step of the follower: check that the checkpoint's block is still canonical (else rewind to the newest
 * stored checkpoint that is, and stop there), then ingest the next range up to `head - confirmations` and move
 * the checkpoint in the same transaction. A failed read writes nothing; the caller retries with backoff.
 */
export function createIndexFollower(deps: IndexFollowerDeps): () => Promise<FollowStep> {
  const depth = deps.historyDepth ?? 256;
  return async function step(): Promise<FollowStep> {
    const checkpoint = await deps.store.checkpoint();
    const [head, canonical] = await Promise.all([
      deps.chain.head(),
      checkpoint === undefined ? Promise.resolve(undefined) : deps.chain.blockHash(checkpoint.blockNumber),
    ]);
    if (!head.ok) return head;
    const target = head.value - BigInt(deps.confirmations);
    const status = { ok: true as const, head: head.value, target };
    if (checkpoint !== undefined && canonical !== undefined) {
      if (!canonical.ok) return canonical;
      if (canonical.value !== checkpoint.blockHash) {
        const forkedAt = await lastCanonical(await deps.store.history(depth));
        if (!forkedAt.ok) return forkedAt;
        await deps.store.rewind(forkedAt.value);
        return { ...status, indexedBlock: forkedAt.value?.blockNumber, rewoundTo: forkedAt.value?.blockNumber ?? -1n };
      }
    }
    const from = checkpoint === undefined ? deps.startBlock : checkpoint.blockNumber + 1n;
    if (from > target) return { ...status, indexedBlock: checkpoint?.blockNumber };
    const to = target - from + 1n > deps.stepBlocks ? from + deps.stepBlocks - 1n : target;
    const read = await deps.chain.events(from, to);
    if (!read.ok) return read;
    const next: IndexCheckpoint = { blockNumber: to, blockHash: read.value.toHash };
    if (!(await deps.store.append(checkpoint?.blockNumber, read.value.events, next))) {
      return { ...status, indexedBlock: (await deps.store.checkpoint())?.blockNumber, raced: true };
    }
    return { ...status, indexedBlock: to, ingested: { from, to, events: read.value.events.length } };
  };

  /** The newest stored checkpoint whose block the chain still has with the same hash; undefined: none. */
  async function lastCanonical(history: readonly IndexCheckpoint[]): Promise<IndexRead<IndexCheckpoint | undefined>> {
    for (const stored of history) {
      const hash = await deps.chain.blockHash(stored.blockNumber);
      if (!hash.ok) return hash;
      if (hash.value === stored.blockHash) return { ok: true, value: stored };
    }
    return { ok: true, value: undefined };
  }
}

/**
 * The attestation index as requests read it: stored logs up to the checkpoint, plus one live log read for
 * the blocks after it (the unconfirmed tail, or, while the index is still catching up, everything not yet
 * indexed: correct, only slower). Everything else is read live, pinned to the request's block.
 */
export function createIndexedAttestations(deps: {
  readonly live: AttestationIndex;
  readonly store: IndexStore;
  readonly startBlock: bigint;
}): AttestationIndex {
  const { live, store } = deps;
  return {
    chainId: live.chainId,
    easAddress: live.easAddress,
    latestBlock: live.latestBlock,
    schemaRecords: live.schemaRecords,
    attestations: live.attestations,
    async attestedUids(query): Promise<IndexRead<AttestedLog[]>> {
      const from = query.fromBlock ?? deps.startBlock;
      const checkpoint = await store.checkpoint();
      if (checkpoint === undefined || checkpoint.blockNumber < from) return await live.attestedUids({ ...query, fromBlock: from });
      const indexedTo = checkpoint.blockNumber < query.toBlock ? checkpoint.blockNumber : query.toBlock;
      const [stored, tail] = await Promise.all([
        store.attested({ ...query, fromBlock: from, toBlock: indexedTo }),
        query.toBlock > checkpoint.blockNumber
          ? live.attestedUids({ ...query, fromBlock: checkpoint.blockNumber + 1n })
          : Promise.resolve({ ok: true as const, value: [] }),
      ]);
      if (!tail.ok) return tail;
      return { ok: true, value: [...stored, ...tail.value] };
    },
  };
}
