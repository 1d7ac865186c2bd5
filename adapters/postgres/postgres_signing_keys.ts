import type { SQL } from "bun";
import type { SigningKeyRecord, SigningKeyStore, SigningKeyUpsert } from "../../ports/signing_keys.ts";
import { type SigningKeyRow, toSigningKey } from "../sql/signing_keys.ts";

/** Serializes the new signing keys of one account across instances (with the account as second key), for the limit. */
const SIGNING_KEYS_LOCK = 7_240_024;

/** Signing keys in PostgreSQL; an upsert is one transaction under the account's advisory lock. */
export function createPostgresSigningKeys(sql: SQL): SigningKeyStore {
  const find = async (db: SQL, accountId: string, keyDid: string) =>
    ((await db`SELECT * FROM signing_keys WHERE account_id = ${accountId} AND key_did = ${keyDid}`) as SigningKeyRow[])[0];
  return {
    upsert: (r: SigningKeyRecord, max: number) =>
      sql.begin(async (tx): Promise<SigningKeyUpsert> => {
        await tx`SELECT pg_advisory_xact_lock(${SIGNING_KEYS_LOCK}, hashtext(${r.accountId}))`;
        const tags = JSON.stringify(r.tags);
        const existing = await find(tx, r.accountId, r.keyDid);
        if (existing !== undefined) {
          await tx`UPDATE signing_keys SET display_name = ${r.displayName}, tags = ${tags}, notes = ${r.notes}, updated_at_ms = ${r.updatedAtMs}
                   WHERE id = ${existing.id}`;
          return { outcome: "updated", record: toSigningKey((await find(tx, r.accountId, r.keyDid))!) };
        }
        const [{ n }] = (await tx`SELECT COUNT(*)::int AS n FROM signing_keys WHERE account_id = ${r.accountId}`) as [{ n: number }];
        if (n >= max) return { outcome: "limit" };
        await tx`INSERT INTO signing_keys (id, account_id, key_did, key_type, display_name, tags, notes, created_at_ms, updated_at_ms)
                 VALUES (${r.id}, ${r.accountId}, ${r.keyDid}, ${r.keyType}, ${r.displayName}, ${tags}, ${r.notes}, ${r.createdAtMs}, ${r.updatedAtMs})`;
        return { outcome: "created", record: toSigningKey((await find(tx, r.accountId, r.keyDid))!) };
      }),
    async list(accountId, filter = {}) {
      const keyType = filter.keyType ?? null;
      const tag = filter.tag ?? null;
      const rows = (await sql`SELECT * FROM signing_keys WHERE account_id = ${accountId}
                                AND (${keyType}::text IS NULL OR key_type = ${keyType})
                                AND (${tag}::text IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(tags::jsonb) AS e (tag) WHERE e.tag = ${tag}))
                              ORDER BY created_at_ms DESC, id DESC`) as SigningKeyRow[];
      return rows.map(toSigningKey);
    },
  };
}
