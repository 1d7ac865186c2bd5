/** Signing keys in memory, with the stores' rules: one row per account and key, upserts keep id, creation and type. */
export function fakeSigningKeyStore() {
  type SigningKeyRecord = import("../signing_keys.ts").SigningKeyRecord;
  const rows: SigningKeyRecord[] = [];
  const store = {
    rows,
    upsert(record: SigningKeyRecord, maxPerAccount: number): Promise<import("../signing_keys.ts").SigningKeyUpsert> {
      const i = rows.findIndex((r) => r.accountId === record.accountId && r.keyDid === record.keyDid);
      if (i !== -1) {
        const { displayName, tags, notes, updatedAtMs } = record;
        rows[i] = { ...rows[i]!, displayName, tags: [...tags], notes, updatedAtMs };
        return Promise.resolve({ outcome: "updated", record: rows[i]! });
      }
      if (rows.filter((r) => r.accountId === record.accountId).length >= maxPerAccount) return Promise.resolve({ outcome: "limit" });
      rows.push({ ...record, tags: [...record.tags] });
      return Promise.resolve({ outcome: "created", record: rows.at(-1)! });
    },
    list(accountId: string, filter: { keyType?: string | undefined; tag?: string | undefined } = {}) {
      return Promise.resolve(rows
        .filter((r) => r.accountId === accountId && (filter.keyType === undefined || r.keyType === filter.keyType))
        .filter((r) => filter.tag === undefined || r.tags.includes(filter.tag))
        .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.id < b.id ? 1 : -1)));
    },
  };
  return store satisfies import("../signing_keys.ts").SigningKeyStore;
}
