import type { Database } from "bun:sqlite";
import type { SigningKeyRecord, SigningKeyStore, SigningKeyUpsert } from "../../ports/signing_keys.ts";
import { type SigningKeyRow, signingKeyTables, toSigningKey } from "../sql/signing_keys.ts";

/** Signing keys in the SQLite file; an upsert is one `BEGIN IMMEDIATE` transaction (the count and the write together). */
export function createSqliteSigningKeys(db: Database): SigningKeyStore {
  db.transaction(() => {
    for (const statement of signingKeyTables("INTEGER")) db.exec(statement);
  }).immediate();
  const find = db.query<SigningKeyRow, [string, string]>("SELECT * FROM signing_keys WHERE account_id = ? AND key_did = ?");
  const count = db.query<{ n: number }, [string]>("SELECT COUNT(*) AS n FROM signing_keys WHERE account_id = ?");
  const insert = db.query(
    `INSERT INTO signing_keys (id, account_id, key_did, key_type, display_name, tags, notes, created_at_ms, updated_at_ms)
     VALUES ($id, $accountId, $keyDid, $keyType, $displayName, $tags, $notes, $createdAt, $updatedAt)`,
  );
  const update = db.query(
    "UPDATE signing_keys SET display_name = $displayName, tags = $tags, notes = $notes, updated_at_ms = $updatedAt WHERE id = $id",
  );
  const upsert = db.transaction((r: SigningKeyRecord, max: number): SigningKeyUpsert => {
    const existing = find.get(r.accountId, r.keyDid);
    const tags = JSON.stringify(r.tags);
    if (existing !== null) {
      update.run({ id: existing.id, displayName: r.displayName, tags, notes: r.notes, updatedAt: r.updatedAtMs });
      return { outcome: "updated", record: toSigningKey(find.get(r.accountId, r.keyDid)!) };
    }
    if (count.get(r.accountId)!.n >= max) return { outcome: "limit" };
    insert.run({
      id: r.id,
      accountId: r.accountId,
      keyDid: r.keyDid,
      keyType: r.keyType,
      displayName: r.displayName,
      tags,
      notes: r.notes,
      createdAt: r.createdAtMs,
      updatedAt: r.updatedAtMs,
    });
    return { outcome: "created", record: toSigningKey(find.get(r.accountId, r.keyDid)!) };
  });
  return {
    upsert: (record, max) => Promise.resolve(upsert.immediate(record, max)),
    list(accountId, filter = {}) {
      const rows = db.query<SigningKeyRow, [string, string | null, string | null]>(
        `SELECT * FROM signing_keys WHERE account_id = ?1 AND (?2 IS NULL OR key_type = ?2)
           AND (?3 IS NULL OR EXISTS (SELECT 1 FROM json_each(signing_keys.tags) WHERE json_each.value = ?3))
         ORDER BY created_at_ms DESC, id DESC`,
      ).all(accountId, filter.keyType ?? null, filter.tag ?? null);
      return Promise.resolve(rows.map(toSigningKey));
    },
  };
}
