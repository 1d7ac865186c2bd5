import type { HexString } from "./eas.ts";

/** Why a chain read failed. Library errors never cross this port. */
export type IndexFailureReason =
  /** The node answered with an error, or the connection failed, after the bounded retries. */
  | "rpc-error"
  /** The node did not answer in time, after the bounded retries. */
  | "timeout"
  /** The provider refused even a one-block log range. */
  | "range-too-large"
  /** The node contradicted itself, e.g. a uid from a log reads back as no attestation at the same block. */
  | "inconsistent";

/** A failed read. */
export type IndexFailure = { readonly ok: false; readonly reason: IndexFailureReason };

/** The outcome of a chain read: a value, or why there is none. */
export type IndexRead<T> = { readonly ok: true; readonly value: T } | IndexFailure;

/** An EAS attestation as stored on chain. */
export type IndexedAttestation = {
  readonly uid: HexString;
  readonly schema: HexString;
  /** Unix seconds. */
  readonly time: bigint;
  /** Unix seconds; 0 = no registry-level expiration. */
  readonly expirationTime: bigint;
  /** Unix seconds; 0 = not revoked. */
  readonly revocationTime: bigint;
  readonly refUID: HexString;
  readonly recipient: HexString;
  readonly attester: HexString;
  readonly revocable: boolean;
  readonly data: HexString;
};

/**
 * An attestation this service wrote and saw mined (issue 43 item 5): its uid from the receipt's `Attested` log, the block
 * that holds it, and the fields it sent. Its time (the block's) and revocation are the chain's to tell.
 */
export type WrittenAttestation = Omit<IndexedAttestation, "time" | "revocationTime"> & { readonly blockNumber: bigint };

/** A SchemaRegistry entry: the schema string of a registered UID, or the fact that none is registered. */
export type SchemaRecord =
  | { readonly uid: HexString; readonly registered: true; readonly schema: string; readonly revocable: boolean }
  | { readonly uid: HexString; readonly registered: false };

/** Which `Attested` logs to find: any of the recipients (topic1) and any of the schemas (topic3). */
export type AttestedQuery = {
  readonly recipients: readonly HexString[];
  readonly schemaUids: readonly HexString[];
  /** Default: the adapter's configured start block (the EAS deployment block). */
  readonly fromBlock?: bigint | undefined;
  /** Inclusive; the block every read of a request is pinned to. */
  readonly toBlock: bigint;
};

/** One `Attested` log. */
export type AttestedLog = {
  readonly uid: HexString;
  readonly recipient: HexString;
  readonly attester: HexString;
  readonly schemaUid: HexString;
  readonly blockNumber: bigint;
  /** The log's position in its block, where the source knows it (for paging). */
  readonly logIndex?: number | undefined;
};

/** Reads EAS state pinned to one block: the head, schema strings, `Attested` logs and attestations. */
export interface AttestationIndex {
  readonly chainId: number;
  readonly easAddress: HexString;
  /** The newest block number. */
  readonly latestBlock: () => Promise<IndexRead<bigint>>;
  /** The SchemaRegistry entry of each UID, in the order asked, read at `block`. */
  readonly schemaRecords: (uids: readonly HexString[], block: bigint) => Promise<IndexRead<SchemaRecord[]>>;
  /** Every `Attested` log matching the query, in chain order. */
  readonly attestedUids: (query: AttestedQuery) => Promise<IndexRead<AttestedLog[]>>;
  /**
   * The attestation of each uid, in the order asked, read at `block`. A uid with no attestation at
   * that block is a failure (`inconsistent`): callers only ask for uids they saw in logs up to `block`.
   */
  readonly attestations: (uids: readonly HexString[], block: bigint) => Promise<IndexRead<IndexedAttestation[]>>;
}

/** An EAS event the index keeps: an `Attested` or a `Revoked` log, all schemas. */
export type EasEvent = {
  readonly kind: "attested" | "revoked";
  readonly uid: HexString;
  readonly recipient: HexString;
  readonly attester: HexString;
  readonly schemaUid: HexString;
  readonly blockNumber: bigint;
  readonly logIndex: number;
  /** The transaction that logged it, where the source knows it (webhook payloads carry it, decisions §22). */
  readonly txHash?: HexString | undefined;
  /** The block that logged it, where the source knows it: the follower checks it against the block it read. */
  readonly blockHash?: HexString | undefined;
};

/** Where the index stands: every event up to and including this block is stored. */
export type IndexCheckpoint = {
  readonly blockNumber: bigint;
  readonly blockHash: HexString;
  /** The block's timestamp (Unix seconds), where known (checkpoints stored before issue 34 have none). */
  readonly timestamp?: bigint | undefined;
};

/** A block as the follower reads it: number, hash and timestamp. */
export type IndexBlock = {
  readonly blockNumber: bigint;
  readonly blockHash: HexString;
  readonly timestamp: bigint;
  /** The parent block's hash, when the chain read tells it (the follower checks its checkpoint with it). */
  readonly parentHash?: HexString | undefined;
  /**
   * Whether the block's logs bloom says the EAS contract may have logged an `Attested` or `Revoked` in it (false:
   * certainly not); undefined when the chain read does not tell. The follower checks a "maybe" with no event.
   */
  readonly mayHoldEvents?: boolean | undefined;
};

/**
 * The index head as reads see it (decisions §21): the newest indexed block, and when the follower last completed
 * a poll (read the chain's head and every block up to it) and what head it saw then.
 */
export type IndexHead = IndexCheckpoint & {
  /** Milliseconds since the epoch of the follower's last completed poll; null: none yet. */
  readonly checkedAtMs: number | null;
  /** The chain's head that poll saw; null: none yet. */
  readonly chainHead: bigint | null;
  /**
   * The completed poll (its `checkedAtMs`) after which the follower found the chain's head below the index head for
   * longer than its grace, the chain's blocks otherwise the index's (a backend behind, or a chain rolled back to a
   * shorter one: {@link IndexStore.doubted}); null or undefined: none since the last completed poll. A head whose last
   * completed poll is doubted is not fresh: the poll's own time is stored, not the doubting instance's clock, so no
   * two instances' clocks are compared.
   */
  readonly doubtedAtMs?: number | null | undefined;
};

/** A stored attestation: the full record read once at ingest, where it was logged, and when it was revoked. */
export type StoredAttestation = IndexedAttestation & {
  readonly blockNumber: bigint;
  /** The block of its `Revoked` log; null: not revoked (as far as the index knows). */
  readonly revokedBlock: bigint | null;
};

/** What one follower step writes besides its events and checkpoint. */
export type AppendDetails = {
  /** The full record of each attestation the events name, read at the step's last block. */
  readonly attestations?: readonly IndexedAttestation[] | undefined;
  /**
   * The unconfirmed tail's blocks the step covered (before the step's last block), each a checkpoint of its own,
   * so a reorg rewinds to the exact fork point.
   */
  readonly blocks?: readonly IndexBlock[] | undefined;
  /** Blocks up to here are confirmed (`head - INDEX_CONFIRMATIONS`); rows after it are the tail. */
  readonly confirmedTo?: bigint | undefined;
  /**
   * Webhooks (decisions §22): blocks up to here are deep enough (`head - WEBHOOK_CONFIRMATIONS`) for events. Every
   * attestation and revocation stored in a block after the previous such boundary and up to this one (and to the
   * step's last block) gets an outbox row in the same transaction. The first append that carries it only sets the
   * boundary (no events for history). Undefined: no outbox.
   */
  readonly webhookConfirmedTo?: bigint | undefined;
  /**
   * Told, after the append, of the outbox rows it could not write (issue 43): an event's insert never fails the
   * append, so one bad row cannot stop the index; the rest of the range's rows are written.
   */
  readonly onOutboxSkipped?: ((skipped: readonly OutboxSkip[]) => void) | undefined;
  /**
   * The subject each record names (issue 43: its decoded `subject`, normalized; uid lowercase → DID), stored with the
   * record for the subject's count. Given: a record without an entry names none. Undefined: left to be filled.
   */
  readonly subjects?: ReadonlyMap<string, string> | undefined;
};

/** An outbox row the index's append could not write (skipped, the index went on). */
export type OutboxSkip = { readonly kind: string; readonly uid: string; readonly blockNumber: bigint | null; readonly error: string };

/** The chain reads the index follower makes. */
export interface ChainHistory {
  readonly head: () => Promise<IndexRead<bigint>>;
  /** The hash of a block, or null when the chain has no such block (any more). */
  readonly blockHash: (blockNumber: bigint) => Promise<IndexRead<HexString | null>>;
  /**
   * Every `Attested` and `Revoked` log of the EAS contract in `[from, to]`, in chain order, and the hash (time,
   * parent's hash) of block `to`; ranges the provider refuses are split.
   */
  readonly events: (
    from: bigint,
    to: bigint,
  ) => Promise<IndexRead<{ events: EasEvent[]; toHash: HexString; toTimestamp?: bigint | undefined; toParentHash?: HexString | undefined; toMayHoldEvents?: boolean | undefined }>>;
  /**
   * The `Attested` and `Revoked` logs of one block by its hash (EIP-234), in chain order: a node that does not have the
   * block fails (`inconsistent`). Optional: the follower then cannot check a bloom's "maybe".
   */
  readonly eventsOfBlock?: ((blockHash: HexString) => Promise<IndexRead<EasEvent[]>>) | undefined;
  /** A block's hash and timestamp (and its parent's hash), or null when the chain has no such block (any more). */
  readonly block: (blockNumber: bigint) => Promise<IndexRead<IndexBlock | null>>;
  /** The attestation of each uid, in the order asked, read at `block` (as {@link AttestationIndex.attestations}). */
  readonly attestations: (uids: readonly HexString[], block: bigint) => Promise<IndexRead<IndexedAttestation[]>>;
}

/** An `Attested` log with its position in the chain, for paging newest first. */
export type PagedLog = AttestedLog & { readonly logIndex: number };

/** A page position: strictly before this (block, log index). */
export type PageCursor = { readonly blockNumber: bigint; readonly logIndex: number };

/**
 * Which stored attestations a query of the index names (decisions §24): every field given must match. Addresses and
 * UIDs lowercase or not (the store compares lowercase).
 */
export type IndexFilter = {
  readonly recipient?: HexString | undefined;
  /** The subject the record names (stored with it, see {@link AppendDetails.subjects}); a normalized DID. */
  readonly subject?: string | undefined;
  readonly attester?: HexString | undefined;
  readonly schemaUid?: HexString | undefined;
  /** Revoked at `toBlock` or not; undefined: either. */
  readonly revoked?: boolean | undefined;
  /** Unix seconds on the attestation's time, inclusive. */
  readonly since?: bigint | undefined;
  /** Unix seconds on the attestation's time, exclusive. */
  readonly until?: bigint | undefined;
  /** Inclusive: the block the read is pinned to. */
  readonly toBlock: bigint;
};

/** A keyset page of the index: by block, then log position; strictly after `after` in the page's order. */
export type IndexQuery = IndexFilter & {
  readonly order: "newest" | "oldest";
  readonly after?: PageCursor | undefined;
  readonly limit: number;
};

/**
 * Which stored subjects a change of the subject rule makes wrong (domain/index/record_subject.ts `subjectsToForget`):
 * every one, or, when only how a subject is read changed and the earlier reading stored the same text everywhere else,
 * those stored as naming nobody ('') under the schemas `unnamedOf` and those longer than `longerThan` characters.
 */
export type SubjectsToForget =
  | { readonly all: true }
  | { readonly all: false; readonly unnamedOf: readonly string[]; readonly longerThan: number };

/**
 * The persistent index of one EAS contract on one chain (storage port): its events and the checkpoint,
 * always written together, so a crash never leaves a gap or a duplicate.
 */
export interface IndexStore {
  readonly checkpoint: () => Promise<IndexCheckpoint | undefined>;
  /** Earlier checkpoints, newest first (for finding where a reorg forked). */
  readonly history: (limit: number) => Promise<IndexCheckpoint[]>;
  /**
   * Stores the events of the blocks after `expected` (undefined: none stored yet) up to `next`, and moves
   * the checkpoint to `next`, in one transaction; false, with nothing written, when the checkpoint is no
   * longer `expected` (another follower moved it).
   */
  readonly append: (expected: bigint | undefined, events: readonly EasEvent[], next: IndexCheckpoint, details?: AppendDetails) => Promise<boolean>;
  /**
   * Forgets everything after `to` (undefined: everything) and makes `to` the checkpoint, in one transaction. A reorg
   * also moves the webhook boundary back (the new chain's blocks are told); an operator's rebuild keeps it
   * (`keepWebhookMark`: the history is not told again).
   */
  readonly rewind: (to: IndexCheckpoint | undefined, options?: { readonly keepWebhookMark?: boolean | undefined }) => Promise<void>;
  /** Stored `Attested` logs matching the query, in chain order. */
  readonly attested: (query: AttestedQuery & { readonly fromBlock: bigint }) => Promise<AttestedLog[]>;
  /**
   * Stored `Attested` logs matching the filter, ordered by (block, log index) as `order` says, strictly after
   * `after` (keyset: a deep page costs what the first costs), at most `limit` (decisions §24).
   */
  readonly query: (query: IndexQuery) => Promise<PagedLog[]>;
  /** How many stored attestations match the filter (decisions §24). */
  readonly count: (filter: IndexFilter) => Promise<number>;
  /** The index head and the follower's last completed poll (decisions §21); undefined: nothing indexed yet. */
  readonly head: () => Promise<IndexHead | undefined>;
  /**
   * Records a completed poll: at `nowMs` the chain's head was `chainHead` and the index held every block up to it.
   * Clears a doubt ({@link doubted}).
   */
  readonly checked: (nowMs: number, chainHead: bigint) => Promise<void>;
  /**
   * Records that the follower's polls since the completed poll of `checkedAtMs` (read before they looked) found the
   * chain's head below the index head and could not tell a backend behind from a chain rolled back (the node's blocks
   * agree with the index as far as they go): reads are stale until a poll completes. Nothing when the last completed
   * poll is another one now (a poll completed meanwhile, on any instance), or none yet; true when recorded.
   */
  readonly doubted: (checkedAtMs: number) => Promise<boolean>;
  /** The stored attestations of these uids (any order; uids the index does not hold, or holds without a record, left out). */
  readonly records: (uids: readonly HexString[]) => Promise<StoredAttestation[]>;
  /** Up to `limit` stored uids whose full record is missing (rows written before records were kept). */
  readonly incomplete: (limit: number) => Promise<HexString[]>;
  /** Stores the full records of rows that lack them. */
  readonly complete: (records: readonly IndexedAttestation[]) => Promise<void>;
  /**
   * Up to `limit` stored records whose subject is not stored yet (rows stored before subjects were kept, issue 43),
   * of `recipient` when given. Optional: a store without it keeps no subjects (counts decode the records).
   */
  readonly unsubjected?: ((limit: number, recipient?: HexString) => Promise<StoredAttestation[]>) | undefined;
  /** Stores the subject each record names (null: none). */
  readonly setSubjects?: ((subjects: readonly { readonly uid: HexString; readonly subject: string | null }[]) => Promise<void>) | undefined;
  /**
   * Keeps `rule` as the rule the stored subjects follow. When they followed another, or no rule was kept while subjects
   * were (stored before rules were kept: their rule is not known), it begins to forget the subjects `forget` names for
   * the rule kept (undefined: none kept; default: every one; every one too while another forgetting is under way),
   * which {@link IndexStore.forgetSubjects} goes through. True while such a forgetting is under way, this one or one
   * begun before (by any instance); one primary-key read when the rule is the same.
   */
  readonly resetSubjectsUnless?: ((rule: string, forget?: (kept: string | undefined) => SubjectsToForget) => Promise<boolean>) | undefined;
  /**
   * Goes through up to `limit` more stored rows of the forgetting under way (bounded statements, never one over every
   * row), forgetting the subjects it names; they are then filled as rows stored before subjects were kept. `done` once
   * every row was gone through (or none is under way).
   */
  readonly forgetSubjects?: ((limit: number) => Promise<{ readonly forgotten: number; readonly done: boolean }>) | undefined;
  /**
   * The rule the stored subjects of `recipient`'s records follow when each of them is known; undefined while one may
   * not be: no rule kept yet (subjects stored before rules were kept follow one no one knows), a row not filled yet, or
   * one a forgetting under way may still forget. While a narrow forgetting is under way (one that leaves `recipient`'s
   * subjects alone), the rule and that forgetting, as {@link subjectRule} reads them.
   */
  readonly subjectsKnown?: ((recipient: HexString) => Promise<string | undefined>) | undefined;
  /**
   * The rule kept, with the forgetting under way when there is one, read off the rule row alone (one primary-key read);
   * undefined when no rule is kept or every subject is being forgotten. A count that found `subjectsKnown` reads it after
   * its COUNT: the same answer, no change of rule (nor forgetting begun) came between.
   */
  readonly subjectRule?: (() => Promise<string | undefined>) | undefined;
  /** How many attestations the index holds, and how many of them are in the unconfirmed tail. */
  readonly counts: () => Promise<{ readonly attestations: number; readonly tail: number }>;
  /** Holds or takes the follower lease for `holder` until `nowMs + leaseMs`; false while another holds it. */
  readonly lease: (holder: string, nowMs: number, leaseMs: number) => Promise<boolean>;
}

/**
 * New chain heads as the node announces them (`newHeads` over WebSocket): a hint to poll now, never the data itself.
 * `subscribe` returns the function that stops it.
 */
export interface HeadSignal {
  readonly subscribe: (onHead: (blockNumber: bigint | null) => void) => () => void;
}
