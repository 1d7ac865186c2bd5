import type { HexString } from "../eas.ts";

/** The methods of an attestation index, for {@link fakeAttestationIndex}'s failure switch. */
type IndexMethod = "latestBlock" | "schemaRecords" | "attestedUids" | "attestations";

/**
 * An attestation index over in-memory attestations, honouring recipients, schemas and block ranges.
 * Counts calls, records the block of every read, and fails a call when `failWhen(method, n)` says so
 * (`n` counts that method's calls from 1).
 */
export function fakeAttestationIndex(options: { chainId?: number; easAddress?: HexString; head?: bigint } = {}) {
  type Entry = { attestation: import("../attestation_index.ts").IndexedAttestation; block: bigint };
  const calls: Record<IndexMethod, number> = { latestBlock: 0, schemaRecords: 0, attestedUids: 0, attestations: 0 };
  const failure = { ok: false as const, reason: "rpc-error" as const };
  const index = {
    chainId: options.chainId ?? 31337,
    easAddress: options.easAddress ?? ("0x5FbDB2315678afecb367f032d93F642f64180aa3" as HexString),
    head: options.head ?? 1000n,
    schemas: new Map<string, { schema: string; revocable: boolean }>(),
    entries: [] as Entry[],
    calls,
    queries: [] as import("../attestation_index.ts").AttestedQuery[],
    /** The block of every pinned read, in order. */
    pinned: [] as bigint[],
    failWhen: (_method: IndexMethod, _n: number): boolean => false,
    /** Registers a schema string under a UID. */
    register(uid: string, schema: string, revocable = true) {
      index.schemas.set(uid.toLowerCase(), { schema, revocable });
    },
    /** Adds an attestation, logged at `block` (default the head). */
    add(attestation: import("../attestation_index.ts").IndexedAttestation, block?: bigint) {
      index.entries.push({ attestation, block: block ?? index.head });
    },
    latestBlock() {
      if (index.failWhen("latestBlock", ++calls.latestBlock)) return Promise.resolve(failure);
      return Promise.resolve({ ok: true as const, value: index.head });
    },
    schemaRecords(uids: readonly HexString[], block: bigint) {
      index.pinned.push(block);
      if (index.failWhen("schemaRecords", ++calls.schemaRecords)) return Promise.resolve(failure);
      return Promise.resolve({
        ok: true as const,
        value: uids.map((uid) => {
          const found = index.schemas.get(uid.toLowerCase());
          return found === undefined
            ? { uid, registered: false as const }
            : { uid, registered: true as const, schema: found.schema, revocable: found.revocable };
        }),
      });
    },
    attestedUids(query: import("../attestation_index.ts").AttestedQuery) {
      index.queries.push(query);
      index.pinned.push(query.toBlock);
      if (index.failWhen("attestedUids", ++calls.attestedUids)) return Promise.resolve(failure);
      const recipients = new Set(query.recipients.map((r) => r.toLowerCase()));
      const schemas = new Set(query.schemaUids.map((s) => s.toLowerCase()));
      const from = query.fromBlock ?? 0n;
      return Promise.resolve({
        ok: true as const,
        value: index.entries
          .filter((e) =>
            e.block >= from && e.block <= query.toBlock && recipients.has(e.attestation.recipient.toLowerCase()) &&
            schemas.has(e.attestation.schema.toLowerCase())
          )
          .map((e) => ({
            uid: e.attestation.uid,
            recipient: e.attestation.recipient,
            attester: e.attestation.attester,
            schemaUid: e.attestation.schema,
            blockNumber: e.block,
          })),
      });
    },
    attestations(uids: readonly HexString[], block: bigint) {
      index.pinned.push(block);
      if (index.failWhen("attestations", ++calls.attestations)) return Promise.resolve(failure);
      const byUid = new Map(index.entries.filter((e) => e.block <= block).map((e) => [e.attestation.uid.toLowerCase(), e]));
      const found = uids.map((uid) => byUid.get(uid.toLowerCase()));
      if (found.some((e) => e === undefined)) return Promise.resolve({ ok: false as const, reason: "inconsistent" as const });
      return Promise.resolve({ ok: true as const, value: found.map((e) => e!.attestation) });
    },
  };
  return index satisfies import("../attestation_index.ts").AttestationIndex;
}

/** The attestation index's store in memory, with the rules of the SQLite one. */
export function fakeIndexStore() {
  type IndexedAttestation = import("../attestation_index.ts").IndexedAttestation;
  type Row = import("../attestation_index.ts").PagedLog & { revokedBlock: bigint | null; tail: boolean; record?: IndexedAttestation | undefined };
  type Checkpoint = import("../attestation_index.ts").IndexCheckpoint;
  let rows: Row[] = [];
  let checkpoints: Checkpoint[] = [];
  let poll: { checkedAtMs: number; chainHead: bigint; doubtedAtMs?: number | undefined } | undefined;
  const byPosition = (a: Row, b: Row) => (a.blockNumber !== b.blockNumber ? (a.blockNumber < b.blockNumber ? -1 : 1) : a.logIndex - b.logIndex);
  const saveRecord = (a: IndexedAttestation) => {
    rows = rows.map((r) => (r.uid === a.uid.toLowerCase() ? { ...r, record: a } : r));
  };
  /** The SQL stores' filter (decisions §24): time from the stored record, revocation as of `toBlock`. */
  const matches = (r: Row, f: import("../attestation_index.ts").IndexFilter) => {
    const revoked = r.revokedBlock !== null && r.revokedBlock <= f.toBlock;
    const time = r.record?.time;
    return r.blockNumber <= f.toBlock &&
      (f.recipient === undefined || r.recipient === f.recipient.toLowerCase()) &&
      (f.attester === undefined || r.attester === f.attester.toLowerCase()) &&
      (f.schemaUid === undefined || r.schemaUid === f.schemaUid.toLowerCase()) &&
      (f.revoked === undefined || f.revoked === revoked) &&
      (f.since === undefined || (time !== undefined && time >= f.since)) &&
      (f.until === undefined || (time !== undefined && time < f.until));
  };
  const store = {
    rows: () => rows,
    checkpoint: () => Promise.resolve(checkpoints.at(-1)),
    history: (limit: number) => Promise.resolve(checkpoints.slice().reverse().slice(0, limit)),
    append(
      expected: bigint | undefined,
      events: readonly import("../attestation_index.ts").EasEvent[],
      next: Checkpoint,
      details: import("../attestation_index.ts").AppendDetails = {},
    ) {
      if (checkpoints.at(-1)?.blockNumber !== expected) return Promise.resolve(false);
      const confirmedTo = details.confirmedTo ?? next.blockNumber;
      for (const e of events) {
        if (e.kind === "attested") {
          if (!rows.some((r) => r.uid === e.uid)) rows.push({ ...e, revokedBlock: null, tail: e.blockNumber > confirmedTo });
        } else {
          rows = rows.map((r) => (r.uid === e.uid ? { ...r, revokedBlock: e.blockNumber } : r));
        }
      }
      for (const a of details.attestations ?? []) saveRecord(a);
      rows = rows.map((r) => (r.tail && r.blockNumber <= confirmedTo ? { ...r, tail: false } : r));
      rows.sort(byPosition);
      // What the real stores keep of a block: its number, hash and time.
      for (const b of details.blocks ?? []) checkpoints.push({ blockNumber: b.blockNumber, blockHash: b.blockHash, timestamp: b.timestamp });
      checkpoints.push(next);
      return Promise.resolve(true);
    },
    rewind(to: Checkpoint | undefined) {
      const limit = to?.blockNumber ?? -1n;
      rows = rows.filter((r) => r.blockNumber <= limit).map((r) =>
        r.revokedBlock !== null && r.revokedBlock > limit
          ? { ...r, revokedBlock: null, record: r.record === undefined ? undefined : { ...r.record, revocationTime: 0n } }
          : r
      );
      checkpoints = checkpoints.filter((c) => c.blockNumber < limit);
      if (to !== undefined) checkpoints.push(to);
      return Promise.resolve();
    },
    attested(q: import("../attestation_index.ts").AttestedQuery & { fromBlock: bigint }) {
      const recipients = q.recipients.map((r) => r.toLowerCase());
      const schemas = q.schemaUids.map((s) => s.toLowerCase());
      return Promise.resolve(rows.filter((r) =>
        r.blockNumber >= q.fromBlock && r.blockNumber <= q.toBlock && recipients.includes(r.recipient) && schemas.includes(r.schemaUid)
      ));
    },
    query(q: import("../attestation_index.ts").IndexQuery) {
      const after = q.after;
      const matching = rows.filter((r) => matches(r, q)).filter((r) =>
        after === undefined ||
        (q.order === "newest"
          ? r.blockNumber < after.blockNumber || (r.blockNumber === after.blockNumber && r.logIndex < after.logIndex)
          : r.blockNumber > after.blockNumber || (r.blockNumber === after.blockNumber && r.logIndex > after.logIndex))
      );
      return Promise.resolve((q.order === "newest" ? matching.reverse() : matching).slice(0, q.limit));
    },
    count: (filter: import("../attestation_index.ts").IndexFilter) => Promise.resolve(rows.filter((r) => matches(r, filter)).length),
    head() {
      const c = checkpoints.at(-1);
      return Promise.resolve(
        c === undefined ? undefined : { ...c, checkedAtMs: poll?.checkedAtMs ?? null, chainHead: poll?.chainHead ?? null, doubtedAtMs: poll?.doubtedAtMs ?? null },
      );
    },
    checked(nowMs: number, chainHead: bigint) {
      poll = { checkedAtMs: Math.max(poll?.checkedAtMs ?? 0, nowMs), chainHead };
      return Promise.resolve();
    },
    doubted(checkedAtMs: number) {
      if (poll === undefined || poll.checkedAtMs !== checkedAtMs) return Promise.resolve(false);
      poll = { ...poll, doubtedAtMs: checkedAtMs };
      return Promise.resolve(true);
    },
    records(uids: readonly HexString[]) {
      const wanted = new Set(uids.map((u) => u.toLowerCase()));
      return Promise.resolve(rows.filter((r) => wanted.has(r.uid) && r.record !== undefined).map((r) => ({
        ...r.record!,
        blockNumber: r.blockNumber,
        revokedBlock: r.revokedBlock,
      })));
    },
    incomplete: (limit: number) => Promise.resolve(rows.filter((r) => r.record === undefined).slice(0, limit).map((r) => r.uid)),
    complete(records: readonly IndexedAttestation[]) {
      for (const a of records) saveRecord(a);
      return Promise.resolve();
    },
    counts: () => Promise.resolve({ attestations: rows.length, tail: rows.filter((r) => r.tail).length }),
    lease: () => Promise.resolve(true),
  };
  return store satisfies import("../attestation_index.ts").IndexStore;
}
