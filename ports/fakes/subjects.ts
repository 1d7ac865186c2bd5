/** An in-memory subject store with the adapters' rules (one default, bootstrap replaced by the first added); counts its writes. */
export function fakeSubjectStore() {
  let rows: import("../subjects.ts").Subject[] = [];
  const of = (accountId: string) =>
    rows.filter((s) => s.accountId === accountId).sort((a, b) => Number(b.isDefault) - Number(a.isDefault) || a.createdAtMs - b.createdAtMs || a.id.localeCompare(b.id));
  const store = {
    writes: 0,
    rows: () => rows,
    list: (accountId: string) => Promise.resolve(of(accountId)),
    ensureBootstrap(subject: import("../subjects.ts").Subject) {
      if (of(subject.accountId).length === 0) rows.push({ ...subject, isDefault: true }), store.writes++;
      return Promise.resolve();
    },
    add(subject: import("../subjects.ts").Subject, maxPerAccount: number) {
      const current = of(subject.accountId);
      if (current.some((s) => s.canonicalDid === subject.canonicalDid)) return Promise.resolve("exists" as const);
      if (current.filter((s) => !s.bootstrap).length >= maxPerAccount) return Promise.resolve("limit" as const);
      const onlyBootstrap = current.length > 0 && current.every((s) => s.bootstrap);
      if (onlyBootstrap) rows = rows.filter((s) => s.accountId !== subject.accountId);
      rows.push({ ...subject, isDefault: onlyBootstrap || current.length === 0 });
      store.writes++;
      return Promise.resolve("added" as const) as Promise<"added" | "exists" | "limit">;
    },
    update(accountId: string, id: string, change: { readonly displayName?: string | null; readonly isDefault?: true }) {
      const found = rows.find((s) => s.accountId === accountId && s.id === id);
      if (found === undefined) return Promise.resolve(undefined);
      rows = rows.map((s) => {
        if (s.accountId !== accountId) return s;
        const named = s.id === id && change.displayName !== undefined ? { ...s, displayName: change.displayName } : s;
        return change.isDefault ? { ...named, isDefault: s.id === id } : named;
      });
      store.writes++;
      return Promise.resolve(rows.find((s) => s.id === id));
    },
    remove(accountId: string, id: string) {
      const found = rows.find((s) => s.accountId === accountId && s.id === id);
      if (found === undefined) return Promise.resolve(false);
      rows = rows.filter((s) => s !== found);
      const next = of(accountId)[0];
      if (found.isDefault && next !== undefined) rows = rows.map((s) => (s === next ? { ...s, isDefault: true } : s));
      store.writes++;
      return Promise.resolve(true);
    },
  };
  return store satisfies import("../subjects.ts").SubjectStore;
}
