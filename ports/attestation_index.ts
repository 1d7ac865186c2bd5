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
