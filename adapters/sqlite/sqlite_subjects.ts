import type { Database } from "bun:sqlite";
import type { Subject, SubjectStore } from "../../ports/subjects.ts";

/** The subjects table, in SQLite (`INTEGER`) or PostgreSQL (`BIGINT`) words for times. */
export function subjectTables(bigint: "INTEGER" | "BIGINT"): readonly string[] {
  return [
    `CREATE TABLE IF NOT EXISTS subjects (
       id TEXT PRIMARY KEY,
       account_id TEXT NOT NULL,
       canonical_did TEXT NOT NULL,
       subject_did_hash TEXT NOT NULL,
       display_name TEXT,
       is_default ${bigint === "BIGINT" ? "BOOLEAN" : "INTEGER"} NOT NULL,
       bootstrap ${bigint === "BIGINT" ? "BOOLEAN" : "INTEGER"} NOT NULL,
       ownership_method TEXT NOT NULL,
       ownership_wallet_did TEXT NOT NULL,
       verified_at_ms ${bigint} NOT NULL,
       created_at_ms ${bigint} NOT NULL,
       UNIQUE (account_id, canonical_did)
     )`,
    `CREATE INDEX IF NOT EXISTS subjects_account ON subjects (account_id, created_at_ms)`,
    // The transactions keep one default per account; the database refuses a second one should a bug try.
    `CREATE UNIQUE INDEX IF NOT EXISTS subjects_one_default ON subjects (account_id) WHERE ${bigint === "BIGINT" ? "is_default" : "is_default = 1"}`,
  ];
}

type Row = {
  id: string;
  account_id: string;
  canonical_did: string;
  subject_did_hash: string;
  display_name: string | null;
  is_default: number | boolean;
  bootstrap: number | boolean;
  ownership_method: string;
  ownership_wallet_did: string;
  verified_at_ms: number | string;
  created_at_ms: number | string;
};

/** A stored row as the port's subject (SQLite and PostgreSQL). */
export function toSubject(row: Row): Subject {
  return {
    id: row.id,
    accountId: row.account_id,
    canonicalDid: row.canonical_did,
    subjectDidHash: row.subject_did_hash,
    displayName: row.display_name,
    isDefault: Boolean(row.is_default),
    bootstrap: Boolean(row.bootstrap),
    ownershipMethod: row.ownership_method,
    ownershipWalletDid: row.ownership_wallet_did,
    verifiedAtMs: Number(row.verified_at_ms),
    createdAtMs: Number(row.created_at_ms),
  };
}

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
