import type { Database } from "bun:sqlite";
import type { Subject, SubjectStore } from "../../ports/subjects.ts";
import { type Row, subjectTables, toSubject } from "../sql/subjects.ts";

/** Subjects in the SQLite file; each change in one `BEGIN IMMEDIATE` transaction. */
export function createSqliteSubjects(db: Database): SubjectStore {
  db.transaction(() => {
    for (const statement of subjectTables("INTEGER")) db.exec(statement);
  }).immediate();
  const list = db.query<Row, [string]>("SELECT * FROM subjects WHERE account_id = ? ORDER BY is_default DESC, created_at_ms, id");
  const insert = db.query(
    `INSERT INTO subjects (id, account_id, canonical_did, subject_did_hash, display_name, is_default, bootstrap, ownership_method,
                           ownership_wallet_did, verified_at_ms, created_at_ms)
     VALUES ($id, $accountId, $did, $hash, $name, $isDefault, $bootstrap, $method, $wallet, $verifiedAt, $createdAt)`,
  );
  const values = (s: Subject, isDefault: boolean) => ({
    id: s.id,
    accountId: s.accountId,
    did: s.canonicalDid,
    hash: s.subjectDidHash,
    name: s.displayName,
    isDefault: isDefault ? 1 : 0,
    bootstrap: s.bootstrap ? 1 : 0,
    method: s.ownershipMethod,
    wallet: s.ownershipWalletDid,
    verifiedAt: s.verifiedAtMs,
    createdAt: s.createdAtMs,
  });
  const byId = db.query<Row, [string, string]>("SELECT * FROM subjects WHERE account_id = ? AND id = ?");
  const ensure = db.transaction((s: Subject) => {
    if (list.all(s.accountId).length === 0) insert.run(values(s, true));
  });
  const add = db.transaction((s: Subject, max: number): "added" | "exists" | "limit" => {
    const current = list.all(s.accountId);
    if (current.some((r) => r.canonical_did === s.canonicalDid)) return "exists";
    if (current.filter((r) => !r.bootstrap).length >= max) return "limit";
    const onlyBootstrap = current.length > 0 && current.every((r) => Boolean(r.bootstrap));
    if (onlyBootstrap) db.query("DELETE FROM subjects WHERE account_id = ? AND bootstrap = 1").run(s.accountId);
    insert.run(values(s, onlyBootstrap || current.length === 0));
    return "added";
  });
  const update = db.transaction((accountId: string, id: string, change: { displayName?: string | null; isDefault?: true }) => {
    if (byId.get(accountId, id) === null) return undefined;
    if (change.displayName !== undefined) db.query("UPDATE subjects SET display_name = ? WHERE id = ?").run(change.displayName, id);
    if (change.isDefault) {
      db.query("UPDATE subjects SET is_default = 0 WHERE account_id = ?").run(accountId);
      db.query("UPDATE subjects SET is_default = 1 WHERE id = ?").run(id);
    }
    return toSubject(byId.get(accountId, id)!);
  });
  const remove = db.transaction((accountId: string, id: string) => {
    const found = byId.get(accountId, id);
    if (found === null) return false;
    db.query("DELETE FROM subjects WHERE id = ?").run(id);
    if (Boolean(found.is_default)) {
      const next = list.all(accountId)[0];
      if (next !== undefined) db.query("UPDATE subjects SET is_default = 1 WHERE id = ?").run(next.id);
    }
    return true;
  });
  return {
    list: (accountId) => Promise.resolve(list.all(accountId).map(toSubject)),
    ensureBootstrap: (s) => Promise.resolve(ensure.immediate(s)),
    add: (s, max) => Promise.resolve(add.immediate(s, max)),
    update: (accountId, id, change) => Promise.resolve(update.immediate(accountId, id, change)),
    remove: (accountId, id) => Promise.resolve(remove.immediate(accountId, id)),
  };
}
