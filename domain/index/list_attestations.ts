/**
 * The attestations about one subject in one schema, newest first, paged (decisions §11): the attestations
 * whose recipient is the subject's DID address and whose decoded `subject` is that DID. The index makes it
 * cheap: stored logs up to the checkpoint (with the store-backed reads of decisions §21 the head is the
 * checkpoint, so there is no tail to read live) and one batch read of the page's attestations, all pinned to
 * one block.
 */
import type { AttestationIndex, IndexStore, PageCursor, PagedLog } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { base64UrlDecode, base64UrlEncode, didToAddress, normalizeDid } from "../did.ts";
import { fail, ok, type Result } from "../result.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import type { AsOf } from "./store_reads.ts";

/** One listed attestation: artifact trust's record shape (without its verification) and whether it is revoked. */
export type ListedAttestation = {
  readonly attestation: {
    readonly uid: string;
    readonly schema: string;
    readonly schemaName: string;
    readonly attester: string;
    readonly recipient: string;
    readonly time: string;
    readonly expirationTime: string;
    readonly revocationTime: string;
    readonly data: Readonly<Record<string, unknown>>;
  };
  readonly revoked: boolean;
};

/** A page of the list. */
export type AttestationPage = {
  /** The index head the page was computed at, set by the reads over the index (decisions §21). */
  readonly asOf?: AsOf | undefined;
  readonly subject: string;
  readonly schema: string;
  readonly items: readonly ListedAttestation[];
  /** Give it back as `cursor` for the next page; null on the last one. */
  readonly nextCursor: string | null;
};

/** What the list needs. */
export type ListAttestationsDeps = {
  /** Live chain reads (head, attestations, logs after the checkpoint). */
  readonly reads: AttestationIndex;
  readonly store: IndexStore;
  /** The active chain's schema UIDs by name (trust anchors). */
  readonly schemaUids: Readonly<Record<string, string>>;
  readonly startBlock: bigint;
};

/** The list's query, as it came (strings from the URL). */
export type ListQuery = { readonly subject?: string; readonly schema?: string; readonly limit?: string; readonly cursor?: string };

export type ListAttestations = (query: ListQuery) => Promise<Result<AttestationPage, "INVALID_DID" | "INVALID_INPUT" | "NETWORK_ERROR" | "INDEX_STALE">>;

export const DEFAULT_LIMIT = 25;
/** How many reads a page may take to fill itself past attestations that name another subject. */
const FILL_ROUNDS = 4;
export const MAX_LIMIT = 100;

/** Encodes a page position as an opaque cursor. */
export function encodeCursor(position: PageCursor): string {
  return base64UrlEncode(new TextEncoder().encode(JSON.stringify({ b: position.blockNumber.toString(), i: position.logIndex })));
}

/** Reads a cursor made by {@link encodeCursor}; undefined for anything else. */
export function decodeCursor(cursor: string): PageCursor | undefined {
  if (cursor.length > 200) return undefined;
  const bytes = base64UrlDecode(cursor);
  if (bytes === undefined) return undefined;
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as { b?: unknown; i?: unknown };
    if (typeof value.b !== "string" || !/^[0-9]{1,20}$/.test(value.b)) return undefined;
    if (typeof value.i !== "number" || !Number.isSafeInteger(value.i) || value.i < 0) return undefined;
    return { blockNumber: BigInt(value.b), logIndex: value.i };
  } catch {
    return undefined;
  }
}

const before = (log: PagedLog, cursor: PageCursor | undefined) =>
  cursor === undefined || log.blockNumber < cursor.blockNumber || (log.blockNumber === cursor.blockNumber && log.logIndex < cursor.logIndex);
const newestFirst = (a: PagedLog, b: PagedLog) =>
  a.blockNumber !== b.blockNumber ? (a.blockNumber > b.blockNumber ? -1 : 1) : b.logIndex - a.logIndex;

/**
 * Builds the list use case. A page takes the newest logs before the cursor (live tail first, then the store),
 * reads their attestations at the pinned block and keeps those whose decoded `subject` is the DID, reading
 * further back (up to four reads) when some name another subject. So a page holds `limit` items unless the list
 * ends, or many attestations sent to the subject's address name someone else; clients follow `nextCursor` until
 * it is null.
 */
export function createListAttestations(deps: ListAttestationsDeps): ListAttestations {
  return async function listAttestations(query) {
    const subject = query.subject === undefined ? undefined : normalizeDid(query.subject);
    if (subject === undefined || !subject.ok) return fail("INVALID_DID", "subject must be a DID");
    const recipient = didToAddress(subject.value);
    if (!recipient.ok) return fail("INVALID_DID", "subject must be a DID");
    const schemaName = query.schema;
    const schemaUid = schemaName === undefined ? undefined : deps.schemaUids[schemaName];
    const definition = schemaName === undefined ? undefined : findSchemaByName(schemaName);
    if (schemaName === undefined || schemaUid === undefined || definition === undefined) {
      return fail("INVALID_INPUT", "schema must name a schema of the trust anchors");
    }
    let limit = DEFAULT_LIMIT;
    if (query.limit !== undefined) {
      if (!/^[0-9]{1,3}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_LIMIT) {
        return fail("INVALID_INPUT", `limit must be a whole number from 1 to ${MAX_LIMIT}`);
      }
      limit = Number(query.limit);
    }
    const cursor = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    if (query.cursor !== undefined && cursor === undefined) return fail("INVALID_INPUT", "cursor is not one this service gave");

    const head = await deps.reads.latestBlock();
    if (!head.ok) return fail("NETWORK_ERROR", "The chain did not answer");
    const checkpoint = await deps.store.checkpoint();
    const indexedTo = checkpoint === undefined ? deps.startBlock - 1n : checkpoint.blockNumber < head.value ? checkpoint.blockNumber : head.value;
    const wanted = { recipient: recipient.value.toLowerCase() as HexString, schemaUid: schemaUid.toLowerCase() as HexString };
    const tail = indexedTo < head.value
      ? await deps.reads.attestedUids({ recipients: [wanted.recipient], schemaUids: [wanted.schemaUid], fromBlock: indexedTo + 1n, toBlock: head.value })
      : { ok: true as const, value: [] };
    if (!tail.ok) return fail("NETWORK_ERROR", "The chain did not answer");
    const fresh = tail.value.map((l): PagedLog => ({ ...l, logIndex: l.logIndex ?? 0 })).sort(newestFirst);
    /** The newest `n` logs before `position`: the live tail first, then the store. */
    const candidates = async (position: PageCursor | undefined, n: number): Promise<PagedLog[]> => {
      const live = fresh.filter((l) => before(l, position)).slice(0, n);
      if (live.length === n || indexedTo < deps.startBlock) return live;
      return [...live, ...await deps.store.page({ ...wanted, toBlock: indexedTo, before: position, limit: n - live.length })];
    };

    const items: ListedAttestation[] = [];
    let position = cursor;
    let more = false;
    // Attestations naming another subject are skipped, and the page filled from further back, a few rounds at most.
    for (let round = 0; round < FILL_ROUNDS && items.length < limit; round++) {
      const want = limit - items.length;
      const batch = await candidates(position, want + 1);
      const taken = batch.slice(0, want);
      more = batch.length > want;
      if (taken.length === 0) break;
      const read = await deps.reads.attestations(taken.map((l) => l.uid), head.value);
      if (!read.ok) return fail("NETWORK_ERROR", "The chain did not answer");
      for (const a of read.value) {
        const data = decodeSchemaData(definition.schema, a.data);
        const named = data.ok && typeof data.value.subject === "string" ? normalizeDid(data.value.subject) : undefined;
        if (!data.ok || !named?.ok || named.value !== subject.value) continue;
        items.push({
          attestation: {
            uid: a.uid,
            schema: a.schema,
            schemaName,
            attester: a.attester,
            recipient: a.recipient,
            time: a.time.toString(),
            expirationTime: a.expirationTime.toString(),
            revocationTime: a.revocationTime.toString(),
            data: data.value,
          },
          revoked: a.revocationTime !== 0n,
        });
      }
      position = taken.at(-1);
      if (!more) break;
    }
    return ok({
      subject: subject.value,
      schema: schemaName,
      items,
      nextCursor: more && position !== undefined ? encodeCursor(position) : null,
    });
  };
}
