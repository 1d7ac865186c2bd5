import type { SQL } from "bun";
import type { Subject, SubjectStore } from "../../ports/subjects.ts";
import { toSubject } from "../sql/subjects.ts";

/** Serializes the changes of one account's subjects across instances (with the account as second key). */
const SUBJECTS_LOCK = 7_240_003;

type Row = Parameters<typeof toSubject>[0];

/** Subjects in PostgreSQL; each change in one transaction under the account's advisory lock. */
export function createPostgresSubjects(sql: SQL): SubjectStore {
  const list = async (db: SQL, accountId: string): Promise<Row[]> =>
    await db`SELECT * FROM subjects WHERE account_id = ${accountId} ORDER BY is_default DESC, created_at_ms, id` as Row[];
  const insert = (db: SQL, s: Subject, isDefault: boolean) =>
    db`INSERT INTO subjects (id, account_id, canonical_did, subject_did_hash, display_name, is_default, bootstrap, ownership_method,
                             ownership_wallet_did, verified_at_ms, created_at_ms)
       VALUES (${s.id}, ${s.accountId}, ${s.canonicalDid}, ${s.subjectDidHash}, ${s.displayName}, ${isDefault}, ${s.bootstrap},
               ${s.ownershipMethod}, ${s.ownershipWalletDid}, ${s.verifiedAtMs}, ${s.createdAtMs})`;
  const locked = <T>(accountId: string, run: (tx: SQL) => Promise<T>) =>
    sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${SUBJECTS_LOCK}, hashtext(${accountId}))`;
      return await run(tx);
    });
  const byId = async (db: SQL, accountId: string, id: string) =>
    ((await db`SELECT * FROM subjects WHERE account_id = ${accountId} AND id = ${id}`) as Row[])[0];
  return {
    list: async (accountId) => (await list(sql, accountId)).map(toSubject),
    ensureBootstrap: (s) =>
      locked(s.accountId, async (tx) => {
        if ((await list(tx, s.accountId)).length === 0) await insert(tx, s, true);
      }),
    add: (s, max) =>
      locked(s.accountId, async (tx): Promise<"added" | "exists" | "limit"> => {
        const current = await list(tx, s.accountId);
        if (current.some((r) => r.canonical_did === s.canonicalDid)) return "exists";
        if (current.filter((r) => !r.bootstrap).length >= max) return "limit";
        const onlyBootstrap = current.length > 0 && current.every((r) => Boolean(r.bootstrap));
        if (onlyBootstrap) await tx`DELETE FROM subjects WHERE account_id = ${s.accountId} AND bootstrap`;
        await insert(tx, s, onlyBootstrap || current.length === 0);
        return "added";
      }),
    update: (accountId, id, change) =>
      locked(accountId, async (tx) => {
        if ((await byId(tx, accountId, id)) === undefined) return undefined;
        if (change.displayName !== undefined) await tx`UPDATE subjects SET display_name = ${change.displayName} WHERE id = ${id}`;
        if (change.isDefault) {
          await tx`UPDATE subjects SET is_default = FALSE WHERE account_id = ${accountId}`;
          await tx`UPDATE subjects SET is_default = TRUE WHERE id = ${id}`;
        }
        return toSubject((await byId(tx, accountId, id))!);
      }),
    remove: (accountId, id) =>
      locked(accountId, async (tx) => {
        const found = await byId(tx, accountId, id);
        if (found === undefined) return false;
        await tx`DELETE FROM subjects WHERE id = ${id}`;
        if (Boolean(found.is_default)) {
          const next = (await list(tx, accountId))[0];
          if (next !== undefined) await tx`UPDATE subjects SET is_default = TRUE WHERE id = ${next.id}`;
        }
        return true;
      }),
  };
}
