/** The rule the index's stored subjects follow (ports/attestation_index.ts `resetSubjectsUnless`), in SQLite. */
import type { Database } from "bun:sqlite";
import type { SubjectsToForget } from "../../ports/attestation_index.ts";
import { FORGET_ALL, forgetRangeSql, forgetSql, forgettingOf, type KeptRule, ruleOf, type SubjectRules, unnamedOfSql } from "../sql/subject_rules.ts";

/**
 * The subject rule of one chain and EAS contract: the rule read and kept, with the forgetting it begins, in one
 * transaction; the forgetting gone through a range of the primary key at a time, each its own short transaction.
 */
export function subjectRules(db: Database, chainId: number, eas: string): SubjectRules {
  const scope = { chainId, eas };
  const keptRule = db.query<KeptRule, [number, string]>("SELECT rule, forgetting FROM index_subject_rules WHERE chain_id = ? AND eas = ?");
  const keepRule = db.query<unknown, [number, string, string, string | null]>(
    `INSERT INTO index_subject_rules (chain_id, eas, rule, forgetting) VALUES (?, ?, ?, ?)
     ON CONFLICT (chain_id, eas) DO UPDATE SET rule = excluded.rule, forgetting = excluded.forgetting`,
  );
  const anySubject = db.query<unknown, [number, string]>("SELECT 1 FROM index_attestations WHERE chain_id = ? AND eas = ? AND subject IS NOT NULL LIMIT 1");
  const finished = db.query<unknown, [number, string, string, string]>(
    "UPDATE index_subject_rules SET forgetting = NULL WHERE chain_id = ? AND eas = ? AND rule = ? AND forgetting = ?",
  );
  const unfilled = db.query<unknown, [number, string, string]>(
    "SELECT 1 FROM index_attestations WHERE chain_id = ? AND eas = ? AND subject IS NULL AND recipient = ? AND data IS NOT NULL LIMIT 1",
  );
  /** How far this store went through the forgetting under way (`of`: its rule row; another one starts again). */
  let pass: { readonly of: string; readonly after: string } | undefined;

  const reset = db.transaction((rule: string, forget: (kept: string | undefined) => SubjectsToForget): boolean => {
    const kept = keptRule.get(chainId, eas);
    if (kept?.rule === rule) return kept.forgetting !== null;
    // No rule kept: subjects stored before rules were kept follow a rule no one knows, and are forgotten as any other
    // rule's; a store that holds no subject (a new index) has nothing to forget. A forgetting still under way leaves
    // rows of two rules: every subject goes.
    const forgetting = kept === null && anySubject.get(chainId, eas) === null
      ? null
      : JSON.stringify(kept?.forgetting ? FORGET_ALL() : forget(kept?.rule));
    keepRule.run(chainId, eas, rule, forgetting);
    return forgetting !== null;
  });

  /** One range of the forgetting under way; `pass` moves only once its transaction committed. */
  const forgetRange = db.transaction((limit: number) => {
    const kept = keptRule.get(chainId, eas);
    const forget = forgettingOf(kept);
    if (kept === null || forget === undefined) return { forgotten: 0, done: true, pass: undefined };
    const of = `${kept.rule}\n${kept.forgetting}`;
    const after = pass?.of === of ? pass.after : "";
    const range = forgetRangeSql("sqlite", scope, { after, limit });
    const { last, n } = db.query<{ last: string | null; n: number }, (string | number)[]>(range.text).get(...range.params)!;
    let forgotten = 0;
    if (last !== null) {
      const update = forgetSql("sqlite", scope, { forget, after, last });
      forgotten = db.query<unknown, (string | number)[]>(update.text).run(...update.params).changes;
    }
    if (n === limit) return { forgotten, done: false, pass: { of, after: last! } };
    finished.run(chainId, eas, kept.rule, kept.forgetting!);
    return { forgotten, done: true, pass: undefined };
  });

  const known = (recipient: string): string | undefined => {
    const kept = keptRule.get(chainId, eas);
    const forget = forgettingOf(kept);
    if (kept === null || forget?.all === true) return undefined;
    if (forget !== undefined && !forget.all) {
      const unnamed = unnamedOfSql("sqlite", scope, { forget, recipient });
      if (db.query<unknown, (string | number)[]>(unnamed.text).get(...unnamed.params) !== null) return undefined;
    }
    if (unfilled.get(chainId, eas, recipient.toLowerCase()) !== null) return undefined;
    return ruleOf(kept);
  };

  return {
    resetSubjectsUnless(rule, forget = FORGET_ALL) {
      // The same rule (every step but the first after a change): one primary-key read, no write lock taken.
      const kept = keptRule.get(chainId, eas);
      if (kept?.rule === rule) return Promise.resolve(kept.forgetting !== null);
      return Promise.resolve(reset.immediate(rule, forget));
    },
    forgetSubjects(limit) {
      const gone = forgetRange.immediate(limit);
      pass = gone.pass;
      return Promise.resolve({ forgotten: gone.forgotten, done: gone.done });
    },
    subjectsKnown: (recipient) => Promise.resolve(known(recipient)),
    subjectRule: () => Promise.resolve(ruleOf(keptRule.get(chainId, eas))),
  };
}
