/** The rule the index's stored subjects follow (ports/attestation_index.ts `resetSubjectsUnless`), in PostgreSQL. */
import type { SQL, TransactionSQL } from "bun";
import { FORGET_ALL, forgetRangeSql, forgetSql, forgettingOf, type KeptRule, ruleOf, type SubjectRules, unnamedOfSql } from "../sql/subject_rules.ts";

type Row = Record<string, unknown>;

/**
 * The subject rule of one chain and EAS contract: the rule read and kept, with the forgetting it begins, in one
 * transaction under an advisory lock, so two instances starting together begin it once; the forgetting gone through a
 * range of the primary key at a time (a few rows' locks, never every row's in one long transaction).
 */
export function subjectRules(sql: SQL, chainId: number, eas: string): SubjectRules {
  const scope = { chainId, eas };
  const keptRule = async (db: SQL | TransactionSQL): Promise<KeptRule | undefined> => {
    const [row]: Row[] = await db`SELECT rule, forgetting FROM index_subject_rules WHERE chain_id = ${chainId} AND eas = ${eas}`;
    return row === undefined ? undefined : { rule: String(row.rule), forgetting: row.forgetting === null ? null : String(row.forgetting) };
  };
  /** How far this instance went through the forgetting under way (`of`: its rule row; another one starts again). */
  let pass: { readonly of: string; readonly after: string } | undefined;

  return {
    async resetSubjectsUnless(rule, forget = FORGET_ALL) {
      // The same rule (every step but the first after a change): one primary-key read, no lock taken.
      const seen = await keptRule(sql);
      if (seen?.rule === rule) return seen.forgetting !== null;
      return await sql.begin(async (tx) => {
        await tx`SELECT pg_advisory_xact_lock(hashtext(${`index_subject_rules:${chainId}:${eas}`}))`;
        const kept = await keptRule(tx);
        if (kept?.rule === rule) return kept.forgetting !== null;
        // No rule kept: subjects stored before rules were kept follow a rule no one knows, and are forgotten as any
        // other rule's; a store that holds no subject (a new index) has nothing to forget. A forgetting still under way
        // leaves rows of two rules: every subject goes.
        const stored: Row[] = kept !== undefined ? [{}] : await tx`SELECT 1 FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas} AND subject IS NOT NULL LIMIT 1`;
        const forgetting = stored.length === 0 ? null : JSON.stringify(kept?.forgetting ? FORGET_ALL() : forget(kept?.rule));
        await tx`INSERT INTO index_subject_rules (chain_id, eas, rule, forgetting) VALUES (${chainId}, ${eas}, ${rule}, ${forgetting})
                 ON CONFLICT (chain_id, eas) DO UPDATE SET rule = EXCLUDED.rule, forgetting = EXCLUDED.forgetting`;
        return forgetting !== null;
      });
    },

    async forgetSubjects(limit) {
      const kept = await keptRule(sql);
      const forget = forgettingOf(kept);
      if (kept === undefined || forget === undefined) return { forgotten: 0, done: true };
      const of = `${kept.rule}\n${kept.forgetting}`;
      const after = pass?.of === of ? pass.after : "";
      const range = forgetRangeSql("postgres", scope, { after, limit });
      const [row]: Row[] = await sql.unsafe(range.text, range.params);
      const last = row?.last === null || row?.last === undefined ? null : String(row.last);
      let forgotten = 0;
      if (last !== null) {
        const update = forgetSql("postgres", scope, { forget, after, last });
        forgotten = (await sql.unsafe(update.text, update.params)).count;
      }
      if (Number(row?.n ?? 0) === limit) {
        pass = { of, after: last! };
        return { forgotten, done: false };
      }
      // Only the forgetting this pass went through ends (another begun meanwhile goes on).
      await sql`UPDATE index_subject_rules SET forgetting = NULL
                 WHERE chain_id = ${chainId} AND eas = ${eas} AND rule = ${kept.rule} AND forgetting = ${kept.forgetting}`;
      pass = undefined;
      return { forgotten, done: true };
    },

    async subjectsKnown(recipient) {
      const r = recipient.toLowerCase();
      const [row]: Row[] = await sql`
        SELECT k.rule, k.forgetting, EXISTS (SELECT 1 FROM index_attestations WHERE chain_id = ${chainId} AND eas = ${eas}
                                               AND subject IS NULL AND recipient = ${r} AND data IS NOT NULL) AS unfilled
          FROM (SELECT 1) AS one LEFT JOIN index_subject_rules k ON k.chain_id = ${chainId} AND k.eas = ${eas}`;
      if (row === undefined || row.unfilled === true || row.rule === null) return undefined;
      const kept = { rule: String(row.rule), forgetting: row.forgetting === null ? null : String(row.forgetting) };
      const forget = forgettingOf(kept);
      if (forget?.all === true) return undefined;
      if (forget !== undefined && !forget.all) {
        const unnamed = unnamedOfSql("postgres", scope, { forget, recipient: r });
        if ((await sql.unsafe(unnamed.text, unnamed.params)).length > 0) return undefined;
      }
      return ruleOf(kept);
    },

    subjectRule: async () => ruleOf(await keptRule(sql)),
  };
}
