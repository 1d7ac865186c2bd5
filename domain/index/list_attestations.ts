/**
 * Queries of the attestation index (decisions §11, §24): the attestations matching any combination of subject,
 * attester, recipient and schema (with revoked, since and until), newest or oldest first, in keyset pages; their count;
 * one attestation by uid. Read from the store alone, pinned to one block: the index head of the read (decisions §21).
 */
import type { AttestationIndex, IndexedAttestation, IndexFilter, IndexStore, PageCursor, PagedLog } from "../../ports/attestation_index.ts";
import type { HexString } from "../../ports/eas.ts";
import { isAddress, keccak256, stringToBytes } from "viem/utils";
import { base64UrlDecode, base64UrlEncode, didToAddress, normalizeSubjectDid, recordSubjectDid } from "../did/mod.ts";
import { hmacSha256 } from "../hmac.ts";
import { fail, ok, type Result } from "../result.ts";
import { decodeSchemaData } from "../schema_data.ts";
import { findSchemaByName } from "../schemas.ts";
import type { AsOf } from "./store_reads.ts";

/** One listed attestation: artifact trust's record shape (without its verification) and whether it is revoked. */
export type ListedAttestation = {
  readonly attestation: {
    readonly uid: string;
    readonly schema: string;
    /** The schema's name in the trust anchors; null for a schema they do not name (its data is then left undecoded: {}). */
    readonly schemaName: string | null;
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
  /** The subject as normalized, when the query named one. */
  readonly subject?: string | undefined;
  /** The schema as the query named it, when it did. */
  readonly schema?: string | undefined;
  readonly items: readonly ListedAttestation[];
  /** Give it back as `cursor` for the next page; null on the last one. */
  readonly nextCursor: string | null;
};

/** What the queries need. */
export type ListAttestationsDeps = {
  /** The reads pinned to the index head (head and records). */
  readonly reads: AttestationIndex;
  readonly store: IndexStore;
  /** The active chain's schema UIDs by name (trust anchors). */
  readonly schemaUids: Readonly<Record<string, string>>;
  readonly startBlock: bigint;
};

/**
 * What the list needs besides: `cursorKey`, the deployment's secret its cursors are checked with (HMAC-SHA256), the
 * same for every instance on one store (app/index.ts reads it from the shared store) and never shown to anyone.
 */
export type ListAttestationsWithCursorsDeps = ListAttestationsDeps & { readonly cursorKey: Uint8Array };

/** The filters of a query, as they came (strings from the URL). */
export type FilterQuery = {
  readonly subject?: string | undefined;
  readonly attester?: string | undefined;
  readonly recipient?: string | undefined;
  readonly schema?: string | undefined;
  readonly revoked?: string | undefined;
  readonly since?: string | undefined;
  readonly until?: string | undefined;
};

/** The list's query, as it came (strings from the URL). */
export type ListQuery = FilterQuery & {
  readonly order?: string | undefined;
  readonly limit?: string | undefined;
  readonly cursor?: string | undefined;
};

/** Why a query is refused or failed. */
export type QueryErrorCode = "INVALID_DID" | "INVALID_INPUT" | "NETWORK_ERROR" | "INDEX_STALE";

export type ListAttestations = (query: ListQuery) => Promise<Result<AttestationPage, QueryErrorCode>>;

/** A count of the attestations matching the filters (decisions §24). */
export type AttestationCount = { readonly asOf?: AsOf | undefined; readonly count: number };
export type CountAttestations = (query: FilterQuery) => Promise<Result<AttestationCount, QueryErrorCode>>;

/** One attestation by uid (decisions §24). */
export type AttestationItem = ListedAttestation & { readonly asOf?: AsOf | undefined };
export type GetAttestation = (uid: string) => Promise<Result<AttestationItem, "INVALID_INPUT" | "NOT_FOUND" | "NETWORK_ERROR" | "INDEX_STALE">>;

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;
/** How many reads a page may take to fill itself past attestations that name another subject. */
const FILL_ROUNDS = 4;
/** The largest `since`/`until`: Unix seconds that fit a signed 64-bit column. */
const MAX_SECONDS = 9_223_372_036_854_775_807n;
const UID = /^0x[0-9a-fA-F]{64}$/;

/** The filters as the store takes them, with what the answer names and what a cursor is bound to. */
type Filters = {
  readonly store: Omit<IndexFilter, "toBlock">;
  /** The normalized subject DID whose decoded `subject` every item must name. */
  readonly subject?: string | undefined;
  readonly schema?: string | undefined;
  /** A digest of the filters, so a cursor of another query is refused. */
  readonly digest: string;
  /** The filters contradict each other (a subject and another recipient): nothing matches. */
  readonly none: boolean;
};

const seconds = (name: string, value: string | undefined): Result<bigint | undefined, "INVALID_INPUT"> => {
  if (value === undefined) return ok(undefined);
  if (!/^[0-9]{1,19}$/.test(value) || BigInt(value) > MAX_SECONDS) return fail("INVALID_INPUT", `${name} must be Unix seconds (a whole number)`);
  return ok(BigInt(value));
};

/** Checks the filters of a query; at least one of subject, attester, recipient and schema. */
function readFilters(query: FilterQuery, schemaUids: Readonly<Record<string, string>>): Result<Filters, "INVALID_DID" | "INVALID_INPUT"> {
  if ([query.subject, query.attester, query.recipient, query.schema].every((v) => v === undefined)) {
    return fail("INVALID_INPUT", "Give at least one of subject, attester, recipient or schema");
  }
  let subject: string | undefined;
  let recipient: HexString | undefined;
  let none = false;
  if (query.subject !== undefined) {
    // The one subject rule (issue 43): no whitespace, a did:web naming a domain; a bare domain is its did:web.
    const normalized = normalizeSubjectDid(query.subject);
    if (!normalized.ok) return fail("INVALID_DID", `subject must be a DID or a domain: ${normalized.message}`);
    const address = didToAddress(normalized.value);
    if (!address.ok) return fail("INVALID_DID", "subject must be a DID or a domain");
    subject = normalized.value;
    recipient = address.value.toLowerCase() as HexString;
  }
  if (query.recipient !== undefined) {
    if (!isAddress(query.recipient, { strict: false })) return fail("INVALID_INPUT", "recipient must be a 0x address");
    const given = query.recipient.toLowerCase() as HexString;
    // A subject's attestations are sent to its DID address: with another recipient the query matches nothing.
    if (recipient !== undefined && recipient !== given) none = true;
    recipient = given;
  }
  let attester: HexString | undefined;
  if (query.attester !== undefined) {
    if (!isAddress(query.attester, { strict: false })) return fail("INVALID_INPUT", "attester must be a 0x address");
    attester = query.attester.toLowerCase() as HexString;
  }
  let schemaUid: HexString | undefined;
  if (query.schema !== undefined) {
    // The anchors' own names only: `constructor` or `__proto__` found Object's and answered 500.
    const named = Object.hasOwn(schemaUids, query.schema) ? schemaUids[query.schema] : undefined;
    if (typeof named === "string") schemaUid = named.toLowerCase() as HexString;
    else if (UID.test(query.schema)) schemaUid = query.schema.toLowerCase() as HexString;
    else return fail("INVALID_INPUT", "schema must name a schema of the trust anchors or be a schema UID (0x and 64 hex digits)");
  }
  let revoked: boolean | undefined;
  if (query.revoked !== undefined) {
    if (query.revoked !== "true" && query.revoked !== "false") return fail("INVALID_INPUT", "revoked must be true or false");
    revoked = query.revoked === "true";
  }
  const since = seconds("since", query.since);
  if (!since.ok) return since;
  const until = seconds("until", query.until);
  if (!until.ok) return until;
  const store = { recipient, attester, schemaUid, revoked, since: since.value, until: until.value };
  const digest = keccak256(stringToBytes(JSON.stringify([
    subject ?? null,
    recipient ?? null,
    attester ?? null,
    schemaUid ?? null,
    revoked ?? null,
    since.value?.toString() ?? null,
    until.value?.toString() ?? null,
  ]))).slice(2, 18);
  return ok({ store, subject, schema: query.schema, digest, none });
}

/** The bytes of HMAC-SHA256 a cursor's check keeps: 128 bits, 22 characters of base64url. */
const CHECK_BYTES = 16;

/**
 * The check of a cursor's text (issue 43 item 10): HMAC-SHA256 under the deployment's secret `key`, so nobody without
 * the secret can mint a cursor for a position of their choosing; a cursor changed by hand, or made by another
 * deployment (another secret), fails it.
 */
const cursorCheck = (body: string, key: Uint8Array) => base64UrlEncode(hmacSha256(key, stringToBytes(`ats-attestations-cursor\n${body}`)).subarray(0, CHECK_BYTES));

/** Whether two texts are equal, in a time that does not depend on where they first differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/** Encodes a page position of the query with filter digest `query` as an opaque cursor, checked under `key`. */
export function encodeCursor(position: PageCursor, query: string, key: Uint8Array): string {
  const body = base64UrlEncode(stringToBytes(JSON.stringify({ b: position.blockNumber.toString(), i: position.logIndex, q: query })));
  return `${body}.${cursorCheck(body, key)}`;
}

/** Reads a cursor made by {@link encodeCursor} under `key`: the position and the query digest; undefined for anything else. */
export function decodeCursor(cursor: string, key: Uint8Array): (PageCursor & { readonly query: string }) | undefined {
  if (cursor.length > 200) return undefined;
  const [body, check, ...rest] = cursor.split(".");
  if (body === undefined || check === undefined || rest.length > 0 || !sameText(cursorCheck(body, key), check)) return undefined;
  const bytes = base64UrlDecode(body);
  if (bytes === undefined) return undefined;
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes)) as { b?: unknown; i?: unknown; q?: unknown };
    if (typeof value.b !== "string" || !/^[0-9]{1,19}$/.test(value.b)) return undefined;
    if (typeof value.i !== "number" || !Number.isSafeInteger(value.i) || value.i < 0 || value.i > 2_147_483_647) return undefined;
    if (typeof value.q !== "string") return undefined;
    return { blockNumber: BigInt(value.b), logIndex: value.i, query: value.q };
  } catch {
    return undefined;
  }
}

/** The index head the reads are pinned to, bounded by the store's checkpoint (lower after a rewind). */
async function pinnedBlock(deps: ListAttestationsDeps): Promise<bigint | undefined> {
  const head = await deps.reads.latestBlock();
  if (!head.ok) return undefined;
  const checkpoint = await deps.store.checkpoint();
  if (checkpoint === undefined) return deps.startBlock - 1n;
  return checkpoint.blockNumber < head.value ? checkpoint.blockNumber : head.value;
}

/** Items of the trust anchors' schemas are decoded; other schemas' data is left as {}. */
function toItem(a: IndexedAttestation, namesByUid: ReadonlyMap<string, string>): ListedAttestation & { readonly decodedSubject?: string | undefined } {
  const schemaName = namesByUid.get(a.schema.toLowerCase()) ?? null;
  const definition = schemaName === null ? undefined : findSchemaByName(schemaName);
  const decoded = definition === undefined ? undefined : decodeSchemaData(definition.schema, a.data);
  const data = decoded?.ok ? decoded.value : {};
  // The rule the stored subject follows (domain/index/record_subject.ts), so the count is what the list lists.
  const named = recordSubjectDid(data.subject);
  return {
    attestation: {
      uid: a.uid,
      schema: a.schema,
      schemaName,
      attester: a.attester,
      recipient: a.recipient,
      time: a.time.toString(),
      expirationTime: a.expirationTime.toString(),
      revocationTime: a.revocationTime.toString(),
      data,
    },
    revoked: a.revocationTime !== 0n,
    decodedSubject: named,
  };
}

const namesOf = (schemaUids: Readonly<Record<string, string>>) => new Map(Object.entries(schemaUids).map(([name, uid]) => [uid.toLowerCase(), name]));

/** Reads the records of `logs` at `block` and keeps those whose decoded subject is `subject` (when given). */
async function itemsOf(
  deps: ListAttestationsDeps,
  logs: readonly PagedLog[],
  at: { readonly block: bigint; readonly subject: string | undefined; readonly names: ReadonlyMap<string, string> },
): Promise<ListedAttestation[] | undefined> {
  if (logs.length === 0) return [];
  const read = await deps.reads.attestations(logs.map((l) => l.uid), at.block);
  if (!read.ok) return undefined;
  const out: ListedAttestation[] = [];
  for (const a of read.value) {
    const { decodedSubject, ...item } = toItem(a, at.names);
    if (at.subject === undefined || decodedSubject === at.subject) out.push(item);
  }
  return out;
}

/**
 * Builds the list. A page is one keyset read of the store after the cursor's position (block, then log index) in the
 * query's order, and one read of the page's records. With `subject`, attestations sent to the subject's address that
 * name another subject are skipped and the page filled from further on (up to four reads), so a page may hold fewer
 * than `limit` items; clients follow `nextCursor` until it is null.
 */
export function createListAttestations(deps: ListAttestationsWithCursorsDeps): ListAttestations {
  return async function listAttestations(query) {
    const filters = readFilters(query, deps.schemaUids);
    if (!filters.ok) return filters;
    const order = query.order ?? "newest";
    if (order !== "newest" && order !== "oldest") return fail("INVALID_INPUT", "order must be newest or oldest");
    let limit = DEFAULT_LIMIT;
    if (query.limit !== undefined) {
      if (!/^[0-9]{1,3}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_LIMIT) {
        return fail("INVALID_INPUT", `limit must be a whole number from 1 to ${MAX_LIMIT}`);
      }
      limit = Number(query.limit);
    }
    const digest = `${filters.value.digest}${order === "newest" ? "n" : "o"}`;
    const cursor = query.cursor === undefined ? undefined : decodeCursor(query.cursor, deps.cursorKey);
    if (query.cursor !== undefined && cursor === undefined) return fail("INVALID_INPUT", "cursor is not one this service gave");
    if (cursor !== undefined && cursor.query !== digest) return fail("INVALID_INPUT", "cursor belongs to a query with other filters or order");

    const block = await pinnedBlock(deps);
    if (block === undefined) return fail("NETWORK_ERROR", "The index could not be read");
    const names = namesOf(deps.schemaUids);
    const items: ListedAttestation[] = [];
    let position: PageCursor | undefined = cursor === undefined ? undefined : { blockNumber: cursor.blockNumber, logIndex: cursor.logIndex };
    let more = false;
    // Only the subject filter can drop rows after the store's read: then the page is filled from further on.
    for (let round = 0; round < FILL_ROUNDS && items.length < limit; round++) {
      const want = limit - items.length;
      const batch = block < deps.startBlock || filters.value.none
        ? []
        : await deps.store.query({ ...filters.value.store, toBlock: block, order, after: position, limit: want + 1 });
      const taken = batch.slice(0, want);
      more = batch.length > want;
      if (taken.length === 0) break;
      const read = await itemsOf(deps, taken, { block, subject: filters.value.subject, names });
      if (read === undefined) return fail("NETWORK_ERROR", "The index could not be read");
      items.push(...read);
      position = taken.at(-1);
      if (!more) break;
    }
    return ok({
      ...(filters.value.subject === undefined ? {} : { subject: filters.value.subject }),
      ...(filters.value.schema === undefined ? {} : { schema: filters.value.schema }),
      items,
      nextCursor: more && position !== undefined ? encodeCursor(position, digest, deps.cursorKey) : null,
    });
  };
}

/** How many rows a subject's count reads at a time to check each decoded subject. */
const COUNT_STEP = 500;

/**
 * Builds the count: one COUNT over the store's indexes. With `subject`, the subject each record names is stored with
 * it (issue 43), so the count is one COUNT over the subject's index too; while a stored subject of the subject's
 * address may not be known (`IndexStore.subjectsKnown`: rows being filled, or a change of rule being forgotten),
 * those attestations are read (500 at a time) to count only those whose decoded subject is the DID, as the list shows
 * them.
 */
export function createCountAttestations(deps: ListAttestationsDeps): CountAttestations {
  return async function countAttestations(query) {
    const filters = readFilters(query, deps.schemaUids);
    if (!filters.ok) return filters;
    const block = await pinnedBlock(deps);
    if (block === undefined) return fail("NETWORK_ERROR", "The index could not be read");
    if (block < deps.startBlock || filters.value.none) return ok({ count: 0 });
    const filter = { ...filters.value.store, toBlock: block };
    if (filters.value.subject === undefined) return ok({ count: await deps.store.count(filter) });
    const known = deps.store.subjectsKnown;
    const recipient = filter.recipient;
    const rule = known === undefined || recipient === undefined ? undefined : await known(recipient);
    if (known !== undefined && recipient !== undefined && rule !== undefined) {
      const count = await deps.store.count({ ...filter, subject: filters.value.subject });
      // The rule row read again after the COUNT (one primary-key read): a change of rule committed between the two reads
      // counted forgotten subjects, and the count was kept for the index's generation. The rule and the forgetting under
      // way as before: no change of rule, nor forgetting, began between (stored subjects are forgotten only under a
      // forgetting the row names).
      const again = deps.store.subjectRule === undefined ? await known(recipient) : await deps.store.subjectRule();
      if (again === rule) return ok({ count });
    }
    const names = namesOf(deps.schemaUids);
    let count = 0;
    let after: PageCursor | undefined;
    for (;;) {
      const logs = await deps.store.query({ ...filter, order: "oldest", after, limit: COUNT_STEP });
      const read = await itemsOf(deps, logs, { block, subject: filters.value.subject, names });
      if (read === undefined) return fail("NETWORK_ERROR", "The index could not be read");
      count += read.length;
      if (logs.length < COUNT_STEP) return ok({ count });
      after = logs.at(-1);
    }
  };
}

/** Builds the read of one attestation by uid. */
export function createGetAttestation(deps: ListAttestationsDeps): GetAttestation {
  return async function getAttestation(uid) {
    if (!UID.test(uid)) return fail("INVALID_INPUT", "uid must be 0x and 64 hex digits");
    const block = await pinnedBlock(deps);
    if (block === undefined) return fail("NETWORK_ERROR", "The index could not be read");
    const [stored] = await deps.store.records([uid as HexString]);
    if (stored === undefined || stored.blockNumber > block) return fail("NOT_FOUND", "No attestation with this uid in the index");
    const read = await itemsOf(deps, [{ ...stored, schemaUid: stored.schema, logIndex: 0 }], { block, subject: undefined, names: namesOf(deps.schemaUids) });
    if (read === undefined || read[0] === undefined) return fail("NETWORK_ERROR", "The index could not be read");
    return ok(read[0]);
  };
}
