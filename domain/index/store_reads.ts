/**
 * Public reads answered from the index alone (decisions §21): the attestation index as the domain reads it
 * (`AttestationIndex`), backed only by the store the follower writes, pinned to the index head, with the head's
 * freshness. A read costs no JSON-RPC call; the schema strings are read from the chain once per run of the service (the
 * SchemaRegistry's entries never change once registered).
 */
import type { AttestationIndex, IndexedAttestation, IndexHead, IndexRead, IndexStore, SchemaRecord } from "../../ports/attestation_index.ts";
import type { Clock } from "../../ports/clock.ts";
import type { HexString } from "../../ports/eas.ts";
import { getAddress } from "viem/utils";
import { fail, ok, type Result } from "../result.ts";

/**
 * What an answer was computed at: the index head (its block, hash and time) and when the follower last completed a
 * poll of the chain. Block time and checkedAt are Unix seconds; a block time the index does not know (a checkpoint
 * stored before issue 34) is null.
 */
export type AsOf = {
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly timestamp: number | null;
  readonly checkedAt: number;
};

/** The code of a read refused because the index is not kept up. */
export type IndexStaleCode = "INDEX_STALE";

export const INDEX_STALE_MESSAGE = "The attestation index is not keeping up with the chain; try again shortly";

/**
 * Whether a head is fresh at `nowMs`: a poll completed within the stall time (an idle chain's head may be old), and
 * that poll is not doubted (`doubtedAtMs`, the doubted poll's own `checkedAtMs`: the follower found the chain's head
 * below the index for longer than its grace since, and the chain may have been rolled back past answers the index still
 * gives, docs/attestation_index.md). A doubt is a poll's time, not a clock's, so no two instances' clocks are compared.
 */
export function isFresh(
  head: Pick<IndexHead, "checkedAtMs" | "doubtedAtMs"> | undefined,
  at: { readonly nowMs: number; readonly stallSeconds: number },
): boolean {
  const { nowMs, stallSeconds } = at;
  if (head === undefined || head.checkedAtMs === null || isDoubted(head)) return false;
  return nowMs - head.checkedAtMs <= stallSeconds * 1000;
}

/** Whether a head's last completed poll is doubted (see {@link isFresh}): what `/readyz` and `ops index status` show. */
export function isDoubted(head: Pick<IndexHead, "checkedAtMs" | "doubtedAtMs"> | undefined): boolean {
  const doubted = head?.doubtedAtMs;
  return head?.checkedAtMs !== null && head?.checkedAtMs !== undefined && doubted !== undefined && doubted !== null && doubted >= head.checkedAtMs;
}

/** The `asOf` of a head. */
export function asOfHead(head: IndexHead): AsOf {
  return {
    blockNumber: Number(head.blockNumber),
    blockHash: head.blockHash,
    timestamp: head.timestamp === undefined ? null : Number(head.timestamp),
    checkedAt: Math.floor((head.checkedAtMs ?? 0) / 1000),
  };
}

/** What the store-backed reads need. */
export type StoreReadsDeps = {
  readonly store: IndexStore;
  readonly chainId: number;
  readonly easAddress: HexString;
  /** The first block that can hold attestations. */
  readonly startBlock: bigint;
  /** Where schema strings come from, once per UID per run of the service. */
  readonly schemas: Pick<AttestationIndex, "schemaRecords">;
  readonly clock: Clock;
  /** `INDEX_STALL_SECONDS`: with no completed poll for longer, reads are refused. */
  readonly stallSeconds: number;
};

/** One read's view of the index: pinned at its first use to the head of that moment. */
export type PinnedIndex = {
  readonly reads: AttestationIndex;
  /** The head the read was pinned to; undefined before the first use, or when the index was stale. */
  readonly asOf: () => AsOf | undefined;
  /** Whether the pin found the index stale (every read then failed). */
  readonly stale: () => boolean;
};

/** Runs reads over the store, each pinned to one head, with `asOf`, or refused as `INDEX_STALE`. */
export type IndexAnswers = {
  /** A fresh pin, for a read that needs the reads themselves. */
  readonly pin: () => PinnedIndex;
  /** Runs one read over a fresh pin and adds its `asOf` to the answer; a stale index is `INDEX_STALE`. */
  readonly answer: <T extends object, C extends string>(
    read: (index: AttestationIndex) => Promise<Result<T, C>>,
  ) => Promise<Result<T & { readonly asOf: AsOf }, C | IndexStaleCode>>;
  /** As `answer`, without `asOf` (answers that are not JSON objects). */
  readonly run: <T, C extends string>(read: (index: AttestationIndex) => Promise<Result<T, C>>) => Promise<Result<T, C | IndexStaleCode>>;
};

/** Builds the store-backed reads. */
export function createIndexAnswers(deps: StoreReadsDeps): IndexAnswers {
  const { store } = deps;
  /** Registered schema records by lowercase UID: immutable once registered. */
  const schemaCache = new Map<string, SchemaRecord>();

  async function schemaRecords(uids: readonly HexString[], block: bigint): Promise<IndexRead<SchemaRecord[]>> {
    const missing = [...new Set(uids.map((u) => u.toLowerCase()))].filter((u) => !schemaCache.has(u)) as HexString[];
    if (missing.length > 0) {
      const read = await deps.schemas.schemaRecords(missing, block);
      if (!read.ok) return read;
      for (const record of read.value) if (record.registered) schemaCache.set(record.uid.toLowerCase(), record);
      const unregistered = new Map(read.value.filter((r) => !r.registered).map((r) => [r.uid.toLowerCase(), r]));
      return { ok: true, value: uids.map((u) => schemaCache.get(u.toLowerCase()) ?? unregistered.get(u.toLowerCase()) ?? { uid: u, registered: false }) };
    }
    return { ok: true, value: uids.map((u) => schemaCache.get(u.toLowerCase())!) };
  }

  function pin(): PinnedIndex {
    let head: Promise<IndexHead | undefined> | undefined;
    let pinnedAt: AsOf | undefined;
    let stale = false;
    const pinned = (): Promise<IndexHead | undefined> =>
      head ??= store.head().then((h) => {
        if (!isFresh(h, { nowMs: deps.clock.nowMs(), stallSeconds: deps.stallSeconds })) {
          stale = true;
          return undefined;
        }
        pinnedAt = asOfHead(h!);
        return h;
      });
    const refused = { ok: false as const, reason: "inconsistent" as const };
    const reads: AttestationIndex = {
      chainId: deps.chainId,
      easAddress: deps.easAddress,
      async latestBlock() {
        const h = await pinned();
        return h === undefined ? refused : { ok: true, value: h.blockNumber };
      },
      schemaRecords,
      async attestedUids(query) {
        const h = await pinned();
        if (h === undefined) return refused;
        const toBlock = query.toBlock < h.blockNumber ? query.toBlock : h.blockNumber;
        const fromBlock = query.fromBlock ?? deps.startBlock;
        if (fromBlock > toBlock) return { ok: true, value: [] };
        return { ok: true, value: await store.attested({ ...query, fromBlock, toBlock }) };
      },
      async attestations(uids, block) {
        const h = await pinned();
        if (h === undefined) return refused;
        const found = new Map((await store.records(uids)).map((r) => [r.uid.toLowerCase(), r]));
        const out: IndexedAttestation[] = [];
        for (const uid of uids) {
          const r = found.get(uid.toLowerCase());
          // Asked only for uids logged up to `block`: one the store lacks (a rewind in between) fails the read.
          if (r === undefined || r.blockNumber > block) return refused;
          const revoked = r.revokedBlock !== null && r.revokedBlock <= block;
          const { blockNumber: _b, revokedBlock: _r, ...attestation } = r;
          // Addresses as the chain's getAttestation gives them (checksummed); the store keeps them lowercase.
          out.push({
            ...attestation,
            recipient: getAddress(r.recipient),
            attester: getAddress(r.attester),
            revocationTime: revoked ? r.revocationTime : 0n,
          });
        }
        return { ok: true, value: out };
      },
    };
    return { reads, asOf: () => pinnedAt, stale: () => stale };
  }

  async function run<T, C extends string>(read: (index: AttestationIndex) => Promise<Result<T, C>>): Promise<Result<T, C | IndexStaleCode>> {
    const p = pin();
    const result = await read(p.reads);
    if (p.stale()) return fail("INDEX_STALE", INDEX_STALE_MESSAGE);
    return result;
  }

  return {
    pin,
    run,
    async answer(read) {
      const p = pin();
      const result = await read(p.reads);
      if (p.stale()) return fail("INDEX_STALE", INDEX_STALE_MESSAGE);
      if (!result.ok) return result;
      // An answer that never needed the index (nothing to look up) still says what it stands on.
      if (p.asOf() === undefined) await p.reads.latestBlock();
      const asOf = p.asOf();
      if (asOf === undefined) return fail("INDEX_STALE", INDEX_STALE_MESSAGE);
      return ok({ ...result.value, asOf });
    },
  };
}
