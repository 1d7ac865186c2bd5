/** Tracked submissions in memory, with the stores' rules. */
export function fakeSubmissionRecords() {
  type Rec = import("../submission_records.ts").SubmissionRecord;
  type Outcome = import("../submission_records.ts").SubmissionOutcome;
  const records = new Map<string, Rec>();
  /** Settled, `submission.settled` not yet queued. */
  const untold = new Set<string>();
  const settle = (record: Rec, outcome: Outcome, nowMs: number, options?: { readonly untold?: boolean }) => {
    if (record.outcome !== null) return false;
    records.set(record.id, { ...record, outcome, updatedAtMs: nowMs });
    if (options?.untold !== false) untold.add(record.id);
    return true;
  };
  const store = {
    records,
    create(r: { id: string; scope: string; chainId: number; ref: string; createdAtMs: number; items?: readonly import("../submission_records.ts").SubmissionItem[] | undefined }) {
      records.set(r.id, { ...r, items: r.items ?? null, outcome: null, updatedAtMs: r.createdAtMs });
      return Promise.resolve();
    },
    find: (id: string) => Promise.resolve(records.get(id)),
    list(scope: string, page: { limit: number; after?: import("../submission_records.ts").SubmissionCursor | undefined }) {
      const after = page.after;
      const newest = [...records.values()].filter((r) => r.scope === scope)
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
        .filter((r) => after === undefined || r.createdAtMs < after.createdAtMs || (r.createdAtMs === after.createdAtMs && r.id < after.id));
      return Promise.resolve(newest.slice(0, page.limit));
    },
    settle(id: string, outcome: Outcome, nowMs: number, options?: { readonly untold?: boolean }) {
      const record = records.get(id);
      return Promise.resolve(record !== undefined && settle(record, outcome, nowMs, options));
    },
    settleRef(chainId: number, ref: string, outcome: Outcome, nowMs: number) {
      // A record naming no chain (a previous version's) is the record's whatever its chain, and is given this one.
      const ofRef = [...records.values()].filter((record) => record.ref === ref && (record.chainId === chainId || record.chainId === null));
      const settled = ofRef.filter((record) => settle(record, outcome, nowMs)).map((r) => r.id);
      for (const id of settled) records.set(id, { ...records.get(id)!, chainId: records.get(id)!.chainId ?? chainId });
      return Promise.resolve(settled);
    },
    untoldIds: untold as ReadonlySet<string>,
    told(id: string) {
      untold.delete(id);
      return Promise.resolve();
    },
    untold(beforeMs: number, limit: number) {
      const open = [...records.values()].filter((r) => (r.outcome === null || untold.has(r.id)) && r.createdAtMs < beforeMs)
        .sort((a, b) => a.createdAtMs - b.createdAtMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return Promise.resolve(open.slice(0, limit));
    },
    prune(beforeMs: number) {
      let gone = 0;
      for (const [id, r] of records) if (r.createdAtMs < beforeMs && r.outcome !== null && records.delete(id)) gone++;
      return Promise.resolve(gone);
    },
  };
  return store satisfies import("../submission_records.ts").SubmissionRecordStore;
}
